// Reclaim's victims queues from kept leaf heaps (SchedulerParams::reclaim_kept_leaves,
// actions/reclaim/reclaim.cc and JobsByQueue::InitializeFromLeaves with LeafJobs) against their
// reference path, on generated clusters of the benchmark family: with the rule on, a leaf queue
// that a committed solution touched is brought up to date from the kept heap by its jobs whose
// version changed; off, it is built again from all its jobs. The full five-action cycle must
// decide the same, in the same order, with the same fit errors, and the victim searches must pop
// the same victims-queue entries (a stale entry, e.g. a job kept as a victim after its pods were
// evicted, pops with nothing to evict and changes no scenario: only the pop count shows it) and
// count the same scenarios. The busy shape commits hundreds of reclaim solutions, each touching
// the leaves of the reclaimer and of its victims; seeds 1-4 at 24 and 48 nodes, and 64 nodes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

class ReclaimKeptLeavesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReclaimKeptLeavesTest, SameDecisionsAndPopsAsBuildingEveryLeaf) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("reclaim-kept-leaves", k, summary);
  auto run = [&file](bool kept) {
    return differential::RunCycle(
        file, [kept](SchedulerParams& params) { params.reclaim_kept_leaves = kept; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(on.action_counts, off.action_counts);
  const auto reclaim = static_cast<size_t>(EvictionAction::kReclaim);
  const SolverActionStats& a = on.solver_stats.by_action[reclaim];
  const SolverActionStats& b = off.solver_stats.by_action[reclaim];
  EXPECT_EQ(a.jobs, b.jobs);
  EXPECT_EQ(a.solved, b.solved);
  EXPECT_EQ(a.prefixes, b.prefixes);
  EXPECT_EQ(a.victims_popped, b.victims_popped);
  EXPECT_EQ(a.scenarios, b.scenarios);
  EXPECT_EQ(a.simulations, b.simulations);
  EXPECT_EQ(a.accepted, b.accepted);
  // (Not vacuous: reclaim solved jobs, so later reclaimers' queues were built after commits
  // changed leaves, and the rule updated some of them from the kept heaps.)
  EXPECT_GT(b.solved, 0U);
  EXPECT_GT(a.kept_leaf_updates, 0U);
  EXPECT_EQ(b.kept_leaf_updates, 0U);
  std::filesystem::remove(file);
}

std::vector<ShapeCase> ReclaimKeptLeavesCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"busy", 24, seed});
    cases.push_back({"busy", 48, seed});
  }
  cases.push_back({"busy", 64, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReclaimKeptLeavesTest,
                         ::testing::ValuesIn(ReclaimKeptLeavesCases()),
                         differential::ShapeCaseName);

}  // namespace
}  // namespace gantry
