// Synthetic clusters for benchmarks and simulations, built directly in memory.
#pragma once

#include <cstdint>

#include "model/cluster.h"

namespace gantry::sim {

// The shape of KAI's ReclaimLargeJobs benchmark: `nodes` nodes of 8 GPUs fully used by
// nodes x 8 running one-GPU jobs (priority 50) in queue-0 (GPU quota 0, over-quota weight 0), and
// one pending job of nodes/10 pods x 8 GPUs (priority 50, gang minimum = its pod count) in
// queue-1 (GPU quota nodes x 8, over-quota weight 0); both queues under one parent with
// unlimited quota.
Cluster ReclaimLargeJobsCluster(int nodes);

}  // namespace gantry::sim
