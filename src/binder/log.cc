#include "binder/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace gantry::binder {

void Log(const std::string& line) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03dZ ", static_cast<int>(ms.count()));
  std::string out = std::string(stamp) + millis + line + "\n";
  // One write(2) per line: atomic with respect to other lines.
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, out.data(), out.size());
}

}  // namespace gantry::binder
