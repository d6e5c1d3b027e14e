// The topology plugin's leaf caches and its skipped re-sorts (SchedulerParams::
// topology_incremental) must not change any answer of its SubsetNodes. Clusters of the benchmark
// family's topology shapes (bench/cluster_gen.h: `topology`, and `sharing` with its fractional
// pods) are generated small, for several seeds, and scheduled with the full five-action cycle with
// the caches on and off (every call recomputing over the tree): the decisions, in their order, and
// every job's fit errors (whose texts carry the domains' free resources and pod counts) must be
// the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cluster_gen.h"
#include "framework/session.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry {
// Its own namespace: the other differential tests define a CycleDecisions and a ShapeCase of
// their own, and a unity build compiles them in one unit.
namespace topology_incremental_test {
namespace {

struct CycleDecisions {
  uint64_t digest = 0;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  std::vector<std::pair<PodId, NodeId>> binds;
  std::vector<std::string> fit_errors;  // per job, rendered
};

CycleDecisions RunCycleOn(const std::string& file, bool incremental) {
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  if (!loaded.ok()) return {};
  Scenario sc = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(sc, sc.cluster, now);
  SchedulerConfig config = sc.config;
  config.actions = SchedulerConfig::Default().actions;
  config.params.topology_incremental = incremental;
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return {};
  auto ssn = created.value()->OpenSession(sc.cluster, now);
  created.value()->RunActions(*ssn, [](std::string_view, double) {});
  CycleDecisions d;
  d.digest = DecisionsDigest(*ssn);
  for (const auto& e : ssn->evictions()) d.evictions.emplace_back(e.pod, e.node);
  for (const auto& p : ssn->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  for (const auto& b : ssn->binds()) d.binds.emplace_back(b.pod, b.node);
  for (JobId j = 0; j < static_cast<JobId>(sc.cluster.jobs.size()); ++j) {
    d.fit_errors.push_back(RenderJobFitErrors(ssn->job_state(j).fit_errors));
  }
  created.value()->CloseSession(*ssn);
  return d;
}

struct ShapeCase {
  const char* shape;
  int nodes;
  uint64_t seed;
};

class TopologyIncrementalTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TopologyIncrementalTest, SameAnswersWithAndWithoutTheCaches) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenOptions options;
  options.nodes = k.nodes;
  options.seed = k.seed;
  options.topology = true;
  if (std::string(k.shape) == "sharing") options.fractional_share = 0.3;
  const std::string file =
      (std::filesystem::temp_directory_path() /
       ("gantry-topology-incremental-" + std::to_string(::getpid()) + "-" + k.shape + "-" +
        std::to_string(k.nodes) + "-" + std::to_string(k.seed) + ".json"))
          .string();
  bench::ClusterGenSummary summary;
  std::string error;
  ASSERT_TRUE(bench::WriteClusterScenario(options, file, summary, error)) << error;
  ASSERT_GT(summary.constrained_jobs, 0);
  const CycleDecisions on = RunCycleOn(file, true);
  const CycleDecisions off = RunCycleOn(file, false);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
  // The shapes must exercise the plugin: constrained gangs placed, and some not.
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty());
  std::filesystem::remove(file);
}

std::vector<ShapeCase> Cases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"topology", 64, seed});
    cases.push_back({"topology", 160, seed});
    cases.push_back({"sharing", 64, seed});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologyIncrementalTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ShapeCase>& p) {
                           return std::string(p.param.shape) + "_" + std::to_string(p.param.nodes) +
                                  "_seed" + std::to_string(p.param.seed);
                         });

}  // namespace
}  // namespace topology_incremental_test
}  // namespace gantry
