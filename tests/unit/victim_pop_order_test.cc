// The victim search pops the victims queue on the clean session (no victim evicted), as KAI's
// PodAccumulatedScenarioBuilder does: KAI solves each scenario in a statement of its own and
// discards it before the next pop.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/synthetic.h"
#include "test_cluster.h"

namespace gantry {
namespace {

// KAI's ReclaimLargeJobs shape with 20 nodes of 8 GPUs: 160 running one-GPU jobs in queue-0
// (running-000000 .. running-000159, node i holding running-8i .. running-8i+7, all of one
// priority, newer jobs created later) and a pending gang of two 8-GPU pods in queue-1.
TEST(VictimPopOrderTest, PopsSeeTheSessionWithNoVictimEvicted) {
  const Cluster c = sim::ReclaimLargeJobsCluster(20);
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"reclaim"};
  auto cycle = testutil::RunCycle(c, cfg);
  const Session& s = *cycle;
  // KAI: queue-0's jobs are equal but for their creation, so the victims queue (the reversed
  // job order) pops the newest first.
  // - Prefix [pod 0]: running-159 .. 152 are popped one scenario each; the idle-GPU filter
  //   skips every scenario until node-19's 8 GPUs are all freed; that one is solved.
  //   Recorded: running-152 .. 159.
  // - Prefix [pod 0, pod 1]: a fresh victims queue is popped on the clean session, where the
  //   recorded jobs still run: running-159 .. 152 come first again, each holds a recorded
  //   victim and is jumped over; then running-151 .. 144 (node-18) are added and the scenario
  //   freeing node-18 solves the gang.
  // Popped with the recorded victims evicted (as the solver did before), the elastic job order
  // ranks their jobs (no active pod left, below their minimum) differently from when the queue
  // was built, and the queue's heaps then gave node-14's jobs before node-18's.
  std::vector<std::string> evicted;
  for (const auto& e : s.evictions()) evicted.push_back(c.pods[e.pod].name);
  std::sort(evicted.begin(), evicted.end());
  std::vector<std::string> expected;
  for (int i = 144; i < 160; ++i) expected.push_back("running-000" + std::to_string(i) + "-0");
  EXPECT_EQ(evicted, expected);
  std::vector<std::string> nodes;
  for (const auto& p : s.pipelined()) nodes.push_back(c.nodes[s.pod(p.pod).node].name);
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"node-000018", "node-000019"}));
}

}  // namespace
}  // namespace gantry
