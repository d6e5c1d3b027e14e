// What reclaim, preempt and consolidation share around the victim search: the options of their
// pending-jobs order and the victims queues they build for it.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry {

// The pending jobs an eviction action visits (non-preemptible ones left out with
// `non_preemptible_filter`; jobs inside their preemption delay always).
JobsOrderOptions PendingJobs(bool non_preemptible_filter = false);
// PendingJobs, after recording the PreemptionDelayNotElapsed fit error of each job left out
// only by its preemption delay (framework/preemption_delay.h).
JobsOrderOptions EvictingJobs(Session& ssn, bool non_preemptible_filter = false);

// The jobs of `candidates` (in increasing id order) that pass `keep`, as a victims queue.
std::unique_ptr<JobsByQueue> VictimsQueue(const Session& ssn, JobsOrderOptions options,
                                          std::span<const JobId> candidates,
                                          const std::function<bool(JobId)>& keep);

// Every job of the cluster, in id order.
std::unique_ptr<JobsByQueue> VictimsQueue(const Session& ssn, JobsOrderOptions options,
                                          const std::function<bool(JobId)>& keep);

// Whether some pod of the job is alive.
bool HasAlivePod(const Session& ssn, JobId j);

}  // namespace gantry
