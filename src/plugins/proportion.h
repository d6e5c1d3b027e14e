// proportion: queue fair share and everything decided by it.
//
// At session open the plugin divides the cluster's CPU, memory and GPUs among the queue tree, top
// down: at each level every queue first receives its deserved quota (capped by what it requests
// and by its limit), then what is left is split among queues that still want more, by priority
// (higher first) and in proportion to over-quota weight, in whole units with the remainder handed
// out one unit at a time. The plugin then keeps each queue's allocation current as pods are
// placed or evicted, orders queues (under-served first, dominant-resource share), and rejects jobs
// that would exceed a queue limit or, when non-preemptible, the deserved quota.
//
// Arguments: kValue (>= 0, weight of historical usage; default 1), reclaimerUtilizationMultiplier
// (>= 1; default 1; also accepted under KAI's spelling relcaimerSaturationMultiplier).
#pragma once

#include <array>
#include <vector>

#include "model/cluster.h"
#include "model/resources.h"

namespace gantry::proportion {

// One resource of one queue.
struct ResourceShare {
  double deserved = 0;
  double fair_share = 0;
  double max_allowed = kUnlimited;
  double over_quota_weight = 0;
  double allocated = 0;
  double allocated_non_preemptible = 0;
  double request = 0;
  double usage = 0;  // historical usage, normalised to the cluster (0 when not tracked)

  // Request capped by the limit.
  double Requestable() const;
  // What the queue may hold without being over its share: max(deserved, fair share), capped.
  double Allocatable() const;
};

struct QueueShare {
  std::array<ResourceShare, 3> r;
  ResourceShare& operator[](QueueResource res) { return r[static_cast<int>(res)]; }
  const ResourceShare& operator[](QueueResource res) const { return r[static_cast<int>(res)]; }
  Quantities FairShare() const;
  Quantities Allocated() const;
  Quantities Deserved() const;
  Quantities AllocatableShare() const;
  double DominantShare(const Quantities& total) const;
};

// Divides `total` among `queues` (siblings) for every resource, filling fair_share. `shares`
// is indexed by QueueId; only the listed siblings are touched.
void DivideAmongSiblings(const Cluster& cluster, const Quantities& total, double k_value,
                         const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares);

// Computes every queue's fair share top down from `total`.
void ComputeFairShares(const Cluster& cluster, const Quantities& total, double k_value,
                       std::vector<QueueShare>& shares);

}  // namespace gantry::proportion
