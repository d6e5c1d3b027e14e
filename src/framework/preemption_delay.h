// Preemption delay (PodGroup spec.preemptionDelay, set from the kai.scheduler/preemption-delay
// pod annotation): the minimum time a job must exist, or must have gone since this session last
// evicted one of its pods, before it may trigger evictions. It keeps the job out of the
// preemptor / reclaimer queues of reclaim, preempt and consolidation; it neither stops the job
// from being allocated into free capacity nor protects it as a victim.
#pragma once

#include <optional>
#include <string>

#include "framework/jobs_by_queue.h"
#include "model/cluster.h"

namespace gantry {

class Session;

// The job fit error reason recorded for a job left out because of its delay.
inline constexpr const char* kPreemptionDelayNotElapsed = "PreemptionDelayNotElapsed";

// When the job's delay ends (anchor: the later of its creation and its last eviction in this
// session), or nothing when it has no delay (unset or <= 0).
std::optional<int64_t> PreemptionDelayEndMs(const Session& ssn, JobId j);
bool WithinPreemptionDelay(const Session& ssn, JobId j);

// For every job the eviction actions' job queue (`options`, with filter_within_preemption_delay)
// would leave out only because of its delay: records the PreemptionDelayNotElapsed job fit error
// once ("Workload is within its preemption delay window (<Go duration>) and may not trigger
// evictions before <RFC 3339 time>").
void RecordPreemptionDelayErrors(Session& ssn, const JobsOrderOptions& options);

// Go's time.Duration.String() for a number of seconds ("10m0s", "1h0m0s", "1.5s").
std::string GoDurationString(double seconds);
// UTC RFC 3339 with seconds ("2023-11-14T22:13:20Z").
std::string Rfc3339Utc(int64_t ms);

}  // namespace gantry
