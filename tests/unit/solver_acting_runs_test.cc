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
    differential::ExpectSamePlacements(on, plain);
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

// The maxima over a leaf's fixed entries taken once per distinct request (acting_runs.h: its own
// switch, under the acting runs): the same decisions with it on and off.
CycleDecisions RunRequestsCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_acting_run_requests);
}

uint64_t ByRequestCount(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::run_maxima_by_request);
}

class ActingRunRequestsTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ActingRunRequestsTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("acting-run-requests", k, summary);
  const CycleDecisions on = RunRequestsCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = RunRequestsCycle(file, SearchMode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
  EXPECT_EQ(ByRequestCount(off), 0u);
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ActingRunRequestsTest,
                         ::testing::ValuesIn(differential::BusyAndDefaultCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(ActingRunRequestsCoverage, TheRuleTakesMaxima) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("acting-run-requests", {"busy", 64, 1, false}, summary);
  const CycleDecisions on = RunRequestsCycle(file, SearchMode::kRuleOn);
  EXPECT_GT(ByRequestCount(on), 0u);
  std::filesystem::remove(file);
}

// The pending jobs and the fixed lists kept between searches (fixed_lists.h: its own switch,
// under the acting runs): the same decisions with it on and off.
CycleDecisions KeptCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_acting_runs_kept);
}

uint64_t KeptCount(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::kept_pending);
}

class ActingRunsKeptTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ActingRunsKeptTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("acting-runs-kept", k, summary);
  const CycleDecisions on = KeptCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = KeptCycle(file, SearchMode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
  EXPECT_EQ(KeptCount(off), 0u);
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ActingRunsKeptTest,
                         ::testing::ValuesIn(differential::BusyAndDefaultCases()),
                         differential::ShapeCaseName);

TEST(ActingRunsKeptCoverage, SearchesUseTheKeptLists) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("acting-runs-kept", {"busy", 64, 1, false}, summary);
  const CycleDecisions on = KeptCycle(file, SearchMode::kRuleOn);
  EXPECT_GT(KeptCount(on), 1u);
  std::filesystem::remove(file);
}

}  // namespace acting_runs_test
}  // namespace gantry
