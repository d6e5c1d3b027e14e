// node score plugins: node availability, resource type, nominated node.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class NodeScoreTest : public PluginTestBase {};

TEST_F(NodeScoreTest, NodeAvailabilityPrefersIdleOverReleasing) {
  // n-a (2 GPUs): one running and one releasing 1-GPU pod -> idle 0, releasing 1.
  // n-b (4 GPUs): one running 1-GPU pod -> idle 3.
  // Binpack prefers n-a (1 non-allocated GPU against 3); nodeavailability adds 100 to n-b, where
  // the pod fits without waiting.
  const NodeId a = AddNode(c_, "n-a", 2);
  const NodeId b = AddNode(c_, "n-b", 4);
  Fill("run-a", a, 1, kGpuPod);
  Fill("rel-a", a, 1, kGpuPod, PodStatus::kReleasing);
  Fill("run-b", b, 1, kGpuPod);
  const PodId p = Pending("p");
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "nodeavailability"));
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kPipelined);  // waits for rel-a-0
    ASSERT_EQ(cycle->pipelined().size(), 1u);
    EXPECT_EQ(cycle->pipelined()[0].pod, p);
  }
}

TEST_F(NodeScoreTest, ResourceTypeSendsCpuPodToCpuOnlyNode) {
  // Equal CPU on both nodes: binpack ties, so without resourcetype n-a wins by name.
  AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 0);
  const PodId p = Pending("p", kCpuPod);
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "resourcetype"));
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
  }
}

TEST_F(NodeScoreTest, NominatedNodeWinsOverBinpack) {
  const NodeId a = AddNode(c_, "n-a", 4);
  const NodeId b = AddNode(c_, "n-b", 4);
  Fill("run-b", b, 2, kGpuPod);  // binpack prefers n-b
  const PodId p = Pending("p");
  c_.pods[p].nominated_node = a;
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "nominatednode"));
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
  }
}

}  // namespace
}  // namespace gantry::plugin_test
