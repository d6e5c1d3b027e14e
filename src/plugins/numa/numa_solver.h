// NUMA alignment as the kubelet's Topology Manager would do it, on a node's per-zone ledger (the
// numa plugin's model; KAI's plugins/numa evaluator). Pure functions over plain vectors so the
// rules can be tested on their own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/numa.h"

namespace gantry::numa {

// One node's zones as the plugin tracks them: the NUMA-aware resources (those some zone names,
// sorted by name) and, per zone, their allocatable and available amounts.
struct ZoneLedger {
  NumaPolicy policy = NumaPolicy::kNone;
  NumaScope scope = NumaScope::kContainer;
  std::vector<std::string> resources;
  std::vector<std::string> zone_ids;
  std::vector<std::vector<double>> allocatable;  // [zone][resource]
  std::vector<std::vector<double>> available;    // [zone][resource]
  // Per resource: sums of the k+1 largest zone allocatables (k = 0..zones-1).
  std::vector<std::vector<double>> allocatable_prefix;

  // Builds the ledger of a node's topology. Resources named by no zone are not NUMA-aware.
  static ZoneLedger From(const NumaTopology& topo);
  int ResourceIndex(const std::string& name) const;
  int ZoneIndex(const std::string& id) const;
};

// Amounts per zone of one placement: zone index -> amount per ledger resource.
using ZoneAllocation = std::map<int, std::vector<double>>;

// Whether `request` (an amount per ledger resource; only the `aligned` resources count) can be
// aligned under the ledger's policy; fills `alloc` (if given) with the amounts drawn per zone.
//  single-numa-node: the first zone that holds the whole request;
//  restricted:       the fewest zones whose allocatable could hold each resource (the same count
//                    for every requested resource), the first such zone set in index order whose
//                    available amounts hold it;
//  best-effort:      zones greedily by how much of the rest they cover, until covered.
bool Solve(const ZoneLedger& ledger, const std::vector<bool>& aligned,
           const std::vector<double>& request, ZoneAllocation* alloc);

}  // namespace gantry::numa
