// reclaim, preempt and consolidation (actions/{reclaim,preempt,consolidation}/) run through real
// each test configures exactly the action under test with the default plugin list, builds a small
// cluster in code, and checks the decisions and the session state the action leaves behind.
//
// Every pod below asks for 1000m CPU and 1 GB memory (testutil::PodSpec defaults) besides its
// GPUs; queue quotas are set on GPUs only, so CPU and memory fair shares equal what each queue
// requests (an unlimited quota takes min(total, requested) in the deserved phase).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "actions/victim_search/solver.h"
#include "framework/plugin.h"
#include "plugins/builtin.h"
#include "scheduler/registry.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::Contains;
using testutil::JobSpec;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::QueueSpec;

constexpr PodSpec kOneGpu{.gpus = 1};

// The default configuration (every default plugin) running only `action`.
SchedulerConfig Only(const std::string& action) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {action};
  return cfg;
}

// A GPU quota: deserved GPUs and over-quota weight (no limit).
QueueQuota Gpus(double deserved, double over_quota_weight = 1) {
  return QueueQuota{deserved, kUnlimited, over_quota_weight};
}

using testutil::ExpectSameState;
using testutil::Snapshot;
using testutil::Take;

void ExpectNoDecisions(const Session& s) {
  EXPECT_TRUE(s.evictions().empty())
      << s.evictions().size()
      << " evictions, first: " << (s.evictions().empty() ? "" : s.evictions()[0].message);
  EXPECT_TRUE(s.pipelined().empty()) << s.pipelined().size() << " pipelined";
  EXPECT_TRUE(s.binds().empty()) << s.binds().size() << " binds";
}

std::string NodeNameOf(const Cluster& c, NodeId n) {
  return n == kNone ? std::string("<none>") : c.nodes[n].name;
}

int64_t Rankings(const Session& s) {
  return s.stats().rankings_by_class + s.stats().rankings_per_node;
}

// While alive, simulations that a rejection rule proves hopeless run to the end (the solver's
// proof verification), so a test can check what a really simulated scenario leaves behind.
struct SimulateProvenScenarios {
  SimulateProvenScenarios() { SetVerifyRejectionProofs(true); }
  ~SimulateProvenScenarios() { SetVerifyRejectionProofs(false); }
  SimulateProvenScenarios(const SimulateProvenScenarios&) = delete;
  SimulateProvenScenarios& operator=(const SimulateProvenScenarios&) = delete;
};

// An opened session whose actions have not run yet (the scheduler outlives the session).
struct Opened {
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Session> ssn;
  Session& operator*() const { return *ssn; }
  Session* operator->() const { return ssn.get(); }
  void Run() const { scheduler->RunActions(*ssn); }
};

Opened Open(const Cluster& c, SchedulerConfig cfg) {
  Opened o;
  o.scheduler = testutil::MakeScheduler(std::move(cfg));
  o.ssn = o.scheduler->OpenSession(c, testutil::kNowMs);
  return o;
}

// --- A plugin that watches the reclaim scenarios the solver simulates ---------------------------

// What the observer saw while the scenarios were being simulated.
struct ScenarioLog {
  int calls = 0;
  int with_releasing_victim = 0;  // scenarios in which some victim pod was evicted (releasing)
  int preemptor_pods_placed = 0;  // preemptor pods seen on a node (pipelined / allocated)
  int max_victim_pods = 0;        // largest number of victim pods in one scenario
};

// Registers a reclaim scenario validator that records the session state it is shown and accepts
// every scenario (validators must all agree, so it never changes the outcome).
class ScenarioObserver : public Plugin {
 public:
  explicit ScenarioObserver(std::shared_ptr<ScenarioLog> log) : log_(std::move(log)) {}
  std::string_view name() const override { return "scenario-observer"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddReclaimScenarioValidatorFn([log = log_](const Session& s, const ScenarioInfo& sc) {
      ++log->calls;
      int victims = 0;
      bool releasing = false;
      for (const auto& [job, pods] : sc.victims) {
        for (PodId p : pods) {
          ++victims;
          releasing = releasing || s.pod(p).status == PodStatus::kReleasing;
        }
      }
      log->with_releasing_victim += releasing;
      log->max_victim_pods = std::max(log->max_victim_pods, victims);
      for (PodId p : sc.preemptor_tasks) {
        const PodStatus st = s.pod(p).status;
        if (s.pod(p).node != kNone &&
            (st == PodStatus::kPipelined || st == PodStatus::kAllocated)) {
          ++log->preemptor_pods_placed;
        }
      }
      return true;
    });
  }

 private:
  std::shared_ptr<ScenarioLog> log_;
};

// The default plugins plus the observer, placed first so that it sees every scenario before
// proportion's validator can reject it.
Opened OpenObserved(const Cluster& c, SchedulerConfig cfg,
                    const std::shared_ptr<ScenarioLog>& log) {
  PluginRegistry plugins;
  RegisterBuiltinPlugins(plugins);
  plugins.Register("scenario-observer", [log](const std::map<std::string, std::string>&) {
    return Result<PluginPtr>(PluginPtr(std::make_unique<ScenarioObserver>(log)));
  });
  cfg.plugins.insert(cfg.plugins.begin(), PluginConfig{"scenario-observer", {}, {}});
  auto created = Scheduler::Create(std::move(cfg), plugins, BuiltinActions());
  if (!created.ok()) throw std::logic_error("Scheduler::Create failed: " + created.error());
  Opened o;
  o.scheduler = std::move(created).value();
  o.ssn = o.scheduler->OpenSession(c, testutil::kNowMs);
  return o;
}

// =================================================================================================
// 1. A failed reclaim leaves the session exactly as it was.
// =================================================================================================

// n0 has 2 GPUs, both used by queue a's one-GPU jobs a1 and a2; queue b (deserved 1 GPU) has a
// pending one-GPU job b1. `a_preemptible` decides whether a's jobs may be evicted at all,
// `a_deserved` is a's GPU quota.
struct TwoQueues {
  Cluster c;
  NodeId n0 = kNone;
  QueueId a = kNone, b = kNone;
  JobId a1 = kNone, a2 = kNone, b1 = kNone;
};

TwoQueues BuildTwoQueues(bool a_preemptible, double a_deserved) {
  TwoQueues t;
  t.n0 = AddNode(t.c, "n0", 2);
  t.a = AddQueue(t.c, "a", {.gpu = Gpus(a_deserved)});
  t.b = AddQueue(t.c, "b", {.gpu = Gpus(1)});
  t.a1 = AddJob(t.c, "a1",
                {.queue = "a", .pod = kOneGpu, .creation_ms = 1, .preemptible = a_preemptible});
  t.a2 = AddJob(t.c, "a2",
                {.queue = "a", .pod = kOneGpu, .creation_ms = 2, .preemptible = a_preemptible});
  t.b1 = AddJob(t.c, "b1", {.queue = "b", .pod = kOneGpu, .creation_ms = 3});
  testutil::Place(t.c, PodOf(t.c, t.a1, 0), t.n0);
  testutil::Place(t.c, PodOf(t.c, t.a2, 0), t.n0);
  t.c.Finalize();
  return t;
}

TEST(ReclaimRollbackTest, NonPreemptibleVictimsOnlyLeaveTheSessionUntouched) {
  // Fair shares over 2 GPUs: a deserves 1 (requests 2) -> 1, b deserves 1 (requests 1) -> 1.
  // a uses 2 GPUs, over its fair share of 1; b (0 + 1 <= 1) may reclaim. But a's jobs are not
  // preemptible, so there is no victim at all.
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/false, /*a_deserved=*/1);
  Opened o = Open(t.c, Only("reclaim"));
  ASSERT_TRUE(o->CanReclaimResources(t.b1)) << "b must be allowed to reclaim in the first place";
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNoDecisions(*o);
  ExpectSameState(before, Take(*o), t.c, "after a reclaim without preemptible victims");
  EXPECT_EQ(o->pod(PodOf(t.c, t.b1, 0)).status, PodStatus::kPending);
}

TEST(ReclaimRollbackTest, ControlTheSameClusterWithPreemptibleVictimsReclaims) {
  // Guards the test above: only preemptibility differs, and now b1 gets a's GPU.
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/1);
  auto cycle = testutil::RunCycle(t.c, Only("reclaim"));
  EXPECT_EQ(cycle->evictions().size(), 1u);
  EXPECT_EQ(cycle->pod(PodOf(t.c, t.b1, 0)).status, PodStatus::kPipelined);
}

// The two tests below need the rejected scenarios simulated: proportion's strategy rules
// (reclaim_strategy.h) would prove them refused before placing (queue a already fails the strategy
// check), so they are off here (the reference path), as the rule's differential test runs it.
SchedulerConfig ReclaimWithoutStrategyRules() {
  SchedulerConfig cfg = Only("reclaim");
  cfg.params.solver_strategy_rules = false;
  return cfg;
}

TEST(ReclaimRollbackTest, RejectedSimulatedEvictionsAreRolledBackCompletely) {
  // a deserves 2 GPUs and uses exactly 2: fair shares a = min(2, 2) = 2, b = min(1, 1) = 1.
  // b may reclaim (0 + 1 <= 1), the victims are preemptible, so the solver evicts a's pods and
  // places b1 in simulation, but proportion's validator refuses every scenario: a is not above
  // its allocatable share (2 <= max(2, 2)), so the only admissible strategy needs a to stay
  // above its deserved quota after the reclaim, and 2 <= 2 is not "above" (KAI's
  // FitsReclaimStrategy). Every simulated eviction and placement must be undone.
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/2);
  Opened o = Open(t.c, ReclaimWithoutStrategyRules());
  ASSERT_TRUE(o->CanReclaimResources(t.b1));
  ASSERT_EQ(Rankings(*o), 0);
  const Snapshot before = Take(*o);
  o.Run();
  // No GPU was idle, so b1's pod could only have been ranked on a node after simulated
  // evictions freed one: the scenarios were really simulated.
  EXPECT_GT(Rankings(*o), 0) << "no scenario was simulated";
  ExpectNoDecisions(*o);
  ExpectSameState(before, Take(*o), t.c, "after a reclaim whose scenarios were all rejected");
}

TEST(ReclaimRollbackTest, ObservedRejectedScenariosHadRealEvictionsAndAreUndone) {
  // Same cluster; an observer validator (first in the plugin list, accepting everything) records
  // what the simulated scenarios looked like before proportion rejected them.
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/2);
  auto log = std::make_shared<ScenarioLog>();
  Opened o = OpenObserved(t.c, ReclaimWithoutStrategyRules(), log);
  const Snapshot before = Take(*o);
  o.Run();
  // One scenario per victim job added (one of a's jobs, then both), each with b1 placed on a
  // GPU a simulated eviction freed. (In the second one the other victim fits again and is
  // pipelined back, so only one victim pod is still releasing when the validator looks.)
  EXPECT_EQ(log->calls, 2);
  EXPECT_EQ(log->max_victim_pods, 2) << "the second scenario evicts both of a's pods";
  EXPECT_EQ(log->with_releasing_victim, log->calls) << "every scenario evicted a victim";
  EXPECT_EQ(log->preemptor_pods_placed, log->calls) << "b1 was placed in every scenario";
  ExpectNoDecisions(*o);
  ExpectSameState(before, Take(*o), t.c, "after observed rejected scenarios");
}

TEST(ReclaimRollbackTest, TheReclaimersOwnQueueIsNeverAVictim) {
  // n0 (2 GPUs): a's non-preemptible a1 and b's own preemptible, lower-priority b0. b deserves 2
  // (fair share min(2, 2) = 2), so b1 may reclaim (1 + 1 <= 2), but the only preemptible job is
  // in b itself: reclaim takes from other queues only, so nothing is even simulated.
  Cluster c;
  const NodeId n0 = AddNode(c, "n0", 2);
  AddQueue(c, "a", {.gpu = Gpus(1)});
  AddQueue(c, "b", {.gpu = Gpus(2)});
  const JobId a1 = AddJob(c, "a1", {.queue = "a", .pod = kOneGpu, .preemptible = false});
  const JobId b0 = AddJob(c, "b0", {.queue = "b", .pod = kOneGpu, .priority = 10});
  const JobId b1 = AddJob(c, "b1", {.queue = "b", .pod = kOneGpu, .priority = 50});
  testutil::Place(c, PodOf(c, a1, 0), n0);
  testutil::Place(c, PodOf(c, b0, 0), n0);
  c.Finalize();
  Opened o = Open(c, Only("reclaim"));
  ASSERT_TRUE(o->CanReclaimResources(b1));
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNoDecisions(*o);
  EXPECT_EQ(Rankings(*o), 0) << "b0 is not even a candidate victim";
  ExpectSameState(before, Take(*o), c, "after a reclaim with only the reclaimer's own queue");
}

// =================================================================================================
// 2. A successful reclaim.
// =================================================================================================

TEST(ReclaimTest, QueueUnderItsShareTakesOneGpuFromTheQueueOverItsShare) {
  // Fair shares over 2 GPUs: a = min(1, 2) = 1, b = min(1, 1) = 1. a uses 2 (over), b 0.
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/1);
  auto cycle = testutil::RunCycle(t.c, Only("reclaim"));
  const Session& s = *cycle;
  const PodId a1 = PodOf(t.c, t.a1, 0), a2 = PodOf(t.c, t.a2, 0), b1 = PodOf(t.c, t.b1, 0);

  // Exactly one of a's pods is releasing, the other still running, both on n0.
  const int releasing =
      (s.pod(a1).status == PodStatus::kReleasing) + (s.pod(a2).status == PodStatus::kReleasing);
  EXPECT_EQ(releasing, 1);
  const PodId victim = s.pod(a1).status == PodStatus::kReleasing ? a1 : a2;
  const PodId survivor = victim == a1 ? a2 : a1;
  EXPECT_EQ(s.pod(survivor).status, PodStatus::kRunning);
  EXPECT_EQ(s.pod(victim).node, t.n0);
  EXPECT_EQ(s.pod(survivor).node, t.n0);

  // b1 is pipelined onto n0 (onto the victim's releasing GPU).
  EXPECT_EQ(s.pod(b1).status, PodStatus::kPipelined);
  EXPECT_EQ(s.pod(b1).node, t.n0);
  ASSERT_EQ(s.pipelined().size(), 1u);
  EXPECT_EQ(s.pipelined()[0].pod, b1);
  EXPECT_EQ(s.pipelined()[0].node, t.n0);
  EXPECT_TRUE(s.binds().empty());

  ASSERT_EQ(s.evictions().size(), 1u);
  const EvictionDecision& e = s.evictions()[0];
  EXPECT_EQ(e.pod, victim);
  EXPECT_EQ(e.node, t.n0);
  EXPECT_EQ(e.message.rfind("Pod ", 0), 0u) << e.message;
  EXPECT_TRUE(Contains(e.message, "was preempted by workload"));
  EXPECT_TRUE(
      Contains(e.message, "Pod ns/" + t.c.pods[victim].name + " was preempted by workload ns/b1."));

  // n0: used counts a's two pods (one of them releasing) and b1's pipelined pod; b1 took the
  // releasing GPU, so nothing is releasing or idle any more.
  EXPECT_EQ(s.node(t.n0).idle.gpus, 0);
  EXPECT_EQ(s.node(t.n0).used.gpus, 3);
  EXPECT_EQ(s.node(t.n0).releasing.gpus, 0);
  // Queues: a keeps one GPU, b has one.
  EXPECT_EQ((*s.QueueAllocated(t.a))[QueueResource::kGpu], 1);
  EXPECT_EQ((*s.QueueAllocated(t.b))[QueueResource::kGpu], 1);
}

// =================================================================================================
// 3. reclaimerUtilizationMultiplier.
// =================================================================================================

// Two departments, p and q (sibling root queues), 5 GPUs in total:
//   p: deserved 2 GPUs, over-quota weight 0; children
//        p1: deserved 1 - the reclaimer's queue, pending job r (1 GPU)
//        p2: deserved 1 - two non-preemptible one-GPU jobs running on n0 (2 GPUs)
//   q: deserved 1 GPU, over-quota weight 0; child q1: three preemptible one-GPU jobs on n1 (3).
// Fair shares (GPU): p = min(2, requested 3) = 2, q = min(1, 3) = 1; the 2 GPUs left are not
// shared out (every over-quota weight is 0). Inside p: p1 = min(1, 1) = 1, p2 = min(1, 2) = 1.
//
// r may reclaim: p1 has 0 + 1 <= 1 GPU. p2's jobs are not preemptible, so the victims come from
// q1. Evicting one of them and adding r, per sibling pair (KAI's saturation check, GPUs; CPU and
// memory fair shares equal the requests, so their ratios never exceed 1):
//   p1 vs its siblings in the reclaim: none (q1 is under another parent).
//   p  (with r): (2 + 1) / 2 = 1.5 > 1
//   q  (without the victim): (3 - 1) / 1 = 2
//   multiplier 1:   1.5 * 1   = 1.5  < 2 -> allowed
//   multiplier 1.3: 1.5 * 1.3 = 1.95 < 2 -> allowed
//   multiplier 1.5: 1.5 * 1.5 = 2.25 >= 2 -> refused
//   multiplier 2:   3 >= 2 -> refused
// Scenarios with more victims lower q's ratio (1, then 0) and are refused for every multiplier.
// (The reclaimer's leaf queue can never have a ratio above 1 here: CanReclaim already requires
// its allocation with the job to stay within its fair share, so the check bites one level up.)
struct Departments {
  Cluster c;
  NodeId n0 = kNone, n1 = kNone;
  QueueId p = kNone, p1 = kNone, p2 = kNone, q = kNone, q1 = kNone;
  JobId r = kNone;
  std::vector<JobId> p2_jobs, q1_jobs;
};

Departments BuildDepartments() {
  Departments d;
  d.n0 = AddNode(d.c, "n0", 2);
  d.n1 = AddNode(d.c, "n1", 3);
  d.p = AddQueue(d.c, "p", {.gpu = Gpus(2, /*over_quota_weight=*/0)});
  d.p1 = AddQueue(d.c, "p1", {.parent = "p", .gpu = Gpus(1)});
  d.p2 = AddQueue(d.c, "p2", {.parent = "p", .gpu = Gpus(1)});
  d.q = AddQueue(d.c, "q", {.gpu = Gpus(1, /*over_quota_weight=*/0)});
  d.q1 = AddQueue(d.c, "q1", {.parent = "q", .gpu = Gpus(1)});
  for (int i = 0; i < 2; ++i) {
    const JobId j = AddJob(d.c, "p2-job" + std::to_string(i),
                           {.queue = "p2", .pod = kOneGpu, .creation_ms = i, .preemptible = false});
    testutil::Place(d.c, PodOf(d.c, j, 0), d.n0);
    d.p2_jobs.push_back(j);
  }
  for (int i = 0; i < 3; ++i) {
    const JobId j = AddJob(d.c, "q1-job" + std::to_string(i),
                           {.queue = "q1", .pod = kOneGpu, .creation_ms = i});
    testutil::Place(d.c, PodOf(d.c, j, 0), d.n1);
    d.q1_jobs.push_back(j);
  }
  d.r = AddJob(d.c, "r", {.queue = "p1", .pod = kOneGpu, .creation_ms = 10});
  d.c.Finalize();
  return d;
}

SchedulerConfig ReclaimWithMultiplier(const std::string& multiplier) {
  return testutil::WithArguments(Only("reclaim"), "proportion",
                                 {{"reclaimerUtilizationMultiplier", multiplier}});
}

TEST(ReclaimMultiplierTest, FairSharesAreAsComputedByHand) {
  Departments d = BuildDepartments();
  Opened o = Open(d.c, ReclaimWithMultiplier("1"));
  auto gpu = [&](QueueId q) { return (*o->QueueFairShare(q))[QueueResource::kGpu]; };
  EXPECT_EQ(gpu(d.p), 2);
  EXPECT_EQ(gpu(d.q), 1);
  EXPECT_EQ(gpu(d.p1), 1);
  EXPECT_EQ(gpu(d.p2), 1);
  EXPECT_EQ(gpu(d.q1), 1);
  EXPECT_EQ((*o->QueueAllocated(d.p))[QueueResource::kGpu], 2);
  EXPECT_EQ((*o->QueueAllocated(d.q))[QueueResource::kGpu], 3);
  EXPECT_TRUE(o->CanReclaimResources(d.r));
}

struct MultiplierCase {
  const char* multiplier;
  bool reclaims;
};
void PrintTo(const MultiplierCase& mc, std::ostream* os) {
  *os << "multiplier " << mc.multiplier << (mc.reclaims ? " reclaims" : " refuses");
}

class ReclaimMultiplierSweep : public ::testing::TestWithParam<MultiplierCase> {};

TEST_P(ReclaimMultiplierSweep, SaturationRatioCheckUsesTheMultiplier) {
  const MultiplierCase mc = GetParam();
  Departments d = BuildDepartments();
  auto cycle = testutil::RunCycle(d.c, ReclaimWithMultiplier(mc.multiplier));
  const Session& s = *cycle;
  const PodId r0 = PodOf(d.c, d.r, 0);
  if (mc.reclaims) {
    ASSERT_EQ(s.evictions().size(), 1u);
    const PodId victim = s.evictions()[0].pod;
    EXPECT_EQ(d.c.jobs[d.c.pods[victim].job].queue, d.q1) << "the victim comes from q1";
    EXPECT_EQ(s.pod(victim).status, PodStatus::kReleasing);
    EXPECT_EQ(s.pod(r0).status, PodStatus::kPipelined);
    EXPECT_EQ(s.pod(r0).node, d.n1);
  } else {
    ExpectNoDecisions(s);
    EXPECT_EQ(s.pod(r0).status, PodStatus::kPending);
  }
  // p2's non-preemptible pods are never touched.
  for (JobId j : d.p2_jobs) EXPECT_EQ(s.pod(PodOf(d.c, j, 0)).status, PodStatus::kRunning);
}

INSTANTIATE_TEST_SUITE_P(Multipliers, ReclaimMultiplierSweep,
                         ::testing::Values(MultiplierCase{"1", true}, MultiplierCase{"1.3", true},
                                           MultiplierCase{"1.5", false},
                                           MultiplierCase{"2", false}),
                         [](const ::testing::TestParamInfo<MultiplierCase>& param_info) {
                           std::string name = param_info.param.multiplier;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return "x" + name;
                         });

// Proportion keeps what it derived from a call's stable victims (EvictedVictims::stable) for the
// next calls with the same key: the rules must be the same as when everything is derived anew,
// whatever the split between stable and other victims.
TEST(ReclaimRejectionRulesTest, StablePartGivesTheSameRules) {
  Departments d = BuildDepartments();
  Opened o = Open(d.c, ReclaimWithMultiplier("1.5"));
  o->OnJobSolutionStart();
  const std::vector<PodId> tasks = {PodOf(d.c, d.r, 0)};
  std::vector<PodId> evicted;
  evicted.reserve(d.q1_jobs.size());
  for (JobId j : d.q1_jobs) evicted.push_back(PodOf(d.c, j, 0));
  auto rules_of = [&](size_t stable, uint64_t key, std::span<const PodId> pods) {
    std::vector<RejectionRule> out;
    o->ReclaimRejectionRules(d.r, tasks, EvictedVictims{pods, stable, key}, out);
    std::vector<std::pair<double, std::vector<PodId>>> flat;
    for (const RejectionRule& rule : out) {
      std::vector<PodId> listed;
      rule.ForEachPod([&](PodId p) { listed.push_back(p); });
      std::sort(listed.begin(), listed.end());
      flat.emplace_back(rule.min_gpus, std::move(listed));
    }
    return flat;
  };
  const auto fresh = rules_of(0, 0, evicted);
  ASSERT_FALSE(fresh.empty()) << "q1's victims give a rule with multiplier 1.5";
  for (size_t stable = 0; stable <= evicted.size(); ++stable) {
    const uint64_t key = 100 + stable;
    EXPECT_EQ(rules_of(stable, key, evicted), fresh) << "first call, stable " << stable;
    EXPECT_EQ(rules_of(stable, key, evicted), fresh) << "kept part, stable " << stable;
    // The same stable part with fewer other victims: as if derived anew from that list.
    const std::span<const PodId> shorter(evicted.data(), stable);
    EXPECT_EQ(rules_of(stable, key, shorter), rules_of(0, 0, shorter)) << "stable " << stable;
  }
}

TEST(ReclaimMultiplierTest, RefusedByTheMultiplierLeavesTheSessionUntouched) {
  // With 1.5 every scenario is rejected (q1's victims are preemptible). The solver proves that
  // before placing anything and skips the simulations; with the proofs verified they are
  // simulated. Either way nothing is left behind.
  for (bool simulate : {true, false}) {
    std::optional<SimulateProvenScenarios> verify;
    if (simulate) verify.emplace();
    Departments d = BuildDepartments();
    Opened o = Open(d.c, ReclaimWithMultiplier("1.5"));
    const Snapshot before = Take(*o);
    o.Run();
    if (simulate) {
      EXPECT_GT(Rankings(*o), 0) << "no scenario was simulated";
    }
    ExpectNoDecisions(*o);
    ExpectSameState(before, Take(*o), d.c, "after the multiplier refused every scenario");
  }
}

// =================================================================================================
// 4. Consolidation and max_consolidation_preemptees.
// =================================================================================================

// One queue, two 4-GPU nodes:
//   n0: `movable` preemptible one-GPU jobs v0, v1, ... (one pod each) and 4 - movable idle GPUs
//   n1: one non-preemptible one-GPU job y, 3 idle GPUs
// Pending: job big with one 4-GPU pod (higher priority, so it is placed before the victims are
// placed again). 4 GPUs are free in the cluster but no node has 4, and n1 is blocked by y: big
// fits only on n0, after all of n0's pods move to n1's idle GPUs.
//
// KAI's consolidation victim filter counts admitted jobs and stops once the counter exceeds the
// limit (`counter > max` is checked before counting), so a limit of m admits m + 1 victim jobs
// (in the order the filter sees them).
struct Fragmented {
  Cluster c;
  NodeId n0 = kNone, n1 = kNone;
  JobId big = kNone, y = kNone;
  std::vector<JobId> movable;
};

Fragmented BuildFragmented(int movable) {
  Fragmented f;
  f.n0 = AddNode(f.c, "n0", 4);
  f.n1 = AddNode(f.c, "n1", 4);
  AddQueue(f.c, "q");
  for (int i = 0; i < movable; ++i) {
    const JobId j = AddJob(f.c, "v" + std::to_string(i),
                           {.queue = "q", .pod = kOneGpu, .priority = 50, .creation_ms = i});
    testutil::Place(f.c, PodOf(f.c, j, 0), f.n0);
    f.movable.push_back(j);
  }
  f.y = AddJob(
      f.c, "y",
      {.queue = "q", .pod = kOneGpu, .priority = 50, .creation_ms = 5, .preemptible = false});
  testutil::Place(f.c, PodOf(f.c, f.y, 0), f.n1);
  f.big = AddJob(f.c, "big", {.queue = "q", .pod = {.gpus = 4}, .priority = 80, .creation_ms = 10});
  f.c.Finalize();
  return f;
}

SchedulerConfig Consolidation(int max_preemptees) {
  SchedulerConfig cfg = Only("consolidation");
  cfg.params.max_consolidation_preemptees = max_preemptees;
  return cfg;
}

// Checks a committed consolidation: every pod of n0 was moved (evicted from n0 and pipelined onto
// n1), nothing is left only releasing, and big's pod is pipelined onto n0.
void ExpectConsolidated(const Session& s, const Fragmented& f) {
  const PodId big0 = PodOf(f.c, f.big, 0);
  EXPECT_EQ(s.pod(big0).status, PodStatus::kPipelined);
  EXPECT_EQ(s.pod(big0).node, f.n0);
  EXPECT_TRUE(s.binds().empty());
  ASSERT_EQ(s.evictions().size(), f.movable.size());
  for (JobId j : f.movable) {
    const PodId p = PodOf(f.c, j, 0);
    SCOPED_TRACE("pod " + f.c.pods[p].name);
    EXPECT_EQ(s.pod(p).status, PodStatus::kPipelined);
    EXPECT_EQ(s.pod(p).node, f.n1) << "moved to the other node";
    auto evicted = std::find_if(s.evictions().begin(), s.evictions().end(),
                                [&](const EvictionDecision& e) { return e.pod == p; });
    ASSERT_NE(evicted, s.evictions().end()) << "moved pods are evicted";
    EXPECT_TRUE(Contains(evicted->message, "was preempted and rescheduled due to bin packing"));
    auto pipelined = std::find_if(s.pipelined().begin(), s.pipelined().end(),
                                  [&](const PipelineDecision& d) { return d.pod == p; });
    ASSERT_NE(pipelined, s.pipelined().end()) << "every evicted pod is placed again";
    EXPECT_EQ(pipelined->node, f.n1);
  }
  // Nothing is left releasing without having been placed again.
  for (PodId p = 0; p < static_cast<PodId>(f.c.pods.size()); ++p) {
    EXPECT_NE(s.pod(p).status, PodStatus::kReleasing) << f.c.pods[p].name;
  }
  // The pipelined decisions: the moved pods plus big's pod.
  EXPECT_EQ(s.pipelined().size(), f.movable.size() + 1);
  EXPECT_EQ(s.pod(PodOf(f.c, f.y, 0)).status, PodStatus::kRunning);
  // Pipelined pods take releasing resources (KAI's NodeInfo: Releasing -= request, Idle unchanged),
  // so idle + releasing is what is left: n1 carries y plus the moved pods, n0 big's 4 GPUs.
  const double n1_left = 3 - static_cast<double>(f.movable.size());
  EXPECT_EQ(s.node(f.n1).NonAllocated().gpus, n1_left);
  EXPECT_EQ(s.node(f.n0).NonAllocated().gpus, 0);
  EXPECT_EQ(s.node(f.n0).used.gpus, 4 + static_cast<double>(f.movable.size()))
      << "big plus the releasing footprints of the moved pods";
  EXPECT_EQ(s.node(f.n1).used.gpus, 1 + static_cast<double>(f.movable.size()));
}

void ExpectNotConsolidated(const Session& s, const Fragmented& f) {
  ExpectNoDecisions(s);
  EXPECT_EQ(s.pod(PodOf(f.c, f.big, 0)).status, PodStatus::kPending);
  for (JobId j : f.movable) {
    EXPECT_EQ(s.pod(PodOf(f.c, j, 0)).status, PodStatus::kRunning);
    EXPECT_EQ(s.pod(PodOf(f.c, j, 0)).node, f.n0);
  }
}

TEST(ConsolidationTest, UnlimitedPreempteesMovesThreeJobsToFitTheGang) {
  Fragmented f = BuildFragmented(3);  // n0: v0 v1 v2 + 1 idle; n1: y + 3 idle
  auto cycle = testutil::RunCycle(f.c, Consolidation(-1));
  ExpectConsolidated(*cycle, f);
}

// Regression (fixed): Session::RecordEviction (framework/session.cc) records the pod's node at
// commit time, pods_[p].node. For a consolidated pod the statement has by then pipelined it onto
// its new node, so the EvictionDecision names the node the pod is moving TO (n1) instead of the
// node it is evicted FROM (n0) - which is what `gantry` prints as the eviction's node. The evict
// operation knows the right node (Statement::Op::node); Statement::Commit should record that one.
// KAI evicts the pod object, whose spec.nodeName is still the old node.
TEST(ConsolidationTest, EvictionDecisionNamesTheNodeThePodLeaves) {
  Fragmented f = BuildFragmented(3);
  auto cycle = testutil::RunCycle(f.c, Consolidation(-1));
  ASSERT_EQ(cycle->evictions().size(), 3u);
  for (const EvictionDecision& e : cycle->evictions()) {
    EXPECT_EQ(NodeNameOf(f.c, e.node), "n0") << f.c.pods[e.pod].name << " ran on n0";
  }
}

TEST(ConsolidationTest, UnlimitedPreempteesMovesASingleJob) {
  Fragmented f = BuildFragmented(1);  // n0: v0 + 3 idle; n1: y + 3 idle
  auto cycle = testutil::RunCycle(f.c, Consolidation(-1));
  ExpectConsolidated(*cycle, f);
}

TEST(ConsolidationTest, ZeroPreempteesDisablesConsolidation) {
  // The case above, which needs a single victim job - one the filter alone would still admit
  // with a limit of 0 (0 > 0 is false). A limit of 0 switches the action off instead.
  Fragmented f = BuildFragmented(1);
  Opened o = Open(f.c, Consolidation(0));
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNotConsolidated(*o, f);
  EXPECT_EQ(Rankings(*o), 0) << "consolidation must not even try";
  ExpectSameState(before, Take(*o), f.c, "after disabled consolidation");
}

TEST(ConsolidationTest, LimitOfOneAdmitsTwoVictimJobsSoThreeCannotBeMoved) {
  // Limit 1 admits v0 and v1 only (v2 fails `counter > 1`): n0 can free at most 3 GPUs.
  Fragmented f = BuildFragmented(3);
  Opened o = Open(f.c, Consolidation(1));
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNotConsolidated(*o, f);
  // Scenarios were tried (and rolled back): the session is as it was.
  ExpectSameState(before, Take(*o), f.c, "after consolidation limited to two victim jobs");
}

TEST(ConsolidationTest, LimitOfTwoAdmitsThreeVictimJobs) {
  Fragmented f = BuildFragmented(3);
  auto cycle = testutil::RunCycle(f.c, Consolidation(2));
  ExpectConsolidated(*cycle, f);
}

TEST(ConsolidationTest, LimitOfOneStillMovesTwoJobs) {
  // n0: v0 v1 + 2 idle; n1: y + 3 idle. Two victim jobs are admitted with limit 1 (KAI's
  // off-by-one), which is exactly what big needs.
  Fragmented f = BuildFragmented(2);
  auto cycle = testutil::RunCycle(f.c, Consolidation(1));
  ExpectConsolidated(*cycle, f);
}

TEST(ConsolidationTest, LimitOfZeroWithTwoJobsToMoveDoesNothing) {
  Fragmented f = BuildFragmented(2);
  auto cycle = testutil::RunCycle(f.c, Consolidation(0));
  ExpectNotConsolidated(*cycle, f);
}

TEST(ConsolidationTest, NeverCommitsWhenAMovedPodCannotBePlacedAgain) {
  // n0 (4 GPUs): v0 with one 2-GPU pod + 2 idle; n1 (4 GPUs): non-preemptible y with 3 GPUs + 1
  // idle; n2: 1 idle GPU. 4 GPUs are free, so big (one 4-GPU pod) is considered; evicting v0
  // makes room for it on n0, but no node has 2 free GPUs left for v0. The scenario fits big and
  // must still be refused: consolidation does not lose pods.
  Cluster c;
  const NodeId n0 = AddNode(c, "n0", 4);
  const NodeId n1 = AddNode(c, "n1", 4);
  AddNode(c, "n2", 1);
  AddQueue(c, "q");
  const JobId v0 =
      AddJob(c, "v0", {.queue = "q", .pod = {.gpus = 2}, .priority = 50, .creation_ms = 1});
  const JobId y = AddJob(
      c, "y",
      {.queue = "q", .pod = {.gpus = 3}, .priority = 50, .creation_ms = 2, .preemptible = false});
  const JobId big =
      AddJob(c, "big", {.queue = "q", .pod = {.gpus = 4}, .priority = 80, .creation_ms = 3});
  testutil::Place(c, PodOf(c, v0, 0), n0);
  testutil::Place(c, PodOf(c, y, 0), n1);
  c.Finalize();
  // (v0 cannot fit beside big anywhere, which the solver proves before placing anything: with
  // the proofs verified, the scenario is simulated.)
  for (bool simulate : {true, false}) {
    std::optional<SimulateProvenScenarios> verify;
    if (simulate) verify.emplace();
    Opened o = Open(c, Consolidation(-1));
    const Snapshot before = Take(*o);
    o.Run();
    if (simulate) {
      EXPECT_GT(Rankings(*o), 0) << "the scenario evicting v0 was simulated";
    }
    ExpectNoDecisions(*o);
    EXPECT_EQ(o->pod(PodOf(c, big, 0)).status, PodStatus::kPending);
    EXPECT_EQ(o->pod(PodOf(c, v0, 0)).status, PodStatus::kRunning);
    ExpectSameState(before, Take(*o), c, "after a refused consolidation");
  }
}

// =================================================================================================
// 5. preempt.
// =================================================================================================

// Queue q holds the preemptor pre (priority 100, not preemptible, one GPU, pending) and, running,
// optionally low (priority 50, preemptible) and high (priority 150, preemptible); queue r holds
// other (priority 50, preemptible). Every running job takes one GPU of n0, which has exactly as
// many GPUs as running jobs.
struct PreemptCluster {
  Cluster c;
  NodeId n0 = kNone;
  JobId pre = kNone, low = kNone, high = kNone, other = kNone;
};

PreemptCluster BuildPreempt(bool with_low, bool with_high, bool with_other) {
  PreemptCluster pc;
  const int running = with_low + with_high + with_other;
  pc.n0 = AddNode(pc.c, "n0", running);
  AddQueue(pc.c, "q");
  AddQueue(pc.c, "r");
  if (with_low) {
    pc.low = AddJob(pc.c, "low", {.queue = "q", .pod = kOneGpu, .priority = 50, .creation_ms = 1});
    testutil::Place(pc.c, PodOf(pc.c, pc.low, 0), pc.n0);
  }
  if (with_high) {
    pc.high =
        AddJob(pc.c, "high", {.queue = "q", .pod = kOneGpu, .priority = 150, .creation_ms = 2});
    testutil::Place(pc.c, PodOf(pc.c, pc.high, 0), pc.n0);
  }
  if (with_other) {
    pc.other =
        AddJob(pc.c, "other", {.queue = "r", .pod = kOneGpu, .priority = 50, .creation_ms = 3});
    testutil::Place(pc.c, PodOf(pc.c, pc.other, 0), pc.n0);
  }
  pc.pre = AddJob(
      pc.c, "pre",
      {.queue = "q", .pod = kOneGpu, .priority = 100, .creation_ms = 10, .preemptible = false});
  pc.c.Finalize();
  return pc;
}

TEST(PreemptTest, EvictsTheLowerPriorityJobOfItsOwnQueueOnly) {
  PreemptCluster pc = BuildPreempt(true, true, true);
  auto cycle = testutil::RunCycle(pc.c, Only("preempt"));
  const Session& s = *cycle;
  const PodId low0 = PodOf(pc.c, pc.low, 0);
  const PodId pre0 = PodOf(pc.c, pc.pre, 0);
  ASSERT_EQ(s.evictions().size(), 1u);
  EXPECT_EQ(s.evictions()[0].pod, low0);
  EXPECT_EQ(s.evictions()[0].message,
            "Pod ns/low-0 was preempted by higher priority workload ns/pre");
  EXPECT_EQ(s.pod(low0).status, PodStatus::kReleasing);
  EXPECT_EQ(s.pod(PodOf(pc.c, pc.high, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(s.pod(PodOf(pc.c, pc.other, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(s.pod(pre0).status, PodStatus::kPipelined);
  EXPECT_EQ(s.pod(pre0).node, pc.n0);
  ASSERT_EQ(s.pipelined().size(), 1u);
  EXPECT_EQ(s.pipelined()[0].pod, pre0);
}

TEST(PreemptTest, DoesNotEvictAJobOfAnotherQueue) {
  PreemptCluster pc = BuildPreempt(false, false, true);
  Opened o = Open(pc.c, Only("preempt"));
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNoDecisions(*o);
  EXPECT_EQ(Rankings(*o), 0) << "other is not even a candidate victim";
  EXPECT_EQ(o->pod(PodOf(pc.c, pc.pre, 0)).status, PodStatus::kPending);
  ExpectSameState(before, Take(*o), pc.c, "after preempt with only another queue's job");
}

TEST(PreemptTest, DoesNotEvictAHigherPriorityJob) {
  PreemptCluster pc = BuildPreempt(false, true, false);
  Opened o = Open(pc.c, Only("preempt"));
  const Snapshot before = Take(*o);
  o.Run();
  ExpectNoDecisions(*o);
  // high is filtered out of the victims, so nothing is simulated. (Were it a candidate, the
  // simulation would still fail: victims are placed again in job order, and high, ordered
  // before pre, would take its GPU back first.)
  EXPECT_EQ(Rankings(*o), 0) << "high is not even a candidate victim";
  EXPECT_EQ(o->pod(PodOf(pc.c, pc.pre, 0)).status, PodStatus::kPending);
  ExpectSameState(before, Take(*o), pc.c, "after preempt with only a higher-priority job");
}

TEST(PreemptTest, DoesNotEvictOtherQueueOrHigherPriorityTogether) {
  PreemptCluster pc = BuildPreempt(false, true, true);
  auto cycle = testutil::RunCycle(pc.c, Only("preempt"));
  ExpectNoDecisions(*cycle);
  EXPECT_EQ(cycle->pod(PodOf(pc.c, pc.high, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(cycle->pod(PodOf(pc.c, pc.other, 0)).status, PodStatus::kRunning);
}

TEST(PreemptTest, DoesNotEvictANonPreemptibleLowerPriorityJob) {
  PreemptCluster pc = BuildPreempt(true, false, false);
  pc.c.jobs[pc.low].preemptible = false;
  auto cycle = testutil::RunCycle(pc.c, Only("preempt"));
  ExpectNoDecisions(*cycle);
  EXPECT_EQ(Rankings(*cycle), 0) << "low is not even a candidate victim";
  EXPECT_EQ(cycle->pod(PodOf(pc.c, pc.low, 0)).status, PodStatus::kRunning);
}

// =================================================================================================
// Elastic victims across pod prefixes.
// =================================================================================================

// An elastic victim job (4 one-GPU pods, minimum 1) spread over two nodes, and a pending gang of
// two 2-GPU pods. The first prefix (one pod) takes two of the elastic pods from one node; for the
// second prefix those are the recorded victims, the victims queue offers the rest of the job one
// pod at a time, and the scenario that places the gang is simulated on the other node. KAI's
// by-node scenario hands out every task of every group of the latest victim job with a potential
// victim on that node — the recorded groups included — and its statement evicts those pods a
// second time (Statement.Evict has no guard). Gantry places the same way but evicts each pod once
// (the recorded pods are already evicted in the scenario's base): one pod never gets two eviction
// requests, and its queue's allocation is not reduced twice.
TEST(ReclaimElasticTest, RecordedPodsOfAnElasticVictimAreEvictedOnce) {
  Cluster c;
  const NodeId n0 = AddNode(c, "n0", 2);
  const NodeId n1 = AddNode(c, "n1", 2);
  AddQueue(c, "a", {.gpu = Gpus(0, 0)});
  AddQueue(c, "b", {.gpu = Gpus(4, 0)});
  const JobId e = AddJob(
      c, "e", {.queue = "a", .pods = 4, .pod = kOneGpu, .min_available = 1, .creation_ms = 1});
  const JobId p = AddJob(c, "p", {.queue = "b", .pods = 2, .pod = {.gpus = 2}, .creation_ms = 2});
  testutil::Place(c, PodOf(c, e, 0), n0);
  testutil::Place(c, PodOf(c, e, 1), n0);
  testutil::Place(c, PodOf(c, e, 2), n1);
  testutil::Place(c, PodOf(c, e, 3), n1);
  c.Finalize();
  for (const bool shortcuts : {true, false}) {
    SCOPED_TRACE(shortcuts ? "solver shortcuts on" : "solver shortcuts off");
    SchedulerConfig cfg = Only("reclaim");
    cfg.params.solver_shortcuts = shortcuts;
    auto cycle = testutil::RunCycle(c, cfg);
    const Session& s = *cycle;
    // The gang is placed, every elastic pod is released.
    EXPECT_EQ(s.pod(PodOf(c, p, 0)).status, PodStatus::kPipelined);
    EXPECT_EQ(s.pod(PodOf(c, p, 1)).status, PodStatus::kPipelined);
    std::map<PodId, int> times;
    for (const EvictionDecision& d : s.evictions()) ++times[d.pod];
    ASSERT_EQ(times.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(s.pod(PodOf(c, e, i)).status, PodStatus::kReleasing);
    EXPECT_EQ(s.evictions().size(), 4u);
    for (const auto& [pod, n] : times) EXPECT_EQ(n, 1) << c.pods[pod].name;
    const auto alloc = s.QueueAllocated(c.queue_index.at("a"));
    ASSERT_TRUE(alloc.has_value());
    EXPECT_GE((*alloc)[QueueResource::kGpu], 0);
  }
}

// --- The victim search's counters (SolverStats)
// ---------------------------------------------------

TEST(SolverStatsTest, ASolvedReclaimIsCountedWithItsAcceptedSimulation) {
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/1);
  ResetSolverStats();
  auto cycle = testutil::RunCycle(t.c, Only("reclaim"));
  ASSERT_EQ(cycle->evictions().size(), 1u);
  const SolverActionStats& st =
      GetSolverStats().by_action[static_cast<int>(EvictionAction::kReclaim)];
  EXPECT_EQ(st.jobs, 1u);
  EXPECT_EQ(st.solved, 1u);
  EXPECT_GE(st.simulations, 1u);
  EXPECT_EQ(st.accepted, 1u);  // the search stops at the first accepted scenario
  EXPECT_EQ(st.simulations, st.not_placed + st.rejected + st.accepted);
  EXPECT_EQ(st.slowest_job, t.b1);
  EXPECT_TRUE(st.slowest_solved);
  const SolverActionStats& preempt =
      GetSolverStats().by_action[static_cast<int>(EvictionAction::kPreempt)];
  EXPECT_EQ(preempt.jobs, 0u);
  ResetSolverStats();
  EXPECT_EQ(GetSolverStats().by_action[static_cast<int>(EvictionAction::kReclaim)].jobs, 0u);
}

TEST(SolverStatsTest, ASearchWithoutVictimsSimulatesNothing) {
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/false, /*a_deserved=*/1);
  ResetSolverStats();
  auto cycle = testutil::RunCycle(t.c, Only("reclaim"));
  ExpectNoDecisions(*cycle);
  const SolverActionStats& st =
      GetSolverStats().by_action[static_cast<int>(EvictionAction::kReclaim)];
  EXPECT_EQ(st.jobs, 1u);
  EXPECT_EQ(st.solved, 0u);
  EXPECT_EQ(st.simulations, 0u);
  EXPECT_EQ(st.accepted, 0u);
  EXPECT_EQ(st.slowest_job, t.b1);
  EXPECT_FALSE(st.slowest_solved);
}

// --- What each action counted for KAI's per-action metrics (Session::all_action_counts) -------

const ActionCounts* CountsOf(const Session& s, const std::string& action) {
  for (const ActionCounts& a : s.all_action_counts()) {
    if (a.action == action) return &a;
  }
  return nullptr;
}

TEST(ActionCountsTest, PreemptCountsTheJobItTriedSolvedAndTheScenariosItSimulated) {
  PreemptCluster pc = BuildPreempt(true, true, true);
  auto cycle = testutil::RunCycle(pc.c, Only("preempt"));
  const Session& s = *cycle;
  const ActionCounts* a = CountsOf(s, "preempt");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->podgroups_acted_on, 1);
  EXPECT_EQ(a->podgroups_scheduled, 1);
  EXPECT_EQ(a->preemption_attempts, 1);
  EXPECT_GE(a->scenarios_simulated, 1);
  EXPECT_EQ(a->Searches(SearchEnd::kSolved), 1);
  EXPECT_EQ(a->Searches(SearchEnd::kGeneratorsExhausted), 0);
  ASSERT_EQ(s.evictions().size(), 1u);
  EXPECT_EQ(s.evictions()[0].action, "preempt");
}

TEST(ActionCountsTest, AFailedPreemptionIsActedOnButNotScheduled) {
  PreemptCluster pc = BuildPreempt(false, true, false);  // only a higher-priority job to evict
  auto cycle = testutil::RunCycle(pc.c, Only("preempt"));
  const ActionCounts* a = CountsOf(*cycle, "preempt");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->podgroups_acted_on, 1);
  EXPECT_EQ(a->podgroups_scheduled, 0);
  EXPECT_EQ(a->preemption_attempts, 0);
  EXPECT_EQ(a->scenarios_simulated, 0);
  EXPECT_EQ(a->Searches(SearchEnd::kSolved), 0);
  EXPECT_EQ(a->Searches(SearchEnd::kGeneratorsExhausted), 1);
}

TEST(ActionCountsTest, ASearchWithoutScenarioGeneratorsIsCountedAsSuch) {
  PreemptCluster pc = BuildPreempt(true, true, true);
  SchedulerConfig cfg = Only("preempt");
  std::erase_if(cfg.plugins, [](const PluginConfig& p) { return p.name.rfind("sg-", 0) == 0; });
  auto cycle = testutil::RunCycle(pc.c, cfg);
  const ActionCounts* a = CountsOf(*cycle, "preempt");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->podgroups_acted_on, 1);
  EXPECT_EQ(a->Searches(SearchEnd::kNoGenerator), 1);
  EXPECT_EQ(a->podgroups_scheduled, 0);
  EXPECT_TRUE(cycle->evictions().empty());
}

TEST(ActionCountsTest, ReclaimAndAllocateCountTheirOwnJobs) {
  TwoQueues t = BuildTwoQueues(/*a_preemptible=*/true, /*a_deserved=*/1);
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"allocate", "reclaim"};
  auto cycle = testutil::RunCycle(t.c, cfg);
  const Session& s = *cycle;
  ASSERT_EQ(s.all_action_counts().size(), 2u);
  const ActionCounts* alloc = CountsOf(s, "allocate");
  const ActionCounts* reclaim = CountsOf(s, "reclaim");
  ASSERT_NE(alloc, nullptr);
  ASSERT_NE(reclaim, nullptr);
  // Nothing fits before reclaim; as KAI's, allocate does not count the jobs it tries.
  EXPECT_EQ(alloc->podgroups_scheduled, 0);
  EXPECT_EQ(alloc->podgroups_acted_on, 0);
  EXPECT_EQ(reclaim->podgroups_acted_on, 1);
  EXPECT_EQ(reclaim->podgroups_scheduled, 1);
  EXPECT_EQ(reclaim->preemption_attempts, 0);
  EXPECT_GE(reclaim->scenarios_simulated, 1);
  ASSERT_EQ(s.evictions().size(), 1u);
  EXPECT_EQ(s.evictions()[0].action, "reclaim");
}

TEST(ActionCountsTest, AllocateCountsEachJobItPlaces) {
  Cluster c;
  AddNode(c, "n0", 4);
  AddQueue(c, "q");
  AddJob(c, "j1", {.queue = "q", .pod = kOneGpu});
  AddJob(c, "j2", {.queue = "q", .pods = 2, .pod = kOneGpu});
  c.Finalize();
  auto cycle = testutil::RunCycle(c, Only("allocate"));
  const ActionCounts* a = CountsOf(*cycle, "allocate");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->podgroups_scheduled, 2);
  EXPECT_EQ(cycle->binds().size(), 3u);
  ASSERT_EQ(cycle->plugin_timings().size(), SchedulerConfig::Default().plugins.size());
  EXPECT_EQ(cycle->plugin_timings()[0].plugin, SchedulerConfig::Default().plugins[0].name);
}

}  // namespace
}  // namespace gantry
