// Proportion's rejection rules from reclaim's strategy check
// (plugins/proportion/reclaim_strategy.h, RejectionRules): a sibling queue whose whole allocation
// already fails the check refuses any reclaim that leaves one of its victims evicted, so the victim
// search may skip or stop such simulations. The rule must not change any decision: clusters of the
// benchmark family's busy shared shape (where every reclaim the validator refuses is refused so)
// and of the default shape are scheduled with the full five-action cycle with the rule on and off
// (SchedulerParams::solver_strategy_rules) and, on the smaller ones, with the solver shortcuts off
// altogether (the plain search). The rules must also be proofs: with the verify mode
// (SetVerifyRejectionProofs) every simulation a rule would skip or stop runs to the end and the
// validator must refuse it.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "actions/victim_search/stats.h"
#include "differential_cycle.h"
#include "framework/session.h"
#include "plugins/proportion/reclaim_strategy.h"

namespace gantry {
namespace reclaim_strategy_rules_test {

using differential::CycleDecisions;
using differential::SearchMode;
using differential::ShapeCase;

// One cycle with the rule on or off (the other shortcuts on), or the plain search.
CycleDecisions StrategyRulesCycle(const std::string& file, SearchMode mode) {
  CycleDecisions d = differential::RunCycle(file, [mode](SchedulerParams& params) {
    params.solver_shortcuts = mode != SearchMode::kPlain;
    params.solver_strategy_rules = mode == SearchMode::kRuleOn;
  });
  return d;
}

const SolverActionStats& ReclaimStats(const CycleDecisions& d) {
  return d.solver_stats.by_action[static_cast<int>(EvictionAction::kReclaim)];
}

class ReclaimStrategyRulesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReclaimStrategyRulesTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("strategy-rules", k, summary);
  const CycleDecisions on = StrategyRulesCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = StrategyRulesCycle(file, SearchMode::kRuleOff);
  differential::ExpectSameDecisions(on, off);
  // (The rule skips or stops simulations, never scenarios.)
  EXPECT_EQ(ReclaimStats(on).scenarios, ReclaimStats(off).scenarios);
  EXPECT_LE(ReclaimStats(on).simulations, ReclaimStats(off).simulations);
  if (k.plain) {
    const CycleDecisions plain = StrategyRulesCycle(file, SearchMode::kPlain);
    differential::ExpectSameDecisions(on, plain);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> StrategyRulesCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"busy", 24, seed, true});
    if (seed <= 3) cases.push_back({"busy", 64, seed, false});
  }
  cases.push_back({"default", 64, 1, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReclaimStrategyRulesTest,
                         ::testing::ValuesIn(StrategyRulesCases()), differential::ShapeCaseName);

// With the verify mode, the simulations the rules prove hopeless run to the end: the validator
// must refuse each (no violation), and the rules must prove some on these clusters (else the
// comparisons above would not cover them), more than the saturation rules alone.
TEST(ReclaimStrategyRulesCoverage, TheRulesAreProofsAndAct) {
  SetVerifyRejectionProofs(true);
  const uint64_t violations_before = RejectionProofViolations();
  uint64_t proven_on = 0;
  uint64_t proven_off = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("strategy-rules-verify", {"busy", 48, seed}, summary);
    const CycleDecisions on = StrategyRulesCycle(file, SearchMode::kRuleOn);
    const CycleDecisions off = StrategyRulesCycle(file, SearchMode::kRuleOff);
    proven_on += ReclaimStats(on).proven_before + ReclaimStats(on).proven;
    proven_off += ReclaimStats(off).proven_before + ReclaimStats(off).proven;
    std::filesystem::remove(file);
  }
  SetVerifyRejectionProofs(false);
  EXPECT_EQ(RejectionProofViolations(), violations_before);
  EXPECT_GT(proven_on, proven_off);
}

}  // namespace reclaim_strategy_rules_test
}  // namespace gantry
