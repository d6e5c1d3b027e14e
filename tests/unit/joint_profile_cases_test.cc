// Consolidation's joint block profile (victim_search/joint_profile.h) asked directly, on scenarios
// built by hand at the edge where the pending pods and the evicted victims just fit the free
// GPUs. The generated clusters of joint_profile_test.cc do not catch a rule that counts more
// demand than there is: there, the scenarios such a rule wrongly refuses fail anyway.
//
// - RecordedVictimsCountOnce: a node's victim list holds the prefix's recorded victims too; they
//   are counted once (caught: a recorded victim counted again when its node's victims list it).
// - EveryEvictedWholeGpuVictimCounts: one GPU short, the profile fails (caught: the node's
//   potential victims left out).
// - RejectedNodeEndsTheScenario: a whole consolidation cycle where the rule fails on the first of
//   two nodes of the latest victim job; there a rejection ends the scenario, so the rule may only
//   stop that simulation, not skip it (caught: skipping without `may_skip`, which goes on to the
//   second node and solves).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/joint_profile.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/stats.h"
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

// A job of queue "q" with one pod asking for `gpus` whole GPUs.
JobId AddJointJob(Cluster& c, const std::string& name, int32_t priority, double gpus,
                  bool preemptible = true) {
  const JobId j =
      AddEmptyJob(c, name, JobSpec{.queue = "q", .priority = priority, .preemptible = preemptible});
  AddPodSet(c, j, "default", 1);
  AddPod(c, j, 0, name + "-0", PodSpec{.gpus = gpus});
  return j;
}

// Node a (4 GPUs) holds r (4 GPUs, the prefix's recorded victim); node b (6 GPUs) holds v
// (2 GPUs, a potential victim) and, with `blocker`, x (1 GPU, not a victim). p asks for 4.
struct JointCluster {
  Cluster c;
  JobId r = kNone, v = kNone, p = kNone;
  NodeId a = kNone, b = kNone;
};
JointCluster MakeJointCluster(bool blocker) {
  JointCluster k;
  AddQueue(k.c, "q");
  k.a = AddNode(k.c, "a", 4);
  k.b = AddNode(k.c, "b", 6);
  k.r = AddJointJob(k.c, "r", 1, 4);
  k.v = AddJointJob(k.c, "v", 1, 2);
  k.p = AddJointJob(k.c, "p", 50, 4);
  testutil::Place(k.c, testutil::PodOf(k.c, k.r, 0), k.a);
  testutil::Place(k.c, testutil::PodOf(k.c, k.v, 0), k.b);
  if (blocker) {
    const JobId x = AddJointJob(k.c, "x", 100, 1, /*preemptible=*/false);
    testutil::Place(k.c, testutil::PodOf(k.c, x, 0), k.b);
  }
  k.c.Finalize();
  return k;
}

// The rule's answer for p's pod with r recorded and the node b's victim list {r, v} (as a node's
// victims include the recorded ones), on the free GPUs left once r and v are evicted: a has 4,
// b has 6 less the blocker's GPU.
bool AskJointFails(const JointCluster& k) {
  const auto scheduler = testutil::MakeScheduler();
  const auto ssn = scheduler->OpenSession(k.c, testutil::kNowMs);
  const Cluster& c = ssn->cluster();
  victim_search::VictimGroups recorded;
  recorded.Add(k.r, c.jobs[k.r].pods);
  victim_search::ScenarioIndex index;
  const std::vector<PodId> pending = c.jobs[k.p].pods;
  victim_search::Scenario scenario(*ssn, index, k.p, pending, recorded);
  const std::vector<PodId> potential = {testutil::PodOf(c, k.r, 0), testutil::PodOf(c, k.v, 0)};
  std::vector<double> sizes;
  victim_search::SortedGpuSizes(*ssn, pending, sizes);
  // (Free GPUs after the evictions, per node, as the pre-check counts them.)
  double used_on_b = 0;
  for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
    if (ssn->pod(p).node == k.b && c.pods[p].job != k.v) used_on_b += c.pods[p].request.gpus;
  }
  const std::vector<double> free = {4, 6 - used_on_b};
  auto blocks = [&](double g) {
    double out = 0;
    for (double f : free) out += std::floor(f / g);
    return out;
  };
  victim_search::JointProfile rule;
  rule.StartPrefix();
  return rule.Fails(*ssn, scenario, potential, sizes, free[0] + free[1], blocks);
}

// p (4) + r (4) + v (2) = 10 on a (4 free) and b (6 free): two 4-GPU blocks and 2 GPUs left.
TEST(JointProfileRule, RecordedVictimsCountOnce) {
  EXPECT_FALSE(AskJointFails(MakeJointCluster(/*blocker=*/false)));
}

// With x's GPU on b, 9 GPUs are free for 10 GPUs of pods: no simulation can place them all.
TEST(JointProfileRule, EveryEvictedWholeGpuVictimCounts) {
  EXPECT_TRUE(AskJointFails(MakeJointCluster(/*blocker=*/true)));
}

// The latest victim job v spans n1 and n2; KAI's per-node step tries n1 first (name order), and on
// a node that is not the last one a rejection ends the scenario while "not placed" goes on.
//   n1 (4 GPUs): w (one 3-GPU pod), v-a (1)        n3 (4): a blocker (2, not preemptible), 2 idle
//   n2 (4 GPUs): v-b (1), u (three 1-GPU pods)     n4 (4): a blocker (2, not preemptible), 2 idle
// p (one 4-GPU pod, the highest priority, so placed before the victims) fits nowhere: no node has
// 4 idle GPUs. The victims queue pops w, then u, then v (lowest priority first). With w, u and v:
// - on n1, w and v are evicted: p takes n1, but w's 3 GPUs then fit nowhere (2 idle on n2, n3 and
//   n4 each): rejected, and the scenario ends. The joint profile fails there too (4 + 3 need two
//   3-GPU blocks, only n1 has one).
// - on n2 (never reached), u and v are evicted: p takes n2, v and u fit the 1 + 2 + 2 idle GPUs
//   of n1, n3 and n4.
// So the search fails, and the rule must leave it failing: had it treated n1 as "not placed" (it
// may skip only where both ends are alike), the search would go on to n2 and solve.
struct RejectedFirstNode {
  Cluster c;
  JobId p = kNone;
};
RejectedFirstNode MakeRejectedFirstNode() {
  RejectedFirstNode k;
  AddQueue(k.c, "q");
  const NodeId n1 = AddNode(k.c, "n1", 4);
  const NodeId n2 = AddNode(k.c, "n2", 4);
  const NodeId n3 = AddNode(k.c, "n3", 4);
  const NodeId n4 = AddNode(k.c, "n4", 4);
  auto job = [&](const std::string& name, int pods, double gpus, int32_t priority,
                 bool preemptible) {
    const JobId j = AddEmptyJob(
        k.c, name, JobSpec{.queue = "q", .priority = priority, .preemptible = preemptible});
    AddPodSet(k.c, j, "default", pods);
    for (int i = 0; i < pods; ++i) {
      AddPod(k.c, j, 0, name + "-" + std::to_string(i), PodSpec{.gpus = gpus});
    }
    return j;
  };
  const JobId w = job("w", 1, 3, 10, true);
  const JobId u = job("u", 3, 1, 20, true);
  const JobId v = job("v", 2, 1, 30, true);
  const JobId b3 = job("b3", 1, 2, 100, false);
  const JobId b4 = job("b4", 1, 2, 100, false);
  k.p = job("p", 1, 4, 90, true);
  testutil::Place(k.c, testutil::PodOf(k.c, w, 0), n1);
  testutil::Place(k.c, testutil::PodOf(k.c, v, 0), n1);
  testutil::Place(k.c, testutil::PodOf(k.c, v, 1), n2);
  for (int i = 0; i < 3; ++i) testutil::Place(k.c, testutil::PodOf(k.c, u, i), n2);
  testutil::Place(k.c, testutil::PodOf(k.c, b3, 0), n3);
  testutil::Place(k.c, testutil::PodOf(k.c, b4, 0), n4);
  k.c.Finalize();
  return k;
}

struct ConsolidationOutcome {
  PodStatus p_status = PodStatus::kPending;
  size_t evictions = 0;
  size_t pipelined = 0;
  uint64_t joint_stopped = 0;
  uint64_t joint_skipped = 0;
  uint64_t rejected = 0;
};
ConsolidationOutcome Consolidate(const RejectedFirstNode& k, bool rule, bool shortcuts) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"consolidation"};
  cfg.params.solver_shortcuts = shortcuts;
  cfg.params.solver_joint_profile = rule;
  ResetSolverStats();
  const auto cycle = testutil::RunCycle(k.c, cfg);
  const SolverActionStats& st =
      GetSolverStats().by_action[static_cast<int>(EvictionAction::kConsolidation)];
  ConsolidationOutcome o;
  o.p_status = cycle->pod(testutil::PodOf(k.c, k.p, 0)).status;
  o.evictions = cycle->evictions().size();
  o.pipelined = cycle->pipelined().size();
  o.joint_stopped = st.joint_stopped;
  o.joint_skipped = st.joint_skipped;
  o.rejected = st.rejected;
  return o;
}

TEST(JointProfileRule, RejectedNodeEndsTheScenario) {
  const RejectedFirstNode k = MakeRejectedFirstNode();
  const ConsolidationOutcome plain = Consolidate(k, /*rule=*/false, /*shortcuts=*/false);
  const ConsolidationOutcome off = Consolidate(k, /*rule=*/false, /*shortcuts=*/true);
  const ConsolidationOutcome on = Consolidate(k, /*rule=*/true, /*shortcuts=*/true);
  // The search fails, nothing moves; with the shortcuts, n1's simulation is counted rejected.
  EXPECT_GT(off.rejected, 0u);
  EXPECT_EQ(plain.p_status, PodStatus::kPending);
  EXPECT_EQ(plain.evictions, 0u);
  EXPECT_EQ(plain.pipelined, 0u);
  for (const ConsolidationOutcome* o : {&off, &on}) {
    EXPECT_EQ(o->p_status, plain.p_status);
    EXPECT_EQ(o->evictions, plain.evictions);
    EXPECT_EQ(o->pipelined, plain.pipelined);
  }
  // The rule acted on n1 (stopped there: n1 is not the scenario's last node).
  EXPECT_GT(on.joint_stopped + on.joint_skipped, 0u);
}

}  // namespace
}  // namespace gantry
