// subgrouporder: pod sets below their minimum first.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class SubGroupOrderTest : public PluginTestBase {};

TEST_F(SubGroupOrderTest, PodSetsBelowTheirMinimumGoFirst) {
  // One job, pod sets "a" (minimum 1, one running + one pending) and "b" (minimum 1, one
  // pending). n-a has 2 GPUs, one taken by a's running pod -> 1 free.
  const NodeId n = AddNode(c_, "n-a", 2);
  const JobId j = AddEmptyJob(c_, "sg", {.queue = "q"});
  const int32_t sa = AddPodSet(c_, j, "a", 1);
  const int32_t sb = AddPodSet(c_, j, "b", 1);
  const PodId a0 = AddPod(c_, j, sa, "sg-a-0", kGpuPod);
  const PodId a1 = AddPod(c_, j, sa, "sg-a-1", kGpuPod);
  const PodId b0 = AddPod(c_, j, sb, "sg-b-0", kGpuPod);
  Place(c_, a0, n);
  c_.Finalize();
  {
    // b is below its minimum: it goes first and takes the GPU.
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kPending);
  }
  {
    // By name "a" goes first, but the job is below its minimum (b is): an attempt takes only
    // what unsatisfied members lack, so a's extra pod waits and b still gets the GPU (KAI v0.17's
    // sub-group tree walk).
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "subgrouporder"));
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kPending);
  }
}

TEST_F(SubGroupOrderTest, SatisfiedPodSetsGrowByLowestRatioOrByName) {
  // Both pod sets at their minimum of 1: "a" with two running pods (ratio 2), "b" with one
  // (ratio 1); one GPU free and one pending pod in each.
  const NodeId n = AddNode(c_, "n-a", 4);
  const JobId j = AddEmptyJob(c_, "sg", {.queue = "q"});
  const int32_t sa = AddPodSet(c_, j, "a", 1);
  const int32_t sb = AddPodSet(c_, j, "b", 1);
  Place(c_, AddPod(c_, j, sa, "sg-a-0", kGpuPod), n);
  Place(c_, AddPod(c_, j, sa, "sg-a-2", kGpuPod), n);
  Place(c_, AddPod(c_, j, sb, "sg-b-1", kGpuPod), n);
  const PodId a1 = AddPod(c_, j, sa, "sg-a-1", kGpuPod);
  const PodId b0 = AddPod(c_, j, sb, "sg-b-0", kGpuPod);
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);  // the lower ratio, b, grows first
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kPending);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "subgrouporder"));  // by name
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kPending);
  }
}

}  // namespace
}  // namespace gantry::plugin_test
