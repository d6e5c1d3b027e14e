#include "kube/time_format.h"

#include <cstdio>
#include <ctime>

namespace gantry::kube {

namespace {

std::string Format(std::chrono::system_clock::time_point t, bool micro) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  int64_t secs = us / 1'000'000;
  int64_t frac = us % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  if (micro) {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(frac));
  } else {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) { return Format(t, false); }
std::string FormatMicroTime(std::chrono::system_clock::time_point t) { return Format(t, true); }

std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view s) {
  std::tm tm{};
  int consumed = 0;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  std::string_view rest = s.substr(19);
  int64_t micros = 0;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    int digits = 0;
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      if (digits < 6) micros = micros * 10 + (rest.front() - '0');
      ++digits;
      rest.remove_prefix(1);
    }
    if (digits == 0) return std::nullopt;
    for (int d = digits; d < 6; ++d) micros *= 10;
  }
  if (rest != "Z") return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::time_t tt = timegm(&tm);
  return std::chrono::system_clock::time_point(std::chrono::seconds(tt)) +
         std::chrono::microseconds(micros);
}

}  // namespace gantry::kube
