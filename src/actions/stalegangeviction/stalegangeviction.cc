// stalegangeviction: evicts what is left of gangs that lost pods.
//
// A job is stale when none of its pods has succeeded, at least one occupies a node (active-used),
// and some pod set has fewer active-used pods than its minimum. A stale job gets a stale
// timestamp (now, when it has none); once it has been stale for at least its grace period (the
// job's own spec.stalenessGracePeriod, else the scheduler's), every pod of it that is still
// allocated, pipelined, binding, bound or running is evicted as one gang. A negative grace period
// switches eviction off. A job that is not stale loses its timestamp.
#include <string>

#include "actions/builtin.h"
#include "framework/session.h"
#include "framework/statement.h"

namespace gantry {
namespace {

bool IsStale(const Session& ssn, JobId j) {
  const Job& job = ssn.cluster().jobs[j];
  bool any_active = false;
  for (PodId p : job.pods) {
    const PodStatus s = ssn.pod(p).status;
    if (s == PodStatus::kSucceeded) return false;
    any_active = any_active || IsActiveUsed(s);
  }
  if (!any_active) return false;
  for (int32_t ps = 0; ps < static_cast<int32_t>(job.pod_sets.size()); ++ps) {
    if (ssn.counters(j, ps).active_used < job.pod_sets[ps].min_available) return true;
  }
  return false;
}

// The eviction message KAI gives each pod of an evicted gang.
std::string GangEvictionMessage(const Job& job, const Pod& pod) {
  const std::string pod_ref = pod.namespace_ + "/" + pod.name;
  if (job.pod_sets.size() == 1 && job.pod_sets[0].name == "default") {
    return "Workload doesn't meet the minimum required number of pods (" +
           std::to_string(job.pod_sets[0].min_available) + "), evicting remaining pod: " + pod_ref;
  }
  const PodSet& ps = job.pod_sets[static_cast<size_t>(pod.pod_set)];
  return "Workload doesn't meet the minimum required number of pods (" +
         std::to_string(ps.min_available) + ") in sub-group " + ps.name +
         ", evicting remaining pod: " + pod_ref;
}

class StaleGangEvictionAction : public Action {
 public:
  std::string_view name() const override { return "stalegangeviction"; }

  void Execute(Session& ssn) override {
    const auto& jobs = ssn.cluster().jobs;
    for (JobId j = 0; j < static_cast<JobId>(jobs.size()); ++j) {
      JobState& state = ssn.job_state(j);
      if (!IsStale(ssn, j)) {
        state.stale_since_ms.reset();
        continue;
      }
      if (!state.stale_since_ms) state.stale_since_ms = ssn.now_ms();
      // The job's own grace period (spec.stalenessGracePeriod) overrides the scheduler's.
      const double grace_s = jobs[j].staleness_grace_period_seconds.value_or(
          ssn.params().staleness_grace_period_seconds);
      if (grace_s < 0) continue;
      const double stale_for_ms = static_cast<double>(ssn.now_ms() - *state.stale_since_ms);
      if (stale_for_ms < grace_s * 1000.0) continue;
      EvictGang(ssn, j);
    }
  }

 private:
  static void EvictGang(Session& ssn, JobId j) {
    const Job& job = ssn.cluster().jobs[j];
    Statement stmt(ssn);
    for (PodId p : job.pods) {
      // (A pod an earlier action of the session evicted and placed elsewhere is not asked again.)
      if (!ssn.Evictable(p)) continue;
      if (ssn.pod(p).node == kNone) continue;  // nothing to release
      stmt.Evict(p, GangEvictionMessage(job, ssn.cluster().pods[p]));
    }
    stmt.Commit();
  }
};

}  // namespace

void RegisterStaleGangEvictionAction(ActionRegistry& registry) {
  registry.Register("stalegangeviction",
                    [] { return ActionPtr(std::make_unique<StaleGangEvictionAction>()); });
}

}  // namespace gantry
