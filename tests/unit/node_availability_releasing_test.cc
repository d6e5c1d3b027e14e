// nodeavailability's shortcut (SchedulerParams::availability_nothing_releasing): on a node with
// nothing releasing, a pod the ranking found to fit idle + releasing resources is scored as fitting
// idle without asking FitsIdle again. It must not change any decision. Clusters of the benchmark
// family's shared-GPU shapes (fractional: 80% fractional pods; sharing: 30% and topology-bound
// gangs), where the victim search ranks shared-GPU victims over every feasible node in each
// simulation, and of the busy and default shapes, are generated small for several seeds and
// scheduled with the full five-action cycle with the shortcut on and off, and with the solver
// shortcuts off altogether (the plain search) on the smaller ones; every decision and fit error
// must be the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"
#include "framework/session.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

// One cycle with the shortcut `on` and the solver shortcuts `shortcuts`.
CycleDecisions AvailabilityCycle(const std::string& file, bool on, bool shortcuts) {
  return differential::RunCycle(file, [on, shortcuts](SchedulerParams& params) {
    params.availability_nothing_releasing = on;
    params.solver_shortcuts = shortcuts;
  });
}

// (The fractional shape evicts from 96 nodes on with seed 1 and at 160 with seed 2; smaller ones
// still search victims, and rank shared-GPU victims in their simulations, without a solution.)
std::vector<ShapeCase> AvailabilityCases() {
  std::vector<ShapeCase> cases = {{"fractional", 96, 1, true},
                                  {"fractional", 128, 2, false},
                                  {"fractional", 160, 1, false},
                                  {"fractional", 160, 2, false}};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    cases.push_back({"fractional", 48, seed, true});
    cases.push_back({"sharing", 32, seed, true});
    cases.push_back({"busy", 24, seed, false});
    cases.push_back({"default", 32, seed, false});
  }
  return cases;
}

class AvailabilityReleasingTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(AvailabilityReleasingTest, SameDecisionsWithAndWithoutTheShortcut) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("availability", k, summary);
  const CycleDecisions on = AvailabilityCycle(file, true, true);
  const CycleDecisions off = AvailabilityCycle(file, false, true);
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.evictions, off.evictions);
  EXPECT_EQ(on.pipelined, off.pipelined);
  EXPECT_EQ(on.binds, off.binds);
  EXPECT_EQ(on.fit_errors, off.fit_errors);
  if (k.plain) {
    const CycleDecisions plain = AvailabilityCycle(file, false, false);
    EXPECT_EQ(on.digest, plain.digest);
    EXPECT_EQ(on.evictions, plain.evictions);
    EXPECT_EQ(on.pipelined, plain.pipelined);
    EXPECT_EQ(on.binds, plain.binds);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AvailabilityReleasingTest,
                         ::testing::ValuesIn(AvailabilityCases()), differential::ShapeCaseName);

// The comparisons above must cover cycles that evict and place shared-GPU pods again, where
// nodes with releasing resources and nodes without meet in one ranking.
TEST(AvailabilityReleasingCoverage, FractionalCyclesEvictAndPipeline) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("availability", {"fractional", 96, 1, false}, summary);
  const CycleDecisions on = AvailabilityCycle(file, true, true);
  EXPECT_GT(on.evictions.size(), 0u);
  EXPECT_GT(on.pipelined.size(), 0u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gantry
