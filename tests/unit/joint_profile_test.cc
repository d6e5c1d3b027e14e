// Differential tests of the joint profile rule (actions/victim_search/joint_profile.h,
// SchedulerParams::solver_joint_profile): consolidation's simulations whose pending pods and
// evicted victims cannot all fit the free GPUs after the evictions are skipped or stopped once the
// pending pods are placed; the cycle must decide the same with the rule on and off.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "actions/victim_search/stats.h"
#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

uint64_t JointActs(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::joint_skipped) +
         differential::SumOverActions(d.solver_stats, &SolverActionStats::joint_stopped);
}

class JointProfileTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(JointProfileTest, SameDecisionsAsSimulatingEveryScenario) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("joint-profile", k, summary);
  bool SchedulerParams::*rule = &SchedulerParams::solver_joint_profile;
  const CycleDecisions on =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOn, rule);
  const CycleDecisions off =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOff, rule);
  differential::ExpectSameDecisions(on, off);
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty() && on.evictions.empty());
  // The scenarios KAI counts (simulated and filtered per action) are the same: a skipped
  // simulation is still a scenario tried.
  EXPECT_EQ(on.action_counts, off.action_counts);
  EXPECT_EQ(differential::SumOverActions(on.solver_stats, &SolverActionStats::scenarios),
            differential::SumOverActions(off.solver_stats, &SolverActionStats::scenarios));
  EXPECT_EQ(JointActs(off), 0u);
  if (k.plain) {
    const CycleDecisions plain =
        differential::RunSearchCycle(file, differential::SearchMode::kPlain, rule);
    differential::ExpectSamePlacements(on, plain);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> JointProfileCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    cases.push_back({"mixed", 120, seed, false});
    cases.push_back({"fractional", 48, seed, true});
    cases.push_back({"sharing", 64, seed, true});
    cases.push_back({"topology", 64, seed, false});
  }
  cases.push_back({"mixed", 48, 1, true});
  cases.push_back({"mixed", 200, 1, false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, JointProfileTest, ::testing::ValuesIn(JointProfileCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters (else the comparisons above would not cover it), and every
// simulation it would skip or stop, run to the end instead (verify mode), must be refused by the
// validator or leave the pending pods unplaced: no acceptance counts as a violation.
TEST(JointProfileCoverage, TheRuleActsAndNoProvenSimulationIsAccepted) {
  uint64_t acts = 0;
  uint64_t verified_stops = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("joint-profile-coverage", {"mixed", 200, seed}, summary);
    acts += JointActs(differential::RunSearchCycle(file, differential::SearchMode::kRuleOn,
                                                   &SchedulerParams::solver_joint_profile));
    SetVerifyRejectionProofs(true);
    const uint64_t violations_before = RejectionProofViolations();
    const CycleDecisions verified = differential::RunSearchCycle(
        file, differential::SearchMode::kRuleOn, &SchedulerParams::solver_joint_profile);
    SetVerifyRejectionProofs(false);
    EXPECT_EQ(RejectionProofViolations(), violations_before);
    verified_stops +=
        differential::SumOverActions(verified.solver_stats, &SolverActionStats::joint_stopped);
    std::filesystem::remove(file);
  }
  EXPECT_GT(acts, 0u);
  EXPECT_GT(verified_stops, 0u);
}

}  // namespace
}  // namespace gantry
