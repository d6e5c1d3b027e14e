// consolidation: moves preemptible pods to other nodes so a pending job fits (KAI's
// actions/consolidation); a solution is valid only when every moved pod is placed again (no pod
// is actually lost). Through the victim search (victim_search/solver.h).
#include <algorithm>
#include <cstdint>
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

class ConsolidationAction : public Action {
 public:
  std::string_view name() const override { return "consolidation"; }
  void Execute(Session& ssn) override {
    // (KAI starts the action's search budget, and sets its gauges, before checking whether
    // consolidation is on.)
    const ActionSearchBudget budget(ssn, EvictionAction::kConsolidation);
    const int max_preemptees = ssn.params().max_consolidation_preemptees;
    if (max_preemptees == 0) return;
    JobsOrderOptions options = EvictingJobs(ssn, /*non_preemptible_filter=*/true);
    options.max_jobs_per_queue = ssn.config().QueueDepth("consolidation");
    JobsByQueue jobs(ssn, options);
    jobs.InitializeWithAllJobs();
    FreeGpus free_gpus;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      if (!EnoughGpusInCluster(ssn, j, free_gpus)) continue;
      SolverSpec spec;
      spec.action = EvictionAction::kConsolidation;
      spec.feasible_nodes = FeasibleNodesForJob(ssn, j);
      spec.every_victim_placed_again = true;  // (the validator below)
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
          if (ssn.NumEvictable(v) == 0) return false;
          ++*counter;
          return true;
        });
      };
      ++ssn.action_counts().podgroups_acted_on;
      spec.budget = &budget;
      SolverResult r = SolveJob(ssn, j, spec);
      if (r.solved) {
        ++ssn.action_counts().podgroups_scheduled;
        r.statement->Commit();
      }
      // (The time budget ran out: KAI's action stops searching.)
      if (r.stops_action) return;
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

void RegisterConsolidationAction(ActionRegistry& registry) {
  registry.Register("consolidation",
                    [] { return ActionPtr(std::make_unique<ConsolidationAction>()); });
}

}  // namespace gantry
