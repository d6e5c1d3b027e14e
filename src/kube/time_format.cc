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

namespace {

// The digits s[pos, pos + n) as a number; -1 when one is not a digit.
int Digits(std::string_view s, size_t pos, size_t n) {
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

// Parsed by hand (once per converted object: sscanf and timegm cost more than the rest).
std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  const int year = Digits(s, 0, 4), mon = Digits(s, 5, 2), mday = Digits(s, 8, 2);
  const int hour = Digits(s, 11, 2), min = Digits(s, 14, 2), sec = Digits(s, 17, 2);
  if (year < 0 || mon < 1 || mon > 12 || mday < 1 || mday > 31 || hour < 0 || hour > 23 ||
      min < 0 || min > 59 || sec < 0 || sec > 60) {
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
  // RFC 3339 offsets: "Z" (or "z"), or "+hh:mm" / "-hh:mm".
  int64_t offset_secs = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const int oh = Digits(rest, 1, 2), om = Digits(rest, 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
    offset_secs = (rest[0] == '+' ? 1 : -1) * (int64_t{oh} * 3600 + int64_t{om} * 60);
  } else {
    return std::nullopt;
  }
  // As timegm: a day past the month's end rolls over, second 60 is the next minute's 0.
  const int64_t secs = DaysFromCivil(year, mon, 1) * 86400 + int64_t{mday - 1} * 86400 +
                       int64_t{hour} * 3600 + int64_t{min} * 60 + sec - offset_secs;
  // RFC 3339 spans years 0000-9999; the clock's 64-bit nanoseconds span about 1678-2262. Times
  // outside that saturate to the clock's first or last instant (order is kept; nothing wraps).
  using SystemClock = std::chrono::system_clock;
  const int64_t max_secs = std::chrono::duration_cast<std::chrono::seconds>(
                               SystemClock::time_point::max().time_since_epoch())
                               .count() -
                           1;
  const int64_t min_secs = std::chrono::duration_cast<std::chrono::seconds>(
                               SystemClock::time_point::min().time_since_epoch())
                               .count() +
                           1;
  if (secs > max_secs) return SystemClock::time_point::max();
  if (secs < min_secs) return SystemClock::time_point::min();
  return SystemClock::time_point(std::chrono::seconds(secs)) + std::chrono::microseconds(micros);
}

}  // namespace gantry::kube
