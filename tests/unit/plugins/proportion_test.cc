// proportion: queue limits, deserved quota and queue order.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class ProportionTest : public ::testing::Test {
 protected:
  Cluster c_;
};

TEST_F(ProportionTest, JobOverTheQueueLimitStaysPending) {
  const NodeId n = AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, 2, 1}});  // quota 1, limit 2 GPUs
  const JobId run = AddJob(c_, "run", {.queue = "q", .pod = kGpuPod});
  Place(c_, PodOf(c_, run, 0), n);
  const JobId j = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  const auto& errors = cycle->job_state(j).fit_errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].reason, "OverLimit");
  ASSERT_EQ(errors[0].messages.size(), 1u);
  // 1 running + 2 requested = 3 > limit 2.
  EXPECT_EQ(errors[0].messages[0],
            "q quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 1 GPUs "
            "allocated and workload requested 2 GPUs");
}

TEST_F(ProportionTest, JobWithinTheQueueLimitIsPlaced) {
  const NodeId n = AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, 3, 1}});  // limit 3: 1 running + 2 fits exactly
  const JobId run = AddJob(c_, "run", {.queue = "q", .pod = kGpuPod});
  Place(c_, PodOf(c_, run, 0), n);
  const JobId j = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
}

TEST_F(ProportionTest, NonPreemptibleJobOverDeservedQuotaStaysPending) {
  AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, kUnlimited, 1}});  // deserves 1 GPU
  const JobId np =
      AddJob(c_, "np", {.queue = "q", .pods = 2, .pod = kGpuPod, .preemptible = false});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[np].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  const auto& errors = cycle->job_state(np).fit_errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].reason, "NonPreemptibleOverQuota");
  ASSERT_EQ(errors[0].messages.size(), 1u);
  EXPECT_TRUE(Contains(errors[0].messages[0],
                       "Workload requested 2 GPUs, but q quota is 1 GPUs, while 0 GPUs are "
                       "already allocated for non-preemptible pods."));
}

TEST_F(ProportionTest, PreemptibleJobMayGoOverDeservedQuota) {
  AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, kUnlimited, 1}});
  const JobId j = AddJob(c_, "p", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
}

TEST_F(ProportionTest, QueueOrderGivesTheLastGpuToTheQueueBelowItsFairShare) {
  // 3 GPUs. qa (older queue, deserves 1) already runs 2; qb (deserves 1) runs nothing.
  // Fair shares: quotas 1 + 1, the third GPU to qa (qb asks only for 1) -> qa 2, qb 1.
  // qa with its pending job would hold 3 > deserved 1; qb would hold 1 <= 1: qb goes first.
  const NodeId n = AddNode(c_, "n-a", 3);
  AddQueue(c_, "qa", {.gpu = {1, kUnlimited, 1}, .creation_ms = 1});
  AddQueue(c_, "qb", {.gpu = {1, kUnlimited, 1}, .creation_ms = 2});
  const JobId run = AddJob(c_, "run", {.queue = "qa", .pods = 2, .pod = kGpuPod});
  for (PodId p : c_.jobs[run].pods) Place(c_, p, n);
  const JobId ja = AddJob(c_, "ja", {.queue = "qa", .pod = kGpuPod, .creation_ms = 10});
  const JobId jb = AddJob(c_, "jb", {.queue = "qb", .pod = kGpuPod, .creation_ms = 20});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, jb, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, ja, 0)).status, PodStatus::kPending);
    auto fair = cycle->QueueFairShare(c_.FindQueue("qa"));
    ASSERT_TRUE(fair.has_value());
    EXPECT_EQ((*fair)[QueueResource::kGpu], 2);
  }
  {
    // Without proportion the older queue goes first.
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "proportion"));
    EXPECT_EQ(cycle->pod(PodOf(c_, ja, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, jb, 0)).status, PodStatus::kPending);
  }
}

}  // namespace
}  // namespace gantry::plugin_test
