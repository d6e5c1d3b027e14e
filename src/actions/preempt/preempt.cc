// preempt: within one queue, a pending job evicts lower-priority preemptible jobs (KAI's
// actions/preempt), through the victim search (victim_search/solver.h).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "actions/builtin.h"
#include "actions/preempt/repeated_failures.h"
#include "actions/victim_search/solver.h"
#include "actions/victim_search/victims_queue.h"
#include "framework/jobs_by_queue.h"
#include "framework/statement.h"

namespace gantry {
namespace {

// With SchedulerParams::preempt_kept_candidates: a preemptor's victim candidates (the preemptible
// jobs of its queue with a lower priority, in id order) depend only on its queue and priority, so
// they are listed once per (queue, priority) and action; and whether a candidate has an evictable
// (active allocated) pod and an alive one reads only its pods' statuses, so it is kept while the
// job's version holds (Session::job_version: every status change of one of its pods bumps it).
// The victims queue then holds the same jobs: the action lists them (asking the plugins' victim
// filter of the same jobs, in the same order) in the state the search builds its queue in, its
// start.
class PreemptKeptCandidates {
 public:
  // `by_priority`: each queue's preemptible jobs, stably sorted by priority.
  PreemptKeptCandidates(const Session& ssn, const std::vector<std::vector<JobId>>& by_priority)
      : ssn_(ssn),
        by_priority_(by_priority),
        lists_(by_priority.size()),
        version_(ssn.cluster().jobs.size(), 0),
        value_(ssn.cluster().jobs.size(), 0) {}

  std::span<const JobId> Candidates(QueueId queue, int32_t priority) {
    auto& lists = lists_[static_cast<size_t>(queue)];
    for (const auto& [p, list] : lists) {
      if (p == priority) return list;
    }
    std::vector<JobId> list;
    const auto& jobs = ssn_.cluster().jobs;
    for (JobId v : by_priority_[static_cast<size_t>(queue)]) {
      if (jobs[v].priority >= priority) break;
      list.push_back(v);
    }
    std::sort(list.begin(), list.end());
    lists.emplace_back(priority, std::move(list));
    return lists.back().second;
  }

  // NumEvictable(v) > 0 && HasAlivePod(v), kept per job version.
  bool EvictableAndAlive(JobId v) {
    const size_t i = static_cast<size_t>(v);
    // (Versions start at 1: 0 is never current.)
    if (version_[i] != ssn_.job_version(v)) {
      version_[i] = ssn_.job_version(v);
      value_[i] = ssn_.NumEvictable(v) > 0 && HasAlivePod(ssn_, v);
    }
    return value_[i] != 0;
  }

 private:
  const Session& ssn_;
  const std::vector<std::vector<JobId>>& by_priority_;
  std::vector<std::vector<std::pair<int32_t, std::vector<JobId>>>> lists_;  // per queue
  std::vector<uint64_t> version_;
  std::vector<uint8_t> value_;
};

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
    const bool kept = ssn.params().preempt_kept_candidates;
    PreemptKeptCandidates kept_candidates(ssn, queue_jobs);
    const bool repeats =
        kept && ssn.params().preempt_repeated_failures && !ssn.params().victim_search_v017;
    PreemptRepeatedFailures failures(ssn);
    std::vector<JobId> victims;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      ssn.TasksToAllocate(j, tasks, /*real=*/false);
      if (!ssn.IsNonPreemptibleJobWithinQuota(j, tasks)) continue;
      SolverSpec spec;
      spec.action = EvictionAction::kPreempt;
      spec.validator = [](const Session& s, const ScenarioInfo& sc) {
        return s.PreemptScenarioValid(sc);
      };
      const Job& preemptor = cl.jobs[j];
      if (kept) {
        // The victim jobs, listed in the state the search starts in (its victims queue is built
        // in that state): the listed candidates are the queue's preemptible jobs of a lower
        // priority, so not the preemptor.
        victims.clear();
        if (preemptor.queue != kNone) {
          for (JobId v : kept_candidates.Candidates(preemptor.queue, preemptor.priority)) {
            if (kept_candidates.EvictableAndAlive(v) && ssn.PreemptVictimFilter(j, v)) {
              victims.push_back(v);
            }
          }
        }
        spec.victims_queue = [&ssn, &victims] {
          JobsOrderOptions o;
          o.filter_non_pending = false;
          o.filter_unready = false;
          return VictimsQueue(ssn, o, victims, [](JobId) { return true; });  // (listed above)
        };
        if (repeats) spec.known_filtered_failure = failures.Known(j, tasks, victims);
      } else {
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
      }
      // (A search known to fail reads no node.)
      if (!spec.known_filtered_failure) spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      ++ssn.action_counts().podgroups_acted_on;
      spec.budget = &budget;
      const uint64_t serial = ssn.serial();
      const uint64_t version = ssn.state_version();
      SolverResult r = SolveJob(ssn, j, spec);
      if (repeats && !spec.known_filtered_failure) {
        failures.Searched(j, tasks, victims, r, serial, version);
      }
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
