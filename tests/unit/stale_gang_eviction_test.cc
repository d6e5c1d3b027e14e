// The stalegangeviction action: sessions running only that action over small gangs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddEmptyJob;
using testutil::AddJob;
using testutil::AddNode;
using testutil::AddPod;
using testutil::AddPodSet;
using testutil::AddQueue;
using testutil::kNowMs;
using testutil::Place;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::RunCycle;

using testutil::kGpuPod;

SchedulerConfig StaleOnly(double grace_seconds) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"stalegangeviction"};
  cfg.params.staleness_grace_period_seconds = grace_seconds;
  return cfg;
}

class StaleGangEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddQueue(c_, "q");
    node_ = AddNode(c_, "n1", 8);
  }

  // A gang of `pods` pods with minimum `min_available`; the first `running` are running on the
  // node, the rest pending.
  JobId Gang(const std::string& name, int pods, int min_available, int running) {
    const JobId j = AddJob(
        c_, name, {.queue = "q", .pods = pods, .pod = kGpuPod, .min_available = min_available});
    for (int i = 0; i < running; ++i) Place(c_, PodOf(c_, j, i), node_);
    return j;
  }

  std::vector<PodId> Evicted(const Session& s) const {
    std::vector<PodId> out;
    for (const auto& e : s.evictions()) out.push_back(e.pod);
    return out;
  }

  Cluster c_;
  NodeId node_ = kNone;
};

TEST_F(StaleGangEvictionTest, GangBelowItsMinimumIsEvictedWithZeroGrace) {
  const JobId j = Gang("g", 3, 3, 2);
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  const PodId p0 = PodOf(c_, j, 0);
  const PodId p1 = PodOf(c_, j, 1);
  EXPECT_EQ(cycle->pod(p0).status, PodStatus::kReleasing);
  EXPECT_EQ(cycle->pod(p1).status, PodStatus::kReleasing);
  EXPECT_EQ(cycle->pod(PodOf(c_, j, 2)).status, PodStatus::kPending);
  EXPECT_EQ(Evicted(*cycle), (std::vector<PodId>{p0, p1}));
  ASSERT_EQ(cycle->evictions().size(), 2u);
  EXPECT_EQ(cycle->evictions()[0].node, node_);
  EXPECT_EQ(cycle->evictions()[0].message,
            "Workload doesn't meet the minimum required number of pods (3), evicting remaining "
            "pod: ns/g-0");
  EXPECT_EQ(cycle->job_state(j).stale_since_ms, kNowMs);
  // The releasing pods still hold their resources on the node.
  EXPECT_EQ(cycle->node(node_).releasing.gpus, 2);
}

TEST_F(StaleGangEvictionTest, NewlyStaleGangIsKeptDuringTheGracePeriod) {
  const JobId j = Gang("g", 3, 3, 2);
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(60));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_EQ(cycle->pod(PodOf(c_, j, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(cycle->job_state(j).stale_since_ms, kNowMs);
}

TEST_F(StaleGangEvictionTest, GangStaleForLongerThanTheGraceIsEvicted) {
  const JobId j = Gang("g", 3, 3, 2);
  c_.jobs[j].stale_since_ms = kNowMs - 61'000;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(60));
  EXPECT_EQ(Evicted(*cycle), (std::vector<PodId>{PodOf(c_, j, 0), PodOf(c_, j, 1)}));
  // The timestamp is kept as it was.
  EXPECT_EQ(cycle->job_state(j).stale_since_ms, kNowMs - 61'000);
}

TEST_F(StaleGangEvictionTest, GraceBoundaryIsInclusive) {
  const JobId exactly = Gang("exactly", 3, 3, 2);
  c_.jobs[exactly].stale_since_ms = kNowMs - 60'000;
  const JobId almost = Gang("almost", 3, 3, 2);
  c_.jobs[almost].stale_since_ms = kNowMs - 59'999;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(60));
  EXPECT_EQ(Evicted(*cycle), (std::vector<PodId>{PodOf(c_, exactly, 0), PodOf(c_, exactly, 1)}));
}

TEST_F(StaleGangEvictionTest, NegativeGraceNeverEvicts) {
  const JobId old = Gang("old", 3, 3, 2);
  c_.jobs[old].stale_since_ms = kNowMs - 86'400'000;
  const JobId fresh = Gang("fresh", 3, 3, 1);
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(-1));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_EQ(cycle->job_state(old).stale_since_ms, kNowMs - 86'400'000);
  EXPECT_EQ(cycle->job_state(fresh).stale_since_ms, kNowMs);  // still stamped
}

TEST_F(StaleGangEvictionTest, JobWithASucceededPodIsNotStale) {
  const JobId j = Gang("g", 3, 3, 1);
  c_.pods[PodOf(c_, j, 1)].status = PodStatus::kSucceeded;
  c_.jobs[j].stale_since_ms = kNowMs - 600'000;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_FALSE(cycle->job_state(j).stale_since_ms.has_value());
}

TEST_F(StaleGangEvictionTest, SatisfiedGangClearsItsTimestamp) {
  const JobId j = Gang("g", 3, 3, 3);
  c_.jobs[j].stale_since_ms = kNowMs - 600'000;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_FALSE(cycle->job_state(j).stale_since_ms.has_value());
}

TEST_F(StaleGangEvictionTest, JobWithoutActivePodsIsNotStale) {
  const JobId pending = Gang("pending", 3, 3, 0);
  c_.jobs[pending].stale_since_ms = kNowMs - 600'000;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_FALSE(cycle->job_state(pending).stale_since_ms.has_value());
}

TEST_F(StaleGangEvictionTest, ReleasingPodsCountAsActiveButAreNotEvictedAgain) {
  // min 3: one running, one releasing, one pipelined -> 3 active-used, satisfied.
  const JobId satisfied = Gang("satisfied", 3, 3, 3);
  c_.pods[PodOf(c_, satisfied, 1)].status = PodStatus::kReleasing;
  c_.pods[PodOf(c_, satisfied, 2)].status = PodStatus::kPipelined;
  // min 4: running, releasing, pipelined, pending -> stale; the running and pipelined pods go.
  const JobId stale = Gang("stale", 4, 4, 3);
  c_.pods[PodOf(c_, stale, 1)].status = PodStatus::kReleasing;
  c_.pods[PodOf(c_, stale, 2)].status = PodStatus::kPipelined;
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  EXPECT_EQ(Evicted(*cycle), (std::vector<PodId>{PodOf(c_, stale, 0), PodOf(c_, stale, 2)}));
  EXPECT_EQ(cycle->pod(PodOf(c_, satisfied, 0)).status, PodStatus::kRunning);
}

TEST_F(StaleGangEvictionTest, EveryPodSetMustMeetItsMinimum) {
  // workers: min 2 with one running; leader: min 1 with one running. The leader pod set is fine
  // but the job is stale, so both running pods are evicted with per-sub-group messages.
  const JobId j = AddEmptyJob(c_, "mixed", {.queue = "q"});
  const int32_t workers = AddPodSet(c_, j, "workers", 2);
  const int32_t leader = AddPodSet(c_, j, "leader", 1);
  const PodId w0 = AddPod(c_, j, workers, "mixed-w0", kGpuPod);
  AddPod(c_, j, workers, "mixed-w1", kGpuPod);
  const PodId l0 = AddPod(c_, j, leader, "mixed-l0", kGpuPod);
  Place(c_, w0, node_);
  Place(c_, l0, node_);
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  ASSERT_EQ(cycle->evictions().size(), 2u);
  EXPECT_EQ(cycle->evictions()[0].pod, w0);
  EXPECT_EQ(cycle->evictions()[0].message,
            "Workload doesn't meet the minimum required number of pods (2) in sub-group workers, "
            "evicting remaining pod: ns/mixed-w0");
  EXPECT_EQ(cycle->evictions()[1].pod, l0);
  EXPECT_EQ(cycle->evictions()[1].message,
            "Workload doesn't meet the minimum required number of pods (1) in sub-group leader, "
            "evicting remaining pod: ns/mixed-l0");
}

TEST_F(StaleGangEvictionTest, ElasticJobAboveItsMinimumIsNotStale) {
  const JobId j = Gang("elastic", 4, 2, 2);
  c_.Finalize();
  auto cycle = RunCycle(c_, StaleOnly(0));
  EXPECT_TRUE(cycle->evictions().empty());
  EXPECT_FALSE(cycle->job_state(j).stale_since_ms.has_value());
}

}  // namespace
}  // namespace gantry
