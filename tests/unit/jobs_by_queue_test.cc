// JobsByQueue: the order in which actions visit jobs (queue order between sibling queues, job
// order inside a queue).
#include "framework/jobs_by_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "framework/statement.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::PodSpec;

using testutil::kGpuPod;

// One node with 8 GPUs. Department "dept" with leaves "qa" and "qb", each deserving 2 GPUs.
// qa already runs 3 GPUs (job "ra") and has three pending jobs; qb has two pending jobs and an
// unready gang (one pod of a minimum of two), all 1 GPU per pod.
//
// Fair shares (GPUs, total 8): dept asks 3 running + 6 pending = 9 and gets all 8. Inside dept:
// quotas qa 2, qb 2; 4 left, qa still asks 4 and qb 1: split 2 / 2, qb takes only 1 (qa 4,
// qb 3), the last unit goes to qa in a second round: qa 5, qb 3.
// Queue order: neither queue holds more than its fair share; with its next job qa would hold
// 3 + 1 = 4 > 2 deserved while qb would hold 0 + 1 <= 2, so qb's jobs come first.
// Inside qa: ja2 has priority 50 and goes before the older ja1 and ja3 (priority 0).
class JobsByQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const NodeId n = AddNode(c_, "n0", 8);
    AddQueue(c_, "dept", {.creation_ms = 1});
    AddQueue(c_, "qa", {.parent = "dept", .gpu = {2, kUnlimited, 1}, .creation_ms = 2});
    AddQueue(c_, "qb", {.parent = "dept", .gpu = {2, kUnlimited, 1}, .creation_ms = 3});
    const JobId ra = AddJob(c_, "ra", {.queue = "qa", .pods = 3, .pod = kGpuPod});
    for (PodId p : c_.jobs[ra].pods) testutil::Place(c_, p, n);
    // Listed (and numbered) in an order that neither matches the expected visit order.
    AddJob(c_, "ja3", {.queue = "qa", .pod = kGpuPod, .creation_ms = 30});
    AddJob(c_, "ja1", {.queue = "qa", .pod = kGpuPod, .creation_ms = 10});
    AddJob(c_, "jb2", {.queue = "qb", .pod = kGpuPod, .creation_ms = 25});
    AddJob(c_, "ja2", {.queue = "qa", .pod = kGpuPod, .priority = 50, .creation_ms = 20});
    AddJob(c_, "jb1", {.queue = "qb", .pod = kGpuPod, .creation_ms = 15});
    // Not eligible: a gang that can never reach its minimum (1 pod, minimum 2).
    AddJob(c_, "unready", {.queue = "qb", .pod = kGpuPod, .min_available = 2, .creation_ms = 1});
  }

  void Open(SchedulerConfig cfg = SchedulerConfig::Default()) {
    c_.Finalize();
    scheduler_ = testutil::MakeScheduler(std::move(cfg));
    ssn_ = scheduler_->OpenSession(c_, testutil::kNowMs);
  }

  std::vector<std::string> PopAll(JobsByQueue& jobs) {
    std::vector<std::string> order;
    while (!jobs.empty()) {
      const JobId j = jobs.PopNext();
      if (j == kNone) break;
      order.push_back(c_.jobs[j].name);
    }
    return order;
  }

  Cluster c_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Session> ssn_;
};

TEST_F(JobsByQueueTest, QueueOrderThenJobOrder) {
  Open();
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  jobs.InitializeWithAllJobs();
  // ra has nothing pending and "unready" cannot reach its minimum: 5 jobs.
  EXPECT_EQ(jobs.size(), 5u);
  EXPECT_EQ(PopAll(jobs), (std::vector<std::string>{"jb1", "jb2", "ja2", "ja1", "ja3"}));
  EXPECT_TRUE(jobs.empty());
  EXPECT_EQ(jobs.PopNext(), kNone);
}

TEST_F(JobsByQueueTest, WithoutProportionTheOlderQueueGoesFirst) {
  // No queue order function: queues fall back to creation time (qa before qb).
  Open(testutil::Without(SchedulerConfig::Default(), "proportion"));
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  jobs.InitializeWithAllJobs();
  EXPECT_EQ(PopAll(jobs), (std::vector<std::string>{"ja2", "ja1", "ja3", "jb1", "jb2"}));
}

TEST_F(JobsByQueueTest, WithoutPriorityJobsInAQueueGoByAge) {
  Open(testutil::Without(SchedulerConfig::Default(), "priority"));
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  jobs.InitializeWithAllJobs();
  EXPECT_EQ(PopAll(jobs), (std::vector<std::string>{"jb1", "jb2", "ja1", "ja2", "ja3"}));
}

TEST_F(JobsByQueueTest, PushedBackJobIsVisitedAgainInOrder) {
  Open();
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  jobs.InitializeWithAllJobs();
  const JobId first = jobs.PopNext();
  ASSERT_NE(first, kNone);
  EXPECT_EQ(c_.jobs[first].name, "jb1");
  EXPECT_EQ(jobs.size(), 4u);
  jobs.Push(first);
  EXPECT_EQ(jobs.size(), 5u);
  // Still the best job: it comes out again, then the rest in the usual order.
  EXPECT_EQ(PopAll(jobs), (std::vector<std::string>{"jb1", "jb2", "ja2", "ja1", "ja3"}));
}

TEST_F(JobsByQueueTest, PushedJobTakesItsPlaceInsideTheQueue) {
  Open();
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  for (const char* name : {"ja3", "ja1"}) jobs.Push(c_.FindJob(name));
  EXPECT_EQ(c_.jobs[jobs.PopNext()].name, "ja1");
  jobs.Push(c_.FindJob("ja2"));  // higher priority than ja3, pushed later
  EXPECT_EQ(PopAll(jobs), (std::vector<std::string>{"ja2", "ja3"}));
}

TEST_F(JobsByQueueTest, JobsOfParentQueuesAreIgnored) {
  const JobId on_dept = AddJob(c_, "on-dept", {.queue = "dept", .pod = kGpuPod});
  Open();
  JobsByQueue jobs(*ssn_, JobsOrderOptions{});
  jobs.Push(on_dept);
  EXPECT_TRUE(jobs.empty());
  EXPECT_EQ(jobs.size(), 0u);
  jobs.InitializeWithAllJobs();
  EXPECT_EQ(jobs.size(), 5u);  // the same five jobs as without it
}

TEST_F(JobsByQueueTest, FiltersCanBeSwitchedOff) {
  Open();
  JobsOrderOptions all;
  all.filter_non_pending = false;
  all.filter_unready = false;
  JobsByQueue jobs(*ssn_, all);
  jobs.InitializeWithAllJobs();
  EXPECT_EQ(jobs.size(), 7u);  // ra and "unready" too
}

// Job order keys (Session::JobOrderKeyed): with the default plugins (priority, elastic) the keys
// of any two views compare exactly as JobViewLess does, for whole jobs and parts of jobs, below,
// at and above their minimum, with tied creation times and tied (creation, name) pairs, and the
// kept whole-job keys follow status changes.
TEST(JobOrderKeyTest, KeysCompareAsTheJobOrder) {
  Cluster c;
  const NodeId n = AddNode(c, "n0", 256);
  AddQueue(c, "q", {});
  std::mt19937 rng(7);
  for (int i = 0; i < 30; ++i) {
    const int pods = 1 + static_cast<int>(rng() % 4);
    const JobId j = AddJob(c, "j" + std::to_string(i % 24),
                           {.queue = "q",
                            .pods = pods,
                            .pod = kGpuPod,
                            .min_available = 1 + static_cast<int>(rng() % pods),
                            .priority = static_cast<int32_t>(rng() % 3) * 10,
                            .creation_ms = static_cast<int64_t>(rng() % 5),
                            .ns = i < 24 ? "ns" : "other"});
    const int running = static_cast<int>(rng() % (pods + 1));
    for (int k = 0; k < running; ++k) testutil::Place(c, c.jobs[j].pods[k], n);
  }
  c.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  ASSERT_TRUE(ssn->JobOrderKeyed());
  auto check_all = [&] {
    std::vector<JobView> views;
    for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
      views.push_back(JobView{j, false, {}});
      const auto& pods = c.jobs[j].pods;
      views.push_back(JobView{j, true, {pods.begin(), pods.begin() + 1}});
      if (pods.size() > 1) views.push_back(JobView{j, true, {pods.begin() + 1, pods.end()}});
    }
    int less = 0;
    for (const JobView& l : views) {
      for (const JobView& r : views) {
        const bool by_keys = ssn->JobOrderKeyOf(l) < ssn->JobOrderKeyOf(r);
        ASSERT_EQ(ssn->JobViewLess(l, r), by_keys)
            << c.jobs[l.job].name << " vs " << c.jobs[r.job].name;
        less += by_keys;
      }
    }
    EXPECT_GT(less, 0);
  };
  check_all();
  // Evicting running pods moves their jobs below (or to) their minimum: the kept keys follow.
  Statement stmt(*ssn);
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); j += 3) {
    const PodId p = c.jobs[j].pods[0];
    if (IsActiveAllocated(ssn->pod(p).status)) stmt.Evict(p, "test");
  }
  check_all();
  stmt.Discard();
  check_all();
}

// The tie-breaker ranks order jobs by name byte by byte as std::string does (the ranks compare
// names by their first 16 bytes as numbers first): names that share 8 or 16 bytes, are prefixes
// of one another, end in zero bytes or hold bytes above 0x7f; and equal (creation, name) pairs,
// which share a rank and make the tie-breakers not distinct.
TEST(JobOrderKeyTest, TieRanksOrderNamesAsStrings) {
  const std::vector<std::string> names = {"a",
                                          std::string("a\0", 2),
                                          std::string("a\0\0", 3),
                                          "ab",
                                          "abcdefgh",
                                          "abcdefgg",
                                          "abcdefghi",
                                          "abcdefghijklmno",
                                          "abcdefghijklmnop",
                                          "abcdefghijklmnopq",
                                          "abcdefghijklmnopa",
                                          "abcdefghijklmnopqrstuvwxyz",
                                          "abcdefghijklmnoq",
                                          "abcdefg\xff",
                                          "abcdefg\x01",
                                          "\x80x",
                                          "\x7fx",
                                          "zz",
                                          "",
                                          "run-0001",
                                          "run-0010",
                                          "run-01"};
  for (const bool duplicates : {false, true}) {
    Cluster c;
    AddNode(c, "n0", 8);
    AddQueue(c, "q", {});
    for (size_t i = 0; i < names.size(); ++i) {
      AddJob(c, names[i], {.queue = "q", .pod = kGpuPod, .creation_ms = 5, .ns = "ns"});
      // (The same name in another namespace: the same (creation, name) pair.)
      if (duplicates && i % 4 == 0) {
        AddJob(c, names[i], {.queue = "q", .pod = kGpuPod, .creation_ms = 5, .ns = "other"});
      }
    }
    // Other creation times come first or last whatever the names.
    AddJob(c, "zzz", {.queue = "q", .pod = kGpuPod, .creation_ms = 1, .ns = "ns"});
    AddJob(c, "", {.queue = "q", .pod = kGpuPod, .creation_ms = 9, .ns = "ns"});
    c.Finalize();
    auto scheduler = testutil::MakeScheduler();
    auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
    ASSERT_TRUE(ssn->JobOrderKeyed());
    EXPECT_EQ(ssn->JobTieBreakersDistinct(), !duplicates);
    int less = 0;
    for (JobId l = 0; l < static_cast<JobId>(c.jobs.size()); ++l) {
      for (JobId r = 0; r < static_cast<JobId>(c.jobs.size()); ++r) {
        const JobView lv{l, false, {}};
        const JobView rv{r, false, {}};
        const bool by_keys = ssn->JobOrderKeyOf(lv) < ssn->JobOrderKeyOf(rv);
        ASSERT_EQ(ssn->JobViewLess(lv, rv), by_keys) << l << " vs " << r;
        less += by_keys;
      }
    }
    EXPECT_GT(less, 0);
  }
}

// A victims queue (reversed orders, queues compared by their victims) pops the same entries with
// the solver shortcuts on (keyed entries, one heap build per queue) as with them off (the job
// order's callbacks, one push per job), parts of jobs pushed back included.
TEST(JobOrderKeyTest, VictimPopsAreTheSameWithKeys) {
  Cluster c;
  const NodeId n = AddNode(c, "n0", 512);
  AddQueue(c, "d1", {.creation_ms = 1});
  AddQueue(c, "d2", {.creation_ms = 2});
  AddQueue(c, "a", {.parent = "d1", .gpu = {20, kUnlimited, 1}, .creation_ms = 3});
  AddQueue(c, "b", {.parent = "d1", .gpu = {40, kUnlimited, 1}, .creation_ms = 4});
  AddQueue(c, "c", {.parent = "d2", .gpu = {30, kUnlimited, 1}, .creation_ms = 5});
  const char* leaves[] = {"a", "b", "c"};
  std::mt19937 rng(11);
  std::vector<JobId> all;
  for (int i = 0; i < 60; ++i) {
    const int pods = 1 + static_cast<int>(rng() % 4);
    const JobId j = AddJob(c, "v" + std::to_string(i),
                           {.queue = leaves[rng() % 3],
                            .pods = pods,
                            .pod = kGpuPod,
                            .min_available = 1 + static_cast<int>(rng() % pods),
                            .priority = static_cast<int32_t>(rng() % 2) * 10,
                            .creation_ms = static_cast<int64_t>(rng() % 7)});
    const int running = 1 + static_cast<int>(rng() % pods);
    for (int k = 0; k < running; ++k) testutil::Place(c, c.jobs[j].pods[k], n);
    all.push_back(j);
  }
  c.Finalize();
  auto pops = [&](bool shortcuts) {
    SchedulerConfig cfg = SchedulerConfig::Default();
    cfg.params.solver_shortcuts = shortcuts;
    auto scheduler = testutil::MakeScheduler(cfg);
    auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
    JobsOrderOptions o;
    o.filter_non_pending = false;
    o.filter_unready = false;
    o.victim_queue = true;
    JobsByQueue queue(*ssn, o);
    queue.InitializeWithJobs(all);
    std::vector<std::pair<JobId, std::vector<PodId>>> out;
    while (!queue.empty()) {
      JobView v = queue.PopNextView();
      std::vector<PodId> pods = v.partial ? v.pods : c.jobs[v.job].pods;
      out.emplace_back(v.job, pods);
      // The rest of the job goes back, as the victim search does with a job's remaining pods.
      if (pods.size() > 1) queue.PushView(JobView{v.job, true, {pods.begin() + 1, pods.end()}});
    }
    return out;
  };
  const auto with_keys = pops(true);
  EXPECT_GT(with_keys.size(), all.size());
  EXPECT_EQ(with_keys, pops(false));
  // Queues built after others were dropped reuse their entry chunks (ChunkPool), the entries as
  // left (partial views, keys): appended entries are reset, so the pops are the same.
  EXPECT_EQ(with_keys, pops(true));
}

TEST(JobOrderKeyTest, AComparatorJobOrderSwitchesKeysOff) {
  Cluster c;
  AddNode(c, "n0", 8);
  AddQueue(c, "q", {});
  AddJob(c, "a", {.queue = "q", .pod = kGpuPod});
  c.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
  EXPECT_TRUE(ssn->JobOrderKeyed());
  ssn->AddJobOrderFn([](const Session&, const JobView&, const JobView&) { return 0; },
                     /*own_pods_only=*/true);
  EXPECT_FALSE(ssn->JobOrderKeyed());
}

}  // namespace
}  // namespace gantry
