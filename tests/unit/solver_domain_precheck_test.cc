// The victim search's pre-check per required topology domain (victim_search/domain_precheck.h)
// must not change any decision. Clusters of the benchmark family's slow topology shapes
// (bench/cluster_gen.h: `topology`, and `sharing` with its fractional pods) are generated small,
// for several seeds, and scheduled with the full five-action cycle with the rule on and off, and
// with the solver shortcuts off altogether (the plain search); the decisions must be the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

using differential::SearchMode;

CycleDecisions DomainPrecheckCycle(const std::string& file, SearchMode mode) {
  return differential::RunSearchCycle(file, mode, &SchedulerParams::solver_domain_precheck);
}

uint64_t PrecheckDomain(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::precheck_domain);
}

class DomainPrecheckTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(DomainPrecheckTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("domain-precheck", k, summary);
  ASSERT_GT(summary.constrained_jobs, 0);
  const CycleDecisions on = DomainPrecheckCycle(file, SearchMode::kRuleOn);
  const CycleDecisions off = DomainPrecheckCycle(file, SearchMode::kRuleOff);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(PrecheckDomain(off), 0u);
  if (k.plain) {
    const CycleDecisions plain = DomainPrecheckCycle(file, SearchMode::kPlain);
    EXPECT_EQ(on.digest, plain.digest);
    EXPECT_EQ(on.evictions, plain.evictions);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> DomainPrecheckCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"topology", 64, seed, true});
    cases.push_back({"topology", 160, seed, false});
    cases.push_back({"sharing", 64, seed, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DomainPrecheckTest, ::testing::ValuesIn(DomainPrecheckCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(DomainPrecheckCoverage, TheRuleSkipsSimulations) {
  bench::ClusterGenOptions options;
  options.nodes = 160;
  options.seed = 1;
  options.topology = true;
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteCluster("domain-precheck-coverage", options, summary);
  EXPECT_GT(PrecheckDomain(DomainPrecheckCycle(file, SearchMode::kRuleOn)), 0u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gantry
