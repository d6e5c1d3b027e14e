// The native HTTP/1.1 transport: OpenSSL on a non-blocking socket, one request per connection at
// a time, idle connections pooled for keep-alive. Per request it builds the request in one
// buffer, writes it with one TLS write and waits for the answer with one poll; OpenSSL reads
// ahead (one recv per batch of TLS records instead of two per record). See transport.h.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "kube/http1.h"
#include "kube/token_source.h"
#include "kube/transport.h"

namespace gantry::kube {

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr SteadyClock::time_point kNoDeadline = SteadyClock::time_point::max();
constexpr auto kConnectTimeout = std::chrono::seconds(10);
// A pooled connection idle for longer is checked (one poll) before reuse: the server may have
// closed it meanwhile.
constexpr auto kIdleCheckAfter = std::chrono::seconds(2);
constexpr size_t kMaxHeadBytes = 1 << 20;

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {  // NOLINT(google-runtime-int): OpenSSL's type
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

// A socket BIO that sends with MSG_NOSIGNAL (a peer that closed must not raise SIGPIPE).
int BioWrite(BIO* b, const char* data, int len) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n = ::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int BioRead(BIO* b, char* data, int len) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n = ::recv(fd, data, static_cast<size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) {  // NOLINT(google-runtime-int): OpenSSL's type
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gantry-socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

// The server URL, split.
struct Target {
  bool tls = true;
  std::string host;  // without brackets
  std::string port;
  std::string authority;  // host[:port] as written, for the Host header
  std::string base_path;  // a path prefix of the server URL ("" usually)
  bool host_is_ip = false;
};

std::string ParseServer(const std::string& server, Target& t) {
  std::string_view s = server;
  if (s.substr(0, 8) == "https://") {
    t.tls = true;
    s.remove_prefix(8);
  } else if (s.substr(0, 7) == "http://") {
    t.tls = false;
    s.remove_prefix(7);
  } else {
    return "server " + server + ": not an http(s) URL";
  }
  size_t slash = s.find('/');
  t.authority = std::string(s.substr(0, slash));
  if (slash != std::string_view::npos) {
    t.base_path = std::string(s.substr(slash));
    while (!t.base_path.empty() && t.base_path.back() == '/') t.base_path.pop_back();
  }
  std::string_view a = t.authority;
  if (a.empty()) return "server " + server + ": no host";
  std::string_view port;
  if (a.front() == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos) return "server " + server + ": malformed IPv6 host";
    t.host = std::string(a.substr(1, close - 1));
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return "server " + server + ": malformed port";
      port = a.substr(close + 2);
    }
  } else {
    size_t colon = a.rfind(':');
    t.host = std::string(a.substr(0, colon));
    if (colon != std::string_view::npos) port = a.substr(colon + 1);
  }
  t.port = port.empty() ? (t.tls ? "443" : "80") : std::string(port);
  unsigned char buf[sizeof(in6_addr)];
  t.host_is_ip =
      inet_pton(AF_INET, t.host.c_str(), buf) == 1 || inet_pton(AF_INET6, t.host.c_str(), buf) == 1;
  return "";
}

// The TLS configuration shared by every connection of a transport, with the last TLS session
// for resumption by new connections.
class TlsContext {
 public:
  TlsContext(const TlsConfig& tls, bool share_sessions) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) {
      error_ = "TLS: " + OpenSslErrors();
      return;
    }
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_read_ahead(ctx_, 1);
    SSL_CTX_set_default_read_buffer_len(ctx_, 64 * 1024);
    if (tls.insecure_skip_verify) {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    } else {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
      if (tls.ca_pem.empty()) {
        SSL_CTX_set_default_verify_paths(ctx_);
      } else if (std::string e = LoadCa(tls.ca_pem); !e.empty()) {
        error_ = "TLS: certificate authority data: " + e;
        return;
      }
    }
    if (!tls.client_cert_pem.empty()) {
      if (std::string e = LoadClientCert(tls.client_cert_pem, tls.client_key_pem); !e.empty()) {
        error_ = "TLS: client certificate: " + e;
        return;
      }
    }
    if (share_sessions) {
      SSL_CTX_set_session_cache_mode(ctx_,
                                     SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
      SSL_CTX_set_app_data(ctx_, this);
      SSL_CTX_sess_set_new_cb(ctx_, NewSession);
    }
  }
  ~TlsContext() {
    if (session_ != nullptr) SSL_SESSION_free(session_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  const std::string& error() const { return error_; }

  // The last session a connection received (a reference the caller frees), or null.
  SSL_SESSION* Session() {
    std::lock_guard<std::mutex> lock(mu_);
    if (session_ != nullptr) SSL_SESSION_up_ref(session_);
    return session_;
  }

 private:
  static int NewSession(SSL* ssl, SSL_SESSION* session) {
    auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->session_ != nullptr) SSL_SESSION_free(self->session_);
    self->session_ = session;
    return 1;  // keeps the reference
  }

  std::string LoadCa(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (infos == nullptr) return OpenSslErrors();
    X509_STORE* store = SSL_CTX_get_cert_store(ctx_);
    int added = 0;
    for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
      X509_INFO* info = sk_X509_INFO_value(infos, i);
      if (info->x509 != nullptr && X509_STORE_add_cert(store, info->x509) == 1) ++added;
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    ERR_clear_error();
    return added > 0 ? "" : "no certificate in it";
  }

  std::string LoadClientCert(const std::string& cert_pem, const std::string& key_pem) {
    BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    X509* leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (leaf == nullptr) {
      BIO_free(bio);
      return OpenSslErrors();
    }
    int ok = SSL_CTX_use_certificate(ctx_, leaf);
    X509_free(leaf);
    while (ok == 1) {  // the rest of the chain, if any
      X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      if (extra == nullptr) break;
      if (SSL_CTX_add0_chain_cert(ctx_, extra) != 1) X509_free(extra);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (ok != 1) return OpenSslErrors();
    bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (key == nullptr) return "key: " + OpenSslErrors();
    ok = SSL_CTX_use_PrivateKey(ctx_, key);
    EVP_PKEY_free(key);
    if (ok != 1 || SSL_CTX_check_private_key(ctx_) != 1) return "key: " + OpenSslErrors();
    return "";
  }

  SSL_CTX* ctx_ = nullptr;
  std::string error_;
  std::mutex mu_;
  SSL_SESSION* session_ = nullptr;
};

// One connection to the server.
struct Conn {
  int fd = -1;
  int wake = -1;  // eventfd: Wake() cuts a stream's wait short
  SSL* ssl = nullptr;
  std::string in;  // bytes read and not yet consumed
  SteadyClock::time_point idle_since{};

  Conn() = default;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
    if (wake >= 0) ::close(wake);
  }
};

enum class Wait { kReady, kTimeout, kCancelled, kError };

// Waits until `fd` has `events` (or an error: the next read or write reports it), the deadline
// passes, or `cancel` is set (looked at every second and when `wake` is signalled).
Wait WaitFor(int fd, int wake, short events, SteadyClock::time_point deadline,
             const std::atomic<bool>* cancel) {
  for (;;) {
    if (cancel != nullptr && cancel->load()) return Wait::kCancelled;
    int timeout = -1;
    if (deadline != kNoDeadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) return Wait::kTimeout;
      timeout = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    if (cancel != nullptr) timeout = timeout < 0 ? 1000 : std::min(timeout, 1000);
    pollfd p[2] = {{fd, events, 0}, {wake, POLLIN, 0}};
    nfds_t n = (cancel != nullptr && wake >= 0) ? 2 : 1;
    int r = ::poll(p, n, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Wait::kError;
    }
    if (r > 0 && p[0].revents != 0) return Wait::kReady;
    if (r > 0 && n == 2 && p[1].revents != 0) {
      uint64_t v = 0;
      [[maybe_unused]] ssize_t ignored = ::read(wake, &v, sizeof(v));
    }
  }
}

// How an exchange on a connection ended.
struct Outcome {
  bool ok = false;
  bool reusable = false;
  bool received_any = false;  // some byte of the response arrived
  bool cancelled = false;
  bool timed_out = false;
  std::string error;
  HttpResponse response;
};

// Incremental gzip decoding (Content-Encoding: gzip).
class Gunzip {
 public:
  Gunzip() { ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK; }
  ~Gunzip() {
    if (ok_) inflateEnd(&zs_);
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Decodes `in`, handing the output to `out` piece by piece; false on corrupt data or when
  // `out` returns false (then `error` stays empty).
  template <typename Out>
  bool Feed(std::string_view in, const Out& out, std::string& error) {
    if (!ok_) {
      error = "gzip: inflateInit failed";
      return false;
    }
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs_.avail_in = static_cast<uInt>(in.size());
    char buf[16384];
    while (zs_.avail_in > 0 && !ended_) {
      zs_.next_out = reinterpret_cast<Bytef*>(buf);
      zs_.avail_out = sizeof(buf);
      int r = inflate(&zs_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) ended_ = true;
      if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
        error = std::string("gzip: ") + (zs_.msg != nullptr ? zs_.msg : "corrupt data");
        return false;
      }
      size_t produced = sizeof(buf) - zs_.avail_out;
      if (produced > 0 && !out(std::string_view(buf, produced))) return false;
      if (r == Z_BUF_ERROR && produced == 0) break;
    }
    return true;
  }

 private:
  z_stream zs_{};
  bool ok_ = false;
  bool ended_ = false;
};

class Http1Transport : public Transport {
 public:
  Http1Transport(const Config& config, const CurlTransportOptions& options)
      : options_(options), server_(config.server), token_(config.token, config.token_file) {
    target_error_ = ParseServer(config.server, target_);
    if (target_error_.empty() && target_.tls) {
      tls_ = std::make_unique<TlsContext>(config.tls, options.share_tls_sessions);
    }
    insecure_ = config.tls.insecure_skip_verify;
  }

  ApiResult<HttpResponse> Do(const HttpRequest& request) override {
    return Perform(request, nullptr, nullptr);
  }

  ApiResult<HttpResponse> Stream(const HttpRequest& request, const BodySink& sink,
                                 const std::atomic<bool>& cancel) override {
    return Perform(request, &sink, &cancel);
  }

  void Wake(const std::atomic<bool>& cancel) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = streams_.equal_range(&cancel);
    for (auto it = first; it != last; ++it) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t ignored = ::write(it->second, &one, sizeof(one));
    }
  }

  TransportStats stats() const override {
    return {requests_.load(std::memory_order_relaxed), connections_.load(std::memory_order_relaxed),
            0};
  }

 private:
  std::string Fail(const HttpRequest& r, const std::string& message) const {
    return r.method + " " + server_ + r.path + ": " + message;
  }

  std::string BuildRequest(const HttpRequest& r) {
    std::string token = token_.Get();
    std::string w;
    w.reserve(160 + target_.authority.size() + r.path.size() + token.size() + r.body.size());
    w.append(r.method).append(" ").append(target_.base_path).append(r.path);
    w.append(" HTTP/1.1\r\nHost: ").append(target_.authority);
    w.append("\r\nUser-Agent: gantry/0.1\r\nAccept: application/json\r\nAccept-Encoding: gzip\r\n");
    if (!token.empty()) w.append("Authorization: Bearer ").append(token).append("\r\n");
    if (!r.content_type.empty()) w.append("Content-Type: ").append(r.content_type).append("\r\n");
    if (!r.body.empty() || (r.method != "GET" && r.method != "DELETE")) {
      w.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
    }
    w.append("\r\n").append(r.body);
    return w;
  }

  // An idle pooled connection, or null.
  std::unique_ptr<Conn> TakeIdle() {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pool_.empty()) return nullptr;
        c = std::move(pool_.back());
        pool_.pop_back();
      }
      if (SteadyClock::now() - c->idle_since < kIdleCheckAfter) return c;
      // Long idle: readable now means the server closed it, unless what arrived is a TLS record
      // without data (a late session ticket), which a read consumes.
      pollfd p{c->fd, POLLIN, 0};
      if (::poll(&p, 1, 0) == 0) return c;
      if (c->ssl != nullptr && (p.revents & (POLLERR | POLLHUP)) == 0) {
        char byte = 0;
        size_t n = 0;
        ERR_clear_error();
        if (SSL_read_ex(c->ssl, &byte, 1, &n) == 0 &&
            SSL_get_error(c->ssl, 0) == SSL_ERROR_WANT_READ && SSL_has_pending(c->ssl) == 0) {
          return c;
        }
        ERR_clear_error();
      }
    }
  }

  void Release(std::unique_ptr<Conn> c) {
    c->idle_since = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.size() < options_.max_idle_handles) pool_.push_back(std::move(c));
  }

  std::unique_ptr<Conn> Connect(SteadyClock::time_point deadline, const std::atomic<bool>* cancel,
                                std::string& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    int gai = getaddrinfo(target_.host.c_str(), target_.port.c_str(), &hints, &res);
    if (gai != 0) {
      error = "could not resolve host " + target_.host + ": " + gai_strerror(gai);
      return nullptr;
    }
    auto c = std::make_unique<Conn>();
    SteadyClock::time_point connect_deadline =
        std::min(deadline, SteadyClock::now() + kConnectTimeout);
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      int fd =
          ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        continue;
      }
      int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      if (r != 0 && errno == EINPROGRESS) {
        Wait w = WaitFor(fd, -1, POLLOUT, connect_deadline, nullptr);
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (w == Wait::kTimeout) {
          soerr = ETIMEDOUT;
        } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
          soerr = errno;
        }
        r = soerr == 0 ? 0 : -1;
        errno = soerr;
      }
      if (r != 0) {
        error = "connect to " + target_.authority + ": " + std::strerror(errno);
        ::close(fd);
        continue;
      }
      c->fd = fd;
      break;
    }
    freeaddrinfo(res);
    if (c->fd < 0) return nullptr;
    int one = 1;
    ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    c->wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (target_.tls && !Handshake(*c, deadline, cancel, error)) return nullptr;
    connections_.fetch_add(1, std::memory_order_relaxed);
    return c;
  }

  bool Handshake(Conn& c, SteadyClock::time_point deadline, const std::atomic<bool>* cancel,
                 std::string& error) {
    c.ssl = SSL_new(tls_->get());
    if (c.ssl == nullptr) {
      error = "TLS: " + OpenSslErrors();
      return false;
    }
    BIO* bio = BIO_new(SocketBioMethod());
    BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(c.fd)));
    SSL_set_bio(c.ssl, bio, bio);
    if (!target_.host_is_ip) SSL_set_tlsext_host_name(c.ssl, target_.host.c_str());
    if (!insecure_) {
      if (target_.host_is_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c.ssl), target_.host.c_str());
      } else {
        SSL_set1_host(c.ssl, target_.host.c_str());
      }
    }
    if (SSL_SESSION* s = tls_->Session()) {
      SSL_set_session(c.ssl, s);
      SSL_SESSION_free(s);
    }
    SteadyClock::time_point hs_deadline = std::min(deadline, SteadyClock::now() + kConnectTimeout);
    for (;;) {
      ERR_clear_error();
      int r = SSL_connect(c.ssl);
      if (r == 1) return true;
      int e = SSL_get_error(c.ssl, r);
      Wait w;
      if (e == SSL_ERROR_WANT_READ) {
        w = WaitFor(c.fd, c.wake, POLLIN, hs_deadline, cancel);
      } else if (e == SSL_ERROR_WANT_WRITE) {
        w = WaitFor(c.fd, c.wake, POLLOUT, hs_deadline, cancel);
      } else {
        int saved = errno;
        error = "TLS handshake with " + target_.authority + ": ";
        long verify = SSL_get_verify_result(c.ssl);  // NOLINT(google-runtime-int)
        std::string ssl_errors = OpenSslErrors();
        if (verify != X509_V_OK) {
          error +=
              std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
        } else if (!ssl_errors.empty()) {
          error += ssl_errors;
        } else {
          error += saved != 0 ? std::strerror(saved) : "connection closed";
        }
        return false;
      }
      if (w == Wait::kTimeout) {
        error = "TLS handshake with " + target_.authority + " timed out";
        return false;
      }
      if (w == Wait::kCancelled) {
        error = "cancelled";
        return false;
      }
      if (w == Wait::kError) {
        error = std::string("poll: ") + std::strerror(errno);
        return false;
      }
    }
  }

  enum class Read { kData, kEof, kTimeout, kCancelled, kError };

  // Appends at least one byte to c.in, reading everything already available (OpenSSL reads
  // ahead: one recv takes every TLS record the kernel holds).
  Read ReadSome(Conn& c, SteadyClock::time_point deadline, const std::atomic<bool>* cancel,
                std::string& error) {
    char buf[16384];
    // Bytes OpenSSL already holds may make a whole record: read before waiting. (They may also
    // be part of one only; then the read asks for more and the next round waits.)
    bool wait = c.ssl == nullptr || SSL_has_pending(c.ssl) != 1;
    for (;;) {
      if (wait) {
        Wait w = WaitFor(c.fd, c.wake, POLLIN, deadline, cancel);
        if (w == Wait::kTimeout) return Read::kTimeout;
        if (w == Wait::kCancelled) return Read::kCancelled;
        if (w == Wait::kError) {
          error = std::string("poll: ") + std::strerror(errno);
          return Read::kError;
        }
      }
      wait = true;
      bool got = false;
      for (;;) {
        if (c.ssl != nullptr) {
          size_t n = 0;
          ERR_clear_error();
          if (SSL_read_ex(c.ssl, buf, sizeof(buf), &n) == 1) {
            c.in.append(buf, n);
            got = true;
            if (SSL_has_pending(c.ssl) == 1) continue;
            break;
          }
          int e = SSL_get_error(c.ssl, 0);
          if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
          if (got) return Read::kData;  // the error shows on the next call
          if (e == SSL_ERROR_ZERO_RETURN) return Read::kEof;
          int saved = errno;
          std::string ssl_errors = OpenSslErrors();
          if (e == SSL_ERROR_SYSCALL && ssl_errors.empty() && saved == 0) return Read::kEof;
          error = "TLS read: " + (!ssl_errors.empty() ? ssl_errors : std::strerror(saved));
          return Read::kError;
        }
        ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
        if (n > 0) {
          c.in.append(buf, static_cast<size_t>(n));
          got = true;
          break;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
        if (got) return Read::kData;
        if (n == 0) return Read::kEof;
        error = std::string("read: ") + std::strerror(errno);
        return Read::kError;
      }
      if (got) return Read::kData;
    }
  }

  bool WriteAll(Conn& c, std::string_view data, SteadyClock::time_point deadline,
                const std::atomic<bool>* cancel, Outcome& o) {
    size_t off = 0;
    while (off < data.size()) {
      short want = POLLOUT;
      if (c.ssl != nullptr) {
        size_t n = 0;
        ERR_clear_error();
        if (SSL_write_ex(c.ssl, data.data() + off, data.size() - off, &n) == 1) {
          off += n;
          continue;
        }
        int e = SSL_get_error(c.ssl, 0);
        if (e == SSL_ERROR_WANT_READ) {
          want = POLLIN;
        } else if (e != SSL_ERROR_WANT_WRITE) {
          int saved = errno;
          std::string ssl_errors = OpenSslErrors();
          o.error = "TLS write: " + (!ssl_errors.empty() ? ssl_errors : std::strerror(saved));
          return false;
        }
      } else {
        ssize_t n = ::send(c.fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n > 0) {
          off += static_cast<size_t>(n);
          continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          o.error = std::string("write: ") + std::strerror(errno);
          return false;
        }
      }
      Wait w = WaitFor(c.fd, c.wake, want, deadline, cancel);
      if (w == Wait::kTimeout) {
        o.timed_out = true;
        o.error = "timed out sending the request";
        return false;
      }
      if (w == Wait::kCancelled) {
        o.cancelled = true;
        return false;
      }
      if (w == Wait::kError) {
        o.error = std::string("poll: ") + std::strerror(errno);
        return false;
      }
    }
    return true;
  }

  // Maps a failed read into `o`; returns false.
  static bool ReadFailed(Read r, const std::string& error, const char* when, Outcome& o) {
    if (r == Read::kTimeout) {
      o.timed_out = true;
      o.error = std::string("timed out ") + when;
    } else if (r == Read::kCancelled) {
      o.cancelled = true;
    } else if (r == Read::kEof) {
      o.error = std::string("connection closed ") + when;
    } else {
      o.error = error;
    }
    return false;
  }

  // Sends `wire` on `c` and reads the response: into o.response.body, or to `sink` (2xx only).
  bool Exchange(Conn& c, std::string_view wire, const BodySink* sink,
                const std::atomic<bool>* cancel, SteadyClock::time_point deadline, Outcome& o) {
    if (!WriteAll(c, wire, deadline, cancel, o)) return false;
    std::string error;
    http1::ResponseHead head;
    size_t head_end = 0;
    for (;;) {  // the head, skipping 1xx interim responses
      size_t scanned = 0;
      for (;;) {
        size_t pos = c.in.find("\r\n\r\n", scanned);
        if (pos != std::string::npos) {
          head_end = pos + 4;
          break;
        }
        if (c.in.size() > kMaxHeadBytes) {
          o.error = "response head too large";
          return false;
        }
        scanned = c.in.size() < 3 ? 0 : c.in.size() - 3;
        Read r = ReadSome(c, deadline, cancel, error);
        if (r != Read::kData) return ReadFailed(r, error, "before the response", o);
        o.received_any = true;
      }
      std::string perr =
          http1::ParseResponseHead(std::string_view(c.in.data(), head_end - 4), head);
      if (!perr.empty()) {
        o.error = "response: " + perr;
        return false;
      }
      if (head.status >= 100 && head.status < 200) {
        if (head.status == 101) {
          o.error = "response: unexpected 101 Switching Protocols";
          return false;
        }
        c.in.erase(0, head_end);
        continue;
      }
      break;
    }
    o.response.status = head.status;
    o.response.retry_after_seconds = head.retry_after_seconds;
    bool to_sink = sink != nullptr && head.status >= 200 && head.status < 300;
    bool no_body = head.status == 204 || head.status == 304;
    bool aborted = false;
    bool delivered = false;
    auto out = [&](std::string_view data) {
      if (!to_sink) {
        o.response.body.append(data);
        return true;
      }
      delivered = true;
      if (!(*sink)(data)) {
        aborted = true;
        return false;
      }
      return true;
    };
    std::unique_ptr<Gunzip> gunzip;
    if (head.gzip) gunzip = std::make_unique<Gunzip>();
    auto emit = [&](std::string_view data) {
      if (data.empty()) return true;
      if (gunzip == nullptr) return out(data);
      if (!gunzip->Feed(data, out, error)) {
        if (!aborted) o.error = "response body: " + error;
        return false;
      }
      return true;
    };
    http1::ChunkedDecoder chunks;
    std::string plain;
    int64_t remaining = head.content_length;
    bool until_eof = !no_body && !head.chunked && head.content_length < 0;
    size_t off = head_end;
    bool done = no_body || (!head.chunked && remaining == 0);
    while (!done) {
      std::string_view avail(c.in.data() + off, c.in.size() - off);
      if (!avail.empty()) {
        std::string_view piece;
        if (head.chunked) {
          plain.clear();
          off += chunks.Feed(avail, plain, error);
          if (!error.empty()) {
            o.error = "response body: " + error;
            return false;
          }
          piece = plain;
          done = chunks.done();
        } else if (remaining >= 0) {
          size_t take = std::min<size_t>(avail.size(), static_cast<size_t>(remaining));
          piece = avail.substr(0, take);
          off += take;
          remaining -= static_cast<int64_t>(take);
          done = remaining == 0;
        } else {
          piece = avail;
          off += avail.size();
        }
        if (!emit(piece)) {
          if (aborted) {
            o.ok = true;  // the sink ended the stream: a normal end, connection dropped
            o.response.body.clear();
            return true;
          }
          return false;
        }
      }
      c.in.erase(0, off);
      off = 0;
      if (done) break;
      if (delivered && options_.stream_batch.count() > 0) {
        // Let the events arriving meanwhile gather: one wake-up and read for the batch.
        delivered = false;
        std::this_thread::sleep_for(options_.stream_batch);
      }
      Read r = ReadSome(c, deadline, cancel, error);
      if (r == Read::kEof && until_eof) break;
      if (r != Read::kData) return ReadFailed(r, error, "in the middle of the response", o);
    }
    c.in.erase(0, off);
    o.ok = true;
    o.reusable = !until_eof && !head.close && c.in.empty();
    return true;
  }

  ApiResult<HttpResponse> Perform(const HttpRequest& request, const BodySink* sink,
                                  const std::atomic<bool>* cancel) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    if (!target_error_.empty()) return ApiError{0, "", Fail(request, target_error_)};
    if (tls_ != nullptr && !tls_->error().empty()) {
      return ApiError{0, "", Fail(request, tls_->error())};
    }
    if (cancel != nullptr && cancel->load()) return ApiError{0, "", "cancelled"};
    SteadyClock::time_point deadline =
        request.timeout.count() > 0 ? SteadyClock::now() + request.timeout : kNoDeadline;
    std::string wire = BuildRequest(request);
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Conn> c = TakeIdle();
      bool reused = c != nullptr;
      std::string error;
      if (c == nullptr) {
        c = Connect(deadline, cancel, error);
        if (c == nullptr) {
          if (error == "cancelled") return ApiError{0, "", "cancelled"};
          return ApiError{0, "", Fail(request, error)};
        }
      }
      if (cancel != nullptr) {
        uint64_t v = 0;
        [[maybe_unused]] ssize_t ignored = ::read(c->wake, &v, sizeof(v));  // an old wake-up
        std::lock_guard<std::mutex> lock(mu_);
        streams_.emplace(cancel, c->wake);
      }
      Outcome o;
      Exchange(*c, wire, sink, cancel, deadline, o);
      if (cancel != nullptr) {
        std::lock_guard<std::mutex> lock(mu_);
        auto [first, last] = streams_.equal_range(cancel);
        for (auto it = first; it != last; ++it) {
          if (it->second == c->wake) {
            streams_.erase(it);
            break;
          }
        }
      }
      if (o.ok) {
        if (o.reusable) Release(std::move(c));
        return std::move(o.response);
      }
      if (o.cancelled) return ApiError{0, "", "cancelled"};
      // A kept-alive connection the server closed meanwhile fails before any answer: the
      // request was not processed; send it again on a new connection.
      if (reused && !o.received_any && !o.timed_out && attempt == 0) continue;
      return ApiError{0, "", Fail(request, o.error)};
    }
  }

  CurlTransportOptions options_;
  std::string server_;
  Target target_;
  std::string target_error_;
  bool insecure_ = false;
  std::unique_ptr<TlsContext> tls_;
  TokenSource token_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> connections_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> pool_;
  // The wake eventfd of each stream running, by its cancel flag (for Wake).
  std::unordered_multimap<const std::atomic<bool>*, int> streams_;
};

}  // namespace

ApiResult<TransportPtr> MakeHttp1Transport(const Config& config,
                                           const CurlTransportOptions& options) {
  if (config.server.empty()) return ApiError{0, "", "config " + config.source + ": no server"};
  return TransportPtr(std::make_shared<Http1Transport>(config, options));
}

}  // namespace gantry::kube
