// Reclaimable's early refusal from the strategy check (ProportionPlugin::StrategyRefuses,
// SchedulerParams::solver_strategy_rules): a simulation that left one of its evicted victims
// evicted below a reclaimee queue whose whole frozen allocation already fails the strategy check
// is refused without the validator's per-queue sums. Unlike the rejection rules stated from the
// same check (reclaim_strategy_rules_test.cc), it needs no exact queue sums, so it acts on the
// fractional and sharing shapes, where every simulation still runs (their shared-GPU counters
// move). It must not change any decision: clusters of those shapes (and of the busy one) are
// scheduled with the full cycle with the rule on and off and, on the smaller ones, with the plain
// search; the verify mode (SetVerifyStrategyRefusals) runs the full checks after each early
// refusal, which must refuse too, and the early refusal must act on these clusters.
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
namespace reclaim_strategy_validator_test {

using differential::CycleDecisions;
using differential::SearchMode;
using differential::ShapeCase;

CycleDecisions ValidatorCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_strategy_rules);
}

const SolverActionStats& ReclaimOf(const CycleDecisions& d) {
  return d.solver_stats.by_action[static_cast<int>(EvictionAction::kReclaim)];
}

// Clusters whose reclaim searches end in rejected simulations (the bench's 200-node fractional
// cluster's reclaim is refused 1,236 times, all by the strategy check; these are its small
// cousins) and busy ones, where the exact-sums rules act first.
std::vector<ShapeCase> ValidatorCases() {
  return {{"fractional", 48, 3, true}, {"fractional", 64, 1, true}, {"fractional", 96, 3, false},
          {"sharing", 96, 1, false},   {"busy", 24, 1, true},       {"busy", 24, 2, false}};
}

class ReclaimStrategyValidatorTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReclaimStrategyValidatorTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("strategy-validator", k, summary);
  const CycleDecisions on = ValidatorCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = ValidatorCycle(file, SearchMode::kRuleOff);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(on.action_counts, off.action_counts);
  EXPECT_EQ(ReclaimOf(on).scenarios, ReclaimOf(off).scenarios);
  if (std::string(k.shape) != "busy") {
    // (Without exact sums the rule only answers the validator: the same simulations run.)
    EXPECT_EQ(ReclaimOf(on).simulations, ReclaimOf(off).simulations);
    EXPECT_EQ(ReclaimOf(on).rejected, ReclaimOf(off).rejected);
  }
  if (k.plain) {
    differential::ExpectSameDecisions(on, ValidatorCycle(file, SearchMode::kPlain));
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReclaimStrategyValidatorTest,
                         ::testing::ValuesIn(ValidatorCases()), differential::ShapeCaseName);

// Every early refusal is confirmed by the full checks, and the rule refuses some simulations on
// the fractional clusters (else the comparisons above would not cover it).
TEST(ReclaimStrategyValidatorCoverage, EveryEarlyRefusalIsConfirmedAndTheRuleActs) {
  proportion::SetVerifyStrategyRefusals(true);
  const uint64_t violations_before = proportion::StrategyRefusalViolations();
  const uint64_t refusals_before = proportion::StrategyRefusals();
  for (const ShapeCase& k : ValidatorCases()) {
    if (std::string(k.shape) != "fractional") continue;
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("strategy-validator-verify", k, summary);
    ValidatorCycle(file, SearchMode::kRuleOn);
    std::filesystem::remove(file);
  }
  proportion::SetVerifyStrategyRefusals(false);
  EXPECT_EQ(proportion::StrategyRefusalViolations(), violations_before);
  EXPECT_GT(proportion::StrategyRefusals(), refusals_before);
}

}  // namespace reclaim_strategy_validator_test
}  // namespace gantry
