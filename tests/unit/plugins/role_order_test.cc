// role_order: Kubeflow masters and launchers, Ray heads first.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

TEST_F(TaskOrderTest, KubeflowMasterGoesFirst) {
  c_.pods[p0_].labels.Set("training.kubeflow.org/job-role", "worker");
  c_.pods[p1_].labels.Set("training.kubeflow.org/job-role", "master");
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-1");
  EXPECT_EQ(Winner(Without(SchedulerConfig::Default(), "kubeflow")), "j-0");
}

TEST_F(TaskOrderTest, KubeflowLauncherGoesFirst) {
  c_.pods[p1_].labels.Set("training.kubeflow.org/job-role", "launcher");
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-1");
}

TEST_F(TaskOrderTest, RayHeadGoesFirst) {
  c_.pods[p0_].labels.Set("ray.io/node-type", "worker");
  c_.pods[p1_].labels.Set("ray.io/node-type", "head");
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-1");
  EXPECT_EQ(Winner(Without(SchedulerConfig::Default(), "ray")), "j-0");
}

// TasksToAllocate orders pods by their ranks in the pod set (TaskRank), ranked once per set: the
// order must be TaskLess's, whatever labels mix priorities, roles and names, and however many
// pods are taken.

}  // namespace
}  // namespace gantry::plugin_test
