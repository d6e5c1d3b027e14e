// proportion: queue fair share and everything decided by it (KAI's proportion plugin).
//
// At session open the plugin divides the cluster among the queue tree (resource_division.h). It
// then keeps each queue's allocation current as pods are placed or evicted, orders queues
// (queue_order.cc: under-served first, dominant-resource share), rejects jobs that would exceed a
// queue limit or, when non-preemptible, the deserved quota (capacity_policy.cc), and decides which
// reclaims are acceptable (reclaimable.cc, with the bounds of rejection_rules.cc for the victim
// search). plugin.h declares the plugin's class, one section per file.
//
// Arguments: kValue (>= 0, weight of historical usage; default 1), reclaimerUtilizationMultiplier
// (>= 1; default 1; also accepted under KAI's spelling relcaimerSaturationMultiplier).
#pragma once

#include "plugins/proportion/resource_division.h"
#include "plugins/proportion/resource_share.h"
