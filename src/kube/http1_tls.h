// The connection layer of the native HTTP/1.1 transport (internal to kube/): the server URL,
// the TLS context shared by a transport's connections (CA, client certificate, session
// resumption), a socket BIO that never raises SIGPIPE, one connection's state, waiting on a
// socket with a deadline and a cancel flag, and incremental gzip decoding.
#pragma once

#include <openssl/ssl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>

#include "kube/transport.h"

namespace gantry::kube::http1_detail {

using SteadyClock = std::chrono::steady_clock;
constexpr SteadyClock::time_point kNoDeadline = SteadyClock::time_point::max();

// The queued OpenSSL errors, "; "-separated (the queue is emptied).
std::string OpenSslErrors();

// A socket BIO method that sends with MSG_NOSIGNAL (a peer that closed must not raise SIGPIPE);
// the BIO's data is the socket's file descriptor.
BIO_METHOD* SocketBioMethod();

// The server URL, split.
struct Target {
  bool tls = true;
  std::string host;  // without brackets
  std::string port;
  std::string authority;  // host[:port] as written, for the Host header
  std::string base_path;  // a path prefix of the server URL ("" usually)
  bool host_is_ip = false;
};

// Splits `server` ("https://host:port/prefix") into `t`; an error message, or "" when it parses.
std::string ParseServer(const std::string& server, Target& t);

// The TLS configuration shared by every connection of a transport, with the last TLS session
// for resumption by new connections.
class TlsContext {
 public:
  // Any problem with the configuration is in error() (the context is then unusable).
  TlsContext(const TlsConfig& tls, bool share_sessions);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  const std::string& error() const { return error_; }

  // The last session a connection received (a reference the caller frees), or null.
  SSL_SESSION* Session();

 private:
  static int NewSession(SSL* ssl, SSL_SESSION* session);
  std::string LoadCa(const std::string& pem);
  std::string LoadClientCert(const std::string& cert_pem, const std::string& key_pem);

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
  // The TLS peer closed the connection without close_notify: the end of a body delimited by the
  // connection's end cannot be told from a truncation.
  bool tls_unclean_eof = false;

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
             const std::atomic<bool>* cancel);

// Incremental gzip decoding (Content-Encoding: gzip).
class Gunzip {
 public:
  Gunzip() { ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK; }
  ~Gunzip() {
    if (ok_) inflateEnd(&zs_);
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Decodes `in`, handing the output to `out` piece by piece; false on corrupt data or
  // when `out` returns false (then `error` stays empty).
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

}  // namespace gantry::kube::http1_detail
