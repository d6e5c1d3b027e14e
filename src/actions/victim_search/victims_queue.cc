#include "actions/victim_search/victims_queue.h"

#include <numeric>
#include <vector>

#include "framework/preemption_delay.h"

namespace gantry {

JobsOrderOptions PendingJobs(bool non_preemptible_filter) {
  JobsOrderOptions o;
  o.filter_non_pending = true;
  o.filter_unready = true;
  o.filter_non_preemptible = non_preemptible_filter;
  o.filter_within_preemption_delay = true;
  return o;
}

JobsOrderOptions EvictingJobs(Session& ssn, bool non_preemptible_filter) {
  const JobsOrderOptions o = PendingJobs(non_preemptible_filter);
  RecordPreemptionDelayErrors(ssn, o);
  return o;
}

// The jobs of `candidates` (in increasing id order) that pass `keep`, as a victims queue.
std::unique_ptr<JobsByQueue> VictimsQueue(const Session& ssn, JobsOrderOptions options,
                                          std::span<const JobId> candidates,
                                          const std::function<bool(JobId)>& keep) {
  options.victim_queue = true;
  auto queue = std::make_unique<JobsByQueue>(ssn, options);
  std::vector<JobId> jobs;
  for (JobId j : candidates) {
    if (keep(j)) jobs.push_back(j);
  }
  queue->InitializeWithJobs(jobs);
  return queue;
}

// Every job of the cluster, in id order.
std::unique_ptr<JobsByQueue> VictimsQueue(const Session& ssn, JobsOrderOptions options,
                                          const std::function<bool(JobId)>& keep) {
  std::vector<JobId> all(ssn.cluster().jobs.size());
  std::iota(all.begin(), all.end(), 0);
  return VictimsQueue(ssn, options, all, keep);
}

bool HasAlivePod(const Session& ssn, JobId j) {
  for (PodId p : ssn.cluster().jobs[j].pods) {
    if (IsAlive(ssn.pod(p).status)) return true;
  }
  return false;
}

}  // namespace gantry
