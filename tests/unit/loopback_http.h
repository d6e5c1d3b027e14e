// Test helpers: one HTTP request to a server on 127.0.0.1, over a fresh connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace gantry::test_http {

// Sends `request` as written and returns the raw response ("connect failed" when nothing
// listens).
inline std::string LoopbackRequest(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "connect failed";
  }
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// GET `path`; the raw response.
inline std::string LoopbackGet(int port, const std::string& path) {
  return LoopbackRequest(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

}  // namespace gantry::test_http
