// elastic: jobs below their minimum first; gangs and what fits above the minimum.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class ElasticTest : public PluginTestBase {};

TEST_F(ElasticTest, ElasticServesJobsBelowTheirMinimumFirst) {
  // n-a: 3 GPUs, 2 taken by "above" -> 1 free.
  const NodeId a = AddNode(c_, "n-a", 3);
  // "above": 3 pods, minimum 1, 2 running (above its minimum), 1 pending; older.
  const JobId above = AddJob(
      c_, "above", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 1, .creation_ms = 1});
  Place(c_, PodOf(c_, above, 0), a);
  Place(c_, PodOf(c_, above, 1), a);
  // "below": 1 pod, minimum 1, nothing running; newer.
  const JobId below = AddJob(c_, "below", {.queue = "q", .pod = kGpuPod, .creation_ms = 2});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, below, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, above, 2)).status, PodStatus::kPending);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "elastic"));
    EXPECT_EQ(cycle->pod(PodOf(c_, above, 2)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, below, 0)).status, PodStatus::kPending);
  }
}

class GangTest : public PluginTestBase {};

TEST_F(GangTest, GangOfThreeOnTwoFreeGpusPlacesNothing) {
  const NodeId n = AddNode(c_, "n-a", 4);
  Fill("run", n, 2, kGpuPod);  // 2 of 4 GPUs taken
  const JobId g = AddJob(c_, "g", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 3});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[g].pods) {
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending) << c_.pods[p].name;
    EXPECT_EQ(cycle->pod(p).node, kNone) << c_.pods[p].name;
  }
  EXPECT_TRUE(cycle->binds().empty());
  EXPECT_EQ(cycle->node(n).idle.gpus, 2);  // the two placed pods were rolled back
  EXPECT_TRUE(Contains(FitErrors(*cycle, g),
                       "Resources were found for 2 pods while 3 are required for gang "
                       "scheduling"));
}

TEST_F(GangTest, ElasticJobTakesWhatFitsAboveItsMinimum) {
  const NodeId n = AddNode(c_, "n-a", 4);
  Fill("run", n, 2, kGpuPod);
  const JobId e = AddJob(c_, "e", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 1});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  int binding = 0, pending = 0;
  for (PodId p : c_.jobs[e].pods) {
    binding += cycle->pod(p).status == PodStatus::kBinding;
    pending += cycle->pod(p).status == PodStatus::kPending;
  }
  EXPECT_EQ(binding, 2);  // the two free GPUs
  EXPECT_EQ(pending, 1);
  EXPECT_EQ(cycle->binds().size(), 2u);
  EXPECT_EQ(cycle->node(n).idle.gpus, 0);
}

}  // namespace
}  // namespace gantry::plugin_test
