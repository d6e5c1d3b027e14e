// reclaim: a job of a queue below its fair share takes resources from preemptible jobs of other
// queues (KAI's actions/reclaim); the proportion plugin validates that fair shares stay ordered.
// The action visits pending jobs in queue / job order and asks the victim search
// (victim_search/solver.h) for victims under its rules, committing each solution.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "actions/builtin.h"
#include "actions/reclaim/repeated_failures.h"
#include "actions/victim_search/solver.h"
#include "actions/victim_search/stats.h"
#include "actions/victim_search/victims_queue.h"
#include "framework/jobs_by_queue.h"
#include "framework/statement.h"

namespace gantry {
namespace {

// Per job: whether it is preemptible and has active allocated pods without an eviction request
// (the first filters of a victim; Session::NumEvictable), kept while the job's version holds (its
// pods' statuses are the same). Victims queues are built for every reclaimer over every running
// job; between two builds only the jobs a committed solution touched change.
class RunningPreemptible {
 public:
  explicit RunningPreemptible(const Session& ssn)
      : ssn_(ssn),
        queue_(ssn.cluster().jobs.size()),
        preemptible_(ssn.cluster().jobs.size()),
        version_(ssn.cluster().jobs.size(), 0),
        value_(ssn.cluster().jobs.size(), 0) {
    const auto& jobs = ssn.cluster().jobs;
    for (size_t j = 0; j < jobs.size(); ++j) {
      queue_[j] = jobs[j].queue;
      preemptible_[j] = jobs[j].preemptible;
    }
  }
  QueueId queue(JobId j) const { return queue_[static_cast<size_t>(j)]; }
  bool operator()(JobId j) {
    const size_t i = static_cast<size_t>(j);
    if (!preemptible_[i]) return false;
    // (Versions start at 1: 0 is never current.)
    if (version_[i] != ssn_.job_version(j)) {
      version_[i] = ssn_.job_version(j);
      value_[i] = ssn_.NumEvictable(j) > 0;
    }
    return value_[i] != 0;
  }

 private:
  const Session& ssn_;
  std::vector<QueueId> queue_;
  std::vector<uint8_t> preemptible_;
  std::vector<uint64_t> version_;
  std::vector<uint8_t> value_;
};

class ReclaimAction : public Action {
 public:
  std::string_view name() const override { return "reclaim"; }
  void Execute(Session& ssn) override {
    const ActionSearchBudget budget(ssn, EvictionAction::kReclaim);
    JobsOrderOptions options = EvictingJobs(ssn);
    options.max_jobs_per_queue = ssn.config().QueueDepth("reclaim");
    JobsByQueue jobs(ssn, options);
    jobs.InitializeWithAllJobs();
    RunningPreemptible running(ssn);
    // Victims are jobs of leaf queues other than the reclaimer's: each leaf queue's jobs in id
    // order. Without victim filters (which may depend on the reclaimer) whether a job is a victim
    // depends only on its pods' states, so a leaf queue whose pods' states are the same as at the
    // previous reclaimer's victims queue gives the same entries: they are taken again from
    // `leaf_heaps` (JobsByQueue::InitializeFromLeaves), and only the leaves a committed solution
    // touched are built again.
    const auto& queues = ssn.cluster().queues;
    std::vector<std::vector<JobId>> queue_jobs(queues.size());
    for (JobId v = 0; v < static_cast<JobId>(ssn.cluster().jobs.size()); ++v) {
      if (const QueueId q = running.queue(v); q != kNone) queue_jobs[q].push_back(v);
    }
    std::vector<QueueId> leaves;
    for (QueueId q = 0; q < static_cast<QueueId>(queues.size()); ++q) {
      if (queues[q].IsLeaf()) leaves.push_back(q);
    }
    // With SchedulerParams::reclaim_kept_leaves the cache also keeps each leaf's heap by job, and
    // a leaf a committed solution touched is updated by its jobs whose pods' states changed
    // (JobsByQueue::LeafJobs) instead of built again from all its jobs: a victims queue is built
    // for every reclaimer, and a solution touches a few jobs of a leaf of hundreds.
    LeafHeapCache leaf_heaps(ssn.params().reclaim_kept_leaves);
    LeafHeapCache* cache = ssn.HasReclaimVictimFilters() ? nullptr : &leaf_heaps;
    // (Used only with the cache, so with no reclaim victim filter: whether a job is a victim then
    // depends only on its own pods' states.)
    const JobsByQueue::LeafJobs leaf_jobs{
        [&queue_jobs](QueueId q) { return std::span<const JobId>(queue_jobs[q]); },
        [&running](JobId v) { return running(v); }};
    // (SchedulerParams::reclaim_repeated_failures: a search known to fail as an earlier one of
    // the same state did is counted without running it; see repeated_failures.h.)
    ReclaimRepeatedFailures failures(ssn);
    std::vector<PodId> reclaimer_tasks;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      if (!ssn.CanReclaimResources(j)) continue;
      ssn.OnJobSolutionStart();
      SolverSpec spec;
      spec.action = EvictionAction::kReclaim;
      ssn.TasksToAllocate(j, reclaimer_tasks, /*real=*/false);
      if (const auto known = failures.Known(ssn, j, reclaimer_tasks)) {
        spec.known_filtered_failure = known->first;
        spec.known_failure_simulated = known->second;
      } else {
        // (A search known to fail reads no node.)
        spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      }
      spec.validator = [](const Session& s, const ScenarioInfo& sc) {
        return s.ReclaimScenarioValid(sc);
      };
      spec.rejection_rules = [](const Session& s, JobId preemptor, std::span<const PodId> tasks,
                                const EvictedVictims& evicted, std::vector<RejectionRule>& out) {
        s.ReclaimRejectionRules(preemptor, tasks, evicted, out);
      };
      const QueueId queue = ssn.cluster().jobs[j].queue;
      spec.victims_queue = [&ssn, &running, &queue_jobs, &leaves, &leaf_jobs, cache, j, queue] {
        JobsOrderOptions o;
        o.filter_non_pending = false;
        o.filter_unready = false;
        // KAI's victims queue keeps preemptible jobs with active allocated pods: checked here,
        // before the plugins' victim filter (the costly part, a predicate: so the queue's jobs
        // are the same), and not again by the queue.
        o.filter_non_preemptible = false;
        o.filter_non_active_allocated = false;
        o.victim_queue = true;
        auto victims = std::make_unique<JobsByQueue>(ssn, o);
        std::vector<QueueId> others;
        others.reserve(leaves.size());
        for (QueueId q : leaves) {
          if (q != queue) others.push_back(q);
        }
        victims->InitializeFromLeaves(
            others,
            [&ssn, &running, &queue_jobs, j](QueueId q, std::vector<JobId>& out) {
              for (JobId v : queue_jobs[q]) {
                if (running(v) && ssn.ReclaimVictimFilter(j, v)) out.push_back(v);
              }
            },
            cache, &leaf_jobs);
        if (cache != nullptr) {
          MutableSolverStats(EvictionAction::kReclaim).kept_leaf_updates +=
              cache->TakeKeptUpdates();
        }
        return victims;
      };
      ++ssn.action_counts().podgroups_acted_on;
      spec.budget = &budget;
      const uint64_t serial = ssn.serial();
      const uint64_t version = ssn.state_version();
      SolverResult r = SolveJob(ssn, j, spec);
      if (!spec.known_filtered_failure) failures.Searched(j, reclaimer_tasks, r, serial, version);
      if (r.solved) {
        ++ssn.action_counts().podgroups_scheduled;
        r.statement->Commit();
      }
      // (The time budget ran out: KAI's action stops searching.)
      if (r.stops_action) return;
    }
  }
};

}  // namespace

void RegisterReclaimAction(ActionRegistry& registry) {
  registry.Register("reclaim", [] { return ActionPtr(std::make_unique<ReclaimAction>()); });
}

}  // namespace gantry
