// priority: job order by priority.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class JobOrderTest : public PluginTestBase {};

TEST_F(JobOrderTest, PriorityGivesTheLastGpuToTheHigherPriorityJob) {
  AddNode(c_, "n-a", 1);
  const JobId low =
      AddJob(c_, "low", {.queue = "q", .pod = kGpuPod, .priority = 0, .creation_ms = 1});  // older
  const JobId high =
      AddJob(c_, "high", {.queue = "q", .pod = kGpuPod, .priority = 50, .creation_ms = 2});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, high, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, low, 0)).status, PodStatus::kPending);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "priority"));
    EXPECT_EQ(cycle->pod(PodOf(c_, low, 0)).status, PodStatus::kBinding);  // older first
    EXPECT_EQ(cycle->pod(PodOf(c_, high, 0)).status, PodStatus::kPending);
  }
}

}  // namespace
}  // namespace gantry::plugin_test
