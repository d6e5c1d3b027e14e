// Fair-share division (KAI's resource_division package): at session open the cluster's CPU,
// memory and GPUs are divided among the queue tree, top down. At each level every queue first
// receives its deserved quota (capped by what it requests and by its limit), then what is left is
// split among queues that still want more, by priority (higher first) and in proportion to
// over-quota weight, in whole units with the remainder handed out one unit at a time.
#pragma once

#include <vector>

#include "model/cluster.h"
#include "plugins/proportion/resource_share.h"

namespace gantry::proportion {

// Divides `total` among `queues` (siblings) for every resource, filling fair_share. `shares`
// is indexed by QueueId; only the listed siblings are touched.
void DivideAmongSiblings(const Cluster& cluster, const Quantities& total, double k_value,
                         const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares);

// Computes every queue's fair share top down from `total`.
void ComputeFairShares(const Cluster& cluster, const Quantities& total, double k_value,
                       std::vector<QueueShare>& shares);

}  // namespace gantry::proportion
