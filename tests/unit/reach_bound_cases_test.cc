// The victim search's reach rule (victim_search/reach_bound.h) asked directly, on scenarios built
// by hand, each where a rule that leaves out more scenarios than it may answers "out of reach"
// wrongly. The generated clusters of reach_bound_test.cc do not catch such rules: there, the
// scenarios a too-eager rule leaves out fail the capacity pre-check anyway. (Nor do cycles of
// these clusters: a gang's earlier pod prefixes record the victims that make the rule's answer
// matter, so the prefix where it would change a decision has them evicted already.)
//
// - TheLatestJobsOtherNodesAndTheirJobsCount: a scenario whose latest victim job's first node
//   reaches no node that frees a block, but its second node does, through another job with victims
//   on it (caught: checking only the job's first node; counting only the nodes that free a block
//   themselves as reaching).
// - ANodeOutsideTheFeasibleOnesCountsItsOwnFreeBlocks: a node outside the feasible ones frees a
//   block with its own free GPUs once its simulation adds it to them (caught: subtracting a node's
//   base blocks whether or not it is feasible; the search itself never builds such a feasible
//   list, see capacity_blocks_base_test.cc, so there that change decides the same).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/reach_bound.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/victims.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddEmptyJob;
using testutil::AddNode;
using testutil::AddPod;
using testutil::AddPodSet;
using testutil::AddQueue;
using testutil::JobSpec;
using testutil::PodSpec;

// A job of one queue "q" whose pods ask for `gpus` (one entry per pod), all of them needed.
JobId AddReachJob(Cluster& c, const std::string& name, int32_t priority,
                  const std::vector<double>& gpus, bool preemptible = true) {
  const JobId j =
      AddEmptyJob(c, name, JobSpec{.queue = "q", .priority = priority, .preemptible = preemptible});
  AddPodSet(c, j, "default", static_cast<int32_t>(gpus.size()));
  for (size_t i = 0; i < gpus.size(); ++i) {
    AddPod(c, j, 0, name + "-" + std::to_string(i), PodSpec{.gpus = gpus[i]});
  }
  return j;
}
void PlaceReachPod(Cluster& c, JobId j, int i, NodeId n) {
  testutil::Place(c, testutil::PodOf(c, j, i), n);
}

// Four nodes of 4 GPUs; d is idle, the others are full. The pending job p (priority 50) asks for
// two 4-GPU pods and two 1-GPU pods. Its victims, in the order preempt would pop them (lowest
// priority first): k (4 GPUs on c, 1 on b), then l (1 GPU on a, 1 on b). x and y are not victims.
// The rule follows 4-GPU blocks (d's is the only one in the base state, p needs two). In the
// scenario {k, l}, c frees one (U = {c}) and k has a victim there, so the nodes of k's victims, b
// and c, reach it; a does not (l's victims are on a and b, neither in U). l's nodes are a and b:
// b's simulation evicts k and l (the jobs with victims on b), frees c, and passes the pre-check.
Cluster ReachThroughSecondNode() {
  Cluster c;
  AddQueue(c, "q");
  const NodeId a = AddNode(c, "a", 4);
  const NodeId b = AddNode(c, "b", 4);
  const NodeId nc = AddNode(c, "c", 4);
  AddNode(c, "d", 4);
  const JobId x = AddReachJob(c, "x", 100, {3}, /*preemptible=*/false);
  const JobId y = AddReachJob(c, "y", 100, {2}, /*preemptible=*/false);
  const JobId k = AddReachJob(c, "k", 1, {1, 4});
  const JobId l = AddReachJob(c, "l", 2, {1, 1});
  AddReachJob(c, "p", 50, {4, 4, 1, 1});
  PlaceReachPod(c, x, 0, a);
  PlaceReachPod(c, y, 0, b);
  PlaceReachPod(c, k, 0, b);
  PlaceReachPod(c, k, 1, nc);
  PlaceReachPod(c, l, 0, a);
  PlaceReachPod(c, l, 1, b);
  c.Finalize();
  return c;
}

// One question to the rule: the scenario of the pending job's pods `pending` whose potential
// victims are the pods of `victims` (one group per job, popped in that order), with the feasible
// nodes `feasible`, for the nodes of the last victim job. The session is clean (no recorded
// victims): the prefix's base state.
bool AskOutOfReach(const Session& ssn, JobId preemptor, const std::vector<JobId>& victims,
                   const std::vector<NodeId>& feasible) {
  const Cluster& c = ssn.cluster();
  victim_search::ScenarioIndex index;
  std::vector<PodId> pending = c.jobs[preemptor].pods;
  victim_search::Scenario scenario(ssn, index, preemptor, pending, victim_search::VictimGroups{});
  for (JobId v : victims) scenario.AddPotentialVictims(ssn, c.jobs[v].pods);
  std::vector<char> flags(c.nodes.size(), 0);
  for (NodeId n : feasible) flags[static_cast<size_t>(n)] = 1;
  std::vector<double> sizes;
  victim_search::SortedGpuSizes(ssn, pending, sizes);
  victim_search::SizeProfile profile;
  victim_search::MakeProfile(sizes, profile);
  // (What evicting each slot's pod frees in the base state, as the accelerator notes it: every
  // victim here is running and asks for whole GPUs.)
  const std::span<const PodId> pods = scenario.group_pods();
  auto slot = [&](size_t i, NodeId& node, bool& counted, double& gpus) {
    node = ssn.pod(pods[i]).node;
    counted = true;
    gpus = c.pods[pods[i]].request.gpus;
  };
  NodeId single = kNone;
  const std::span<const NodeId> nodes = NodesOfJob(ssn, victims.back(), single);
  // (The base counts as the capacity pre-check makes them: every count here is a whole number.)
  auto base = [&](double g) {
    double blocks = 0;
    for (NodeId n : feasible) blocks += victim_search::NodeBlocks(ssn.non_allocated_gpus()[n], g);
    return blocks;
  };
  victim_search::ReachBound rule;
  rule.StartPrefix();
  return rule.OutOfReach(ssn, scenario, profile, flags, /*base_exact=*/true, base, nodes, slot);
}

NodeId ReachNodeNamed(const Cluster& c, const std::string& name) {
  for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
    if (c.nodes[n].name == name) return n;
  }
  return kNone;
}
JobId ReachJobNamed(const Cluster& c, const std::string& name) {
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
    if (c.jobs[j].name == name) return j;
  }
  return kNone;
}

// ReachThroughSecondNode's scenarios: {k, l} reaches c through b (k's victim there), although
// l's first node a does not; {l} alone reaches no node that frees a 4-GPU block.
TEST(ReachBoundRule, TheLatestJobsOtherNodesAndTheirJobsCount) {
  const Cluster c = ReachThroughSecondNode();
  const auto scheduler = testutil::MakeScheduler();
  const auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  const JobId p = ReachJobNamed(c, "p");
  const JobId k = ReachJobNamed(c, "k");
  const JobId l = ReachJobNamed(c, "l");
  const std::vector<NodeId> feasible = {ReachNodeNamed(c, "d")};
  EXPECT_FALSE(AskOutOfReach(*ssn, p, {k, l}, feasible));
  EXPECT_TRUE(AskOutOfReach(*ssn, p, {l}, feasible));
  // (k alone: its nodes b and c, and c frees a block.)
  EXPECT_FALSE(AskOutOfReach(*ssn, p, {k}, feasible));
}

// A node outside the feasible ones that already has a block free: its simulation adds it to them,
// so its block counts in full, not only what the victims add to it. e (5 GPUs) has 4 free and v's
// one GPU; the pending pod asks for 4; the feasible nodes are a (full). (The search never builds
// such a feasible list - FeasibleNodesForJob takes every node with free GPUs, see
// capacity_blocks_base_test.cc - but the rule must not depend on that.)
TEST(ReachBoundRule, ANodeOutsideTheFeasibleOnesCountsItsOwnFreeBlocks) {
  Cluster c;
  AddQueue(c, "q");
  const NodeId a = AddNode(c, "a", 4);
  const NodeId e = AddNode(c, "e", 5);
  const JobId x = AddReachJob(c, "x", 100, {4}, /*preemptible=*/false);
  const JobId v = AddReachJob(c, "v", 1, {1});
  const JobId p = AddReachJob(c, "p", 50, {4});
  PlaceReachPod(c, x, 0, a);
  PlaceReachPod(c, v, 0, e);
  c.Finalize();
  const auto scheduler = testutil::MakeScheduler();
  const auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  EXPECT_FALSE(AskOutOfReach(*ssn, p, {v}, {a}));
}

}  // namespace
}  // namespace gantry
