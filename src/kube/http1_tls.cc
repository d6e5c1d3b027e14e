#include "kube/http1_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace gantry::kube::http1_detail {

namespace {

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

}  // namespace

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

TlsContext::TlsContext(const TlsConfig& tls, bool share_sessions) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) {
    error_ = "TLS: " + OpenSslErrors();
    return;
  }
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx_, 1);
  SSL_CTX_set_default_read_buffer_len(ctx_, size_t{64} * 1024);
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
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_set_app_data(ctx_, this);
    SSL_CTX_sess_set_new_cb(ctx_, NewSession);
  }
}

TlsContext::~TlsContext() {
  if (session_ != nullptr) SSL_SESSION_free(session_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

SSL_SESSION* TlsContext::Session() {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_ != nullptr) SSL_SESSION_up_ref(session_);
  return session_;
}

int TlsContext::NewSession(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  std::lock_guard<std::mutex> lock(self->mu_);
  if (self->session_ != nullptr) SSL_SESSION_free(self->session_);
  self->session_ = session;
  return 1;  // keeps the reference
}

std::string TlsContext::LoadCa(const std::string& pem) {
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

std::string TlsContext::LoadClientCert(const std::string& cert_pem, const std::string& key_pem) {
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

}  // namespace gantry::kube::http1_detail
