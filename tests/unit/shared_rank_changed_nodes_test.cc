// Fractional pods ranked from their previous ranking (SchedulerParams::shared_rank_changed_nodes,
// Session::RankFromKept): a victim placed again in simulation after simulation of the victim
// search is ranked over nearly the same candidates in nearly the same states each time, so its
// ranking takes the checks and scores of the candidates unchanged since the pod's previous one
// and checks and scores only the others (in rankings of 192 candidates or more). It must not change
// any decision. Clusters of the benchmark family's shared-GPU shapes (fractional: 80% fractional
// pods; sharing: 30% and topology-bound gangs, whose topology callbacks apply only to the pods they
// filter; mixed) are generated small for several seeds and scheduled with the full five-action
// cycle with the rule on and off, and with the solver shortcuts off altogether (the plain search)
// on the smaller ones; every decision and fit error must be the same.
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

CycleDecisions ChangedNodesCycle(const std::string& file, bool rule, bool shortcuts) {
  return differential::RunCycle(file, [rule, shortcuts](SchedulerParams& params) {
    params.shared_rank_changed_nodes = rule;
    params.solver_shortcuts = shortcuts;
  });
}

std::vector<ShapeCase> ChangedNodesCases() {
  // (Rankings are kept from 192 candidates: clusters of 256 nodes or more. fractional 512 and
  // 640: rankings of 500 candidates or more, where the full rankings the rule keeps are made per
  // key among the candidates, shared_rank_by_class.)
  std::vector<ShapeCase> cases = {{"fractional", 256, 1, true},  {"fractional", 256, 2, false},
                                  {"fractional", 256, 3, false}, {"fractional", 512, 1, false},
                                  {"fractional", 640, 3, false}, {"sharing", 384, 1, false},
                                  {"sharing", 384, 2, false},    {"mixed", 256, 1, false}};
  return cases;
}

class SharedRankChangedNodesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(SharedRankChangedNodesTest, SameDecisionsWithAndWithoutTheRule) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("changed-nodes", k, summary);
  const CycleDecisions on = ChangedNodesCycle(file, true, true);
  const CycleDecisions off = ChangedNodesCycle(file, false, true);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(off.session_stats.rankings_from_kept, 0);
  if (k.plain) {
    const CycleDecisions plain = ChangedNodesCycle(file, false, false);
    differential::ExpectSamePlacements(on, plain);
    const CycleDecisions plain_on = ChangedNodesCycle(file, true, false);
    differential::ExpectSameDecisions(plain_on, plain);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SharedRankChangedNodesTest,
                         ::testing::ValuesIn(ChangedNodesCases()), differential::ShapeCaseName);

// The comparisons above must cover rankings where the rule acts: fractional victims ranked from
// their previous ranking, with candidates changed since checked again, in cycles that evict and
// place shared-GPU pods again (fractional; and sharing, where the topology plugin's callbacks
// apply to other pods).
TEST(SharedRankChangedNodesCoverage, SharedGpuCyclesRankFromThePreviousRanking) {
  for (const ShapeCase& k :
       {ShapeCase{"fractional", 256, 2, false}, ShapeCase{"sharing", 384, 1, false}}) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteShapeCluster("changed-nodes-cov", k, summary);
    const CycleDecisions on = ChangedNodesCycle(file, true, true);
    EXPECT_GT(on.session_stats.rankings_from_kept, 100) << k.shape;
    EXPECT_GT(on.session_stats.kept_nodes_rescored, 0) << k.shape;
    EXPECT_GT(on.evictions.size(), 0u) << k.shape;
    std::filesystem::remove(file);
  }
}

}  // namespace
}  // namespace gantry
