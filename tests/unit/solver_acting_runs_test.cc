// Taking a simulation's acting entries by the maxima of the pending runs ahead of them
// (victim_search/acting_runs.h) must not change any decision. Clusters of the benchmark family's
// busy shared shape (most of a simulation's entries are pending jobs it skips) and of the default
// shape are generated small, for several seeds, and scheduled with the full five-action cycle
// with the rule on and off (the idle-queue order, idle_queues.h), and with the solver shortcuts
// off altogether (the plain search); the decisions must be the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"
#include "framework/session.h"

namespace gantry {
namespace acting_runs_test {

using differential::CycleDecisions;
using differential::SearchMode;
using differential::ShapeCase;

CycleDecisions ActingRunsCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_acting_runs);
}

uint64_t ActingRunsCount(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::acting_runs);
}

class ActingRunsTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ActingRunsTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("acting-runs", k, summary);
  const CycleDecisions on = ActingRunsCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = ActingRunsCycle(file, SearchMode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
  EXPECT_EQ(ActingRunsCount(off), 0u);
  if (k.plain) {
    const CycleDecisions plain = ActingRunsCycle(file, SearchMode::kPlain);
    EXPECT_EQ(on.digest, plain.digest);
    EXPECT_EQ(on.evictions, plain.evictions);
    EXPECT_EQ(on.pipelined, plain.pipelined);
    EXPECT_EQ(ActingRunsCount(plain), 0u);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ActingRunsTest,
                         ::testing::ValuesIn(differential::BusyAndDefaultCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(ActingRunsCoverage, TheRuleOrdersSimulations) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("acting-runs", {"busy", 64, 1, false}, summary);
  const CycleDecisions on = ActingRunsCycle(file, SearchMode::kRuleOn);
  EXPECT_GT(ActingRunsCount(on), 0u);
  std::filesystem::remove(file);
}

}  // namespace acting_runs_test
}  // namespace gantry
