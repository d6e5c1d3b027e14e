// What a NUMA-accounting plugin (plugins/numa) exposes of its per-session state to readers that
// are not plugins: the conformance runner's checks and the live mode's placement annotations.
#pragma once

#include <vector>

#include "model/cluster.h"

namespace gantry {

class NumaView {
 public:
  virtual ~NumaView() = default;
  // Available amounts per zone of node n (indexed like the node's numa_topology zones), or null
  // when the node has no NUMA topology.
  virtual const std::vector<ResourceAmounts>* ZonesAvailable(NodeId n) const = 0;
  // The zone indices of pod p's current NUMA placement (empty: none).
  virtual std::vector<int> ZonesOf(PodId p) const = 0;
};

}  // namespace gantry
