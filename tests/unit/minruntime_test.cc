// The minruntime plugin through its registered callbacks: sessions are opened with minruntime as
// the only plugin, and the victim filters and scenario validators are called directly with
// hand-built scenarios.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/registry.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddEmptyJob;
using testutil::AddJob;
using testutil::AddNode;
using testutil::AddPod;
using testutil::AddPodSet;
using testutil::AddQueue;
using testutil::Contains;
using testutil::JobSpec;
using testutil::kNowMs;
using testutil::MakeScheduler;
using testutil::Place;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::QueueSpec;

using testutil::kGpuPod;

SchedulerConfig OnlyMinRuntime(std::map<std::string, std::string> args = {}) {
  SchedulerConfig cfg;
  cfg.actions = {};
  cfg.plugins = {PluginConfig{"minruntime", std::move(args), {}}};
  return cfg;
}

class MinRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override { node_ = AddNode(c_, "n1", 64, 256000, 1e12); }

  // A running job of `pods` pods (minimum `min_available`, -1 = all) in `queue`, started
  // `started_ago_s` seconds before now (no recorded start when negative).
  JobId Running(const std::string& name, const std::string& queue, double started_ago_s,
                int pods = 1, int min_available = -1) {
    const JobId j = AddJob(
        c_, name, {.queue = queue, .pods = pods, .pod = kGpuPod, .min_available = min_available});
    for (PodId p : c_.jobs[j].pods) Place(c_, p, node_);
    if (started_ago_s >= 0) {
      c_.jobs[j].last_start_ms = kNowMs - static_cast<int64_t>(started_ago_s * 1000);
    }
    return j;
  }
  JobId Pending(const std::string& name, const std::string& queue) {
    return AddJob(c_, name, {.queue = queue, .pod = kGpuPod});
  }

  // Opens a session with minruntime alone, configured with `args`.
  Session& Open(std::map<std::string, std::string> args = {}) {
    c_.Finalize();
    scheduler_ = MakeScheduler(OnlyMinRuntime(std::move(args)));
    ssn_ = scheduler_->OpenSession(c_, kNowMs);
    return *ssn_;
  }

  Cluster c_;
  NodeId node_ = kNone;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Session> ssn_;
};

// --- Filters ------------------------------------------------------------------------------------

TEST_F(MinRuntimeTest, PreemptFilterProtectsVictimInsideItsMinRuntime) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId young = Running("young", "q", 30);
  const JobId old = Running("old", "q", 120);
  const JobId never_started = Running("never-started", "q", -1);
  const JobId exactly = Running("exactly", "q", 60);
  Session& s = Open({{"defaultPreemptMinRuntime", "60s"}});

  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, young));
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, old));
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, never_started));
  // Protected while now < last start + min runtime: at exactly the min runtime it is over.
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, exactly));
  // The reclaim default is still 0: nothing is protected from reclaim.
  EXPECT_TRUE(s.ReclaimVictimFilter(preemptor, young));
}

TEST_F(MinRuntimeTest, ReclaimFilterProtectsVictimInsideItsMinRuntime) {
  AddQueue(c_, "a");
  AddQueue(c_, "b");
  const JobId reclaimer = Pending("reclaimer", "a");
  const JobId young = Running("young", "b", 4 * 60);
  const JobId old = Running("old", "b", 6 * 60);
  Session& s = Open({{"defaultReclaimMinRuntime", "5m"}});

  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer, young));
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer, old));
  // The preempt default is still 0.
  EXPECT_TRUE(s.PreemptVictimFilter(reclaimer, young));
}

TEST_F(MinRuntimeTest, WithoutArgumentsNothingIsProtected) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId victim = Running("victim", "q", 0);
  Session& s = Open();
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, victim));
  EXPECT_TRUE(s.ReclaimVictimFilter(preemptor, victim));
}

// With no minimum runtime anywhere the plugin registers no filter (nothing can be protected),
// except when a job's recorded start is after now: its runtime is then below zero, still
// inside a zero minimum.
TEST_F(MinRuntimeTest, ZeroMinimumsProtectOnlyJobsStartedAfterNow) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId victim = Running("victim", "q", 30);
  const JobId early = Running("clock-skew", "q", 0);
  c_.jobs[early].last_start_ms = kNowMs + 5000;
  Session& s = Open();
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, victim));
  EXPECT_TRUE(s.ReclaimVictimFilter(preemptor, victim));
  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, early));
  EXPECT_FALSE(s.ReclaimVictimFilter(preemptor, early));
}

TEST_F(MinRuntimeTest, QueueValuesOverrideTheDefaults) {
  const QueueId q = AddQueue(c_, "q");
  c_.queues[q].preempt_min_runtime_seconds = 10;
  c_.queues[q].reclaim_min_runtime_seconds = 600;
  const JobId preemptor = Pending("preemptor", "q");
  const JobId victim = Running("victim", "q", 60);
  Session& s = Open({{"defaultPreemptMinRuntime", "1h"}, {"defaultReclaimMinRuntime", "0"}});
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, victim));   // 60 s >= 10 s
  EXPECT_FALSE(s.ReclaimVictimFilter(preemptor, victim));  // 60 s < 600 s
}

TEST_F(MinRuntimeTest, PreemptMinRuntimeIsInheritedThroughTheQueueHierarchy) {
  const QueueId dept = AddQueue(c_, "dept");
  c_.queues[dept].preempt_min_runtime_seconds = 120;
  AddQueue(c_, "inherits", {.parent = "dept"});
  const QueueId overrides = AddQueue(c_, "overrides", {.parent = "dept"});
  c_.queues[overrides].preempt_min_runtime_seconds = 30;
  AddQueue(c_, "other-dept");
  AddQueue(c_, "plain", {.parent = "other-dept"});

  const JobId preemptor = Pending("preemptor", "inherits");
  const JobId in_inherits = Running("in-inherits", "inherits", 60);
  const JobId in_overrides = Running("in-overrides", "overrides", 60);
  const JobId in_plain = Running("in-plain", "plain", 60);
  Session& s = Open({{"defaultPreemptMinRuntime", "10s"}});

  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, in_inherits));  // parent's 120 s
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, in_overrides));  // own 30 s
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, in_plain));      // default 10 s
}

// Two departments: dept-a (reclaim 300 s) with leaves a1 (10 s) and a2 (unset); dept-b (unset)
// with leaf b1. Victims run for 60 s.
class ReclaimResolutionTest : public MinRuntimeTest {
 protected:
  void SetUp() override {
    MinRuntimeTest::SetUp();
    const QueueId dept_a = AddQueue(c_, "dept-a");
    c_.queues[dept_a].reclaim_min_runtime_seconds = 300;
    const QueueId a1 = AddQueue(c_, "a1", {.parent = "dept-a"});
    c_.queues[a1].reclaim_min_runtime_seconds = 10;
    AddQueue(c_, "a2", {.parent = "dept-a"});
    AddQueue(c_, "dept-b");
    AddQueue(c_, "b1", {.parent = "dept-b"});
    reclaimer_a1_ = Pending("reclaimer-a1", "a1");
    reclaimer_a2_ = Pending("reclaimer-a2", "a2");
    reclaimer_b1_ = Pending("reclaimer-b1", "b1");
    victim_a1_ = Running("victim-a1", "a1", 60);
    victim_a2_ = Running("victim-a2", "a2", 60);
    victim_b1_ = Running("victim-b1", "b1", 60);
  }
  JobId reclaimer_a1_, reclaimer_a2_, reclaimer_b1_, victim_a1_, victim_a2_, victim_b1_;
};

TEST_F(ReclaimResolutionTest, LcaUsesTheVictimSideChildOfTheCommonAncestor) {
  Session& s = Open({{"defaultReclaimMinRuntime", "20s"}});  // lca is the default method
  // Cousin reclaimer (other department): the victim's department decides - 300 s.
  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer_b1_, victim_a1_));
  // Sibling reclaimer: one step below dept-a towards the victim is a1 itself - 10 s.
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a2_, victim_a1_));
  // Same leaf queue: the queue's own value - 10 s.
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a1_, victim_a1_));
  // Sibling reclaimer, victim leaf unset: walks up to dept-a - 300 s.
  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer_a1_, victim_a2_));
  // Victim under dept-b, nothing set anywhere: the default 20 s.
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a1_, victim_b1_));
}

TEST_F(ReclaimResolutionTest, QueueMethodWalksUpFromTheVictimQueue) {
  Session& s = Open({{"defaultReclaimMinRuntime", "20s"}, {"reclaimResolveMethod", "queue"}});
  // Whoever reclaims, a1's own 10 s applies.
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_b1_, victim_a1_));
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a2_, victim_a1_));
  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer_a1_, victim_a2_));  // dept-a's 300 s
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a1_, victim_b1_));   // default
}

TEST_F(ReclaimResolutionTest, LcaStepsDownOneLevelUnderACommonRoot) {
  // Put both departments under one root: the common ancestor of a cousin pair is then the root
  // and the step down lands on the victim's department.
  const QueueId root = AddQueue(c_, "root");
  c_.queues[root].reclaim_min_runtime_seconds = 600;
  for (auto& q : c_.queues) {
    if (q.name == "dept-a" || q.name == "dept-b") q.parent_name = "root";
  }
  Session& s = Open({{"defaultReclaimMinRuntime", "20s"}});
  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer_b1_, victim_a1_));  // dept-a's 300 s
  EXPECT_TRUE(s.ReclaimVictimFilter(reclaimer_a2_, victim_a1_));   // a1's 10 s
  EXPECT_FALSE(s.ReclaimVictimFilter(reclaimer_a1_, victim_b1_));  // dept-b unset: root's 600 s
}

TEST_F(MinRuntimeTest, PreemptProtectionDoesNotDependOnThePreemptor) {
  const QueueId a = AddQueue(c_, "a");
  c_.queues[a].preempt_min_runtime_seconds = 600;
  AddQueue(c_, "b");
  const JobId from_a = Pending("from-a", "a");
  const JobId from_b = Pending("from-b", "b");
  const JobId victim = Running("victim", "a", 60);
  Session& s = Open();
  EXPECT_FALSE(s.PreemptVictimFilter(from_a, victim));
  EXPECT_FALSE(s.PreemptVictimFilter(from_b, victim));
}

// --- Elastic victims and scenario validators ---------------------------------------------------

TEST_F(MinRuntimeTest, ElasticVictimPassesFiltersButScenarioMustKeepItsMinimum) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId elastic = Running("elastic", "q", 10, /*pods=*/4, /*min_available=*/2);
  Session& s = Open({{"defaultPreemptMinRuntime", "60s"}, {"defaultReclaimMinRuntime", "60s"}});
  ASSERT_TRUE(s.IsElastic(elastic));

  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, elastic));
  EXPECT_TRUE(s.ReclaimVictimFilter(preemptor, elastic));

  const auto scenario = [&](int victims) {
    ScenarioInfo info;
    info.preemptor = preemptor;
    std::vector<PodId> tasks;
    for (int i = 0; i < victims; ++i) tasks.push_back(PodOf(c_, elastic, i));
    info.victims.emplace_back(elastic, std::move(tasks));
    return info;
  };
  EXPECT_TRUE(s.PreemptScenarioValid(scenario(1)));   // 4 - 1 = 3 >= 2
  EXPECT_TRUE(s.PreemptScenarioValid(scenario(2)));   // 4 - 2 = 2 >= 2
  EXPECT_FALSE(s.PreemptScenarioValid(scenario(3)));  // 4 - 3 = 1 < 2
  EXPECT_TRUE(s.ReclaimScenarioValid(scenario(2)));
  EXPECT_FALSE(s.ReclaimScenarioValid(scenario(4)));
}

TEST_F(MinRuntimeTest, ElasticVictimPastItsMinRuntimeMayLoseEveryPod) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId elastic = Running("elastic", "q", 120, 4, 2);
  Session& s = Open({{"defaultPreemptMinRuntime", "60s"}, {"defaultReclaimMinRuntime", "60s"}});
  ScenarioInfo info;
  info.preemptor = preemptor;
  info.victims.emplace_back(elastic, c_.jobs[elastic].pods);
  EXPECT_TRUE(s.PreemptScenarioValid(info));
  EXPECT_TRUE(s.ReclaimScenarioValid(info));
}

TEST_F(MinRuntimeTest, ValidatorIgnoresNonElasticVictims) {
  // Non-elastic victims are the filters' business: a scenario naming a protected one is not
  // refused by the validator.
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId gang = Running("gang", "q", 10, 2);
  Session& s = Open({{"defaultPreemptMinRuntime", "60s"}});
  ASSERT_FALSE(s.IsElastic(gang));
  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, gang));
  ScenarioInfo info;
  info.preemptor = preemptor;
  info.victims.emplace_back(gang, c_.jobs[gang].pods);
  EXPECT_TRUE(s.PreemptScenarioValid(info));
}

TEST_F(MinRuntimeTest, ValidatorChecksEachPodSetOfAnElasticVictim) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  // workers: 2 pods, minimum 1 (elastic); leader: 1 pod, minimum 1.
  const JobId j = AddEmptyJob(c_, "mixed", {.queue = "q"});
  const int32_t workers = AddPodSet(c_, j, "workers", 1);
  const int32_t leader = AddPodSet(c_, j, "leader", 1);
  const PodId w0 = AddPod(c_, j, workers, "mixed-w0", kGpuPod);
  const PodId w1 = AddPod(c_, j, workers, "mixed-w1", kGpuPod);
  const PodId l0 = AddPod(c_, j, leader, "mixed-l0", kGpuPod);
  for (PodId p : {w0, w1, l0}) Place(c_, p, node_);
  c_.jobs[j].last_start_ms = kNowMs - 5'000;
  Session& s = Open({{"defaultReclaimMinRuntime", "1m"}});
  ASSERT_TRUE(s.IsElastic(j));

  const auto valid = [&](std::vector<PodId> tasks) {
    ScenarioInfo info;
    info.preemptor = preemptor;
    info.victims.emplace_back(j, std::move(tasks));
    return s.ReclaimScenarioValid(info);
  };
  EXPECT_TRUE(valid({w0}));
  EXPECT_FALSE(valid({w0, w1}));
  EXPECT_FALSE(valid({l0}));
}

TEST_F(MinRuntimeTest, ValidatorCountsOnlyActiveUsedPods) {
  // 4 pods with minimum 2, but one is still pending: 3 active-used, so evicting 2 breaks it.
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId j =
      AddJob(c_, "partly", {.queue = "q", .pods = 4, .pod = kGpuPod, .min_available = 2});
  for (int i = 0; i < 3; ++i) Place(c_, PodOf(c_, j, i), node_);
  c_.jobs[j].last_start_ms = kNowMs - 1'000;
  Session& s = Open({{"defaultPreemptMinRuntime", "60s"}});
  ScenarioInfo info;
  info.preemptor = preemptor;
  info.victims.emplace_back(j, std::vector<PodId>{PodOf(c_, j, 0)});
  EXPECT_TRUE(s.PreemptScenarioValid(info));
  info.victims[0].second.push_back(PodOf(c_, j, 1));
  EXPECT_FALSE(s.PreemptScenarioValid(info));
}

TEST_F(MinRuntimeTest, DisabledFunctionsAreNotRegistered) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId victim = Running("victim", "q", 1);
  c_.Finalize();
  SchedulerConfig cfg =
      OnlyMinRuntime({{"defaultPreemptMinRuntime", "1h"}, {"defaultReclaimMinRuntime", "1h"}});
  cfg.plugins[0].disabled_functions = {"preemptable"};
  auto scheduler = MakeScheduler(cfg);
  auto s = scheduler->OpenSession(c_, kNowMs);
  EXPECT_TRUE(s->PreemptVictimFilter(preemptor, victim));
  EXPECT_FALSE(s->ReclaimVictimFilter(preemptor, victim));
}

// --- Arguments ---------------------------------------------------------------------------------

Result<PluginPtr> Create(std::map<std::string, std::string> args) {
  return BuiltinPlugins().Create(PluginConfig{"minruntime", std::move(args), {}});
}

TEST(MinRuntimeArgumentsTest, AcceptsGoDurations) {
  for (const char* text :
       {"0", "30s", "5m", "1h30m", "1.5h", "250ms", "2d", "1w", "-5m", "+10s", ".5s", "1h0m0s"}) {
    EXPECT_TRUE(Create({{"defaultPreemptMinRuntime", text}}).ok()) << text;
    EXPECT_TRUE(Create({{"defaultReclaimMinRuntime", text}}).ok()) << text;
  }
  EXPECT_TRUE(Create({{"reclaimResolveMethod", "lca"}}).ok());
  EXPECT_TRUE(Create({{"reclaimResolveMethod", "queue"}}).ok());
  EXPECT_TRUE(Create({}).ok());
}

TEST(MinRuntimeArgumentsTest, RejectsMalformedDurationsNamingTheArgument) {
  for (const char* text :
       {"", "10", "abc", "5 m", "1x", "s", ".s", "1.2.3s", "--5s", "99999999999h"}) {
    auto created = Create({{"defaultReclaimMinRuntime", text}});
    ASSERT_FALSE(created.ok()) << text;
    EXPECT_TRUE(Contains(created.error(), "defaultReclaimMinRuntime")) << text;
    auto preempt = Create({{"defaultPreemptMinRuntime", text}});
    ASSERT_FALSE(preempt.ok()) << text;
    EXPECT_TRUE(Contains(preempt.error(), "defaultPreemptMinRuntime")) << text;
  }
}

TEST(MinRuntimeArgumentsTest, RejectsUnknownResolveMethodAndUnknownKeys) {
  auto method = Create({{"reclaimResolveMethod", "nearest"}});
  ASSERT_FALSE(method.ok());
  EXPECT_TRUE(Contains(method.error(), "reclaimResolveMethod"));
  EXPECT_TRUE(Contains(method.error(), "nearest"));

  auto unknown = Create({{"defaultMinRuntime", "5m"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(Contains(unknown.error(), "defaultMinRuntime"));

  SchedulerConfig cfg = OnlyMinRuntime({{"defaultPreemptMinRuntime", "soon"}});
  auto scheduler = Scheduler::Create(cfg, BuiltinPlugins(), BuiltinActions());
  ASSERT_FALSE(scheduler.ok());
  EXPECT_TRUE(Contains(scheduler.error(), "minruntime"));
  EXPECT_TRUE(Contains(scheduler.error(), "defaultPreemptMinRuntime"));
}

TEST_F(MinRuntimeTest, DurationArgumentsAreUnderstood) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId at_89m = Running("at-89m", "q", 89 * 60);
  const JobId at_91m = Running("at-91m", "q", 91 * 60);
  const JobId at_1s = Running("at-1s", "q", 1);
  Session& s = Open({{"defaultPreemptMinRuntime", "1h30m"}, {"defaultReclaimMinRuntime", "-5m"}});
  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, at_89m));
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, at_91m));
  // A negative default counts as 0.
  EXPECT_TRUE(s.ReclaimVictimFilter(preemptor, at_1s));
}

TEST_F(MinRuntimeTest, FractionalDurations) {
  AddQueue(c_, "q");
  const JobId preemptor = Pending("preemptor", "q");
  const JobId at_1499ms = Running("at-1499ms", "q", 1.499);
  const JobId at_1500ms = Running("at-1500ms", "q", 1.5);
  Session& s = Open({{"defaultPreemptMinRuntime", "1.5s"}});
  EXPECT_FALSE(s.PreemptVictimFilter(preemptor, at_1499ms));
  EXPECT_TRUE(s.PreemptVictimFilter(preemptor, at_1500ms));
}

}  // namespace
}  // namespace gantry
