// The victim search's reach rule (victim_search/reach_bound.h) against its reference path, on
// generated clusters of the benchmark family: with SchedulerParams::solver_reach_bound on,
// a scenario none of whose nodes reaches a node that frees a block the pending pods lack is left
// unsolved without trying its nodes; off, every node is tried (pre-checked or simulated). The
// full five-action cycle must decide the same, in the same order, with the same fit errors and
// the same number of scenarios; the smaller clusters are also compared with the plain search
// (every shortcut off).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

uint64_t OutOfReach(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::out_of_reach);
}

// One cycle with the rule on or off (the other shortcuts on), or the plain search.
CycleDecisions ReachBoundCycle(const std::string& file, differential::SearchMode mode) {
  CycleDecisions d = differential::RunCycle(file, [mode](SchedulerParams& params) {
    params.solver_shortcuts = mode != differential::SearchMode::kPlain;
    params.solver_reach_bound = mode == differential::SearchMode::kRuleOn;
  });
  return d;
}

class ReachBoundTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReachBoundTest, SameDecisionsAsTryingEveryNode) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("reach-bound", k, summary);
  const CycleDecisions on = ReachBoundCycle(file, differential::SearchMode::kRuleOn);
  const CycleDecisions off = ReachBoundCycle(file, differential::SearchMode::kRuleOff);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(differential::SumOverActions(on.solver_stats, &SolverActionStats::scenarios),
            differential::SumOverActions(off.solver_stats, &SolverActionStats::scenarios));
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty() && on.evictions.empty());
  EXPECT_EQ(OutOfReach(off), 0u);
  if (k.plain) {
    const CycleDecisions plain = ReachBoundCycle(file, differential::SearchMode::kPlain);
    differential::ExpectSameDecisions(on, plain);
  }
  std::filesystem::remove(file);
}

// Whole-GPU clusters (default, topology, busy), shared GPUs (sharing, fractional: their victims'
// nodes count as reaching) and the mixed shape.
std::vector<ShapeCase> ReachBoundCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    cases.push_back({"default", 64, seed, true});
    cases.push_back({"topology", 64, seed, seed == 1});
  }
  cases.push_back({"default", 160, 1, false});
  cases.push_back({"busy", 64, 1, false});
  cases.push_back({"busy", 24, 1, true});
  cases.push_back({"sharing", 64, 1, false});
  cases.push_back({"fractional", 64, 1, false});
  cases.push_back({"mixed", 120, 1, false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReachBoundTest, ::testing::ValuesIn(ReachBoundCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(ReachBoundCoverage, TheRuleLeavesScenariosOut) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("reach-bound-coverage", {"default", 160, 1}, summary);
  EXPECT_GT(OutOfReach(ReachBoundCycle(file, differential::SearchMode::kRuleOn)), 0u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gantry
