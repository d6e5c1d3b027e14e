// Shared-GPU pods ranked once per key among their candidates (SchedulerParams::
// shared_rank_by_class, Session::RankPerCandidateClass): the victims placed again in the victim
// search's simulations are ranked over every feasible node, and many of a ranking's nodes repeat
// a shape, a state and a count of shared devices the pod fits met earlier in the list. It must
// not change any decision. Clusters of the benchmark family's shared-GPU shapes (fractional: 80%
// fractional pods; sharing: 30% and topology-bound gangs, where the topology plugin's callbacks
// keep the rule off) and of the busy and default shapes are generated small for several seeds and
// scheduled with the full five-action cycle with the rule on and off, and with the solver
// shortcuts off altogether (the plain search) on the smaller ones; every decision and fit error
// must be the same. A deliberately wrong rule (keys blind to the shared devices) must be caught by
// the same comparison.
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
using SharedRankMode = SchedulerParams::SharedRankByClass;

// (With SchedulerParams::shared_class_ranking off: it ranks the shared-GPU pods of rankings over
// all the nodes by node class, which are where the rule acts in these clusters.)
CycleDecisions SharedRankCycle(const std::string& file, SharedRankMode mode, bool shortcuts) {
  return differential::RunCycle(file, [mode, shortcuts](SchedulerParams& params) {
    params.shared_rank_by_class = mode;
    params.solver_shortcuts = shortcuts;
    params.shared_class_ranking = false;
    // (Every ranking made in full: kept rankings, shared_rank_changed_nodes, have their own test.)
    params.shared_rank_changed_nodes = false;
  });
}

std::vector<ShapeCase> SharedRankCases() {
  // (The rule acts on rankings of 500 candidates or more: the fractional clusters of 512 and 640
  // nodes; on the smaller ones it must stay out of the way.)
  std::vector<ShapeCase> cases = {{"fractional", 512, 1, false}, {"fractional", 512, 2, false},
                                  {"fractional", 640, 3, false}, {"fractional", 96, 1, true},
                                  {"fractional", 160, 2, false}, {"sharing", 96, 1, false}};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    cases.push_back({"fractional", 48, seed, true});
    cases.push_back({"sharing", 32, seed, true});
    cases.push_back({"busy", 24, seed, false});
    cases.push_back({"default", 32, seed, false});
  }
  return cases;
}

class SharedRankByClassTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(SharedRankByClassTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("shared-rank", k, summary);
  const CycleDecisions on = SharedRankCycle(file, SharedRankMode::kOn, true);
  const CycleDecisions off = SharedRankCycle(file, SharedRankMode::kOff, true);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(off.session_stats.rankings_per_candidate_class, 0);
  if (k.plain) {
    const CycleDecisions plain_on = SharedRankCycle(file, SharedRankMode::kOn, false);
    const CycleDecisions plain_off = SharedRankCycle(file, SharedRankMode::kOff, false);
    differential::ExpectSameDecisions(plain_on, plain_off);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SharedRankByClassTest, ::testing::ValuesIn(SharedRankCases()),
                         differential::ShapeCaseName);

// The comparisons above must cover rankings where the rule acts: shared-GPU pods ranked once per
// class, in cycles that evict and place shared-GPU pods again.
TEST(SharedRankByClassCoverage, FractionalCyclesRankSharedPodsByClass) {
  bench::ClusterGenSummary summary;
  const std::string file =
      differential::WriteShapeCluster("shared-rank", {"fractional", 512, 1, false}, summary);
  const CycleDecisions on = SharedRankCycle(file, SharedRankMode::kOn, true);
  EXPECT_GT(on.session_stats.rankings_per_candidate_class, 1000);
  EXPECT_GT(on.evictions.size(), 0u);
  EXPECT_GT(on.pipelined.size(), 0u);
  std::filesystem::remove(file);
}

// A rule that takes nodes of the same shape and state for equivalent, whatever their shared
// devices hold, changes decisions on these clusters: the comparison above would catch it.
TEST(SharedRankByClassCoverage, ABrokenRuleChangesDecisions) {
  int changed = 0;
  for (const ShapeCase& k :
       {ShapeCase{"fractional", 512, 1, false}, ShapeCase{"fractional", 512, 2, false}}) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteShapeCluster("shared-rank-broken", k, summary);
    const CycleDecisions broken = SharedRankCycle(file, SharedRankMode::kBrokenForTests, true);
    const CycleDecisions off = SharedRankCycle(file, SharedRankMode::kOff, true);
    if (broken.digest != off.digest || broken.fit_errors != off.fit_errors) ++changed;
    std::filesystem::remove(file);
  }
  EXPECT_EQ(changed, 2);
}

}  // namespace
}  // namespace gantry
