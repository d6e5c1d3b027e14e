// The victim search's scenario sequence (actions/solver.cc, actions/scenario_filters.cc) against
// KAI's PodAccumulatedScenarioBuilder: the accumulated scenario filters and the clean session
// state every victims-queue pop sees.
#include "actions/victim_search/scenario_filters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::PodOf;
using testutil::PodSpec;

SchedulerConfig Only(const std::string& action) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {action};
  return cfg;
}

// Pins a pod to a node by a node selector on the node's "host" label.
void PinTo(Cluster& c, PodId p, NodeId n) {
  c.nodes[n].labels.Set("host", c.nodes[n].name);
  c.pods[p].node_selector.Set("host", c.nodes[n].name);
}

TEST(GreedyMatchTest, FirstFitDecreasingMissesAPackingThatExists) {
  // KAI's greedyMatchRequirements: 3 goes to the 4-GPU holder (first with room), 2 to the
  // 3-GPU one, and the last 2 finds 1 GPU left on each. (3 on the 3-GPU holder and 2 + 2 on
  // the 4-GPU one would fit.)
  const std::vector<double> req{3, 2, 2};
  EXPECT_FALSE(GreedyMatch(req, std::vector<double>{4, 3}));
  EXPECT_TRUE(GreedyMatch(req, std::vector<double>{4, 3, 2}));
  // A zero requirement ends the match (the rest are zero too).
  EXPECT_TRUE(GreedyMatch(std::vector<double>{0, 0}, std::vector<double>{}));
  // A requirement above a holder's whole capacity stops at that holder (holders come most
  // first), even if an earlier holder's room was used.
  EXPECT_FALSE(GreedyMatch(std::vector<double>{1, 1}, std::vector<double>{1, 0.5}));
}

// The greedy match against a plain first-fit-decreasing scan from the first holder each time
// (KAI's loop), on random inputs with many equal requests.
TEST(GreedyMatchTest, SameAnswersAsScanningFromTheFirstHolder) {
  auto reference = [](const std::vector<double>& req, const std::vector<double>& cap) {
    std::vector<double> used(cap.size(), 0.0);
    for (double r : req) {
      if (r == 0) return true;
      bool matched = false;
      for (size_t h = 0; h < cap.size(); ++h) {
        if (cap[h] < r) break;
        if (cap[h] - used[h] >= r) {
          used[h] += r;
          matched = true;
          break;
        }
      }
      if (!matched) return false;
    }
    return true;
  };
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<double> req(rng() % 8), cap(rng() % 6);
    for (double& r : req) r = static_cast<double>(rng() % 4) * 0.5;
    for (double& c : cap) c = static_cast<double>(rng() % 9) * 0.5;
    std::sort(req.begin(), req.end(), std::greater<>());
    std::sort(cap.begin(), cap.end(), std::greater<>());
    EXPECT_EQ(GreedyMatch(req, cap), reference(req, cap)) << "round " << round;
  }
}

// Preempt with a pending gang needing 3 + 2 + 2 GPUs (pods in that order); n1 (3 GPUs) holds
// three 1-GPU victims, n0 (4 GPUs) four, n2 (2 GPUs) one 2-GPU victim; each victim is pinned to
// its node and the victims' priorities (1..8) make the victims queue pop n1's, then n0's, then
// n2's.
TEST(ScenarioFiltersTest, IdleGpuFilterRejectsASolvableScenarioSoKaiEvictsMore) {
  Cluster c;
  const NodeId n0 = AddNode(c, "n0", 4);
  const NodeId n1 = AddNode(c, "n1", 3);
  const NodeId n2 = AddNode(c, "n2", 2);
  AddQueue(c, "q");
  std::vector<JobId> victims;
  int prio = 1;
  for (NodeId n : {n1, n1, n1, n0, n0, n0, n0}) {
    const JobId j =
        AddJob(c, "v" + std::to_string(prio),
               {.queue = "q", .pod = PodSpec{.gpus = 1}, .priority = prio, .creation_ms = prio});
    testutil::Place(c, PodOf(c, j, 0), n);
    PinTo(c, PodOf(c, j, 0), n);
    victims.push_back(j);
    ++prio;
  }
  const JobId big =
      AddJob(c, "v8", {.queue = "q", .pod = PodSpec{.gpus = 2}, .priority = 8, .creation_ms = 8});
  testutil::Place(c, PodOf(c, big, 0), n2);
  PinTo(c, PodOf(c, big, 0), n2);
  const JobId pre = AddJob(c, "pre",
                           {.queue = "q",
                            .pods = 3,
                            .pod = PodSpec{.gpus = 2},
                            .priority = 100,
                            .creation_ms = 100,
                            .preemptible = false});
  c.pods[PodOf(c, pre, 0)].request.gpus = 3;
  c.Finalize();

  auto cycle = testutil::RunCycle(c, Only("preempt"));
  const Session& s = *cycle;
  // KAI, prefix by prefix (filters see idle + releasing GPUs, plus the freed GPUs of the
  // scenario's victims, on the most idle nodes, one per pending pod):
  // - [3]: v1..v3 free n1 (3): the pod goes to n1. Recorded: v1..v3.
  // - [3, 2]: v4, v5 free 2 GPUs on n0; greedy 3 -> n1, 2 -> n0 passes; simulated and solved.
  //   Recorded: v1..v5.
  // - [3, 2, 2]: with v6 the capacities are (3, 3, 0): rejected. With v7 they are (4, 3, 0):
  //   greedy puts 3 on n0 (the first with room), 2 on n1, and the last 2 finds no room, so
  //   the scenario is skipped although a simulation places the gang (3 on n1, 2 + 2 on n0) and
  //   would stop there with v1..v7 evicted. With v8 they are (4, 3, 2): passes; the
  //   simulation puts 3 on n1, 2 on n0, 2 on n2, and v6, v7 are pipelined back onto n0.
  // So v8 (pinned to n2, which the gang takes) is evicted and v6, v7 keep running.
  EXPECT_EQ(s.pod(PodOf(c, pre, 0)).node, n1);
  EXPECT_EQ(s.pod(PodOf(c, pre, 1)).node, n0);
  EXPECT_EQ(s.pod(PodOf(c, pre, 2)).node, n2);
  std::vector<std::string> evicted;
  for (const auto& e : s.evictions()) evicted.push_back(c.pods[e.pod].name);
  std::sort(evicted.begin(), evicted.end());
  EXPECT_EQ(evicted, (std::vector<std::string>{"v1-0", "v2-0", "v3-0", "v4-0", "v5-0", "v8-0"}));
  EXPECT_EQ(s.pod(PodOf(c, victims[5], 0)).status, PodStatus::kRunning);
  EXPECT_EQ(s.pod(PodOf(c, victims[6], 0)).status, PodStatus::kRunning);
}

// KAI's node-affinities filter: a scenario passes when every pending pod with a node selector
// (or required node affinity) matches some node among the feasible nodes and the victims'
// nodes.
TEST(ScenarioFiltersTest, NodeAffinityFilterWaitsForAVictimOnAMatchingNode) {
  Cluster c;
  const NodeId n0 = AddNode(c, "n0", 1);
  const NodeId n1 = AddNode(c, "n1", 1);
  AddQueue(c, "q");
  const JobId a = AddJob(c, "a", {.queue = "q", .pod = PodSpec{.gpus = 1}, .priority = 1});
  const JobId b = AddJob(c, "b", {.queue = "q", .pod = PodSpec{.gpus = 1}, .priority = 2});
  testutil::Place(c, PodOf(c, a, 0), n0);
  testutil::Place(c, PodOf(c, b, 0), n1);
  const JobId pre = AddJob(c, "pre", {.queue = "q", .pod = PodSpec{.gpus = 1}, .priority = 100});
  c.nodes[n1].labels.Set("zone", "z1");
  c.pods[PodOf(c, pre, 0)].node_selector.Set("zone", "z1");
  c.Finalize();

  auto scheduler = testutil::MakeScheduler(Only("preempt"));
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  IdleGpuCapacities caps;
  caps.Compute(*ssn);
  const std::vector<PodId> pending{PodOf(c, pre, 0)};
  const std::vector<char> feasible(c.nodes.size(), 0);  // no node has idle GPUs
  ScenarioFilters filters(*ssn, caps, pre, pending, {}, feasible);
  // No node to consider yet: rejected.
  std::vector<PodId> potential;
  EXPECT_FALSE(filters.Accept(potential));
  // a's node n0 is not in zone z1: still rejected (although a's GPU would make the idle-GPU
  // filter pass).
  potential.push_back(PodOf(c, a, 0));
  EXPECT_FALSE(filters.Accept(potential));
  // b's node n1 is: accepted.
  potential.push_back(PodOf(c, b, 0));
  EXPECT_TRUE(filters.Accept(potential));

  // End to end: preempt skips the scenario {a} without simulating it and evicts b only.
  auto cycle = testutil::RunCycle(c, Only("preempt"));
  EXPECT_EQ(cycle->pod(PodOf(c, b, 0)).status, PodStatus::kReleasing);
  EXPECT_EQ(cycle->pod(PodOf(c, a, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(cycle->pod(PodOf(c, pre, 0)).node, n1);
}

}  // namespace
}  // namespace gantry
