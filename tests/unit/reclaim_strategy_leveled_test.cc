// Reclaimable's early refusal from the strategy check (ProportionPlugin::StrategyRefuses) on a
// hand-made two-level hierarchy, where the victim's leaf queue and the reclaimee queue the check
// is leveled to (the victim's ancestor beside the reclaimer's, under their lowest common parent)
// answer differently. The generated clusters of reclaim_strategy_validator_test.cc did not catch
// a rule that asked the victim's leaf queue: there the two answer alike.
//
// Queues: a (4 GPUs deserved) with leaf a1 (4); b (4) with leaves b1 (4) and b2 (0). One node of
// 8 GPUs: v (b1, 4 GPUs, preemptible) and w (b2, 4 GPUs, not preemptible) run on it; r (a1, 4
// GPUs) is pending. b holds 8 GPUs over its fair share of 4, so reclaiming v from b for a is
// allowed (KAI levels the check to a against b); b1 alone holds exactly its deserved 4, so a check
// asked of b1 would refuse.
#include <gtest/gtest.h>

#include <string>

#include "framework/session.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::PodOf;

QueueQuota LeveledGpus(double deserved) { return QueueQuota{deserved, kUnlimited, 1}; }

struct LeveledCluster {
  Cluster c;
  JobId v = kNone, r = kNone;
};

LeveledCluster MakeLeveledCluster() {
  LeveledCluster k;
  const NodeId n0 = AddNode(k.c, "n0", 8);
  AddQueue(k.c, "a", {.gpu = LeveledGpus(4)});
  AddQueue(k.c, "a1", {.parent = "a", .gpu = LeveledGpus(4)});
  AddQueue(k.c, "b", {.gpu = LeveledGpus(4)});
  AddQueue(k.c, "b1", {.parent = "b", .gpu = LeveledGpus(4)});
  AddQueue(k.c, "b2", {.parent = "b", .gpu = LeveledGpus(0)});
  const testutil::PodSpec four{.gpus = 4};
  k.v = AddJob(k.c, "v", {.queue = "b1", .pod = four});
  const JobId w = AddJob(k.c, "w", {.queue = "b2", .pod = four, .preemptible = false});
  k.r = AddJob(k.c, "r", {.queue = "a1", .pod = four, .creation_ms = 1});
  testutil::Place(k.c, PodOf(k.c, k.v, 0), n0);
  testutil::Place(k.c, PodOf(k.c, w, 0), n0);
  k.c.Finalize();
  return k;
}

// Whether the cycle reclaimed v for r: v's pod evicted and r's pod placed (pipelined onto the
// GPUs v releases).
bool ReclaimedVForR(bool strategy_rules) {
  const LeveledCluster k = MakeLeveledCluster();
  SchedulerConfig config = SchedulerConfig::Default();
  config.params.solver_strategy_rules = strategy_rules;
  const testutil::Cycle cycle = testutil::RunCycle(k.c, config);
  bool evicted = false;
  for (const auto& e : cycle->evictions()) evicted |= e.pod == PodOf(k.c, k.v, 0);
  bool placed = false;
  for (const auto& p : cycle->pipelined()) placed |= p.pod == PodOf(k.c, k.r, 0);
  for (const auto& b : cycle->binds()) placed |= b.pod == PodOf(k.c, k.r, 0);
  return evicted && placed;
}

TEST(ReclaimStrategyLeveled, TheReclaimeeQueueDecidesNotTheVictimsLeaf) {
  EXPECT_TRUE(ReclaimedVForR(/*strategy_rules=*/false));
  EXPECT_TRUE(ReclaimedVForR(/*strategy_rules=*/true));
}

}  // namespace
}  // namespace gantry
