// preempt: within one queue, a pending job evicts lower-priority preemptible jobs (KAI's
// actions/preempt), through the victim search (victim_search/solver.h).
#include <algorithm>
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
    // Victims are preemptible jobs of the preemptor's queue with a lower priority. Each queue's
    // preemptible jobs by priority, so that a preemptor's candidates are a prefix; the victims
    // queue gets them in id order (the same jobs, in the same order, as a walk over every job
    // would give it). A queue of many pending jobs of one priority has no candidates at all,
    // instead of each of its jobs walking all the others.
    const Cluster& cl = ssn.cluster();
    std::vector<std::vector<JobId>> queue_jobs(cl.queues.size());
    for (JobId v = 0; v < static_cast<JobId>(cl.jobs.size()); ++v) {
      const QueueId q = cl.jobs[v].queue;
      if (q != kNone && cl.jobs[v].preemptible) queue_jobs[q].push_back(v);
    }
    for (auto& list : queue_jobs) {
      std::stable_sort(list.begin(), list.end(), [&cl](JobId a, JobId b) {
        return cl.jobs[a].priority < cl.jobs[b].priority;
      });
    }
    std::vector<JobId> candidates;
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
      const Job& preemptor = cl.jobs[j];
      candidates.clear();
      if (preemptor.queue != kNone) {
        for (JobId v : queue_jobs[preemptor.queue]) {
          if (cl.jobs[v].priority >= preemptor.priority) break;
          candidates.push_back(v);
        }
        std::sort(candidates.begin(), candidates.end());
      }
      spec.victims_queue = [&ssn, j, &preemptor, &candidates] {
        JobsOrderOptions o;
        o.filter_non_pending = false;
        o.filter_unready = false;
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
