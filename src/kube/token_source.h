// The bearer token sent with each request: fixed (kubeconfig `token`) or read from a file
// (`tokenFile`, the in-cluster service-account token) and re-read whenever the file's
// modification time or size changes, since kubelet rotates projected tokens by replacing the
// file. Thread-safe.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <mutex>
#include <string>

namespace gantry::kube {

class TokenSource {
 public:
  // `file` empty: always `token`. Otherwise the file's content (trailing whitespace trimmed).
  TokenSource(std::string token, std::string file);

  // The current token. If the file cannot be read, the last token read is kept.
  std::string Get();

 private:
  std::mutex mu_;
  std::string token_;
  std::string file_;
  bool loaded_ = false;
  struct timespec mtime_ {};
  off_t size_ = 0;
};

}  // namespace gantry::kube
