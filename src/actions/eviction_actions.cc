// reclaim, preempt and consolidation: the three actions that evict running pods to make room
// for a pending job. Each visits pending jobs in queue / job order, asks the shared solver
// (solver.h) for victims under its own rules, and commits the solution's statement.
//
//  reclaim       - a job of a queue below its fair share takes resources from preemptible jobs of
//                  other queues; the proportion plugin validates that fair shares stay ordered.
//  preempt       - within one queue, a job evicts lower-priority preemptible jobs.
//  consolidation - moves preemptible pods to other nodes so a job fits; valid only when every
//                  moved pod is placed again (no pod is actually lost).
#include <algorithm>
#include <memory>
#include <numeric>
#include <span>

#include "actions/builtin.h"
#include "actions/solver.h"
#include "framework/jobs_by_queue.h"
#include "framework/statement.h"

namespace gantry {
namespace {

JobsOrderOptions PendingJobs(bool non_preemptible_filter = false) {
  JobsOrderOptions o;
  o.filter_non_pending = true;
  o.filter_unready = true;
  o.filter_non_preemptible = non_preemptible_filter;
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

// Per job: whether it is preemptible and has active allocated pods (the first filters of a
// victim), kept while the job's version holds (its pods' statuses are the same). Victims queues
// are built for every reclaimer over every running job; between two builds only the jobs a
// committed solution touched change.
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
      value_[i] = ssn_.NumActiveAllocated(j) > 0;
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
    JobsByQueue jobs(ssn, PendingJobs());
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
    LeafHeapCache leaf_heaps;
    LeafHeapCache* cache = ssn.HasReclaimVictimFilters() ? nullptr : &leaf_heaps;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      if (!ssn.CanReclaimResources(j)) continue;
      ssn.OnJobSolutionStart();
      SolverSpec spec;
      spec.action = EvictionAction::kReclaim;
      spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      spec.validator = [](const Session& s, const ScenarioInfo& sc) {
        return s.ReclaimScenarioValid(sc);
      };
      spec.rejection_rules = [](const Session& s, JobId preemptor, std::span<const PodId> tasks,
                                const EvictedVictims& evicted, std::vector<RejectionRule>& out) {
        s.ReclaimRejectionRules(preemptor, tasks, evicted, out);
      };
      const QueueId queue = ssn.cluster().jobs[j].queue;
      spec.victims_queue = [&ssn, &running, &queue_jobs, &leaves, cache, j, queue] {
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
            cache);
        return victims;
      };
      SolverResult r = SolveJob(ssn, j, spec);
      if (r.solved) r.statement->Commit();
    }
  }
};

class PreemptAction : public Action {
 public:
  std::string_view name() const override { return "preempt"; }
  void Execute(Session& ssn) override {
    JobsByQueue jobs(ssn, PendingJobs());
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
                 victim.priority < preemptor.priority && ssn.NumActiveAllocated(v) > 0 &&
                 HasAlivePod(ssn, v) && ssn.PreemptVictimFilter(j, v);
        });
      };
      SolverResult r = SolveJob(ssn, j, spec);
      if (r.solved) r.statement->Commit();
    }
  }
};

class ConsolidationAction : public Action {
 public:
  std::string_view name() const override { return "consolidation"; }
  void Execute(Session& ssn) override {
    const int max_preemptees = ssn.params().max_consolidation_preemptees;
    if (max_preemptees == 0) return;
    JobsByQueue jobs(ssn, PendingJobs(/*non_preemptible_filter=*/true));
    jobs.InitializeWithAllJobs();
    FreeGpus free_gpus;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      if (!EnoughGpusInCluster(ssn, j, free_gpus)) continue;
      SolverSpec spec;
      spec.action = EvictionAction::kConsolidation;
      spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      spec.validator = [](const Session& s, const ScenarioInfo& sc) {
        // Every victim must have been placed again.
        for (const auto& [job, pods] : sc.victims) {
          for (PodId p : pods) {
            if (s.pod(p).status == PodStatus::kReleasing) return false;
          }
        }
        return true;
      };
      // The validator rejects as soon as one victim stays evicted.
      spec.rejection_rules = [](const Session&, JobId, std::span<const PodId>,
                                const EvictedVictims& evicted, std::vector<RejectionRule>& out) {
        RejectionRule rule;
        rule.pods.assign(evicted.pods.begin(), evicted.pods.end());
        std::sort(rule.pods.begin(), rule.pods.end());
        rule.pods.erase(std::unique(rule.pods.begin(), rule.pods.end()), rule.pods.end());
        out.push_back(std::move(rule));
      };
      spec.victims_queue = [&ssn, j, max_preemptees] {
        JobsOrderOptions o;
        o.filter_non_pending = false;
        o.filter_unready = false;
        auto counter = std::make_shared<int>(0);
        return VictimsQueue(ssn, o, [&ssn, j, max_preemptees, counter](JobId v) {
          if (!HasAlivePod(ssn, v) || !ssn.cluster().jobs[v].preemptible || v == j) return false;
          if (max_preemptees >= 0 && *counter > max_preemptees) return false;
          if (ssn.NumActiveAllocated(v) == 0) return false;
          ++*counter;
          return true;
        });
      };
      SolverResult r = SolveJob(ssn, j, spec);
      if (r.solved) r.statement->Commit();
    }
  }

 private:
  // The cluster's idle and releasing GPUs (devices and memory), kept while the pods' states
  // are the same (the state version; a search that commits nothing gives it back).
  struct FreeGpus {
    bool known = false;
    uint64_t version = 0;
    double gpus = 0;
    int64_t memory = 0;
  };
  // KAI's IsEnoughGPUsAllocatableForJob: the idle and releasing GPUs of the whole cluster
  // (whole devices, the free part of shared devices, MIG instances as GPU-equivalents) cover the
  // job's next pods, in device count and in GPU memory.
  static bool EnoughGpusInCluster(const Session& ssn, JobId j, FreeGpus& free) {
    const Cluster& c = ssn.cluster();
    if (!free.known || free.version != ssn.state_version()) {
      free = FreeGpus{true, ssn.state_version(), 0, 0};
      for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
        const auto [idle, idle_memory] = ssn.IdleGpuSum(n);
        const auto [releasing, releasing_memory] = ssn.ReleasingGpuSum(n);
        free.gpus += idle + releasing;
        free.memory += idle_memory + releasing_memory;
      }
    }
    const double free_gpus = free.gpus;
    const int64_t free_memory = free.memory;
    std::vector<PodId> tasks;
    ssn.TasksToAllocate(j, tasks, /*real=*/false);
    double wanted_gpus = 0;
    int64_t wanted_memory = 0;
    for (PodId p : tasks) {
      const Pod& pod = c.pods[p];
      wanted_gpus += pod.RequestedGpus();
      wanted_memory += static_cast<int64_t>(pod.gpu_memory_mib);
      for (const auto& m : ssn.mig_profiles()) {
        wanted_gpus += m.gpus * pod.request.scalars[m.slot];
        wanted_memory += static_cast<int64_t>(m.mem_gb * pod.request.scalars[m.slot]);
      }
    }
    return free_gpus >= wanted_gpus && free_memory >= wanted_memory;
  }
};

}  // namespace

void RegisterEvictionActions(ActionRegistry& registry) {
  registry.Register("reclaim", [] { return ActionPtr(std::make_unique<ReclaimAction>()); });
  registry.Register("preempt", [] { return ActionPtr(std::make_unique<PreemptAction>()); });
  registry.Register("consolidation",
                    [] { return ActionPtr(std::make_unique<ConsolidationAction>()); });
}

}  // namespace gantry
