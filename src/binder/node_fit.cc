#include "binder/node_fit.h"

#include <algorithm>
#include <limits>

#include "kube/client.h"
#include "kube/quantity.h"

namespace gantry::binder {

std::optional<int64_t> ParseQuantity(std::string_view s, int64_t scale) {
  auto q = kube::Quantity::Parse(s);
  if (!q.ok()) return std::nullopt;
  return q.value().CeilScaled(scale);
}

namespace {

int64_t UnitsPerAmount(const std::string& name) { return name == "cpu" ? 1000 : 1; }

int64_t AddSat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<int64_t>::max() : 0;
  return r;
}

void Add(ResourceAmounts& into, const ResourceAmounts& add) {
  for (const auto& [name, v] : add) into[name] = AddSat(into[name], v);
}

}  // namespace

ResourceAmounts AmountsOf(const nlohmann::json& list) {
  ResourceAmounts out;
  if (!list.is_object()) return out;
  for (const auto& [name, value] : list.items()) {
    auto q = kube::Quantity::FromJson(value);
    if (q.ok()) out[name] = q.value().CeilScaled(UnitsPerAmount(name));
  }
  return out;
}

Result<ResourceAmounts> PodRequests(const nlohmann::json& pod) {
  static const nlohmann::json no_spec = nlohmann::json::object();
  const auto spec = pod.is_object() ? pod.find("spec") : pod.end();
  auto requests = kube::PodSpecRequests(spec == pod.end() ? no_spec : *spec);
  if (!requests.ok()) return Error{requests.error()};
  ResourceAmounts out;
  for (const auto& [name, q] : requests.value()) out[name] = q.CeilScaled(UnitsPerAmount(name));
  return out;
}

bool PodOccupiesNode(const nlohmann::json& pod) {
  std::string phase = kube::StringAt(pod, {"status", "phase"});
  return phase != "Succeeded" && phase != "Failed";
}

ResourceAmounts RequestsOfBoundPod(const nlohmann::json& pod) {
  // A pod the API server accepted has valid requests; one that does not parse holds nothing
  // this check could count.
  auto r = PodRequests(pod);
  return r.ok() ? std::move(r).value() : ResourceAmounts{};
}

void PodRequestsMemo::AddTo(ResourceAmounts& into, const nlohmann::json& pod) {
  std::string key = kube::UidOf(pod);
  const std::string version = kube::ResourceVersionOf(pod);
  if (key.empty() || version.empty()) {
    Add(into, RequestsOfBoundPod(pod));
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
  ResourceAmounts requests = RequestsOfBoundPod(pod);
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
    const std::vector<std::shared_ptr<const nlohmann::json>>& pods_on_node, PodRequestsMemo* memo,
    const std::set<std::string>& dra_backed) {
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
      Add(used, RequestsOfBoundPod(other));
    }
    ++pods;
  }
  if (auto slots = allocatable.find("pods");
      slots != allocatable.end() && pods + 1 > slots->second) {
    return "node " + node_name + " has no free pod slot (" + std::to_string(pods) + " of " +
           std::to_string(slots->second) + " used)";
  }
  auto wanted = PodRequests(pod);
  if (!wanted.ok()) {
    std::string why = "pod " + kube::NamespaceOf(pod);
    why += "/";
    why += kube::NameOf(pod);
    why += ": ";
    why += wanted.error();
    return why;
  }
  for (const auto& [name, want] : wanted.value()) {
    if (want <= 0) continue;
    auto a = allocatable.find(name);
    int64_t total = a == allocatable.end() ? 0 : a->second;
    if (total == 0 && dra_backed.count(name)) continue;
    int64_t free = std::max<int64_t>(0, total - used[name]);
    if (want > free) {
      auto show = [&](int64_t v) {
        return name == "cpu" ? std::to_string(v) + "m" : std::to_string(v);
      };
      std::string why = "node ";
      why += node_name;
      why += " has ";
      why += show(free);
      why += " of ";
      why += name;
      why += " free, the pod requests ";
      why += show(want);
      return why;
    }
  }
  return std::nullopt;
}

}  // namespace gantry::binder
