// Scheduler configuration: which actions run, in which order, and which plugins with which
// arguments. Read from YAML in KAI's shape:
//
//   actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"
//   tiers:
//   - plugins:
//     - name: proportion
//     - name: nodeplacement
//       arguments: {gpu: binpack, cpu: binpack}
//
// (a top-level `plugins:` list is accepted too), plus the scheduler parameters below.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace gantry {

struct PluginConfig {
  std::string name;
  std::map<std::string, std::string> arguments;
  // Callbacks to switch off: job_order, task_order, preemptable, reclaimable, queue_order,
  // predicate, node_order.
  std::vector<std::string> disabled_functions;
};

struct SchedulerParams {
  std::string scheduler_name = "kai-scheduler";
  std::string queue_label_key = "kai.scheduler/queue";
  int max_consolidation_preemptees = 16;  // -1: no limit; KAI's --max-consolidation-preemptees
  bool allow_consolidating_reclaim = true;
  double staleness_grace_period_seconds = 60;  // negative: never evict stale gangs
  // A terminating pod whose deletion timestamp is older than this is stuck in releasing.
  double stuck_in_releasing_threshold_seconds = 120;
  // Victim search shortcuts that give the same result with less work (off only to verify that).
  bool solver_shortcuts = true;
  // With the shortcuts on: the victim search's capacity pre-check per required topology domain
  // (victim_search/domain_precheck.h). Off only for the differential tests of that rule.
  bool solver_domain_precheck = true;
  // With the shortcuts on: the simulations' job order leaves out the leaf queues holding only
  // jobs the simulation skips (victim_search/idle_queues.h). Off only for its differential tests.
  bool solver_idle_queues = true;
  // With the shortcuts on: a simulation takes its acting entries (the preemptor, the victim jobs)
  // in order by the largest queue key of the pending entries ahead of each, instead of popping
  // those (victim_search/acting_runs.h). Off only for its differential tests.
  bool solver_acting_runs = true;
  // With the acting runs: the largest queue key over a run of a leaf's fixed pending entries is
  // computed once per distinct request among them instead of once per entry, where the first
  // queue order says its job key depends on the job only through its request
  // (SessionHooks::SetJobQueueKeyByRequest; victim_search/acting_runs.h). Off only for its
  // differential tests.
  bool solver_acting_run_requests = true;
  // With the acting runs: the pending jobs and each leaf's ordered fixed ones kept between the
  // searches of a session, brought up to date by job versions, instead of listed per search
  // (victim_search/fixed_lists.h). Off only for its differential tests.
  bool solver_acting_runs_kept = true;
  // With the shortcuts on: a scenario's node whose potential victim jobs are those of an earlier
  // node that failed in the same scenario is skipped (victim_search/repeated_nodes.h). Off only
  // for its differential tests (cycle_accelerators_test.cc).
  bool solver_repeated_nodes = true;
  // With the shortcuts on: the pre-check of a node whose victims hold shared GPUs is decided on
  // their eviction and rollback replayed on copies of the counters instead of evicting
  // (CapacityBlocks::FailsPrecheckByCounterReplay). Off only for its differential tests
  // (counter_replay_test.cc).
  bool solver_counter_replay = true;
  // With the shortcuts on: a scenario none of whose nodes reaches a node that frees a block the
  // pending pods lack is left unsolved without trying its nodes (victim_search/reach_bound.h).
  // Off only for its differential tests (reach_bound_test.cc).
  bool solver_reach_bound = true;
  // With the reach rule: victims of one-pod jobs are summed on their node without the rule's job
  // and node lists (the same answers; victim_search/reach_bound.h). Off only for its differential
  // tests (reach_bound_test.cc).
  bool solver_reach_single_pod_jobs = true;
  // Reclaim's victims queues: a leaf queue whose pods' states changed since its entries were kept
  // (a committed solution touched some of its jobs) is brought up to date from its kept heap by
  // the jobs whose version changed, instead of built again from all its jobs (actions/reclaim/
  // reclaim.cc, JobsByQueue::InitializeFromLeaves with LeafJobs). Off only for its differential
  // tests (reclaim_kept_leaves_test.cc).
  bool reclaim_kept_leaves = true;
  // With the shortcuts on: proportion's rejection rules, and its validator's early refusal, cover
  // its strategy check (a sibling queue whose whole allocation fails it refuses any victim of it
  // left evicted; plugins/proportion/reclaim_strategy.h). Off only for differential tests
  // (reclaim_strategy_rules_test.cc, reclaim_strategy_validator_test.cc).
  bool solver_strategy_rules = true;
  // With the shortcuts on and the per-domain pre-check: before the pending pods' turn, a
  // simulation is also stopped (not placed) once victims placed again leave no required domain
  // that fits, when some domain fitted in the batch's base state (victim_search/
  // domain_precheck.h). Off only for its differential tests (cycle_accelerators_test.cc).
  bool solver_domain_during_simulation = true;
  // With the shortcuts on and the per-domain pre-check: the per-domain counts a simulation checks
  // after each victim job placed again follow the session's node journal between two checks on
  // the same feasible nodes instead of being made afresh (same sums; victim_search/
  // domain_precheck.h). Off only for its differential tests (cycle_accelerators_test.cc).
  bool solver_domain_follow_journal = true;
  // With the shortcuts on, where every evicted victim must be placed again (consolidation): a
  // simulation whose pending pods and evicted victims cannot all fit the free GPUs after its
  // evictions is not run where its two unsolved ends are alike, and otherwise stops, rejected,
  // once the pending pods are placed (victim_search/joint_profile.h). Off only for its
  // differential tests (joint_profile_test.cc).
  bool solver_joint_profile = true;
  // Preempt lists the victim candidates of each (queue, priority) (the queue's preemptible jobs of
  // a lower priority, in id order) once per action, and keeps whether a job has an evictable and
  // an alive pod per job version, instead of sorting the candidates and reading every candidate's
  // pods for each preemptor. Off only for its differential test (cycle_accelerators_test.cc).
  bool preempt_kept_candidates = true;
  // With the kept candidates: a preempt search that ended unsolved with no scenario passing the
  // scenario filters proves the same end, with as many scenarios filtered, for a later preemptor
  // of the same queue, priority and victims whose first pod asks for at least as many GPUs, with
  // no node affinity or topology constraint, in the same session state: that search is counted
  // without running it (actions/preempt/repeated_failures.h). Off only for its differential test
  // (cycle_accelerators_test.cc).
  bool preempt_repeated_failures = true;
  // A reclaim search of a one-pod job that ended unsolved proves the same end, with as many
  // scenarios simulated and filtered, for a later reclaimer of the same queue with a pod alike
  // whose place in the simulations' job order is equivalent, in the same session state: that
  // search is counted without running it (actions/reclaim/repeated_failures.h). Off only for its
  // differential test (cycle_accelerators_test.cc).
  bool reclaim_repeated_failures = true;
  // The victim search of KAI v0.16+ (prefix-size probes, the NodeLocalGreedy and MultiNodeGang
  // scenario generators, failed-scenario fingerprints, feasible nodes rolled back after any
  // unsolved simulation: docs/victim-search-v0.17.md) instead of KAI 72de64fc's. With the
  // shortcuts, the accelerators that act per simulation apply to it (each scenario a batch of
  // its own); those across scenarios (replayed pops, the kept eviction base) do not.
  bool victim_search_v017 = false;
  // The topology plugin keeps each leaf domain's free resources and representative-pod counts
  // between its calls (summed again only when a node of the domain changed) and re-sorts a
  // domain's children only when their order keys changed. Off: everything recomputed over the
  // tree on every call, the reference for the differential test (topology_incremental_test.cc).
  bool topology_incremental = true;
  // With topology_incremental: the topology plugin follows the session's node journal instead of
  // comparing every node's version (only the leaves of changed nodes summed again, then the
  // domains above them), keeps each representative pod's per-domain counts by the changed nodes'
  // differences, answers a candidate list of every node without filtering it, and scores the
  // preferred level per domain instead of per node. Off: the per-leaf version scans and
  // per-call tree walks of topology_incremental alone, the reference for the differential test
  // (topology_incremental_test.cc).
  bool topology_follow_changes = true;
  // With topology_follow_changes: a domain whose children's order keys changed is not sorted
  // again when its children are already in the order of the new keys (what the stable sort would
  // leave them in; topology.cc, SortTreeFollowing). Off: sorted whenever a key changed, the
  // reference for the differential test (topology_incremental_test.cc).
  bool topology_sort_skip_sorted = true;
  // resourcetype reads whether each node is CPU-only (no GPUs, no MIG label) from a flag per node
  // computed when the session opens, and scores a ranking's nodes in one batch. Off: the MIG
  // label looked up by name per node and pod, the reference for the differential test
  // (cycle_accelerators_test.cc).
  bool resourcetype_node_flags = true;
  // The victim search's topology filter keeps each constraint's domain capacities sorted as
  // victims raise them (one entry moved per victim) and its last answer while none changed. Off:
  // the capacities copied and sorted for every scenario, the reference for the differential test
  // (cycle_accelerators_test.cc).
  bool topology_filter_sorted = true;
  // nodeavailability answers "fits idle" without asking on a node with nothing releasing (the
  // nodes it scores already fit idle + releasing). Off: FitsIdle asked on every scored node, the
  // reference for the differential test (node_availability_releasing_test.cc).
  bool availability_nothing_releasing = true;
  // Node classes decided per pod: a node callback that depends on more than the node's shape and
  // state (the topology plugin's preferred-level score and node subsets) but names the pods it
  // applies to (a pod filter) keeps from ranking by class only those pods, and the classes are
  // kept whenever the other callbacks allow it. Off: any such callback keeps every pod of the
  // session from ranking by class, the reference for the differential test
  // (cycle_accelerators_test.cc).
  bool class_ranking_per_pod = true;
  // A ranking of a shared-GPU pod skips, before asking SharedFits, the nodes with less than one
  // GPU neither allocated nor releasing and no shared device (nothing there for the pod's
  // devices). Off: SharedFits asked on every candidate, the reference for the differential test
  // (cycle_accelerators_test.cc).
  bool shared_fit_skip_full_nodes = true;
  // A shared-GPU pod (fraction or GPU memory) ranked over a list of candidates - the victims
  // placed again in the victim search's simulations, allocate's fractional pods - is checked and
  // scored once per key among the candidates (shape, NodeState and how many shared devices take
  // its share; Session::RankPerCandidateClass, framework/node_ranking.h), where every ranking
  // callback allows it (NodeDependence::kShapeStateAndSharedFit), and every candidate of a key
  // takes its representative's answer (in rankings of 500 candidates or more: below that the keys
  // rarely repeat). Off: every candidate checked and scored, the reference for the differential
  // test (shared_rank_by_class_test.cc). kBrokenForTests: keys blind to the shared devices, a
  // wrong rule that test must catch.
  enum class SharedRankByClass { kOff, kOn, kBrokenForTests };
  SharedRankByClass shared_rank_by_class = SharedRankByClass::kOn;
  // A shared-GPU pod (fraction or GPU memory) ranked over all the nodes (allocate's) is ranked by
  // node class as a whole-GPU pod is, when nothing else keeps it from that
  // (Session::PodRankableByClass but for its shared GPUs): the classes' keys hold each node's
  // shared devices (their used, allocated and releasing memory in order), so the nodes of a class
  // take the share alike. Off: such a pod ranked node by node (or per key among the candidates,
  // shared_rank_by_class), the reference for the differential test
  // (cycle_accelerators_test.cc).
  bool shared_class_ranking = true;
  // A fractional pod (a share of a GPU, not GPU memory) ranked again over 192 candidates or more -
  // a victim placed again in simulation after simulation of the victim search - takes the
  // checks and scores of its previous ranking for the candidates unchanged since, and checks and
  // scores only the others (Session's rankings from the previous one,
  // framework/node_ranking.h, where the argument is). Off: every ranking checks and scores its
  // candidates, the reference for the differential test (shared_rank_changed_nodes_test.cc).
  bool shared_rank_changed_nodes = true;
};

// KAI's `usageDBConfig`: where the scheduler reads the queues' historical usage (time-based
// fairshare), and how that usage is computed. Durations are Go durations ("10m", "1h30m"); the
// window size a Prometheus duration ("1w", "7d", "2h").
struct UsageParams {
  enum class WindowType { kSliding, kTumbling, kCron };
  // Weight of a sample of age t: 0.5^(t / half life); unset (or <= 0): no decay.
  std::optional<double> half_life_seconds;
  double window_size_seconds = 7 * 24 * 3600.0;  // KAI's default "1w"
  WindowType window_type = WindowType::kSliding;
  // Tumbling windows start here and repeat every window size (Unix milliseconds).
  std::optional<int64_t> tumbling_window_start_ms;
  // Cron windows restart at each time this five-field cron expression names (UTC).
  std::string cron_string;
  double fetch_interval_seconds = 60;
  double staleness_period_seconds = 300;
  double wait_timeout_seconds = 60;
  // Client-specific settings (KAI's extraParams), e.g. the Prometheus client's
  // usageQueryTimeout, queryResolution, gpuAllocationMetric, gpuCapacityMetric.
  std::map<std::string, std::string> extra_params;
};

struct UsageDbConfig {
  std::string client_type;  // "prometheus" or "embedded"
  std::string connection_string;
  std::string connection_string_env_var;
  UsageParams usage_params;
};

// KAI's `scenarioSearchBudgets` (alpha in KAI v0.17): wall-clock limits on the victim search of
// reclaim, preempt and consolidation. Durations are Go durations ("5m", "750ms"), kept here in
// nanoseconds; for a maximum, 0 means unlimited. Unset entries take KAI's defaults (the
// accessors below): action 5m, job 4m, minimum per job 0s, generator 2m, NodeLocalGreedy 30s,
// MultiNodeGang 2m.
//
//   scenarioSearchBudgets:
//     maxActionSearchDuration: {default: 5m, reclaim: 1m}   # keys: default, reclaim, preempt,
//                                                          # consolidation
//     maxJobSearchDuration: 4m
//     minJobSearchDuration: 0s      # must be below maxJobSearchDuration unless that is 0
//     maxGeneratorSearchDuration: {default: 2m, NodeLocalGreedy: 30s, MultiNodeGang: 2m}
//
// The victim search (actions/victim_search/search_budget.h) applies them.
struct ScenarioSearchBudgets {
  std::map<std::string, int64_t> max_action_ns;     // as configured, by action key
  std::optional<int64_t> max_job_ns;                // as configured
  std::optional<int64_t> min_job_ns;                // as configured
  std::map<std::string, int64_t> max_generator_ns;  // as configured, by generator key

  // The action's limit: its own key, else "default", else 5m. `action` is an action's name.
  int64_t ActionLimitNs(const std::string& action) const;
  int64_t JobLimitNs() const;  // configured, else 4m
  int64_t MinJobNs() const;    // configured, else 0
  // Every generator's limit by name, "default" included (KAI's parseGeneratorLimits): a named
  // generator's own entry, else the configured "default", else its built-in default
  // (NodeLocalGreedy 30s, MultiNodeGang 2m, any other 2m).
  std::map<std::string, int64_t> GeneratorLimitsNs() const;
  int64_t GeneratorLimitNs(const std::string& generator) const;
};

struct SchedulerConfig {
  std::vector<std::string> actions;
  std::vector<PluginConfig> plugins;
  SchedulerParams params;
  // Time-based fairshare: absent, queues have no historical usage.
  std::optional<UsageDbConfig> usage_db;
  // KAI's queueDepthPerAction: at most this many jobs of each leaf queue are tried by the named
  // action in a cycle (the best by the job order); an action not named tries them all.
  std::map<std::string, int> queue_depth_per_action;
  ScenarioSearchBudgets search_budgets;
  // What the parser skipped, one message each (unknown keys, parts not implemented), as KAI
  // skips what it does not know; callers log them.
  std::vector<std::string> warnings;

  // The queue depth of `action`, or -1 (no limit).
  int QueueDepth(const std::string& action) const {
    auto it = queue_depth_per_action.find(action);
    return it == queue_depth_per_action.end() ? -1 : it->second;
  }

  // KAI's defaults: the five actions and the default plugin list.
  static SchedulerConfig Default();
};

// Parses a configuration document (YAML or JSON). Unspecified parts keep their defaults. As KAI,
// an unknown key (top level or in a plugin entry) is skipped with a warning naming it
// (SchedulerConfig::warnings); a known key with a bad value is an error naming it.
Result<SchedulerConfig> ParseSchedulerConfig(const std::string& text, const std::string& origin);

}  // namespace gantry
