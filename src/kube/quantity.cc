#include "kube/quantity.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace gantry::kube {

namespace {

using Nanos = Quantity::Nanos;

// Amounts saturate here (1e36 nano-units, far above any real resource and far below the int128
// limit, so a saturated value can still be added to without overflow).
constexpr Nanos kCap = static_cast<Nanos>(1'000'000'000'000'000'000) * 1'000'000'000'000'000'000;

Nanos MulSat(Nanos a, Nanos b) {  // both non-negative
  if (a == 0 || b == 0) return 0;
  if (a > kCap / b) return kCap;
  return a * b;
}

Nanos PowSat(Nanos base, int exp) {
  Nanos r = 1;
  for (int i = 0; i < exp && r < kCap; ++i) r = MulSat(r, base);
  return r;
}

std::string Digits(Nanos v) {  // v >= 0
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  auto malformed = [&] { return Error{"malformed quantity \"" + std::string(text) + "\""}; };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  Nanos mantissa = 0;
  int frac_digits = 0, digits = 0;
  bool dot = false, dropped_nonzero = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    ++digits;
    if (mantissa < kCap / 10) {
      mantissa = mantissa * 10 + (c - '0');
      if (dot) ++frac_digits;
    } else if (!dot) {
      mantissa = kCap;  // absurdly many integer digits: saturate
    } else if (c != '0') {
      dropped_nonzero = true;  // fractional digits past the precision only round up
    }
  }
  if (digits == 0) return malformed();
  const std::string_view suffix = text.substr(i);
  int exp10 = 0, exp1024 = 0;
  bool known = false;
  static constexpr std::pair<std::string_view, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                                 {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
      {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  for (auto [name, e] : kBinary) {
    if (suffix == name) known = true, exp1024 = e;
  }
  for (auto [name, e] : kDecimal) {
    if (suffix == name) known = true, exp10 = e;
  }
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    bool neg_exp = false;
    if (suffix[j] == '+' || suffix[j] == '-') neg_exp = suffix[j++] == '-';
    int e = 0;
    const size_t start = j;
    for (; j < suffix.size() && suffix[j] >= '0' && suffix[j] <= '9'; ++j) {
      e = std::min(e * 10 + (suffix[j] - '0'), 1000);
    }
    if (j == suffix.size() && j > start) known = true, exp10 = neg_exp ? -e : e;
  }
  if (!known) return malformed();

  // value = mantissa * 1024^exp1024 * 10^(exp10 - frac_digits), in nano-units: * 10^9.
  Nanos num = MulSat(mantissa, PowSat(1024, exp1024));
  const int e = exp10 - frac_digits + 9;
  Nanos nanos = 0;
  if (e >= 0) {
    nanos = MulSat(num, PowSat(10, e));
  } else if (-e > 36) {
    nanos = num > 0 ? 1 : 0;  // a positive amount below one nano-unit rounds up to one
  } else {
    const Nanos den = PowSat(10, -e);
    nanos = num / den + (num % den != 0 ? 1 : 0);
  }
  if (dropped_nonzero && nanos < kCap) ++nanos;
  return Quantity(negative ? -nanos : nanos);
}

Result<Quantity> Quantity::FromJson(const nlohmann::json& value) {
  if (value.is_string()) return Parse(value.get<std::string>());
  if (value.is_number()) return Parse(value.dump());
  return Error{"must be a quantity (a string such as \"500m\" or \"1Gi\")"};
}

double Quantity::Value() const { return static_cast<double>(nanos_) / 1e9; }

int64_t Quantity::CeilScaled(int64_t per_unit) const {
  // nanos * per_unit / 1e9, rounded towards +inf.
  constexpr Nanos kNano = 1'000'000'000;
  const Nanos num = nanos_ < 0 ? -MulSat(-nanos_, per_unit) : MulSat(nanos_, per_unit);
  Nanos q = num / kNano;
  if (num % kNano > 0) ++q;
  constexpr Nanos kMax = std::numeric_limits<int64_t>::max();
  if (q > kMax) return std::numeric_limits<int64_t>::max();
  if (q < -kMax) return -std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(q);
}

std::string Quantity::ToString() const {
  const Nanos mag = nanos_ < 0 ? -nanos_ : nanos_;
  const std::string sign = nanos_ < 0 ? "-" : "";
  if (mag % 1'000'000'000 == 0) return sign + Digits(mag / 1'000'000'000);
  if (mag % 1'000'000 == 0) return sign + Digits(mag / 1'000'000) + "m";
  if (mag % 1'000 == 0) return sign + Digits(mag / 1'000) + "u";
  return sign + Digits(mag) + "n";
}

Quantity& Quantity::operator+=(const Quantity& o) {
  nanos_ = std::clamp<Nanos>(nanos_ + o.nanos_, -kCap, kCap);
  return *this;
}

void AddQuantities(ResourceQuantities& into, const ResourceQuantities& add) {
  for (const auto& [name, q] : add) into[name] += q;
}

Result<ResourceQuantities> ParseResourceList(const nlohmann::json* list, const std::string& field) {
  ResourceQuantities out;
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_object()) return Error{field + ": must be a map of quantities"};
  for (auto it = list->begin(); it != list->end(); ++it) {
    const std::string entry = field + "." + it.key();
    auto q = Quantity::FromJson(it.value());
    if (!q.ok()) return Error{entry + ": " + q.error()};
    if (q.value().negative()) return Error{entry + ": must not be negative"};
    out.emplace(it.key(), q.value());
  }
  return out;
}

namespace {

const nlohmann::json* Find(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

Result<ResourceQuantities> ContainerRequests(const nlohmann::json& c, const std::string& field) {
  const nlohmann::json* res = Find(c, "resources");
  if (res == nullptr || res->is_null()) return ResourceQuantities{};
  if (!res->is_object()) return Error{field + ".resources: must be an object"};
  // Requests default to limits (the API server does this for new pods; kept for objects created
  // before defaulting or served by other sources).
  auto limits = ParseResourceList(Find(*res, "limits"), field + ".resources.limits");
  if (!limits.ok()) return limits;
  auto requests = ParseResourceList(Find(*res, "requests"), field + ".resources.requests");
  if (!requests.ok()) return requests;
  ResourceQuantities out = std::move(limits).value();
  for (auto& [name, q] : requests.value()) out[name] = q;
  return out;
}

void MaxInto(ResourceQuantities& into, const ResourceQuantities& other) {
  for (const auto& [name, q] : other) {
    Quantity& cur = into[name];
    cur = std::max(cur, q);
  }
}

}  // namespace

Result<ResourceQuantities> PodSpecRequests(const nlohmann::json& spec) {
  static const nlohmann::json empty_list = nlohmann::json::array();
  auto list = [&](const char* key) -> Result<const nlohmann::json*> {
    const nlohmann::json* v = Find(spec, key);
    if (v == nullptr || v->is_null()) return &empty_list;
    if (!v->is_array()) return Error{std::string("spec.") + key + ": must be a list"};
    return v;
  };
  auto containers = list("containers");
  if (!containers.ok()) return Error{containers.error()};
  auto inits = list("initContainers");
  if (!inits.ok()) return Error{inits.error()};

  ResourceQuantities total;
  const nlohmann::json& cs = *containers.value();
  for (size_t i = 0; i < cs.size(); ++i) {
    auto r = ContainerRequests(cs[i], "spec.containers[" + std::to_string(i) + "]");
    if (!r.ok()) return r;
    AddQuantities(total, r.value());
  }
  ResourceQuantities sidecars;  // restartable init containers started so far
  ResourceQuantities init_peak;
  const nlohmann::json& is = *inits.value();
  for (size_t i = 0; i < is.size(); ++i) {
    auto r = ContainerRequests(is[i], "spec.initContainers[" + std::to_string(i) + "]");
    if (!r.ok()) return r;
    const nlohmann::json* policy = Find(is[i], "restartPolicy");
    if (policy != nullptr && policy->is_string() && policy->get<std::string>() == "Always") {
      AddQuantities(sidecars, r.value());
      MaxInto(init_peak, sidecars);
      continue;
    }
    ResourceQuantities during = sidecars;
    AddQuantities(during, r.value());
    MaxInto(init_peak, during);
  }
  AddQuantities(total, sidecars);
  MaxInto(total, init_peak);
  auto overhead = ParseResourceList(Find(spec, "overhead"), "spec.overhead");
  if (!overhead.ok()) return overhead;
  AddQuantities(total, overhead.value());
  return total;
}

}  // namespace gantry::kube
