#include "model/resources.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace gantry {

bool ParseMigProfile(std::string_view name, int& gpus, int& memory_gb) {
  // "nvidia.com/mig-<g>g.<m>gb" with decimal digits only. Each number is limited to six digits
  // (real profiles have one or three), so neither can overflow an int.
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  if (!name.starts_with(kPrefix)) return false;
  std::string_view rest = name.substr(kPrefix.size());
  auto number = [&rest](int& out) {
    size_t n = 0;
    int v = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
      if (n == 6) return false;
      v = v * 10 + (rest[n] - '0');
      ++n;
    }
    if (n == 0) return false;
    rest.remove_prefix(n);
    out = v;
    return true;
  };
  int g = 0, m = 0;
  if (!number(g) || !rest.starts_with("g.")) return false;
  rest.remove_prefix(2);
  if (!number(m) || rest != "gb" || g <= 0 || m <= 0) return false;
  gpus = g;
  memory_gb = m;
  return true;
}

bool IsGpuDeviceClass(std::string_view name) {
  for (size_t i = 0; i + 3 <= name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) == 'g' &&
        std::tolower(static_cast<unsigned char>(name[i + 1])) == 'p' &&
        std::tolower(static_cast<unsigned char>(name[i + 2])) == 'u') {
      return true;
    }
  }
  return false;
}

int ResourceNames::Intern(std::string_view name) {
  int slot = Find(name);
  if (slot >= 0) return slot;
  if (size() >= kMaxScalarResources) return -1;
  names_.emplace_back(name);
  return size() - 1;
}

int ResourceNames::Find(std::string_view name) const {
  for (int i = 0; i < size(); ++i) {
    if (names_[static_cast<size_t>(i)] == name) return i;
  }
  return -1;
}

namespace {
// Shortest decimal digits that round-trip, and the decimal exponent: v = 0.d1d2... * 10^exp10.
void ShortestDigits(double v, std::string& digits, int& exp10) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // buf is "d.ddde[+-]XX" (v > 0).
  std::string s = buf;
  const auto e = s.find('e');
  digits = s.substr(0, 1) + (e > 2 ? s.substr(2, e - 2) : "");
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  exp10 = std::atoi(s.c_str() + e + 1) + 1;
}

// Shortest positional ('f') form of a non-negative finite value.
std::string ShortestFixed(double v) {
  if (v == 0) return "0";
  std::string digits;
  int exp10 = 0;
  ShortestDigits(v, digits, exp10);
  if (exp10 <= 0) return "0." + std::string(static_cast<size_t>(-exp10), '0') + digits;
  if (static_cast<size_t>(exp10) >= digits.size()) {
    return digits + std::string(static_cast<size_t>(exp10) - digits.size(), '0');
  }
  return digits.substr(0, static_cast<size_t>(exp10)) + "." +
         digits.substr(static_cast<size_t>(exp10));
}
}  // namespace

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  const std::string sign = v < 0 ? "-" : "";
  const double a = std::fabs(v);
  std::string digits;
  int exp10 = 0;
  ShortestDigits(a, digits, exp10);
  const int exponent = exp10 - 1;
  // Go's %v (strconv 'g' with the shortest precision): exponent form when the decimal exponent
  // is < -4 or >= 6.
  if (exponent < -4 || exponent >= 6) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1) mantissa += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + mantissa + exp;
  }
  return sign + ShortestFixed(a);
}

std::string Humanize(double value, double divisor) {
  // go-humanize's FtoaWithDigits: the shortest form, cut (not rounded) to 3 decimals.
  if (value == kUnlimited) return "Unlimited";
  const double v = value / divisor;
  if (!std::isfinite(v)) return FormatNumber(v);
  std::string s = (v < 0 ? "-" : "") + ShortestFixed(std::fabs(v));
  const auto dot = s.find('.');
  if (dot != std::string::npos) {
    if (s.size() > dot + 4) s.resize(dot + 4);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

}  // namespace gantry
