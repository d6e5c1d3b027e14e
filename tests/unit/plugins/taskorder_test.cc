// taskorder: pods by task priority label, and the session's task ranks.

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

TEST_F(TaskOrderTest, WithoutLabelsPodsGoByName) {
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-0");
}

TEST_F(TaskOrderTest, TaskPriorityLabelGoesFirst) {
  c_.pods[p1_].labels.Set("kai.scheduler/task-priority", "10");
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-1");
  EXPECT_EQ(Winner(Without(SchedulerConfig::Default(), "taskorder")), "j-0");
}

TEST_F(TaskOrderTest, HigherTaskPriorityGoesFirst) {
  c_.pods[p0_].labels.Set("kai.scheduler/task-priority", "1");
  c_.pods[p1_].labels.Set("kai.scheduler/task-priority", "5");
  EXPECT_EQ(Winner(SchedulerConfig::Default()), "j-1");
}

TEST(TaskRankTest, RanksFollowTaskOrder) {
  Cluster c;
  AddQueue(c, "q");
  AddNode(c, "n", 8);
  const JobId j = AddJob(c, "j", {.queue = "q", .pods = 23, .pod = kGpuPod, .min_available = 5});
  const JobId k = AddJob(c, "k", {.queue = "q", .pods = 23, .pod = kGpuPod, .min_available = 23});
  std::mt19937 rng(7);
  for (JobId job : {j, k}) {
    for (PodId p : c.jobs[job].pods) {
      if (rng() % 2) c.pods[p].labels.Set("kai.scheduler/task-priority", std::to_string(rng() % 4));
      if (rng() % 5 == 0) c.pods[p].labels.Set("training.kubeflow.org/job-role", "master");
      if (rng() % 7 == 0) c.pods[p].labels.Set("ray.io/node-type", "head");
    }
  }
  c.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  // The default task order spelled out (kubeflow, ray, then taskorder, then the name): TaskLess
  // answers pairs of one pod set from the ranks, which must agree with it, as must the
  // functions it asks for pods of two jobs.
  auto expected_key = [&](PodId p) {
    const Pod& pod = c.pods[p];
    const std::string* role = pod.labels.Get("training.kubeflow.org/job-role");
    const std::string* type = pod.labels.Get("ray.io/node-type");
    const std::string* priority = pod.labels.Get("kai.scheduler/task-priority");
    return std::make_tuple(!(role && *role == "master"), !(type && *type == "head"), !priority,
                           priority ? -std::stol(*priority) : 0L, pod.name);
  };
  for (PodId a : c.jobs[j].pods) {
    for (JobId job : {j, k}) {
      for (PodId b : c.jobs[job].pods) {
        EXPECT_EQ(ssn->TaskLess(a, b), expected_key(a) < expected_key(b))
            << c.pods[a].name << " " << c.pods[b].name;
        EXPECT_EQ(ssn->TaskLess(b, a), expected_key(b) < expected_key(a))
            << c.pods[b].name << " " << c.pods[a].name;
      }
    }
  }
  for (JobId job : {j, k}) {
    std::vector<PodId> sorted = c.jobs[job].pods;
    std::sort(sorted.begin(), sorted.end(),
              [&](PodId a, PodId b) { return expected_key(a) < expected_key(b); });
    for (size_t i = 0; i < sorted.size(); ++i) {
      EXPECT_EQ(ssn->TaskRank(sorted[i]), static_cast<int32_t>(i)) << c.pods[sorted[i]].name;
    }
    std::vector<PodId> out;
    ssn->TasksToAllocate(job, out, /*real=*/true, /*ordered=*/true);
    const size_t want = job == j ? 5 : 23;
    ASSERT_EQ(out.size(), want);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), sorted.begin()));
  }
}

}  // namespace
}  // namespace gantry::plugin_test
