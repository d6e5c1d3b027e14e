#include "binder/log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

namespace gantry::binder {

void Log(const std::string& line) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ ", &tm);
  std::string out = stamp + line + "\n";
  // One write(2) per line: atomic with respect to other lines.
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, out.data(), out.size());
}

}  // namespace gantry::binder
