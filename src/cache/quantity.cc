#include "cache/quantity.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace gantry::cache {

std::optional<double> ParseQuantity(std::string_view text) {
  // <sign><digits>[.<digits>]<suffix>, suffix one of the binary (Ki..Ei), decimal (n u m "" k M
  // G T P E) or exponent (e<int> / E<int>) forms.
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) ++pos;
  const size_t digits_start = pos;
  bool dot = false;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || (text[pos] == '.' && !dot))) {
    dot = dot || text[pos] == '.';
    ++pos;
  }
  if (pos == digits_start || (pos == digits_start + 1 && dot)) return std::nullopt;
  const std::string number(text.substr(0, pos));
  char* end = nullptr;
  const double base = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  const std::string_view suffix = text.substr(pos);
  double scale = 1;
  if (suffix.empty()) {
    scale = 1;
  } else if (suffix == "Ki") {
    scale = 1024.0;
  } else if (suffix == "Mi") {
    scale = 1024.0 * 1024;
  } else if (suffix == "Gi") {
    scale = 1024.0 * 1024 * 1024;
  } else if (suffix == "Ti") {
    scale = std::pow(1024.0, 4);
  } else if (suffix == "Pi") {
    scale = std::pow(1024.0, 5);
  } else if (suffix == "Ei") {
    scale = std::pow(1024.0, 6);
  } else if (suffix == "n") {
    scale = 1e-9;
  } else if (suffix == "u") {
    scale = 1e-6;
  } else if (suffix == "m") {
    scale = 1e-3;
  } else if (suffix == "k") {
    scale = 1e3;
  } else if (suffix == "M") {
    scale = 1e6;
  } else if (suffix == "G") {
    scale = 1e9;
  } else if (suffix == "T") {
    scale = 1e12;
  } else if (suffix == "P") {
    scale = 1e15;
  } else if (suffix == "E") {
    scale = 1e18;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    const std::string exp(suffix.substr(1));
    if (exp.empty()) return std::nullopt;
    const long e = std::strtol(exp.c_str(), &end, 10);
    if (end != exp.c_str() + exp.size() || e < -30 || e > 30) return std::nullopt;
    scale = std::pow(10.0, static_cast<double>(e));
  } else {
    return std::nullopt;
  }
  const double v = base * scale;
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace gantry::cache
