// KAI v0.16+'s victim search (SchedulerParams::victim_search_v017) with the solver shortcuts on
// must decide as its plain search: clusters of the benchmark family (default, busy, topology,
// sharing) are generated small, for several seeds, and scheduled with the full five-action cycle
// both ways; every decision and fit error is compared. In the verify mode (simulations a
// rejection rule proves hopeless run to the end), no proof may be contradicted.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "actions/victim_search/stats.h"
#include "differential_cycle.h"

namespace gantry {
namespace victim_search_v017_differential_test {

using differential::CycleDecisions;
using differential::ShapeCase;

CycleDecisions V017Cycle(const std::string& file, bool shortcuts) {
  return differential::RunCycle(file, [shortcuts](SchedulerParams& params) {
    params.victim_search_v017 = true;
    params.solver_shortcuts = shortcuts;
  });
}

std::vector<ShapeCase> Cases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"default", 48, seed, true});
    cases.push_back({"busy", 24, seed, true});
    cases.push_back({"topology", 48, seed, true});
    cases.push_back({"sharing", 32, seed, true});
  }
  return cases;
}

class VictimSearchV017Differential : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(VictimSearchV017Differential, ShortcutsDecideAsThePlainSearch) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("v017", k, summary);
  const CycleDecisions fast = V017Cycle(file, /*shortcuts=*/true);
  const CycleDecisions plain = V017Cycle(file, /*shortcuts=*/false);
  EXPECT_EQ(fast.digest, plain.digest);
  EXPECT_EQ(fast.evictions, plain.evictions);
  EXPECT_EQ(fast.pipelined, plain.pipelined);
  EXPECT_EQ(fast.binds, plain.binds);
  EXPECT_EQ(fast.fit_errors, plain.fit_errors);
  // Proofs run to the end must never meet an accepted outcome.
  SetVerifyRejectionProofs(true);
  const uint64_t before = RejectionProofViolations();
  const CycleDecisions verified = V017Cycle(file, /*shortcuts=*/true);
  SetVerifyRejectionProofs(false);
  EXPECT_EQ(RejectionProofViolations(), before);
  EXPECT_EQ(verified.digest, plain.digest);
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, VictimSearchV017Differential, ::testing::ValuesIn(Cases()),
                         differential::ShapeCaseName);

// The comparisons above must cover evictions and the accelerators' skips.
TEST(VictimSearchV017Coverage, TheClustersEvictAndTheShortcutsSkipSimulations) {
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("v017", {"busy", 24, 1, false}, summary);
  const CycleDecisions fast = V017Cycle(file, /*shortcuts=*/true);
  EXPECT_GT(fast.evictions.size(), 0u);
  EXPECT_GT(differential::SumOverActions(fast.solver_stats, &SolverActionStats::precheck) +
                differential::SumOverActions(fast.solver_stats, &SolverActionStats::proven_before),
            0u);
  std::filesystem::remove(file);
}

}  // namespace victim_search_v017_differential_test
}  // namespace gantry
