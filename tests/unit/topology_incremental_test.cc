// The topology plugin's leaf caches and its skipped re-sorts (SchedulerParams::
// topology_incremental) must not change any answer of its SubsetNodes. Clusters of the benchmark
// family's topology shapes (bench/cluster_gen.h: `topology`, and `sharing` with its fractional
// pods) are generated small, for several seeds, and scheduled with the full five-action cycle with
// the caches on and off (every call recomputing over the tree): the decisions, in their order, and
// every job's fit errors (whose texts carry the domains' free resources and pod counts) must be
// the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

CycleDecisions TopologyCycle(const std::string& file, bool incremental) {
  return differential::RunCycle(
      file, [incremental](SchedulerParams& params) { params.topology_incremental = incremental; });
}

class TopologyIncrementalTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TopologyIncrementalTest, SameAnswersWithAndWithoutTheCaches) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("topology-incremental", k, summary);
  ASSERT_GT(summary.constrained_jobs, 0);
  const CycleDecisions on = TopologyCycle(file, true);
  const CycleDecisions off = TopologyCycle(file, false);
  differential::ExpectSameDecisions(on, off);
  // The shapes must exercise the plugin: constrained gangs placed, and some not.
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty());
  std::filesystem::remove(file);
}

std::vector<ShapeCase> TopologyCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"topology", 64, seed});
    cases.push_back({"topology", 160, seed});
    cases.push_back({"sharing", 64, seed});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologyIncrementalTest, ::testing::ValuesIn(TopologyCases()),
                         differential::ShapeCaseName);

// Following the node journal (SchedulerParams::topology_follow_changes: sums kept current by the
// changed nodes, counts by their differences, allocate's all-node candidate lists unfiltered,
// preferred-level scores per domain) against the leaf caches' version scans it replaces, on the
// shapes with constrained gangs: the topology and sharing ones, and mixed (preferred rack level,
// required block or zone, fractional and CPU-only pods beside them). The cycle's victim searches
// change nodes far more often than allocate does, and may pass the journal's bound (four entries
// per node plus 64), after which the sums are made anew.
class TopologyFollowChangesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TopologyFollowChangesTest, SameAnswersAsTheVersionScans) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("topology-follow", k, summary);
  ASSERT_GT(summary.constrained_jobs, 0);
  auto run = [&file](bool follow) {
    return differential::RunCycle(file, [follow](SchedulerParams& params) {
      params.topology_incremental = true;
      params.topology_follow_changes = follow;
    });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  differential::ExpectSameDecisions(on, off);
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty());
  std::filesystem::remove(file);
}

std::vector<ShapeCase> FollowChangesCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"topology", 64, seed});
    cases.push_back({"topology", 160, seed});
    cases.push_back({"sharing", 64, seed});
    cases.push_back({"mixed", 96, seed});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologyFollowChangesTest,
                         ::testing::ValuesIn(FollowChangesCases()), differential::ShapeCaseName);

// Children already in the order of their new keys left unsorted (SchedulerParams::
// topology_sort_skip_sorted) against sorting them whenever a key changed, while following the
// changes. The victim searches place gangs of different sizes again, one after the other, so keys
// change at almost every call; the order must come out the same, and with it every ranking, so
// the cycles decide the same and rank the same number of nodes.
class TopologySortSkipSortedTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TopologySortSkipSortedTest, SameAnswersAsSortingAgain) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("topology-sorted", k, summary);
  ASSERT_GT(summary.constrained_jobs, 0);
  auto run = [&file](bool skip) {
    return differential::RunCycle(
        file, [skip](SchedulerParams& params) { params.topology_sort_skip_sorted = skip; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(on.action_counts, off.action_counts);
  EXPECT_EQ(differential::SumOverActions(on.solver_stats, &SolverActionStats::simulations),
            differential::SumOverActions(off.solver_stats, &SolverActionStats::simulations));
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty());
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologySortSkipSortedTest,
                         ::testing::ValuesIn(FollowChangesCases()), differential::ShapeCaseName);

}  // namespace
}  // namespace gantry
