// The reach rule's one-pod jobs (SchedulerParams::solver_reach_single_pod_jobs,
// victim_search/reach_bound.h) against the rule with every victim in its job and node lists, on
// the whole-GPU shapes of the benchmark family whose running jobs all have one pod (default,
// kai-layout, hero), and on two shapes with jobs of several pods beside them (mixed, busy): the
// full five-action cycle must decide the same with the same fit errors,
// and, the rule's answers being the same, the victim search must do the same work (scenarios, out
// of reach, pre-checks, simulations). Some clusters are also compared with the plain search (every
// shortcut off).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::SearchMode;
using differential::ShapeCase;

CycleDecisions SinglePodCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_reach_single_pod_jobs);
}

class ReachSinglePodTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReachSinglePodTest, SameAnswersAsTheListedVictims) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("reach-single-pod", k, summary);
  const CycleDecisions on = SinglePodCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = SinglePodCycle(file, SearchMode::kRuleOff);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(on.action_counts, off.action_counts);
  for (auto counter : {&SolverActionStats::scenarios, &SolverActionStats::out_of_reach,
                       &SolverActionStats::precheck, &SolverActionStats::proven_before,
                       &SolverActionStats::simulations, &SolverActionStats::victims_popped}) {
    EXPECT_EQ(differential::SumOverActions(on.solver_stats, counter),
              differential::SumOverActions(off.solver_stats, counter));
  }
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty() && on.evictions.empty());
  if (k.plain) {
    differential::ExpectSamePlacements(on, SinglePodCycle(file, SearchMode::kPlain));
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> ReachSinglePodCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    cases.push_back({"default", 64, seed, seed == 1});
    cases.push_back({"kai-layout", 64, seed, seed == 1});
    cases.push_back({"hero", 64, seed, seed == 1});
  }
  cases.push_back({"default", 160, 1, false});
  cases.push_back({"kai-layout", 160, 1, false});
  cases.push_back({"hero", 160, 1, false});
  // Jobs of several pods beside one-pod jobs (their victims keep going through the lists).
  cases.push_back({"mixed", 120, 1, false});
  cases.push_back({"busy", 64, 1, false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReachSinglePodTest, ::testing::ValuesIn(ReachSinglePodCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover the one-pod path.
TEST(ReachSinglePodCoverage, TheRuleLeavesScenariosOut) {
  for (const char* shape : {"default", "kai-layout", "hero"}) {
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("reach-single-pod-coverage", {shape, 160, 1}, summary);
    const CycleDecisions on = SinglePodCycle(file, SearchMode::kRuleOn);
    EXPECT_GT(differential::SumOverActions(on.solver_stats, &SolverActionStats::out_of_reach), 0u)
        << shape;
    std::filesystem::remove(file);
  }
}

}  // namespace
}  // namespace gantry
