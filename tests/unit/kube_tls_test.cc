// The native HTTP/1.1 transport over TLS against a loopback TLS server the test runs, with
// certificates made by the test (OpenSSL): what a careful client must refuse — a certificate for
// another host, a chain to a CA it does not trust, a body cut short by the connection's end,
// chunk sizes and Content-Lengths that overflow — next to the same exchanges done right, so that
// each refusal is shown to come from the fault and not from the setup.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/config.h"
#include "kube/transport.h"

namespace gantry::kube {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

// A key and its certificate.
struct Identity {
  KeyPtr key{nullptr, &EVP_PKEY_free};
  CertPtr cert{nullptr, &X509_free};
};

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A P-256 key and a certificate for `common_name`, valid from an hour ago for a day, signed by
// `issuer` (self-signed when null). A CA when `ca`; else a server certificate for `alt_names`
// (an X.509 subjectAltName value: "IP:127.0.0.1,DNS:localhost").
Identity MakeIdentity(const std::string& common_name, const Identity* issuer, bool ca,
                      const std::string& alt_names = "") {
  static std::atomic<long> serial{1};  // NOLINT(google-runtime-int): OpenSSL's type
  Identity id;
  id.key.reset(EVP_EC_gen("P-256"));
  id.cert.reset(X509_new());
  if (id.key == nullptr || id.cert == nullptr) {
    ADD_FAILURE() << "OpenSSL could not make a key or a certificate";
    return id;
  }
  X509* cert = id.cert.get();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial.fetch_add(1));
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, id.key.get());
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert.get() : cert;
  EVP_PKEY* issuer_key = issuer != nullptr ? issuer->key.get() : id.key.get();
  X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert));
  if (ca) {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert, issuer_cert, NID_subject_key_identifier, "hash");
  } else {
    AddExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, issuer_cert, NID_key_usage, "critical,digitalSignature");
    AddExtension(cert, issuer_cert, NID_ext_key_usage, "serverAuth");
    AddExtension(cert, issuer_cert, NID_subject_alt_name, alt_names.c_str());
  }
  AddExtension(cert, issuer_cert, NID_authority_key_identifier, "keyid:always");
  if (X509_sign(cert, issuer_key, EVP_sha256()) == 0) ADD_FAILURE() << "X509_sign failed";
  return id;
}

std::string Pem(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);  // NOLINT(google-runtime-int)
  return std::string(data, static_cast<size_t>(n));
}

// A TLS server on 127.0.0.1 presenting `identity`: for each connection it completes the
// handshake, reads one request head and answers with `reply` (the bytes of a response, possibly
// malformed), then ends the connection cleanly (close_notify) or, when `clean_close` is false,
// by closing the socket only (as a truncating middlebox or a crashed server would).
class TlsServer {
 public:
  TlsServer(const Identity& identity, std::string reply, bool clean_close)
      : reply_(std::move(reply)), clean_close_(clean_close) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (ctx_ == nullptr || SSL_CTX_use_certificate(ctx_, identity.cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx_, identity.key.get()) != 1) {
      ADD_FAILURE() << "test server: TLS context";
      return;
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "test server: cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~TlsServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
    SSL_CTX_free(ctx_);
  }
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;

  int port() const { return port_; }
  int handshakes() const { return handshakes_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void Run() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      Serve(c);
      ::close(c);
    }
  }

  void Serve(int c) {
    timeval tv{.tv_sec = 10, .tv_usec = 0};  // a client that never writes cannot hang the test
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
      handshakes_.fetch_add(1);
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      if (in.find("\r\n\r\n") != std::string::npos) {
        requests_.fetch_add(1);
        SSL_write(ssl, reply_.data(), static_cast<int>(reply_.size()));
        if (clean_close_) SSL_shutdown(ssl);
      }
    }
    SSL_free(ssl);
  }

  std::string reply_;
  bool clean_close_;
  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> handshakes_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// The certificates of the tests: a CA the client trusts, one it does not, and server
// certificates from each.
struct Pki {
  Identity ca = MakeIdentity("gantry test CA", nullptr, /*ca=*/true);
  Identity other_ca = MakeIdentity("gantry untrusted CA", nullptr, /*ca=*/true);
  Identity server = MakeIdentity("127.0.0.1", &ca, false, "IP:127.0.0.1,DNS:localhost");
  Identity wrong_host = MakeIdentity("api.example", &ca, false, "DNS:api.example,IP:10.9.9.9");
  Identity untrusted = MakeIdentity("127.0.0.1", &other_ca, false, "IP:127.0.0.1,DNS:localhost");
};

const Pki& TestPki() {
  static const Pki pki;
  return pki;
}

// GET /x against the server, trusting the test CA only.
ApiResult<HttpResponse> Get(const TlsServer& server, const std::string& host = "127.0.0.1") {
  Config c;
  c.server = "https://" + host + ":" + std::to_string(server.port());
  c.tls.ca_pem = Pem(TestPki().ca.cert.get());
  ApiResult<TransportPtr> t = MakeHttp1Transport(c, CurlTransportOptions{});
  if (!t.ok()) return t.error();
  HttpRequest request{"GET", "/x", "", "", std::chrono::seconds(10)};
  return t.value()->Do(request);
}

std::string Head(const std::string& headers) { return "HTTP/1.1 200 OK\r\n" + headers + "\r\n"; }

TEST(KubeTls, AVerifiedServerAnswers) {
  const std::string body = "{\"kind\":\"Status\"}";
  TlsServer server(TestPki().server,
                   Head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body, true);
  ApiResult<HttpResponse> r = Get(server);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r.value().status, 200);
  EXPECT_EQ(r.value().body, body);
  // By name too: the certificate names localhost as well as its address.
  ApiResult<HttpResponse> by_name = Get(server, "localhost");
  ASSERT_TRUE(by_name.ok()) << by_name.error().ToString();
  EXPECT_EQ(by_name.value().body, body);
}

TEST(KubeTls, ACertificateForAnotherHostIsRefused) {
  TlsServer server(TestPki().wrong_host, Head("Content-Length: 2\r\n") + "{}", true);
  ApiResult<HttpResponse> r = Get(server);
  ASSERT_FALSE(r.ok()) << "a certificate for api.example accepted for 127.0.0.1";
  EXPECT_EQ(server.requests(), 0) << "the request was sent before the host was checked";
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().ToString();
  ApiResult<HttpResponse> by_name = Get(server, "localhost");
  ASSERT_FALSE(by_name.ok()) << "a certificate for api.example accepted for localhost";
  EXPECT_EQ(server.requests(), 0);
}

TEST(KubeTls, AChainToAnUntrustedCaIsRefused) {
  TlsServer server(TestPki().untrusted, Head("Content-Length: 2\r\n") + "{}", true);
  ApiResult<HttpResponse> r = Get(server);
  ASSERT_FALSE(r.ok()) << "a certificate from an untrusted CA accepted";
  EXPECT_EQ(server.requests(), 0) << "the request was sent to an unverified server";
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().ToString();
}

TEST(KubeTls, ABodyCutShortOfItsContentLengthIsAnError) {
  for (const bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "close_notify sent" : "socket closed without close_notify");
    TlsServer server(TestPki().server, Head("Content-Length: 100\r\n") + "{\"kind\":", clean);
    ApiResult<HttpResponse> r = Get(server);
    ASSERT_FALSE(r.ok()) << "a 100-byte body accepted after 8 bytes: " << r.value().body;
    EXPECT_EQ(server.handshakes(), 1) << "the failed response was retried";
  }
}

// A body delimited by the connection's end (no Content-Length, not chunked) is complete only if
// the TLS connection ends with close_notify: without it, a truncation cannot be told apart.
TEST(KubeTls, ABodyEndedByTheConnectionNeedsCloseNotify) {
  {
    TlsServer server(TestPki().server, Head("Connection: close\r\n") + "{\"kind\":\"List\"}", true);
    ApiResult<HttpResponse> r = Get(server);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r.value().body, "{\"kind\":\"List\"}");
  }
  {
    TlsServer server(TestPki().server, Head("Connection: close\r\n") + "{\"kind\":\"Li", false);
    ApiResult<HttpResponse> r = Get(server);
    ASSERT_FALSE(r.ok()) << "a body cut by an unclean TLS end accepted: " << r.value().body;
    EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().ToString();
  }
}

TEST(KubeTls, OverflowingChunkSizesAndContentLengthsAreErrors) {
  // 2^64 - 1, 2^64 and far beyond as chunk sizes; after a valid first chunk too.
  for (const std::string chunks :
       {"ffffffffffffffff\r\nab\r\n0\r\n\r\n", "10000000000000000\r\nab\r\n0\r\n\r\n",
        "2\r\nab\r\nfffffffffffffffffffffffffffffff0\r\nab\r\n0\r\n\r\n"}) {
    SCOPED_TRACE(chunks);
    TlsServer server(TestPki().server, Head("Transfer-Encoding: chunked\r\n") + chunks, true);
    ApiResult<HttpResponse> r = Get(server);
    EXPECT_FALSE(r.ok()) << "body: " << r.value().body;
  }
  // Past int64, past uint64, and within int64 but past the body cap (the server sends 2 bytes).
  for (const std::string length : {"9223372036854775808", "18446744073709551616",
                                   "99999999999999999999999999", "999999999999999999"}) {
    SCOPED_TRACE(length);
    TlsServer server(TestPki().server, Head("Content-Length: " + length + "\r\n") + "{}", true);
    ApiResult<HttpResponse> r = Get(server);
    EXPECT_FALSE(r.ok()) << "body: " << r.value().body;
  }
}

}  // namespace
}  // namespace gantry::kube
