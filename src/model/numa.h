// NUMA layout of a node as the kubelet's Topology Manager reports it through a
// NodeResourceTopology object (topology.node.k8s.io), and where a pod's resources sit on it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gantry {

// Amounts per Kubernetes resource name: cpu in millicores, every other resource in its base unit
// (bytes, device count).
using ResourceAmounts = std::map<std::string, double>;

enum class NumaPolicy : uint8_t { kNone, kBestEffort, kRestricted, kSingleNumaNode };
enum class NumaScope : uint8_t { kContainer, kPod };

struct NumaZone {
  std::string id;  // durable zone id (e.g. "zone-0"); the zone's index is its position
  ResourceAmounts allocatable;
  ResourceAmounts available;  // as reported; may be rebuilt from placements at session open
};

struct NumaTopology {
  NumaPolicy policy = NumaPolicy::kNone;
  NumaScope scope = NumaScope::kContainer;
  std::vector<NumaZone> zones;
  // Whether `resource` is NUMA-aware on this node (named by at least one zone).
  bool IsAware(const std::string& resource) const {
    for (const NumaZone& z : zones) {
      if (z.allocatable.count(resource) || z.available.count(resource)) return true;
    }
    return false;
  }
};

// One zone's share of a pod's resources (the kai.scheduler/numa-placement-observed annotation).
struct NumaZonePlacement {
  std::string zone;  // zone id
  ResourceAmounts amount;
};

}  // namespace gantry
