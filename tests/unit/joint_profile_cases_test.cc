// Consolidation's joint block profile (victim_search/joint_profile.h) asked directly, on scenarios
// built by hand at the edge where the pending pods and the evicted victims just fit the free
// GPUs. The generated clusters of joint_profile_test.cc do not catch a rule that counts more
// demand than there is: there, the scenarios such a rule wrongly refuses fail anyway.
//
// - RecordedVictimsCountOnce: a node's victim list holds the prefix's recorded victims too; they
//   are counted once (caught: a recorded victim counted again when its node's victims list it).
// - EveryEvictedWholeGpuVictimCounts: one GPU short, the profile fails (caught: the node's
//   potential victims left out).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/joint_profile.h"
#include "actions/victim_search/scenario.h"
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

}  // namespace
}  // namespace gantry
