// Duration strings as Kubernetes and KAI write them: Go's time.ParseDuration syntax ("1h30m",
// "2.5s", "-10s", "300ms", "0"), and Go's time.Duration.String() back. The one parser for the
// watch cache (Queue min-runtimes, PodGroup delays), the minruntime plugin's arguments and
// annotations, the pod-grouper's annotations and the scheduler's --period flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gantry {

enum class DurationUnits {
  kGo,              // ns, us (µs, μs), ms, s, m, h
  kGoDaysAndWeeks,  // also d and w (the str2duration parser KAI reads min-runtimes with)
};

namespace duration_detail {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Nanoseconds per unit; 0 when `unit` is not one.
inline int64_t UnitNanos(std::string_view unit, DurationUnits units) {
  constexpr int64_t kSecond = 1'000'000'000;
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return kSecond;
  if (unit == "m") return kSecond * 60;
  if (unit == "h") return kSecond * 3600;
  if (units == DurationUnits::kGoDaysAndWeeks) {
    if (unit == "d") return kSecond * 24 * 3600;
    if (unit == "w") return kSecond * 7 * 24 * 3600;
  }
  return 0;
}

// "value / unit" with the fraction's trailing zeros dropped.
inline std::string Fraction(int64_t value, int64_t unit) {
  std::string out = std::to_string(value / unit);
  const int64_t rest = value % unit;
  if (rest == 0) return out;
  std::string digits;
  for (int64_t scale = unit / 10; scale > 0; scale /= 10) {
    digits += static_cast<char>('0' + (rest / scale) % 10);
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return out + "." + digits;
}

}  // namespace duration_detail

// `[-+]?([0-9]*(\.[0-9]*)?unit)+`, or "0" with or without a sign, as nanoseconds. Exact for whole
// numbers of a unit; a fraction is scaled as Go scales it. Errors read as Go's ("time: invalid
// duration \"5 minutes\"", "time: missing unit in duration \"10\"", "time: unknown unit \"x\" in
// duration \"3x\""); beyond an int64 of nanoseconds (about 292 years) is invalid.
inline Result<int64_t> ParseGoDuration(std::string_view text,
                                       DurationUnits units = DurationUnits::kGo) {
  using duration_detail::IsDigit;
  const std::string quoted = "\"" + std::string(text) + "\"";
  auto invalid = [&] { return Error{"time: invalid duration " + quoted}; };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return int64_t{0};
  if (s.empty()) return invalid();

  // 2^63 nanoseconds: reachable only by a negative duration.
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || IsDigit(s[0]))) return invalid();
    uint64_t whole = 0;
    size_t i = 0;
    for (; i < s.size() && IsDigit(s[i]); ++i) {
      const auto digit = static_cast<uint64_t>(s[i] - '0');
      if (whole > (kLimit - digit) / 10) return invalid();
      whole = whole * 10 + digit;
    }
    const bool has_whole = i > 0;
    s.remove_prefix(i);
    // Fraction: digits past what fits in 63 bits are ignored.
    uint64_t frac = 0;
    double scale = 1;
    bool has_frac = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      size_t k = 0;
      bool saturated = false;
      for (; k < s.size() && IsDigit(s[k]); ++k) {
        const auto digit = static_cast<uint64_t>(s[k] - '0');
        if (saturated || frac > (kLimit - digit) / 10) {
          saturated = true;
          continue;
        }
        frac = frac * 10 + digit;
        scale *= 10;
      }
      has_frac = k > 0;
      s.remove_prefix(k);
    }
    if (!has_whole && !has_frac) return invalid();
    // The unit: everything up to the next digit or period.
    size_t u = 0;
    while (u < s.size() && !(s[u] == '.' || IsDigit(s[u]))) ++u;
    if (u == 0) return Error{"time: missing unit in duration " + quoted};
    const int64_t unit = duration_detail::UnitNanos(s.substr(0, u), units);
    if (unit == 0) {
      return Error{"time: unknown unit \"" + std::string(s.substr(0, u)) + "\" in duration " +
                   quoted};
    }
    s.remove_prefix(u);

    const auto unit_u = static_cast<uint64_t>(unit);
    if (whole > kLimit / unit_u) return invalid();
    uint64_t value = whole * unit_u;
    if (frac > 0) {
      value +=
          static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(unit) / scale));
      if (value > kLimit) return invalid();
    }
    if (total > kLimit - value) return invalid();
    total += value;
  }
  if (negative) return total == kLimit ? INT64_MIN : -static_cast<int64_t>(total);
  if (total > kLimit - 1) return invalid();
  return static_cast<int64_t>(total);
}

// The same in seconds.
inline Result<double> ParseGoDurationSeconds(std::string_view text,
                                             DurationUnits units = DurationUnits::kGo) {
  const Result<int64_t> ns = ParseGoDuration(text, units);
  if (!ns.ok()) return Error{ns.error()};
  return static_cast<double>(ns.value()) / 1e9;
}

// Go's time.Duration.String(): "1h30m0s", "2.5s", "300ms", "1.5µs", "0s".
inline std::string FormatGoDuration(int64_t ns) {
  using duration_detail::Fraction;
  if (ns == 0) return "0s";
  const std::string sign = ns < 0 ? "-" : "";
  const uint64_t u = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  if (u < 1000) return sign + std::to_string(u) + "ns";
  if (u > static_cast<uint64_t>(INT64_MAX)) return "-2562047h47m16.854775808s";
  const auto v = static_cast<int64_t>(u);
  if (u < 1000000) return sign + Fraction(v, 1000) + "\xC2\xB5s";
  if (u < 1000000000) return sign + Fraction(v, 1000000) + "ms";
  const int64_t hours = v / 3600000000000LL;
  int64_t rest = v % 3600000000000LL;
  const int64_t minutes = rest / 60000000000LL;
  rest %= 60000000000LL;
  std::string out = sign;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  return out + Fraction(rest, 1000000000) + "s";
}

}  // namespace gantry
