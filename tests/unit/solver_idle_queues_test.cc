// The simulations' job order without its idle leaf queues (victim_search/idle_queues.h) must not
// change any decision. Clusters of the benchmark family's busy shared shape (bench/cluster_gen.h:
// `busy_shared`, where most of a simulation's entries are pending jobs it skips) and of the
// default shape are generated small, for several seeds, and scheduled with the full five-action
// cycle with the rule on and off, and with the solver shortcuts off altogether (the plain
// search); the decisions must be the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "actions/victim_search/stats.h"
#include "cluster_gen.h"
#include "framework/session.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "test_cluster.h"

namespace gantry {
namespace {

struct CycleDecisions {
  uint64_t digest = 0;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  size_t binds = 0;
  uint64_t idle_queues = 0;  // consolidation, reclaim and preempt together
  bool pod_states_only = false;
  bool total_on_siblings = false;
};

enum class Mode { kRuleOn, kRuleOff, kPlain };

CycleDecisions RunCycleOn(const std::string& file, Mode mode) {
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  if (!loaded.ok()) return {};
  Scenario sc = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(sc, sc.cluster, now);
  SchedulerConfig config = sc.config;
  config.actions = SchedulerConfig::Default().actions;
  config.params.solver_shortcuts = mode != Mode::kPlain;
  config.params.solver_idle_queues = mode == Mode::kRuleOn;
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return {};
  ResetSolverStats();
  auto ssn = created.value()->OpenSession(sc.cluster, now);
  CycleDecisions d;
  d.pod_states_only = ssn->QueueOrderDependsOnlyOnPodStates();
  d.total_on_siblings = ssn->QueueOrderTotalOnSiblings();
  created.value()->RunActions(*ssn, [](std::string_view, double) {});
  d.digest = DecisionsDigest(*ssn);
  for (const auto& e : ssn->evictions()) d.evictions.emplace_back(e.pod, e.node);
  for (const auto& p : ssn->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  d.binds = ssn->binds().size();
  for (const auto& a : GetSolverStats().by_action) d.idle_queues += a.idle_queues;
  created.value()->CloseSession(*ssn);
  return d;
}

struct ShapeCase {
  const char* shape;
  int nodes;
  uint64_t seed;
  bool plain;  // also compare with the plain search (slow on the larger clusters)
};

std::string Generate(const ShapeCase& k, bench::ClusterGenSummary& summary) {
  bench::ClusterGenOptions options;
  options.nodes = k.nodes;
  options.seed = k.seed;
  options.busy_shared = std::string(k.shape) == "busy";
  std::string file = (std::filesystem::temp_directory_path() /
                      ("gantry-idle-queues-" + std::to_string(::getpid()) + "-" + k.shape + "-" +
                       std::to_string(k.nodes) + "-" + std::to_string(k.seed) + ".json"))
                         .string();
  std::string error;
  EXPECT_TRUE(bench::WriteClusterScenario(options, file, summary, error)) << error;
  return file;
}

class IdleQueuesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(IdleQueuesTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = Generate(k, summary);
  const CycleDecisions on = RunCycleOn(file, Mode::kRuleOn);
  const CycleDecisions off = RunCycleOn(file, Mode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(off.idle_queues, 0u);
  if (k.plain) {
    const CycleDecisions plain = RunCycleOn(file, Mode::kPlain);
    EXPECT_EQ(on.digest, plain.digest);
    EXPECT_EQ(on.evictions, plain.evictions);
    EXPECT_EQ(on.pipelined, plain.pipelined);
    EXPECT_EQ(plain.idle_queues, 0u);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> Cases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"busy", 24, seed, true});
    cases.push_back({"busy", 64, seed, false});
    cases.push_back({"default", 64, seed, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, IdleQueuesTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ShapeCase>& p) {
                           return std::string(p.param.shape) + "_" + std::to_string(p.param.nodes) +
                                  "_seed" + std::to_string(p.param.seed);
                         });

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(IdleQueuesCoverage, TheRuleLeavesQueuesOut) {
  bench::ClusterGenSummary summary;
  const std::string file = Generate({"busy", 64, 1, false}, summary);
  const CycleDecisions on = RunCycleOn(file, Mode::kRuleOn);
  EXPECT_TRUE(on.pod_states_only);
  EXPECT_TRUE(on.total_on_siblings);
  EXPECT_GT(on.idle_queues, 0u);
  std::filesystem::remove(file);
}

// The queue order stays a function of pod states when the pods' memory adds up past 2^52 bytes
// in multiples of a large power of two (the busy shape at 1,000 nodes: 4.6e15 bytes in 64 GB
// steps): the exact-sums bound counts in units of the quantities' common power of two
// (proportion.cc). An odd byte count leaves no such unit, and the bound is the plain one.
bool PodStateOrderWithMemory(double memory_bytes) {
  Cluster c;
  testutil::AddNode(c, "node-0", 8, 16000, 1e18);
  testutil::AddQueue(c, "team-a", {.creation_ms = 1});
  testutil::AddQueue(c, "team-b", {.creation_ms = 2});
  for (int i = 0; i < 8; ++i) {
    testutil::AddJob(c, "job-" + std::to_string(i),
                     {.queue = i % 2 == 0 ? "team-a" : "team-b",
                      .pod = {.gpus = 1, .cpu_millis = 1000, .memory_bytes = memory_bytes}});
  }
  c.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  const bool pod_states_only = ssn->QueueOrderDependsOnlyOnPodStates();
  EXPECT_TRUE(ssn->QueueOrderTotalOnSiblings());
  scheduler->CloseSession(*ssn);
  return pod_states_only;
}

TEST(IdleQueuesCoverage, ExactSumsCountInUnitsOfACommonPowerOfTwo) {
  EXPECT_TRUE(PodStateOrderWithMemory(0x1p50));       // 2^53 bytes in all, in units of 2^50
  EXPECT_FALSE(PodStateOrderWithMemory(0x1p50 + 1));  // the same, odd: past 2^52
  EXPECT_TRUE(PodStateOrderWithMemory(1e9 + 1));      // odd but small
}

// Sibling queues created at the same time leave their order to the queue names: not total in
// the sense of Session::QueueOrderTotalOnSiblings, so the rule does not apply.
TEST(IdleQueuesCoverage, SiblingsCreatedTogetherAreNotTotal) {
  Cluster c;
  testutil::AddNode(c, "node-0", 8);
  testutil::AddQueue(c, "team-a", {.creation_ms = 5});
  testutil::AddQueue(c, "team-b", {.creation_ms = 5});
  testutil::AddJob(c, "job-0", {.queue = "team-a", .pod = testutil::kGpuPod});
  c.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  EXPECT_FALSE(ssn->QueueOrderTotalOnSiblings());
  scheduler->CloseSession(*ssn);
}

}  // namespace
}  // namespace gantry
