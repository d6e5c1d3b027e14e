// Test helpers of the differential tests (a speed-up on against off, or against the plain search):
// a cluster of the benchmark family written to a scenario file, and one cycle of the default
// actions on it under a configuration change, reduced to what the cycle decided.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actions/victim_search/stats.h"
#include "cluster_gen.h"
#include "framework/session.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry::differential {

// What one cycle decided, each list in the order of the decisions, and what it took.
struct CycleDecisions {
  uint64_t digest = 0;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  std::vector<std::pair<PodId, NodeId>> binds;
  std::vector<std::string> fit_errors;  // per job, rendered
  // Per job, its pods' task fit errors rendered (pod, error; in pod order), and the evictions'
  // and pipelined pods' messages in order (compared where a test asks for them).
  std::vector<std::string> task_fit_errors;
  std::vector<std::string> messages;
  SolverStats solver_stats;    // the victim search's counters of this cycle
  SessionStats session_stats;  // the session's ranking counters
  // Per action, what KAI's per-action metrics count (ActionCounts), rendered: the action, jobs
  // acted on and scheduled, scenarios simulated and filtered, preemption attempts, searches by
  // end and budget.
  std::vector<std::string> action_counts;
  // The session's view of proportion's queue order, right after it opened.
  bool queue_order_pod_states_only = false;
  bool queue_order_total_on_siblings = false;
};

// KAI's default victim-search time budgets (2 minutes per generator, 4 per job, 5 per action)
// made unlimited unless the scenario sets some: what a test compares must not depend on how fast
// the machine runs. (Under ASan a 512-node cycle takes minutes, and a cut search made the two runs
// of one comparison decide differently.)
inline void UnlimitedSearchBudgets(SchedulerConfig& config) {
  ScenarioSearchBudgets& budgets = config.search_budgets;
  if (budgets.max_action_ns.empty() && !budgets.max_job_ns && budgets.max_generator_ns.empty()) {
    budgets.max_action_ns = {{"default", 0}};
    budgets.max_job_ns = 0;
    budgets.max_generator_ns = {{"default", 0}};
  }
}

// A scheduler with the default actions and a session opened on a scenario file, for tests that
// look into the session itself rather than at a cycle's decisions.
struct OpenedSession {
  Scenario scenario;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Session> session;  // null when the file did not load (the test then failed)

  OpenedSession() = default;
  OpenedSession(OpenedSession&&) = default;
  OpenedSession& operator=(OpenedSession&&) = default;
  OpenedSession(const OpenedSession&) = delete;
  OpenedSession& operator=(const OpenedSession&) = delete;
  ~OpenedSession() {
    if (session) scheduler->CloseSession(*session);
  }
};

// Opens a session on the scenario `file` at the scenario start time (budgets as
// UnlimitedSearchBudgets), and with `run_actions` runs the default actions in it: the state the
// next searches of a cycle would find. A file that does not load fails the test.
inline OpenedSession OpenScenarioSession(const std::string& file, bool run_actions) {
  OpenedSession r;
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  if (!loaded.ok()) return r;
  r.scenario = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(r.scenario, r.scenario.cluster, now);
  SchedulerConfig config = r.scenario.config;
  config.actions = SchedulerConfig::Default().actions;
  UnlimitedSearchBudgets(config);
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return r;
  r.scheduler = std::move(created).value();
  r.session = r.scheduler->OpenSession(r.scenario.cluster, now);
  if (run_actions) r.scheduler->RunActions(*r.session, [](std::string_view, double) {});
  return r;
}

// One cycle of the default actions on the scenario `file`, its parameters changed by `configure`.
// A scenario that does not load, or a configuration the scheduler refuses, fails the test.
inline CycleDecisions RunCycle(const std::string& file,
                               const std::function<void(SchedulerParams&)>& configure) {
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  if (!loaded.ok()) return {};
  Scenario sc = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(sc, sc.cluster, now);
  SchedulerConfig config = sc.config;
  config.actions = SchedulerConfig::Default().actions;
  UnlimitedSearchBudgets(config);
  configure(config.params);
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return {};
  ResetSolverStats();
  auto ssn = created.value()->OpenSession(sc.cluster, now);
  CycleDecisions d;
  d.queue_order_pod_states_only = ssn->QueueOrderDependsOnlyOnPodStates();
  d.queue_order_total_on_siblings = ssn->QueueOrderTotalOnSiblings();
  created.value()->RunActions(*ssn, [](std::string_view, double) {});
  d.digest = DecisionsDigest(*ssn);
  for (const auto& e : ssn->evictions()) d.evictions.emplace_back(e.pod, e.node);
  for (const auto& p : ssn->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  for (const auto& b : ssn->binds()) d.binds.emplace_back(b.pod, b.node);
  for (JobId j = 0; j < static_cast<JobId>(sc.cluster.jobs.size()); ++j) {
    d.fit_errors.push_back(RenderJobFitErrors(ssn->job_state(j).fit_errors));
    std::string tasks;
    for (PodId p : sc.cluster.jobs[j].pods) {
      const auto& errors = ssn->job_state(j).task_fit_errors;
      if (auto it = errors.find(p); it != errors.end()) {
        tasks += std::to_string(p) + ": " + it->second.Render() + "\n";
      }
    }
    d.task_fit_errors.push_back(std::move(tasks));
  }
  for (const auto& e : ssn->evictions()) d.messages.push_back(e.action + " " + e.message);
  for (const auto& p : ssn->pipelined()) d.messages.push_back(p.message);
  d.solver_stats = GetSolverStats();
  for (const ActionCounts& a : ssn->all_action_counts()) {
    std::string line =
        a.action + " " + std::to_string(a.podgroups_acted_on) + " " +
        std::to_string(a.podgroups_scheduled) + " " + std::to_string(a.scenarios_simulated) + " " +
        std::to_string(a.scenarios_filtered) + " " + std::to_string(a.preemption_attempts);
    for (const auto& by_end : a.searches) {
      line += " " + std::to_string(by_end[0]) + "/" + std::to_string(by_end[1]);
    }
    d.action_counts.push_back(std::move(line));
  }
  d.session_stats = ssn->stats();
  created.value()->CloseSession(*ssn);
  return d;
}

// The three runs of a victim-search rule's differential test: the rule on, the rule off (the other
// shortcuts on), and the plain search (every shortcut off).
enum class SearchMode { kRuleOn, kRuleOff, kPlain };
inline CycleDecisions RunSearchCycle(const std::string& file, SearchMode mode,
                                     bool SchedulerParams::*rule) {
  return RunCycle(file, [mode, rule](SchedulerParams& params) {
    params.solver_shortcuts = mode != SearchMode::kPlain;
    params.*rule = mode == SearchMode::kRuleOn;
  });
}

// A cluster of the benchmark family, written to a scenario file in the temporary folder named after
// `tag`, the process and the options (the caller removes it). A generator error fails the test.
inline std::string WriteCluster(const std::string& tag, const bench::ClusterGenOptions& options,
                                bench::ClusterGenSummary& summary) {
  std::string file =
      (std::filesystem::temp_directory_path() /
       ("gantry-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(options.nodes) +
        "-" + std::to_string(options.seed) + ".json"))
          .string();
  std::string error;
  EXPECT_TRUE(bench::WriteClusterScenario(options, file, summary, error)) << error;
  return file;
}

// A cluster of a differential test's parameter list and its test name ("busy_64_seed3").
struct ShapeCase {
  const char* shape;
  int nodes;
  uint64_t seed;
  bool plain = false;  // also compare with the plain search (slow on the larger clusters)
};
inline std::string ShapeCaseName(const ::testing::TestParamInfo<ShapeCase>& p) {
  std::string shape = p.param.shape;
  std::replace(shape.begin(), shape.end(), '-', '_');  // ("kai-layout": test names take no '-')
  return shape + "_" + std::to_string(p.param.nodes) + "_seed" + std::to_string(p.param.seed);
}

// The generated cluster of a case's shape, as gantry-bench's --shape names it: "busy" (the busy
// shared cluster), "mixed", "topology" (topology-constrained gangs), "sharing" (those and 30%
// fractional pods), "fractional" (80% fractional pods), "kai-layout" (running pods round-robin),
// "hero" (one gang of nodes/16 pods of 8 GPUs, at least 2), else the default one.
// Written as WriteCluster does, under `tag` and the shape.
inline std::string WriteShapeCluster(const std::string& tag, const ShapeCase& k,
                                     bench::ClusterGenSummary& summary) {
  const std::string shape = k.shape;
  bench::ClusterGenOptions options;
  options.nodes = k.nodes;
  options.seed = k.seed;
  options.busy_shared = shape == "busy";
  options.mixed = shape == "mixed";
  options.topology = shape == "topology" || shape == "sharing";
  if (shape == "sharing") options.fractional_share = 0.3;
  if (shape == "fractional") options.fractional_share = 0.8;
  options.round_robin = shape == "kai-layout";
  if (shape == "hero") options.hero_gang_pods = std::max(2, k.nodes / 16);
  return WriteCluster(tag + "-" + shape, options, summary);
}

// The cases of the rules for the busy shared cluster: busy at 24 nodes (with the plain search)
// and 64, default at 64 (with the plain search), seeds 1-6.
inline std::vector<ShapeCase> BusyAndDefaultCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"busy", 24, seed, true});
    cases.push_back({"busy", 64, seed, false});
    cases.push_back({"default", 64, seed, true});
  }
  return cases;
}

// The sums of one counter of the victim search over consolidation, reclaim and preempt.
inline uint64_t SumOverActions(const SolverStats& stats, uint64_t SolverActionStats::*counter) {
  uint64_t sum = 0;
  for (const auto& a : stats.by_action) sum += a.*counter;
  return sum;
}

// Two cycles placed the same: the decisions digest, the evictions and the pods pipelined (what the
// comparisons with the plain search check).
inline void ExpectSamePlacements(const CycleDecisions& on, const CycleDecisions& plain) {
  EXPECT_EQ(on.digest, plain.digest);
  EXPECT_EQ(on.evictions, plain.evictions);
  EXPECT_EQ(on.pipelined, plain.pipelined);
}

// Two cycles decided the same: digest, evictions, pipelined pods, binds and fit errors.
inline void ExpectSameDecisions(const CycleDecisions& a, const CycleDecisions& b) {
  ExpectSamePlacements(a, b);
  EXPECT_EQ(a.binds, b.binds);
  EXPECT_EQ(a.fit_errors, b.fit_errors);
}

}  // namespace gantry::differential
