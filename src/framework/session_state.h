// What a session keeps per pod, node, pod set and job while it is open, the decisions it has
// taken, and the counters of its work.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/fit_errors.h"
#include "model/cluster.h"

namespace gantry {

// Mutable per-pod state inside a session.
struct PodState {
  PodStatus status = PodStatus::kPending;
  NodeId node = kNone;
  bool virtual_status = false;  // changed by an uncommitted statement operation
  // A committed eviction of this session asked for the pod (one request per pod: a later
  // eviction of the same pod, pipelined elsewhere meanwhile, is not asked again).
  bool eviction_requested = false;
};

// Mutable per-node counters inside a session (KAI's NodeInfo Idle / Used / Releasing).
struct NodeState {
  Resources idle;
  Resources used;
  Resources releasing;
  Resources NonAllocated() const { return idle + releasing; }
};

// Per pod set counts, kept current as pod statuses change.
struct PodSetCounters {
  int32_t active_allocated = 0;
  int32_t active_used = 0;
  int32_t alive = 0;
  int32_t gated = 0;
  int32_t pending = 0;
};

// Per job session state.
struct JobState {
  std::optional<int64_t> last_start_ms;
  std::optional<int64_t> stale_since_ms;
  std::vector<JobFitError> fit_errors;
  std::unordered_map<PodId, TaskFitErrors> task_fit_errors;
  // When this session last evicted one of the job's pods (restarts its preemption delay).
  std::optional<int64_t> last_eviction_ms;
};

// A committed placement: becomes a BindRequest in the live mode.
struct BindDecision {
  PodId pod;
  NodeId node;
  std::vector<std::string> gpu_groups;
};
struct EvictionDecision {
  PodId pod;
  NodeId node;
  std::string message;
  std::string action;  // the action running when it was committed ("" outside any)
};
struct PipelineDecision {
  PodId pod;
  NodeId node;
  std::string message;
};

// Why RankFittingNodes ranked a pod node by node, the first that applies, in this order: the
// session keeps no node classes (or some pod has anti-affinity or preferred pod affinity); the
// candidates are not all the nodes (a topology domain's node set, the victim search's lists);
// the pod's spec reads more of a node than its shape and state (selectors, affinities, claims,
// host ports, a nominated node); a callback that reads more applies to it (a pod filter: the
// topology plugin's constrained and preferred-level pods); it asks for a share of a GPU.
enum class PerNodeReason { kNoClasses, kCandidates, kPodSpec, kFilteredCallback, kSharedGpu };
inline constexpr size_t kPerNodeReasons = 5;
// Its name ("no-classes", "candidates", "pod-spec", "callback", "shared-gpu").
const char* PerNodeReasonName(PerNodeReason r);

// Counters of the work a session did (for tests and benchmarks).
struct SessionStats {
  int64_t rankings_by_class = 0;  // pods ranked over classes of equivalent nodes
  int64_t rankings_per_node = 0;  // pods ranked node by node
  int64_t nodes_checked = 0;      // node feasibility checks while ranking
  // Of rankings_per_node: shared-GPU pods checked once per class among the candidates
  // (SchedulerParams::shared_rank_by_class).
  int64_t rankings_per_candidate_class = 0;
  // Of rankings_per_node: rankings made from the pod's previous one, and the candidates changed
  // since that they checked and scored (SchedulerParams::shared_rank_changed_nodes).
  int64_t rankings_from_kept = 0;
  int64_t kept_nodes_rescored = 0;
  // Of rankings_per_node, and of nodes_checked: by the first reason the pod was not ranked by
  // class (PerNodeReason), in RankFittingNodes.
  std::array<int64_t, kPerNodeReasons> per_node_rankings{};
  std::array<int64_t, kPerNodeReasons> per_node_checks{};
};

// How one victim search ended (KAI's SearchResultReason): solved; its time ran out (the job's
// budget, or the action's); every scenario of its generators tried, or their time budget spent;
// no scenario generator registered; not tried at all (no budget left, or nothing to place).
enum class SearchEnd {
  kSolved,
  kDeadlineExhausted,
  kGeneratorsExhausted,
  kNoGenerator,
  kNotAttempted
};
inline constexpr size_t kSearchEnds = 5;
// KAI's name of the result ("solved", "deadline_exhausted", "generators_exhausted",
// "no_generator", "not_attempted").
inline const char* SearchEndName(SearchEnd e) {
  constexpr const char* kNames[kSearchEnds] = {
      "solved", "deadline_exhausted", "generators_exhausted", "no_generator", "not_attempted"};
  return kNames[static_cast<size_t>(e)];
}

// What one action did in a session, counted where KAI's scheduler counts its per-action metrics
// (podgroups_scheduled_by_action and the others; the live loop exports them, see
// observability/kai_metrics.h). Counted per job and per scenario, never per node.
struct ActionCounts {
  std::string action;
  int64_t podgroups_acted_on = 0;   // jobs an eviction action searched victims for
  int64_t podgroups_scheduled = 0;  // jobs the action placed (allocate: also pipelined)
  int64_t scenarios_simulated = 0;  // victim scenarios simulated
  int64_t scenarios_filtered = 0;   // victim scenarios the scenario filters rejected
  int64_t preemption_attempts = 0;  // preempt solutions committed (what KAI counts)
  // Victim searches by how they ended and whether they ran on a reduced budget (KAI's
  // scenario_search_jobs_total{result, reduced_budget}): searches[SearchEnd][reduced].
  int64_t searches[kSearchEnds][2] = {};
  // Searches stopped by the time budget while the action's own budget was spent (KAI's
  // scenario_search_action_budget_exhausted_total).
  int64_t action_budget_exhausted = 0;
  // Whether the action set up a victim search budget (reclaim, preempt, consolidation: then the
  // budgets are exported), and those budgets in nanoseconds (0: unlimited): the action's, a
  // job's, and each generator's by name.
  bool has_budgets = false;
  int64_t action_budget_ns = 0;
  int64_t job_budget_ns = 0;
  std::vector<std::pair<std::string, int64_t>> generator_budgets_ns;

  int64_t Searches(SearchEnd end) const {
    const auto i = static_cast<size_t>(end);
    return searches[i][0] + searches[i][1];
  }
};

// How long each plugin's session callback took, in milliseconds.
struct PluginTiming {
  std::string plugin;
  double open_ms = 0;   // OnSessionOpen
  double close_ms = 0;  // OnSessionClose (0 until the session is closed)
};

}  // namespace gantry
