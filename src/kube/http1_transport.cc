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
#include "kube/http1_tls.h"
#include "kube/token_source.h"
#include "kube/transport.h"

namespace gantry::kube {

namespace {

using namespace http1_detail;

constexpr auto kConnectTimeout = std::chrono::seconds(10);
// A pooled connection idle for longer is checked (one poll) before reuse: the server may have
// closed it meanwhile.
constexpr auto kIdleCheckAfter = std::chrono::seconds(2);
constexpr size_t kMaxHeadBytes = 1 << 20;

// How an exchange on a connection ended.
struct Outcome {
  bool ok = false;
  bool reusable = false;
  bool sent = false;          // the whole request was written
  bool received_any = false;  // some byte of the response arrived
  bool cancelled = false;
  bool timed_out = false;
  std::string error;
  HttpResponse response;
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
  // A pooled connection, or null. `verify`: checked whatever its idle time (for a request that
  // is not sent twice, see Perform).
  std::unique_ptr<Conn> TakeIdle(bool verify) {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pool_.empty()) return nullptr;
        c = std::move(pool_.back());
        pool_.pop_back();
      }
      if (!verify && SteadyClock::now() - c->idle_since < kIdleCheckAfter) return c;
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
    // The BIO's data is the descriptor itself (SocketBioMethod reads it back): OpenSSL's API.
    BIO_set_data(bio, reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
                          static_cast<intptr_t>(c.fd)));
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
          if (e == SSL_ERROR_SYSCALL && ssl_errors.empty() && saved == 0) {
            c.tls_unclean_eof = true;
            return Read::kEof;
          }
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
    o.sent = true;
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
        // Caps the body after decompression too, so a small gzip bomb cannot exhaust memory.
        if (o.response.body.size() + data.size() > options_.max_body_bytes) {
          error = "larger than " + std::to_string(options_.max_body_bytes) + " bytes";
          o.error = "response body: " + error;
          return false;
        }
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
      if (r == Read::kEof && until_eof) {
        if (c.ssl != nullptr && c.tls_unclean_eof) {
          o.error = "response body: the TLS connection ended without close_notify (truncated)";
          return false;
        }
        break;
      }
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
    // RFC 9110's idempotent methods: sending one again does what sending it once did.
    const bool idempotent = request.method == "GET" || request.method == "HEAD" ||
                            request.method == "PUT" || request.method == "DELETE" ||
                            request.method == "OPTIONS";
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Conn> c = TakeIdle(!idempotent);
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
      // A kept-alive connection the server closed meanwhile fails before any answer; send the
      // request again on a new connection. Unless the request was sent whole and is not
      // idempotent (POST, PATCH): then the server may have carried it out and lost only the
      // answer (a proxy cut, a crash after the write), and a second one would do it twice (two
      // events, or a Conflict for a binding that succeeded). The caller gets the error instead;
      // such a request is only sent on a connection just checked to be open (TakeIdle).
      if (reused && !o.received_any && !o.timed_out && attempt == 0 && (idempotent || !o.sent)) {
        continue;
      }
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
