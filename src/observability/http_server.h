// A small HTTP/1.1 server for a component's operational endpoints: Prometheus /metrics, the
// liveness probe /healthz and the readiness probe /readyz. It is not a general web server: it
// serves GET and HEAD of fixed paths, answers each request on its own connection and closes it
// ("Connection: close"), and bounds what a client can make it do (header size, read and write
// timeouts, concurrent connections).
//
//   obs::Registry registry;
//   obs::HttpServer server({.address = ":8080"});
//   obs::ServeObservability(server, registry, [&] { return obs::Readiness{cache_synced, "..."}; });
//   if (auto bound = server.Start(); !bound.ok()) die(bound.error());
//   ...
//   server.Stop();  // from any thread; returns once no handler runs any more
//
// Handlers run on the server's threads (one per connection, at most max_connections at once;
// further connections are answered 503 at once) and must be thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "observability/metrics.h"
#include "util/status.h"

namespace gantry::obs {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Path without the query string ("/metrics" for "/metrics?x=1").
using HttpHandler = std::function<HttpResponse(const std::string& path)>;

struct HttpServerOptions {
  // "host:port", ":port" (every interface, IPv6 and IPv4 when the machine has IPv6), or
  // "[v6addr]:port". Port 0 picks a free port (see port()).
  std::string address = ":8080";
  std::chrono::milliseconds io_timeout{5'000};  // per read or write of a connection
  int max_connections = 16;
  size_t max_header_bytes = size_t{16} * 1024;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers `handler` for GET and HEAD of exactly `path`. Before Start() only.
  void Handle(std::string path, HttpHandler handler);

  // Binds and listens, then serves on a thread of its own. Fails naming the address when it
  // cannot be parsed, resolved or bound. Call at most once.
  Result<bool> Start();
  // The bound port (after a successful Start()).
  int port() const { return port_; }

  // Stops accepting, interrupts connections in progress and joins every thread. Idempotent;
  // thread-safe.
  void Stop();

 private:
  void AcceptLoop();
  void Serve(int fd);
  HttpResponse Dispatch(const std::string& method, const std::string& target) const;

  HttpServerOptions options_;
  std::map<std::string, HttpHandler> handlers_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written by Stop() to end the accept loop's poll
  int port_ = 0;
  std::thread acceptor_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<int, std::thread> connections_;  // by socket fd, while being served
  std::vector<std::thread> finished_;       // to be joined
  std::once_flag stop_once_;
};

// What /readyz reports: 200 "ok" when ready, otherwise 503 with the message.
struct Readiness {
  bool ready = false;
  std::string message;
};

// Registers /metrics (the registry's exposition), /healthz (200 "ok" while the process serves)
// and /readyz (from `readiness`, called per request; must be thread-safe).
void ServeObservability(HttpServer& server, const Registry& registry,
                        std::function<Readiness()> readiness);

// Registers /healthz and /readyz only: a separate probe port, as controller-runtime's
// --health-probe-bind-address serves them apart from /metrics.
void ServeProbes(HttpServer& server, std::function<Readiness()> readiness);

}  // namespace gantry::obs
