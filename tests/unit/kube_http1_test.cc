// The native HTTP/1.1 transport: its message parsing, and the transport against a plain-HTTP
// server on loopback (canned responses, the requests it received recorded).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/convert.h"
#include "kube/client.h"
#include "kube/http1.h"
#include "kube/transport.h"

namespace gantry::kube {
namespace {

using http1::ChunkedDecoder;
using http1::ParseResponseHead;
using http1::ResponseHead;

TEST(KubeHttp1, ParsesStatusAndTheHeadersTheTransportActsOn) {
  ResponseHead h;
  ASSERT_EQ(ParseResponseHead("HTTP/1.1 429 Too Many Requests\r\n"
                              "content-type: application/json\r\n"
                              "Retry-After: 7\r\n"
                              "Content-Length: 12",
                              h),
            "");
  EXPECT_EQ(h.status, 429);
  EXPECT_EQ(h.content_length, 12);
  EXPECT_EQ(h.retry_after_seconds, 7);
  EXPECT_FALSE(h.chunked);
  EXPECT_FALSE(h.close);

  ASSERT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                              "Content-Encoding: gzip\r\nConnection: close",
                              h),
            "");
  EXPECT_TRUE(h.chunked);
  EXPECT_TRUE(h.gzip);
  EXPECT_TRUE(h.close);
  EXPECT_EQ(h.content_length, -1);
  EXPECT_EQ(h.retry_after_seconds, -1);

  // HTTP/1.0 closes unless it says keep-alive.
  ASSERT_EQ(ParseResponseHead("HTTP/1.0 200 OK", h), "");
  EXPECT_TRUE(h.close);
  ASSERT_EQ(ParseResponseHead("HTTP/1.0 200 OK\r\nConnection: keep-alive", h), "");
  EXPECT_FALSE(h.close);
}

TEST(KubeHttp1, RejectsMalformedHeads) {
  ResponseHead h;
  EXPECT_NE(ParseResponseHead("HTTP/1.1 2x0 OK", h), "");
  EXPECT_NE(ParseResponseHead("ICY 200 OK", h), "");
  EXPECT_NE(ParseResponseHead("HTTP/2.0 200 OK", h), "");
  EXPECT_NE(ParseResponseHead("HTTP/1.1 200 OK\r\nno colon here", h), "");
  EXPECT_NE(ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 1x", h), "");
  EXPECT_NE(ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2", h), "");
  EXPECT_NE(ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Encoding: br", h), "");
}

TEST(KubeHttp1, DecodesChunksSplitAnywhere) {
  const std::string body =
      "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  for (size_t split = 0; split <= body.size(); ++split) {
    ChunkedDecoder d;
    std::string out;
    std::string error;
    size_t used = d.Feed(std::string_view(body).substr(0, split), out, error);
    ASSERT_EQ(error, "") << split;
    ASSERT_EQ(used, std::min(split, body.size() - 4)) << split;  // all but a part of "NEXT"
    if (!d.done()) used += d.Feed(std::string_view(body).substr(split), out, error);
    ASSERT_EQ(error, "") << split;
    EXPECT_TRUE(d.done()) << split;
    EXPECT_EQ(out, "hello 0123456789") << split;
    EXPECT_EQ(body.substr(used), "NEXT") << split;  // the next response's bytes are left
  }
}

TEST(KubeHttp1, RejectsMalformedChunks) {
  for (const char* bad : {"x\r\n", "5\r\nhelloXX", "\r\n", "12345678901234567\r\n"}) {
    ChunkedDecoder d;
    std::string out;
    std::string error;
    d.Feed(bad, out, error);
    EXPECT_NE(error, "") << bad;
    EXPECT_FALSE(d.done()) << bad;
  }
}

// A plain-HTTP server on loopback: each request it reads (head and Content-Length body) goes to
// `handler`, which returns the bytes to answer and whether to close the connection after them.
class TestServer {
 public:
  struct Reply {
    std::string bytes;
    bool close = false;
  };
  using Handler = std::function<Reply(const std::string& request)>;

  explicit TestServer(Handler handler) : handler_(std::move(handler)) {
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
  ~TestServer() {
    stop_.store(true);
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }
  // Connections the server has closed (on loopback the client sees the FIN once this counts it).
  int closed() const { return closed_.load(); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Run() {
    while (!stop_.load()) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      accepted_.fetch_add(1);
      Serve(c);
      ::close(c);
      closed_.fetch_add(1);
    }
  }

  // One connection, request after request (one at a time: the transport does not pipeline).
  void Serve(int c) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t head_end;
      while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      size_t length = 0;
      size_t cl = in.find("Content-Length: ");
      if (cl != std::string::npos && cl < head_end) length = std::stoul(in.substr(cl + 16));
      while (in.size() < head_end + 4 + length) {
        ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      std::string request = in.substr(0, head_end + 4 + length);
      in.erase(0, request.size());
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(request);
      }
      Reply reply = handler_(request);
      size_t off = 0;
      while (off < reply.bytes.size()) {
        ssize_t n = ::send(c, reply.bytes.data() + off, reply.bytes.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
      }
      if (reply.close) return;
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> closed_{0};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

std::string Ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

TransportPtr Native(const std::string& url, const std::string& token = "") {
  Config c;
  c.server = url;
  c.token = token;
  ApiResult<TransportPtr> t = MakeHttp1Transport(c, CurlTransportOptions{});
  EXPECT_TRUE(t.ok());
  return t.value();
}

TEST(KubeHttp1Transport, SendsOneRequestWithItsHeadersAndKeepsTheConnection) {
  TestServer server([](const std::string&) { return TestServer::Reply{Ok("{\"a\":1}")}; });
  TransportPtr t = Native(server.url(), "secret-token");
  HttpRequest post{"POST", "/api/v1/namespaces/ns/events", "application/json", "{\"x\":2}",
                   std::chrono::seconds(10)};
  ApiResult<HttpResponse> r1 = t->Do(post);
  ASSERT_TRUE(r1.ok()) << r1.error().ToString();
  EXPECT_EQ(r1.value().status, 200);
  EXPECT_EQ(r1.value().body, "{\"a\":1}");
  ApiResult<HttpResponse> r2 = t->Do(HttpRequest{"GET", "/api/v1/pods", "", "", {}});
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();

  std::vector<std::string> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rfind("POST /api/v1/namespaces/ns/events HTTP/1.1\r\n", 0), 0u) << got[0];
  EXPECT_NE(got[0].find("\r\nAuthorization: Bearer secret-token\r\n"), std::string::npos);
  EXPECT_NE(got[0].find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(got[0].find("\r\nContent-Length: 7\r\n\r\n{\"x\":2}"), std::string::npos);
  EXPECT_NE(got[0].find("\r\nHost: 127.0.0.1:"), std::string::npos);
  EXPECT_EQ(got[0].find("Expect:"), std::string::npos);  // no 100-continue round trip
  EXPECT_EQ(got[1].rfind("GET /api/v1/pods HTTP/1.1\r\n", 0), 0u) << got[1];
  EXPECT_EQ(got[1].find("Content-Length"), std::string::npos);
  // Both on one connection.
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(t->stats().connections, 1u);
  EXPECT_EQ(t->stats().requests, 2u);
}

TEST(KubeHttp1Transport, ResendsOnANewConnectionWhenTheKeptOneWasClosed) {
  // The server closes every connection after its answer without saying so (no Connection:
  // close), like a server whose idle timeout struck between two requests.
  TestServer server([](const std::string&) { return TestServer::Reply{Ok("{}"), true}; });
  TransportPtr t = Native(server.url());
  for (int i = 0; i < 3; ++i) {
    ApiResult<HttpResponse> r = t->Do(HttpRequest{"PUT", "/x", "application/json", "{}", {}});
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().ToString();
    EXPECT_EQ(r.value().status, 200);
  }
  EXPECT_EQ(server.requests().size(), 3u);  // each sent once to a server that answered it
  EXPECT_EQ(server.accepted(), 3);
}

// A server that reads the second request on a kept-alive connection and closes it without an
// answer (a proxy cutting the connection, a crash after the write): the server may have carried
// it out. Every other request is answered.
TestServer::Reply SecondRequestLosesItsAnswer(std::atomic<int>& calls) {
  if (calls.fetch_add(1) == 1) return TestServer::Reply{"", true};
  return TestServer::Reply{Ok("{}")};
}

TEST(KubeHttp1Transport, AWriteWhoseAnswerWasLostIsNotSentAgain) {
  for (const char* method : {"POST", "PATCH"}) {
    std::atomic<int> calls{0};
    TestServer server([&](const std::string&) { return SecondRequestLosesItsAnswer(calls); });
    TransportPtr t = Native(server.url());
    ASSERT_TRUE(t->Do(HttpRequest{"GET", "/api/v1/pods", "", "", {}}).ok());
    ApiResult<HttpResponse> r = t->Do(
        HttpRequest{method, "/api/v1/namespaces/ns/pods/p/binding", "application/json", "{}", {}});
    ASSERT_FALSE(r.ok()) << method << " was sent again and answered";
    EXPECT_EQ(r.error().http_status, 0) << r.error().ToString();
    EXPECT_EQ(server.requests().size(), 2u) << method << ": the server saw it more than once";
  }
}

TEST(KubeHttp1Transport, AnIdempotentRequestWhoseAnswerWasLostIsSentAgain) {
  for (const char* method : {"GET", "PUT", "DELETE"}) {
    std::atomic<int> calls{0};
    TestServer server([&](const std::string&) { return SecondRequestLosesItsAnswer(calls); });
    TransportPtr t = Native(server.url());
    ASSERT_TRUE(t->Do(HttpRequest{"GET", "/api/v1/pods", "", "", {}}).ok());
    ApiResult<HttpResponse> r =
        t->Do(HttpRequest{method, "/api/v1/namespaces/ns/pods/p", "application/json", "{}", {}});
    ASSERT_TRUE(r.ok()) << method << ": " << r.error().ToString();
    EXPECT_EQ(r.value().status, 200);
    EXPECT_EQ(server.requests().size(), 3u);  // once lost, once answered on a new connection
    EXPECT_EQ(server.accepted(), 2);
  }
}

TEST(KubeHttp1Transport, AWriteIsNotSentOnAKeptConnectionTheServerClosed) {
  // The server closes every connection after its answer without saying so: a POST checks the
  // kept connection first and opens a new one, so it is sent once and succeeds.
  TestServer server([](const std::string&) { return TestServer::Reply{Ok("{}"), true}; });
  TransportPtr t = Native(server.url());
  for (int i = 0; i < 3; ++i) {
    while (server.closed() < i) std::this_thread::yield();
    ApiResult<HttpResponse> r =
        t->Do(HttpRequest{"POST", "/api/v1/namespaces/ns/events", "application/json", "{}", {}});
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().ToString();
    EXPECT_EQ(r.value().status, 200);
  }
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.accepted(), 3);
}

TEST(KubeHttp1Transport, ErrorStatusRetryAfterAndConnectionClose) {
  TestServer server([](const std::string&) {
    return TestServer::Reply{
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nConnection: close\r\n"
        "Content-Length: 4\r\n\r\nslow",
        true};
  });
  TransportPtr t = Native(server.url());
  for (int i = 0; i < 2; ++i) {
    ApiResult<HttpResponse> r = t->Do(HttpRequest{"GET", "/x", "", "", {}});
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r.value().status, 429);
    EXPECT_EQ(r.value().retry_after_seconds, 3);
    EXPECT_EQ(r.value().body, "slow");
  }
  EXPECT_EQ(server.accepted(), 2);  // Connection: close is honoured, not retried
  EXPECT_EQ(server.requests().size(), 2u);
}

std::string Gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(KubeHttp1Transport, StreamsAChunkedGzipBodyToTheSink) {
  std::string events;
  for (int i = 0; i < 200; ++i) {
    events += "{\"type\":\"ADDED\",\"object\":{\"n\":" + std::to_string(i) + "}}\n";
  }
  std::string gz = Gzip(events);
  TestServer server([&](const std::string&) {
    std::string r =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n";
    for (size_t off = 0; off < gz.size(); off += 100) {
      std::string piece = gz.substr(off, 100);
      char size[16];
      std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
      r += size + piece + "\r\n";
    }
    r += "0\r\n\r\n";
    return TestServer::Reply{r};
  });
  TransportPtr t = Native(server.url());
  std::string got;
  std::atomic<bool> cancel{false};
  ApiResult<HttpResponse> r = t->Stream(
      HttpRequest{"GET", "/w?watch=1", "", "", {}},
      [&](std::string_view chunk) {
        got.append(chunk);
        return true;
      },
      cancel);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r.value().status, 200);
  EXPECT_EQ(r.value().body, "");
  EXPECT_EQ(got, events);
  std::vector<std::string> reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_NE(reqs[0].find("\r\nAccept-Encoding: gzip\r\n"), std::string::npos);
}

TEST(KubeHttp1Transport, ACancelledStreamReturnsCancelled) {
  // Answers the head and one event, then nothing: the stream waits until cancelled.
  TestServer server([](const std::string&) {
    return TestServer::Reply{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"};
  });
  TransportPtr t = Native(server.url());
  std::atomic<bool> cancel{false};
  std::atomic<bool> first{false};
  std::thread canceller([&] {
    first.wait(false);
    cancel.store(true);
    t->Wake(cancel);
  });
  ApiResult<HttpResponse> r = t->Stream(
      HttpRequest{"GET", "/w?watch=1", "", "", {}},
      [&](std::string_view chunk) {
        EXPECT_EQ(chunk, "abc");
        first.store(true);
        first.notify_all();
        return true;
      },
      cancel);
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cancelled");
  EXPECT_TRUE(r.error().IsTransport());
}

TEST(KubeHttp1Transport, ARequestWithoutAnswerTimesOut) {
  std::atomic<bool> release{false};
  TestServer server([&](const std::string&) {
    release.wait(false);  // answers only after the client gave up
    return TestServer::Reply{Ok("{}")};
  });
  TransportPtr t = Native(server.url());
  ApiResult<HttpResponse> r =
      t->Do(HttpRequest{"GET", "/slow", "", "", std::chrono::milliseconds(50)});
  release.store(true);
  release.notify_all();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsTransport());
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  EXPECT_EQ(server.requests().size(), 1u);  // sent once: a timeout is not retried
}

TEST(KubeHttp1Transport, ASinkThatStopsEndsTheStreamAndDropsItsConnection) {
  TestServer server([](const std::string& request) {
    if (request.find("watch=1") != std::string::npos) {
      return TestServer::Reply{
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n"};
    }
    return TestServer::Reply{Ok("{}")};
  });
  TransportPtr t = Native(server.url());
  std::atomic<bool> cancel{false};
  int calls = 0;
  ApiResult<HttpResponse> r = t->Stream(
      HttpRequest{"GET", "/w?watch=1", "", "", {}},
      [&](std::string_view) {
        ++calls;
        return false;
      },
      cancel);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r.value().status, 200);
  EXPECT_EQ(calls, 1);
  // The stream's connection is not reused (the rest of its body is unread): a new one.
  ApiResult<HttpResponse> next = t->Do(HttpRequest{"GET", "/x", "", "", {}});
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(next.value().status, 200);
  EXPECT_EQ(t->stats().connections, 2u);
}

TEST(KubeHttp1Transport, NoServerIsATransportError) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);  // nothing listens on this port now
  TransportPtr t = Native("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  ApiResult<HttpResponse> r = t->Do(HttpRequest{"GET", "/x", "", "", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsTransport());
  EXPECT_NE(r.error().message.find("GET http://127.0.0.1:"), std::string::npos)
      << r.error().message;
}

// A BindRequest whose spec.podName holds CR/LF (test data) used to put the attacker's headers
// into the binder's authenticated request; names are now validated before any request is sent,
// and every path segment is percent-encoded.
TEST(KubeClientSafety, NamesWithCrLfNeverReachTheWire) {
  std::ifstream in(std::string(GANTRY_RELIABILITY_DATA_DIR) + "/bindrequest-podname-crlf.json");
  ASSERT_TRUE(in);
  auto br = cache::ConvertBindRequest(Object::parse(in));
  ASSERT_TRUE(br.ok()) << br.error();
  const std::string pod = br.value().pod_name;
  ASSERT_NE(pod.find("\r\n"), std::string::npos);

  TestServer server([](const std::string&) { return TestServer::Reply{Ok("{}")}; });
  Client client(Native(server.url(), "secret-token"), ClientOptions{});
  auto bind = client.BindPod("team-a", pod, "n1", "", Object::object());
  ASSERT_FALSE(bind.ok());
  EXPECT_NE(bind.error().message.find("invalid pod name"), std::string::npos);
  auto patch = client.Patch(resources::kPods, "team-a", pod, PatchType::kMerge,
                            Object{{"metadata", Object::object()}});
  EXPECT_FALSE(patch.ok());
  auto get = client.Get(resources::kPods, "team-a\r\nX-Injected: yes", "p");
  ASSERT_FALSE(get.ok());
  EXPECT_NE(get.error().message.find("invalid namespace"), std::string::npos);
  auto node = client.BindPod("team-a", "p", "n1\r\nX-Injected: yes", "", Object::object());
  EXPECT_FALSE(node.ok());
  EXPECT_TRUE(server.requests().empty());

  // Characters Kubernetes allows in names (':' in RBAC names) are sent percent-encoded.
  auto colon = client.Get(resources::kPods, "team-a", "system:p");
  ASSERT_TRUE(colon.ok()) << colon.error().ToString();
  std::vector<std::string> got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("GET /api/v1/namespaces/team-a/pods/system%3Ap HTTP/1.1\r\n", 0), 0u)
      << got[0];
}

TEST(KubeHttp1Transport, BodiesAndGunzipOutputAreCapped) {
  const std::string big(4096, 'a');
  TestServer server([&](const std::string& request) {
    if (request.find("/gzip") != std::string::npos) {
      const std::string gz = Gzip(big);
      return TestServer::Reply{"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " +
                               std::to_string(gz.size()) + "\r\n\r\n" + gz};
    }
    return TestServer::Reply{Ok(big)};
  });
  Config c;
  c.server = server.url();
  CurlTransportOptions options;
  options.max_body_bytes = 1024;
  ApiResult<TransportPtr> t = MakeHttp1Transport(c, options);
  ASSERT_TRUE(t.ok());
  for (const char* path : {"/plain", "/gzip"}) {
    ApiResult<HttpResponse> r = t.value()->Do(HttpRequest{"GET", path, "", "", {}});
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_NE(r.error().message.find("larger than 1024 bytes"), std::string::npos)
        << path << ": " << r.error().message;
  }
}

TEST(KubeHttp1Transport, AnOversizedResponseHeadIsRefused) {
  TestServer server([](const std::string&) {
    return TestServer::Reply{
        "HTTP/1.1 200 OK\r\nX-Big: " + std::string(2 << 20, 'h') + "\r\nContent-Length: 0\r\n\r\n",
        true};
  });
  TransportPtr t = Native(server.url());
  ApiResult<HttpResponse> r = t->Do(HttpRequest{"GET", "/x", "", "", {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("response head too large"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace gantry::kube
