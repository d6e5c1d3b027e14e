#include "observability/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gantry::obs {

namespace {

const char* StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

// Writes all of `data` or gives up after `timeout` without progress (or on an error).
void WriteAll(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    pollfd p{fd, POLLOUT, 0};
    int r = poll(&p, 1, static_cast<int>(timeout.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

std::string Render(const HttpResponse& r, bool with_body) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + StatusText(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  if (with_body) out += r.body;
  return out;
}

// Splits "host:port" / ":port" / "[v6]:port".
bool SplitAddress(const std::string& address, std::string& host, std::string& port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return std::stoi(port) <= 65535;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string path, HttpHandler handler) {
  handlers_[std::move(path)] = std::move(handler);
}

Result<bool> HttpServer::Start() {
  const std::string& address = options_.address;
  std::string host, port;
  if (!SplitAddress(address, host, port)) {
    return Error{"listen address \"" + address + "\": expected host:port, :port or [v6]:port"};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  int gai = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &list);
  if (gai != 0) return Error{"listen address \"" + address + "\": " + gai_strerror(gai)};
  // Every interface: prefer a dual-stack IPv6 socket, which also accepts IPv4.
  std::vector<addrinfo*> candidates;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (host.empty() && a->ai_family == AF_INET6) {
      candidates.insert(candidates.begin(), a);
    } else {
      candidates.push_back(a);
    }
  }
  std::string last_error = "no usable address";
  for (addrinfo* a : candidates) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ai_family == AF_INET6 && host.empty()) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
      listen_fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(list);
  if (listen_fd_ < 0) return Error{"listen on \"" + address + "\": " + last_error};

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    return Error{std::string("listen: pipe: ") + std::strerror(errno)};
  }
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void HttpServer::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int r = poll(fds, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (fds[1].revents & POLLIN) != 0 || stopping_.load()) break;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the connection stays in the backlog; don't spin on it meanwhile.
      if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;  // otherwise the client went away
    }
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done.swap(finished_);
      if (static_cast<int>(connections_.size()) >= options_.max_connections) {
        WriteAll(fd, Render({503, "text/plain; charset=utf-8", "too many connections\n"}, true),
                 std::chrono::milliseconds(100));
        close(fd);
      } else {
        connections_.emplace(fd, std::thread([this, fd] { Serve(fd); }));
      }
    }
    for (auto& t : done) t.join();
  }
}

void HttpServer::Serve(int fd) {
  std::string request;
  HttpResponse response;
  bool have_response = false;
  size_t header_end = std::string::npos;
  char buf[4096];
  while (header_end == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(options_.io_timeout.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      response = {408, "text/plain; charset=utf-8", "request timeout\n"};
      have_response = true;
      break;
    }
    if (r < 0) break;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed, or interrupted by Stop()
    request.append(buf, static_cast<size_t>(n));
    header_end = request.find("\r\n\r\n");
    if (header_end == std::string::npos && request.size() > options_.max_header_bytes) {
      response = {431, "text/plain; charset=utf-8", "request header too large\n"};
      have_response = true;
      break;
    }
  }
  bool head = false;
  if (header_end != std::string::npos) {
    // Request line: METHOD SP target SP HTTP/x.y
    std::string line = request.substr(0, request.find("\r\n"));
    size_t s1 = line.find(' ');
    size_t s2 = s1 == std::string::npos ? s1 : line.find(' ', s1 + 1);
    if (s1 == std::string::npos || s2 == std::string::npos ||
        line.compare(s2 + 1, 5, "HTTP/") != 0) {
      response = {400, "text/plain; charset=utf-8", "bad request line\n"};
    } else {
      std::string method = line.substr(0, s1);
      head = method == "HEAD";
      response = Dispatch(method, line.substr(s1 + 1, s2 - s1 - 1));
    }
    have_response = true;
  }
  if (have_response) WriteAll(fd, Render(response, !head), options_.io_timeout);
  shutdown(fd, SHUT_WR);

  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(fd);
  if (it != connections_.end()) {
    finished_.push_back(std::move(it->second));
    connections_.erase(it);
  }
  close(fd);
}

HttpResponse HttpServer::Dispatch(const std::string& method, const std::string& target) const {
  std::string path = target.substr(0, target.find('?'));
  auto it = handlers_.find(path);
  if (it == handlers_.end()) return {404, "text/plain; charset=utf-8", "not found\n"};
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  try {
    return it->second(path);
  } catch (const std::exception& e) {
    return {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
  }
}

void HttpServer::Stop() {
  std::call_once(stop_once_, [this] {
    stopping_.store(true);
    if (wake_pipe_[1] >= 0) {
      char c = 1;
      [[maybe_unused]] ssize_t n = write(wake_pipe_[1], &c, 1);
    }
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [fd, t] : connections_) shutdown(fd, SHUT_RDWR);  // wakes their poll / recv
      threads.swap(finished_);
    }
    for (auto& t : threads) t.join();
    // Connections still open finish promptly now; each moves itself to finished_.
    for (;;) {
      std::vector<std::thread> more;
      {
        std::lock_guard<std::mutex> lock(mu_);
        more.swap(finished_);
        if (more.empty() && connections_.empty()) break;
      }
      for (auto& t : more) t.join();
      if (more.empty()) std::this_thread::yield();
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    for (int& fd : wake_pipe_) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
    listen_fd_ = -1;
  });
}

void ServeProbes(HttpServer& server, std::function<Readiness()> readiness) {
  server.Handle("/healthz", [](const std::string&) { return HttpResponse{200, {}, "ok\n"}; });
  server.Handle("/readyz", [readiness = std::move(readiness)](const std::string&) {
    Readiness r = readiness ? readiness() : Readiness{true, ""};
    if (r.ready) return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
    return HttpResponse{503, "text/plain; charset=utf-8", "not ready: " + r.message + "\n"};
  });
}

void ServeObservability(HttpServer& server, const Registry& registry,
                        std::function<Readiness()> readiness) {
  server.Handle("/metrics", [&registry](const std::string&) {
    return HttpResponse{200, std::string(Registry::kContentType), registry.Expose()};
  });
  ServeProbes(server, std::move(readiness));
}

}  // namespace gantry::obs
