// The capacity pre-check's base counts (victim_search/capacity_blocks.h) are made once per batch
// of scenarios over the feasible nodes, while a rejected simulation keeps the nodes its evictions
// added to them (as KAI's byPodSolver does); the later scenarios of the batch then correct the
// counts on such a node as if they held it. That is exact because such a node has no free GPU in
// the batch's base state: it joined through an eviction on it, so it was outside the job's
// feasible nodes (FeasibleNodesForJob) and the recorded victims' nodes, and only an eviction on a
// node gives it free GPUs. The reach rule (reach_bound.h) rests on the same fact.
//
// FeasibleNodesCoverFreeGpus checks the first part on clusters of the benchmark family, before and
// after the default actions: every node outside a job's feasible nodes has no free GPU (idle +
// releasing whole GPUs), so it counts no block of any size. (Were the feasible nodes narrowed,
// say to those a job's selectors admit, the batch's counts would have to follow the nodes a
// rejection keeps.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "actions/victim_search/victims.h"
#include "differential_cycle.h"
#include "framework/session.h"

namespace gantry {
namespace {

using differential::ShapeCase;

// Every node outside some job's feasible nodes has no free GPU in `ssn`'s state; returns how many
// jobs were checked.
int ExpectFeasibleNodesCoverFreeGpus(const Session& ssn) {
  const Cluster& c = ssn.cluster();
  int checked = 0;
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
    if (c.jobs[j].pods.empty()) continue;
    const std::vector<NodeId> feasible = FeasibleNodesForJob(ssn, j);
    std::vector<char> in(c.nodes.size(), 0);
    for (NodeId n : feasible) in[static_cast<size_t>(n)] = 1;
    for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
      if (in[static_cast<size_t>(n)]) continue;
      EXPECT_LE(ssn.non_allocated_gpus()[n], 0.0)
          << "node " << c.nodes[n].name << " outside job " << c.jobs[j].name << "'s feasible nodes";
    }
    ++checked;
  }
  return checked;
}

class FeasibleNodesCoverFreeGpus : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(FeasibleNodesCoverFreeGpus, BeforeAndAfterTheDefaultActions) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("feasible-cover", k, summary);
  {
    differential::OpenedSession opened =
        differential::OpenScenarioSession(file, /*run_actions=*/false);
    ASSERT_TRUE(opened.session);
    Session& ssn = *opened.session;
    EXPECT_GT(ExpectFeasibleNodesCoverFreeGpus(ssn), 0);
    opened.scheduler->RunActions(ssn, [](std::string_view, double) {});
    EXPECT_FALSE(ssn.evictions().empty() && ssn.binds().empty());
    EXPECT_GT(ExpectFeasibleNodesCoverFreeGpus(ssn), 0);
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FeasibleNodesCoverFreeGpus,
                         ::testing::Values(ShapeCase{"default", 64, 1}, ShapeCase{"busy", 24, 1},
                                           ShapeCase{"sharing", 64, 1},
                                           ShapeCase{"fractional", 64, 1},
                                           ShapeCase{"mixed", 120, 1}),
                         differential::ShapeCaseName);

}  // namespace
}  // namespace gantry
