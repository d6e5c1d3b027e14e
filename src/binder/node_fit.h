// Whether a node still has room for a pod, computed from the API objects the way the kubelet
// admits pods: the pod's effective requests (containers, init containers, overhead) plus those of
// every pod already bound to the node and not finished must not exceed the node's allocatable,
// resource by resource, and the node must have a free pod slot.
//
// Quantities are Kubernetes resource quantities ("500m", "1.5", "64Gi", "1e3"); CPU is compared
// in millicores and everything else in whole units, each rounded up, as the scheduler does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/status.h"

namespace gantry::binder {

// Resource name -> amount (millicores for "cpu", whole units otherwise).
using ResourceAmounts = std::map<std::string, int64_t>;

// Parses a quantity (kube/quantity.h) into units of 1/`scale` (scale 1000 for millicores, 1
// otherwise), rounded up and saturated at INT64_MAX. nullopt when the text is not a quantity.
std::optional<int64_t> ParseQuantity(std::string_view text, int64_t scale = 1);

// A resource list ({"cpu": "2", "memory": "1Gi"}) in amounts; unparsable entries are skipped.
ResourceAmounts AmountsOf(const nlohmann::json& resource_list);

// The pod's effective requests (kube::PodSpecRequests: containers, init containers and sidecars,
// overhead), each rounded up to amounts; an error names the malformed field.
Result<ResourceAmounts> PodRequests(const nlohmann::json& pod);

// PodRequests of a pod already bound to a node; nothing when its requests do not parse.
ResourceAmounts RequestsOfBoundPod(const nlohmann::json& pod);

// Whether a pod on a node still counts against its capacity (not Succeeded or Failed).
bool PodOccupiesNode(const nlohmann::json& pod);

// PodRequests computed once per pod version: the requests of a pod with a uid and a
// resourceVersion are kept under those two (a new version is computed again), so checking a
// node's room parses each bound pod once, not once per bind to that node. Holds at most
// `capacity` versions (then starts over). Thread-safe.
class PodRequestsMemo {
 public:
  explicit PodRequestsMemo(size_t capacity = 200'000) : capacity_(capacity) {}
  // Adds the requests of `pod` to `into` (saturating).
  void AddTo(ResourceAmounts& into, const nlohmann::json& pod);
  size_t size() const;
  int64_t computed() const;  // pods whose requests were computed, not found

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, ResourceAmounts> by_version_;  // "<uid>@<resourceVersion>"
  int64_t computed_ = 0;
};

// Why `pod` does not fit on `node` given the pods already bound there (the pod itself, if among
// them, is ignored), e.g. "node n1 has 1 of nvidia.com/gpu free, the pod requests 2"; nullopt
// when it fits. `memo` (may be null) keeps the bound pods' requests between calls. Resources in
// `dra_backed` the node has none of are not checked: DRA devices serve them (KEP-5004; Kubernetes'
// fit check leaves such resources to the DRA allocator too).
std::optional<std::string> NodeFitError(
    const nlohmann::json& pod, const nlohmann::json& node,
    const std::vector<std::shared_ptr<const nlohmann::json>>& pods_on_node,
    PodRequestsMemo* memo = nullptr, const std::set<std::string>& dra_backed = {});

}  // namespace gantry::binder
