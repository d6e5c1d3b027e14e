#include "model/resources.h"

#include <cmath>
#include <cstdio>

namespace gantry {

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

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e21) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string Humanize(double value, double divisor) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", value / divisor);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

}  // namespace gantry
