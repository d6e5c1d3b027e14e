// The simulations' job order without its idle leaf queues (victim_search/idle_queues.h) must not
// change any decision. Clusters of the benchmark family's busy shared shape (bench/cluster_gen.h:
// `busy_shared`, where most of a simulation's entries are pending jobs it skips) and of the
// default shape are generated small, for several seeds, and scheduled with the full five-action
// cycle with the rule on and off, and with the solver shortcuts off altogether (the plain
// search); the decisions must be the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"
#include "framework/session.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

using differential::SearchMode;

// (With the acting-runs rule off: where it applies, the simulations do not use the order whose
// idle queues this rule leaves out.)
CycleDecisions IdleQueuesCycle(const std::string& file, SearchMode mode) {
  return differential::RunCycle(file, [mode](SchedulerParams& params) {
    params.solver_shortcuts = mode != SearchMode::kPlain;
    params.solver_idle_queues = mode == SearchMode::kRuleOn;
    params.solver_acting_runs = false;
  });
}

uint64_t IdleQueues(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::idle_queues);
}

class IdleQueuesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(IdleQueuesTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("idle-queues", k, summary);
  const CycleDecisions on = IdleQueuesCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = IdleQueuesCycle(file, SearchMode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(IdleQueues(off), 0u);
  if (k.plain) {
    const CycleDecisions plain = IdleQueuesCycle(file, SearchMode::kPlain);
    differential::ExpectSamePlacements(on, plain);
    EXPECT_EQ(IdleQueues(plain), 0u);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, IdleQueuesTest,
                         ::testing::ValuesIn(differential::BusyAndDefaultCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(IdleQueuesCoverage, TheRuleLeavesQueuesOut) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("idle-queues", {"busy", 64, 1, false}, summary);
  const CycleDecisions on = IdleQueuesCycle(file, SearchMode::kRuleOn);
  EXPECT_TRUE(on.queue_order_pod_states_only);
  EXPECT_TRUE(on.queue_order_total_on_siblings);
  EXPECT_GT(IdleQueues(on), 0u);
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
