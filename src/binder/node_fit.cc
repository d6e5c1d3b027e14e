#include "binder/node_fit.h"

#include <algorithm>
#include <limits>

#include "kube/client.h"

namespace gantry::binder {

namespace {

__extension__ typedef __int128 Int128;

constexpr Int128 kCap = static_cast<Int128>(1'000'000'000'000'000'000) * 1'000'000'000'000'000'000;

// a * b, saturated at kCap (both non-negative).
Int128 MulSat(Int128 a, Int128 b) {
  if (a == 0 || b == 0) return 0;
  if (a > kCap / b) return kCap;
  return a * b;
}

Int128 Pow(Int128 base, int exp) {
  Int128 r = 1;
  for (int i = 0; i < exp; ++i) r = MulSat(r, base);
  return r;
}

}  // namespace

std::optional<int64_t> ParseQuantity(std::string_view s, int64_t scale) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  Int128 mantissa = 0;
  int frac_digits = 0, digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
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
    }
  }
  if (digits == 0) return std::nullopt;
  std::string_view suffix = s.substr(i);
  int exp10 = 0, exp1024 = 0;
  static constexpr std::pair<std::string_view, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                                 {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
      {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  bool known = false;
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
    size_t start = j;
    for (; j < suffix.size() && suffix[j] >= '0' && suffix[j] <= '9'; ++j) {
      e = std::min(e * 10 + (suffix[j] - '0'), 1000);
    }
    if (j == suffix.size() && j > start) known = true, exp10 = neg_exp ? -e : e;
  }
  if (!known) return std::nullopt;

  Int128 num = MulSat(MulSat(mantissa, scale), Pow(1024, exp1024));
  int e = exp10 - frac_digits;
  Int128 den = 1;
  if (e >= 0) {
    num = MulSat(num, Pow(10, e));
  } else if (-e > 36) {
    num = num > 0 ? 1 : 0, den = 1;  // a positive amount far below one unit rounds up to 1
  } else {
    den = Pow(10, -e);
  }
  Int128 q = num / den + (num % den != 0 ? 1 : 0);  // rounded up
  constexpr Int128 kMax = std::numeric_limits<int64_t>::max();
  if (negative) {
    Int128 floor_mag = num / den;
    return floor_mag >= kMax ? -std::numeric_limits<int64_t>::max()
                             : -static_cast<int64_t>(floor_mag);
  }
  return q >= kMax ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(q);
}

ResourceAmounts AmountsOf(const nlohmann::json& list) {
  ResourceAmounts out;
  if (!list.is_object()) return out;
  for (const auto& [name, value] : list.items()) {
    std::optional<int64_t> v;
    int64_t scale = name == "cpu" ? 1000 : 1;
    if (value.is_string()) {
      v = ParseQuantity(value.get<std::string>(), scale);
    } else if (value.is_number()) {
      v = ParseQuantity(value.dump(), scale);
    }
    if (v) out[name] = *v;
  }
  return out;
}

namespace {

int64_t AddSat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<int64_t>::max() : 0;
  return r;
}

void Add(ResourceAmounts& into, const ResourceAmounts& add) {
  for (const auto& [name, v] : add) into[name] = AddSat(into[name], v);
}

void Max(ResourceAmounts& into, const ResourceAmounts& other) {
  for (const auto& [name, v] : other) into[name] = std::max(into[name], v);
}

ResourceAmounts ContainerRequests(const nlohmann::json& container) {
  if (!container.is_object()) return {};
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return {};
  // Requests default to limits for resources that have only a limit (API defaulting does this
  // on create; this covers objects that bypassed it).
  ResourceAmounts out;
  if (auto l = res->find("limits"); l != res->end()) out = AmountsOf(*l);
  if (auto r = res->find("requests"); r != res->end()) {
    for (const auto& [name, v] : AmountsOf(*r)) out[name] = v;
  }
  return out;
}

}  // namespace

ResourceAmounts PodRequests(const nlohmann::json& pod) {
  ResourceAmounts app;
  const nlohmann::json empty = nlohmann::json::array();
  const auto& spec = pod.contains("spec") ? pod["spec"] : nlohmann::json::object();
  const auto& containers = spec.contains("containers") ? spec["containers"] : empty;
  const auto& inits = spec.contains("initContainers") ? spec["initContainers"] : empty;
  for (const auto& c : containers) Add(app, ContainerRequests(c));
  ResourceAmounts sidecars;  // restartable init containers started so far
  ResourceAmounts init_peak;
  for (const auto& c : inits) {
    ResourceAmounts r = ContainerRequests(c);
    if (c.is_object() && c.value("restartPolicy", "") == "Always") {
      Add(sidecars, r);
      Max(init_peak, sidecars);
    } else {
      ResourceAmounts during = sidecars;
      Add(during, r);
      Max(init_peak, during);
    }
  }
  Add(app, sidecars);
  Max(app, init_peak);
  if (spec.contains("overhead")) Add(app, AmountsOf(spec["overhead"]));
  return app;
}

bool PodOccupiesNode(const nlohmann::json& pod) {
  std::string phase = kube::StringAt(pod, {"status", "phase"});
  return phase != "Succeeded" && phase != "Failed";
}

void PodRequestsMemo::AddTo(ResourceAmounts& into, const nlohmann::json& pod) {
  std::string key = kube::UidOf(pod);
  const std::string version = kube::ResourceVersionOf(pod);
  if (key.empty() || version.empty()) {
    Add(into, PodRequests(pod));
    return;
  }
  key += '@';
  key += version;
  {
    std::lock_guard lock(mu_);
    if (auto it = by_version_.find(key); it != by_version_.end()) {
      Add(into, it->second);
      return;
    }
  }
  ResourceAmounts requests = PodRequests(pod);
  Add(into, requests);
  std::lock_guard lock(mu_);
  if (by_version_.size() >= capacity_) by_version_.clear();
  by_version_.emplace(std::move(key), std::move(requests));
  ++computed_;
}

size_t PodRequestsMemo::size() const {
  std::lock_guard lock(mu_);
  return by_version_.size();
}

int64_t PodRequestsMemo::computed() const {
  std::lock_guard lock(mu_);
  return computed_;
}

std::optional<std::string> NodeFitError(
    const nlohmann::json& pod, const nlohmann::json& node,
    const std::vector<std::shared_ptr<const nlohmann::json>>& pods_on_node, PodRequestsMemo* memo) {
  const std::string node_name = kube::NameOf(node);
  const std::string uid = kube::UidOf(pod);
  ResourceAmounts allocatable;
  if (node.contains("status") && node["status"].contains("allocatable")) {
    allocatable = AmountsOf(node["status"]["allocatable"]);
  }
  ResourceAmounts used;
  int64_t pods = 0;
  for (const auto& other_ptr : pods_on_node) {
    const nlohmann::json& other = *other_ptr;
    if (kube::UidOf(other) == uid || !PodOccupiesNode(other)) continue;
    if (memo != nullptr) {
      memo->AddTo(used, other);
    } else {
      Add(used, PodRequests(other));
    }
    ++pods;
  }
  if (auto slots = allocatable.find("pods");
      slots != allocatable.end() && pods + 1 > slots->second) {
    return "node " + node_name + " has no free pod slot (" + std::to_string(pods) + " of " +
           std::to_string(slots->second) + " used)";
  }
  for (const auto& [name, want] : PodRequests(pod)) {
    if (want <= 0) continue;
    auto a = allocatable.find(name);
    int64_t total = a == allocatable.end() ? 0 : a->second;
    int64_t free = std::max<int64_t>(0, total - used[name]);
    if (want > free) {
      auto show = [&](int64_t v) {
        return name == "cpu" ? std::to_string(v) + "m" : std::to_string(v);
      };
      return "node " + node_name + " has " + show(free) + " of " + name +
             " free, the pod requests " + show(want);
    }
  }
  return std::nullopt;
}

}  // namespace gantry::binder
