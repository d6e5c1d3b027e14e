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
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
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

}  // namespace
}  // namespace gantry
