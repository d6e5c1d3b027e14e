// The victim search's pre-check per required topology domain (victim_search/domain_precheck.h)
// must not change any decision. Clusters of the benchmark family's slow topology shapes
// (bench/cluster_gen.h: `topology`, and `sharing` with its fractional pods) are generated small,
// for several seeds, and scheduled with the full five-action cycle with the rule on and off, and
// with the solver shortcuts off altogether (the plain search); the decisions must be the same.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "actions/victim_search/stats.h"
#include "cluster_gen.h"
#include "framework/session.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"

namespace gantry {
namespace {

struct CycleDecisions {
  uint64_t digest = 0;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  size_t binds = 0;
  uint64_t precheck_domain = 0;  // consolidation, reclaim and preempt together
};

enum class Mode { kRuleOn, kRuleOff, kPlain };

CycleDecisions RunCycleOn(const std::string& file, Mode mode) {
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  if (!loaded.ok()) return {};
  Scenario sc = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(sc, sc.cluster, now);
  SchedulerConfig config = sc.config;
  config.actions = SchedulerConfig::Default().actions;
  config.params.solver_shortcuts = mode != Mode::kPlain;
  config.params.solver_domain_precheck = mode == Mode::kRuleOn;
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return {};
  ResetSolverStats();
  auto ssn = created.value()->OpenSession(sc.cluster, now);
  created.value()->RunActions(*ssn, [](std::string_view, double) {});
  CycleDecisions d;
  d.digest = DecisionsDigest(*ssn);
  for (const auto& e : ssn->evictions()) d.evictions.emplace_back(e.pod, e.node);
  for (const auto& p : ssn->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  d.binds = ssn->binds().size();
  for (const auto& a : GetSolverStats().by_action) d.precheck_domain += a.precheck_domain;
  created.value()->CloseSession(*ssn);
  return d;
}

struct ShapeCase {
  const char* shape;
  int nodes;
  uint64_t seed;
  bool plain;  // also compare with the plain search (slow on the larger clusters)
};

class DomainPrecheckTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(DomainPrecheckTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenOptions options;
  options.nodes = k.nodes;
  options.seed = k.seed;
  options.topology = true;
  if (std::string(k.shape) == "sharing") options.fractional_share = 0.3;
  const std::string file =
      (std::filesystem::temp_directory_path() /
       ("gantry-domain-precheck-" + std::to_string(::getpid()) + "-" + k.shape + "-" +
        std::to_string(k.nodes) + "-" + std::to_string(k.seed) + ".json"))
          .string();
  bench::ClusterGenSummary summary;
  std::string error;
  ASSERT_TRUE(bench::WriteClusterScenario(options, file, summary, error)) << error;
  ASSERT_GT(summary.constrained_jobs, 0);
  const CycleDecisions on = RunCycleOn(file, Mode::kRuleOn);
  const CycleDecisions off = RunCycleOn(file, Mode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(off.precheck_domain, 0u);
  if (k.plain) {
    const CycleDecisions plain = RunCycleOn(file, Mode::kPlain);
    EXPECT_EQ(on.digest, plain.digest);
    EXPECT_EQ(on.evictions, plain.evictions);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> Cases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"topology", 64, seed, true});
    cases.push_back({"topology", 160, seed, false});
    cases.push_back({"sharing", 64, seed, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DomainPrecheckTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ShapeCase>& p) {
                           return std::string(p.param.shape) + "_" + std::to_string(p.param.nodes) +
                                  "_seed" + std::to_string(p.param.seed);
                         });

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(DomainPrecheckCoverage, TheRuleSkipsSimulations) {
  bench::ClusterGenOptions options;
  options.nodes = 160;
  options.seed = 1;
  options.topology = true;
  const std::string file =
      (std::filesystem::temp_directory_path() /
       ("gantry-domain-precheck-coverage-" + std::to_string(::getpid()) + ".json"))
          .string();
  bench::ClusterGenSummary summary;
  std::string error;
  ASSERT_TRUE(bench::WriteClusterScenario(options, file, summary, error)) << error;
  EXPECT_GT(RunCycleOn(file, Mode::kRuleOn).precheck_domain, 0u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gantry
