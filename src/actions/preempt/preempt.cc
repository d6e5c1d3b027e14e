// preempt: within one queue, a pending job evicts lower-priority preemptible jobs (KAI's
// actions/preempt), through the victim search (victim_search/solver.h).
#include <memory>
#include <span>
#include <vector>

#include "actions/builtin.h"
#include "actions/victim_search/solver.h"
#include "actions/victim_search/victims_queue.h"
#include "framework/jobs_by_queue.h"
#include "framework/statement.h"

namespace gantry {
namespace {

class PreemptAction : public Action {
 public:
  std::string_view name() const override { return "preempt"; }
  void Execute(Session& ssn) override {
    const ActionSearchBudget budget(ssn, EvictionAction::kPreempt);
    JobsOrderOptions options = EvictingJobs(ssn);
    options.max_jobs_per_queue = ssn.config().QueueDepth("preempt");
    JobsByQueue jobs(ssn, options);
    jobs.InitializeWithAllJobs();
    std::vector<PodId> tasks;
    // Victims are jobs of the preemptor's queue: each queue's jobs in id order, so a victims
    // queue looks only at those (the same jobs, in the same order, as a walk over every job).
    std::vector<std::vector<JobId>> queue_jobs(ssn.cluster().queues.size());
    for (JobId v = 0; v < static_cast<JobId>(ssn.cluster().jobs.size()); ++v) {
      const QueueId q = ssn.cluster().jobs[v].queue;
      if (q != kNone) queue_jobs[q].push_back(v);
    }
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      ssn.TasksToAllocate(j, tasks, /*real=*/false);
      if (!ssn.IsNonPreemptibleJobWithinQuota(j, tasks)) continue;
      SolverSpec spec;
      spec.action = EvictionAction::kPreempt;
      spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      spec.validator = [](const Session& s, const ScenarioInfo& sc) {
        return s.PreemptScenarioValid(sc);
      };
      spec.victims_queue = [&ssn, j, &queue_jobs] {
        JobsOrderOptions o;
        o.filter_non_pending = false;
        o.filter_unready = false;
        const Job& preemptor = ssn.cluster().jobs[j];
        std::span<const JobId> candidates;
        if (preemptor.queue != kNone) candidates = queue_jobs[preemptor.queue];
        // (Cheapest checks first; all but the plugins' filter, kept last, only read.)
        return VictimsQueue(ssn, o, candidates, [&ssn, j, &preemptor](JobId v) {
          const Job& victim = ssn.cluster().jobs[v];
          return victim.queue == preemptor.queue && v != j && victim.preemptible &&
                 victim.priority < preemptor.priority && ssn.NumEvictable(v) > 0 &&
                 HasAlivePod(ssn, v) && ssn.PreemptVictimFilter(j, v);
        });
      };
      ++ssn.action_counts().podgroups_acted_on;
      spec.budget = &budget;
      SolverResult r = SolveJob(ssn, j, spec);
      if (r.solved) {
        ++ssn.action_counts().preemption_attempts;
        ++ssn.action_counts().podgroups_scheduled;
        r.statement->Commit();
      }
      // (The time budget ran out: KAI's action stops searching.)
      if (r.stops_action) return;
    }
  }
};

}  // namespace

void RegisterPreemptAction(ActionRegistry& registry) {
  registry.Register("preempt", [] { return ActionPtr(std::make_unique<PreemptAction>()); });
}

}  // namespace gantry
