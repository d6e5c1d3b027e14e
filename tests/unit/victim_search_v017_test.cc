// KAI v0.16+'s victim search (SchedulerParams::victim_search_v017, docs/victim-search-v0.17.md):
// the probes over prefix sizes, the two scenario generators, and a cluster on which the model
// decides differently from KAI 72de64fc's (a rejected node-local scenario no longer ends the
// search of its accumulated scenario).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actions/victim_search/generators.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/scenario_filters.h"
#include "framework/plugin.h"
#include "plugins/builtin.h"
#include "scheduler/registry.h"
#include "test_cluster.h"

namespace gantry {
namespace victim_search_v017_test {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::JobSpec;
using testutil::Place;
using testutil::PodOf;
using victim_search::MaxSolvableSize;
using victim_search::NodeLocalScenarios;
using victim_search::ProbeResult;
using victim_search::Scenario;
using victim_search::ScenarioIndex;
using victim_search::SubScenarioEmitter;
using victim_search::VictimGroups;

// --- Probes over prefix sizes ----------------------------------------------------------------

struct ProbeRun {
  size_t result = 0;
  bool stopped = false;
  std::vector<size_t> probed;
};

template <typename Solves>
ProbeRun RunProbes(size_t n, Solves solves, size_t stop_at = 0) {
  ProbeRun run;
  run.result = MaxSolvableSize(
      n,
      [&](size_t k) {
        run.probed.push_back(k);
        if (stop_at != 0 && run.probed.size() == stop_at) return ProbeResult::kStop;
        return solves(k) ? ProbeResult::kSolved : ProbeResult::kUnsolved;
      },
      run.stopped);
  return run;
}

TEST(MaxSolvableSizeTest, EverySizeSolvesDoublingUpToN) {
  const ProbeRun run = RunProbes(10, [](size_t) { return true; });
  EXPECT_EQ(run.result, 10u);
  EXPECT_EQ(run.probed, (std::vector<size_t>{1, 2, 4, 8, 10}));
  EXPECT_FALSE(run.stopped);
}

TEST(MaxSolvableSizeTest, BisectsBetweenTheLastSolvedAndTheFirstFailed) {
  const ProbeRun run = RunProbes(16, [](size_t k) { return k <= 5; });
  EXPECT_EQ(run.result, 5u);
  // 8 fails after 4 solved: 6 (fails), then 5 (solves).
  EXPECT_EQ(run.probed, (std::vector<size_t>{1, 2, 4, 8, 6, 5}));
}

TEST(MaxSolvableSizeTest, NoneSolvesAfterTheFirstProbe) {
  const ProbeRun run = RunProbes(8, [](size_t) { return false; });
  EXPECT_EQ(run.result, 0u);
  EXPECT_EQ(run.probed, (std::vector<size_t>{1}));
}

TEST(MaxSolvableSizeTest, SizesPastTheBisectionAreNeverProbed) {
  // Not monotone: 7 would solve, but the search never asks for it.
  const std::set<size_t> solving{1, 2, 3, 7};
  const ProbeRun run = RunProbes(8, [&](size_t k) { return solving.count(k) != 0; });
  EXPECT_EQ(run.result, 3u);
  EXPECT_EQ(run.probed, (std::vector<size_t>{1, 2, 4, 3}));
}

TEST(MaxSolvableSizeTest, AStopEndsTheSearchWithNothing) {
  const ProbeRun run = RunProbes(
      8, [](size_t) { return true; }, /*stop_at=*/2);
  EXPECT_TRUE(run.stopped);
  EXPECT_EQ(run.result, 0u);
  EXPECT_EQ(run.probed, (std::vector<size_t>{1, 2}));
}

// --- The generators on a hand-built accumulated scenario ---------------------------------------

struct Opened {
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Session> ssn;
};

Opened Open(const Cluster& c, SchedulerConfig cfg = SchedulerConfig::Default()) {
  Opened o;
  o.scheduler = testutil::MakeScheduler(std::move(cfg));
  o.ssn = o.scheduler->OpenSession(c, testutil::kNowMs);
  return o;
}

// The nodes a list of pods sits on, by name, in list order.
std::vector<std::string> NodesOf(const Session& s, std::span<const PodId> pods) {
  std::vector<std::string> out;
  for (PodId p : pods) out.push_back(testutil::NodeName(s, p));
  return out;
}

// Pops every pod of each of `jobs` into the accumulated scenario `acc`, one batch per job.
void Pop(const Session& s, const std::vector<JobId>& jobs, Scenario& acc, VictimGroups& batches) {
  for (JobId j : jobs) {
    const std::vector<PodId>& pods = s.cluster().jobs[j].pods;
    batches.Add(j, pods);
    acc.AddPotentialVictims(s, pods);
  }
}

// n1 (2 GPUs) holds v and w's first pod, n2 (2 GPUs) w's second; p (2 GPUs) is pending.
struct TwoNodes {
  Cluster c;
  JobId v = kNone, w = kNone, p = kNone;
};
TwoNodes BuildTwoNodes() {
  TwoNodes t;
  const NodeId n1 = AddNode(t.c, "n1", 2);
  const NodeId n2 = AddNode(t.c, "n2", 2);
  AddQueue(t.c, "q");
  t.v = AddJob(t.c, "v", {.queue = "q", .pods = 1, .pod = {.gpus = 1}});
  t.w = AddJob(t.c, "w", {.queue = "q", .pods = 2, .pod = {.gpus = 1}});
  t.p = AddJob(t.c, "p", {.queue = "q", .pods = 1, .pod = {.gpus = 2}});
  Place(t.c, PodOf(t.c, t.v, 0), n1);
  Place(t.c, PodOf(t.c, t.w, 0), n1);
  Place(t.c, PodOf(t.c, t.w, 1), n2);
  t.c.Finalize();
  return t;
}

// NodeLocalGreedy's scenarios once `popped` were popped, in order.
std::vector<VictimGroups> NodeLocalAfter(const TwoNodes& t, const std::vector<JobId>& popped) {
  Opened o = Open(t.c);
  const Session& s = *o.ssn;
  ScenarioIndex index;
  Scenario acc(s, index, t.p, {PodOf(t.c, t.p, 0)}, VictimGroups{});
  VictimGroups batches;
  Pop(s, popped, acc, batches);
  std::vector<VictimGroups> out;
  NodeLocalScenarios(s, acc, batches, out);
  return out;
}

TEST(NodeLocalScenariosTest, OneScenarioPerNodeOfTheLatestJobEqualSetsOnce) {
  const TwoNodes t = BuildTwoNodes();
  // Only w popped: both of its nodes see the whole job, one scenario.
  const std::vector<VictimGroups> out = NodeLocalAfter(t, {t.w});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pods.size(), 2u);
}

TEST(NodeLocalScenariosTest, NodesOfTheLatestJobInNameOrderWithTheirOtherVictims) {
  const TwoNodes t = BuildTwoNodes();
  const JobId v = t.v;
  const JobId w = t.w;
  const std::vector<VictimGroups> out = NodeLocalAfter(t, {v, w});
  ASSERT_EQ(out.size(), 2u);
  // n1: v and w (grouped by job, v first); n2: w alone.
  ASSERT_EQ(out[0].size(), 2u);
  EXPECT_EQ(out[0].job(0), v);
  EXPECT_EQ(out[0].job(1), w);
  ASSERT_EQ(out[1].size(), 1u);
  EXPECT_EQ(out[1].job(0), w);
}

TEST(NodeLocalScenariosTest, RecordedVictimsAloneWhenNothingWasPopped) {
  Cluster c;
  const NodeId n1 = AddNode(c, "n1", 1);
  AddQueue(c, "q");
  const JobId v = AddJob(c, "v", {.queue = "q", .pods = 1, .pod = {.gpus = 1}});
  const JobId p = AddJob(c, "p", {.queue = "q", .pods = 1, .pod = {.gpus = 1}});
  Place(c, PodOf(c, v, 0), n1);
  c.Finalize();
  Opened o = Open(c);
  const Session& s = *o.ssn;
  std::vector<VictimGroups> out;
  {
    ScenarioIndex index;
    Scenario none(s, index, p, {PodOf(c, p, 0)}, VictimGroups{});
    NodeLocalScenarios(s, none, VictimGroups{}, out);
    EXPECT_TRUE(out.empty()) << "no recorded and no potential victim: nothing to try";
  }
  VictimGroups recorded;
  recorded.Add(v, std::vector<PodId>{PodOf(c, v, 0)});
  ScenarioIndex index;
  Scenario with_recorded(s, index, p, {PodOf(c, p, 0)}, recorded);
  NodeLocalScenarios(s, with_recorded, VictimGroups{}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].pods.empty());
}

// Four nodes of 8 GPUs, each with one victim job of g GPUs and the rest used by a job that is
// no victim, so each node's capacity once its victim is evicted is g: 2, 6, 3, 5 (and a fifth
// node of capacity 1, too small for the smallest pending pod). Two pending pods of 2 GPUs.
struct EmitterCluster {
  Cluster c;
  std::vector<JobId> victims;  // in pop order: capacities 2, 6, 3, 5, 1
  JobId pending = kNone;
};

EmitterCluster BuildEmitterCluster(bool idle_node = false) {
  EmitterCluster e;
  AddQueue(e.c, "q");
  const double caps[] = {2, 6, 3, 5, 1};
  for (int i = 0; i < 5; ++i) {
    const NodeId n = AddNode(e.c, "n" + std::to_string(i), 8);
    const JobId v =
        AddJob(e.c, "v" + std::to_string(i), {.queue = "q", .pods = 1, .pod = {.gpus = caps[i]}});
    const JobId filler = AddJob(e.c, "f" + std::to_string(i),
                                {.queue = "q", .pods = 1, .pod = {.gpus = 8 - caps[i]}});
    Place(e.c, PodOf(e.c, v, 0), n);
    Place(e.c, PodOf(e.c, filler, 0), n);
    e.victims.push_back(v);
  }
  e.pending = AddJob(e.c, "p", {.queue = "q", .pods = 2, .pod = {.gpus = 2}});
  if (idle_node) AddNode(e.c, "n5", 4);
  e.c.Finalize();
  return e;
}

TEST(SubScenarioEmitterTest, SmallestCoveringNodesFirstThenOneTwoFourMore) {
  const EmitterCluster e = BuildEmitterCluster();
  Opened o = Open(e.c);
  const Session& s = *o.ssn;
  ScenarioIndex index;
  Scenario acc(s, index, e.pending, {PodOf(e.c, e.pending, 0), PodOf(e.c, e.pending, 1)},
               VictimGroups{});
  VictimGroups batches;
  Pop(s, e.victims, acc, batches);
  IdleGpuCapacities caps;
  caps.Compute(s);
  const std::vector<char> no_feasible(e.c.nodes.size(), 0);
  SubScenarioEmitter emitter(s, acc, batches, caps, no_feasible);
  // Candidates by capacity: n0 (2), n2 (3), n3 (5), n1 (6); n4 (1) cannot host a 2-GPU pod.
  // Demand 4: n0 + n2 cover it, so the first sub-scenario takes 2 nodes, then 3, then 4.
  std::vector<std::vector<std::string>> emitted;
  VictimGroups sub;
  while (emitter.Next(sub)) emitted.push_back(NodesOf(s, sub.pods));
  ASSERT_EQ(emitted.size(), 3u);
  // (Victim batches in pop order: v0, v1, v2, v3.)
  EXPECT_EQ(emitted[0], (std::vector<std::string>{"n0", "n2"}));
  EXPECT_EQ(emitted[1], (std::vector<std::string>{"n0", "n2", "n3"}));
  EXPECT_EQ(emitted[2], (std::vector<std::string>{"n0", "n1", "n2", "n3"}));
}

TEST(SubScenarioEmitterTest, FeasibleNodesWithoutVictimsCountTowardTheDemand) {
  EmitterCluster e = BuildEmitterCluster(/*idle_node=*/true);
  // A sixth node with 4 idle GPUs, feasible: the demand is covered without any victim node.
  const NodeId idle = static_cast<NodeId>(e.c.nodes.size() - 1);
  Opened o = Open(e.c);
  const Session& s = *o.ssn;
  ScenarioIndex index;
  Scenario acc(s, index, e.pending, {PodOf(e.c, e.pending, 0), PodOf(e.c, e.pending, 1)},
               VictimGroups{});
  VictimGroups batches;
  Pop(s, e.victims, acc, batches);
  IdleGpuCapacities caps;
  caps.Compute(s);
  std::vector<char> feasible(e.c.nodes.size(), 0);
  feasible[static_cast<size_t>(idle)] = 1;
  SubScenarioEmitter emitter(s, acc, batches, caps, feasible);
  std::vector<size_t> sizes;
  VictimGroups sub;
  while (emitter.Next(sub)) sizes.push_back(sub.pods.size());
  // 0 nodes (no victim), then 1 (0 + 1), 3 (1 + 2), 4 (3 + 4, clamped to the 4 candidates).
  EXPECT_EQ(sizes, (std::vector<size_t>{0, 1, 3, 4}));
}

// --- A decision KAI v0.16+ makes differently ----------------------------------------------------

// A preempt validator that refuses any outcome leaving `protected_pod` evicted.
class ProtectPod : public Plugin {
 public:
  explicit ProtectPod(PodId pod) : pod_(pod) {}
  std::string_view name() const override { return "protect-pod"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddPreemptScenarioValidatorFn([pod = pod_](const Session& s, const ScenarioInfo&) {
      return s.pod(pod).status != PodStatus::kReleasing;
    });
  }

 private:
  PodId pod_;
};

struct PreemptCase {
  Cluster c;
  JobId v1 = kNone, j = kNone, p = kNone;
};

// n1 (2 GPUs) holds v1 and j's first pod, n2 (1 GPU) j's second pod; p (1 GPU, higher priority,
// same queue) is pending. Victims come lowest priority first: v1, then j.
PreemptCase BuildPreemptCase() {
  PreemptCase k;
  AddQueue(k.c, "q");
  const NodeId n1 = AddNode(k.c, "n1", 2);
  const NodeId n2 = AddNode(k.c, "n2", 1);
  k.v1 = AddJob(k.c, "v1", {.queue = "q", .pods = 1, .pod = {.gpus = 1}, .priority = 10});
  k.j = AddJob(k.c, "j", {.queue = "q", .pods = 2, .pod = {.gpus = 1}, .priority = 20});
  k.p = AddJob(k.c, "p", {.queue = "q", .pods = 1, .pod = {.gpus = 1}, .priority = 50});
  Place(k.c, PodOf(k.c, k.v1, 0), n1);
  Place(k.c, PodOf(k.c, k.j, 0), n1);
  Place(k.c, PodOf(k.c, k.j, 1), n2);
  k.c.Finalize();
  return k;
}

std::unique_ptr<Session> RunPreempt(const PreemptCase& k, bool v017,
                                    std::unique_ptr<Scheduler>& scheduler) {
  PluginRegistry plugins;
  RegisterBuiltinPlugins(plugins);
  const PodId protected_pod = PodOf(k.c, k.v1, 0);
  plugins.Register("protect-pod", [protected_pod](const std::map<std::string, std::string>&) {
    return Result<PluginPtr>(PluginPtr(std::make_unique<ProtectPod>(protected_pod)));
  });
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"preempt"};
  cfg.plugins.push_back(PluginConfig{"protect-pod", {}, {}});
  cfg.params.victim_search_v017 = v017;
  auto created = Scheduler::Create(std::move(cfg), plugins, BuiltinActions());
  if (!created.ok()) throw std::logic_error("Scheduler::Create failed: " + created.error());
  scheduler = std::move(created).value();
  auto ssn = scheduler->OpenSession(k.c, testutil::kNowMs);
  scheduler->RunActions(*ssn);
  return ssn;
}

// The accumulated scenario {v1, j} has two node-local scenarios: n1 (v1 and j) and n2 (j alone).
// n1's is refused (v1 cannot be placed again once j takes the GPUs back), n2's is accepted (j
// preempted). KAI 72de64fc's per-node loop stopped at n1's rejection; v0.16+ tries n2 too.
TEST(VictimSearchV017Test, ARejectedNodeLocalScenarioDoesNotEndTheSearch) {
  const PreemptCase k = BuildPreemptCase();
  std::unique_ptr<Scheduler> scheduler;
  const auto ssn = RunPreempt(k, /*v017=*/true, scheduler);
  EXPECT_EQ(ssn->pod(PodOf(k.c, k.p, 0)).status, PodStatus::kPipelined);
  EXPECT_EQ(ssn->pod(PodOf(k.c, k.v1, 0)).status, PodStatus::kRunning);
  EXPECT_EQ(ssn->pod(PodOf(k.c, k.j, 0)).status, PodStatus::kReleasing);
  EXPECT_EQ(ssn->pod(PodOf(k.c, k.j, 1)).status, PodStatus::kReleasing);
  EXPECT_EQ(ssn->evictions().size(), 2u);
}

TEST(VictimSearchV017Test, KaiOlderModelStopsAtTheRejectedNode) {
  const PreemptCase k = BuildPreemptCase();
  std::unique_ptr<Scheduler> scheduler;
  const auto ssn = RunPreempt(k, /*v017=*/false, scheduler);
  EXPECT_EQ(ssn->pod(PodOf(k.c, k.p, 0)).status, PodStatus::kPending);
  EXPECT_TRUE(ssn->evictions().empty());
}

}  // namespace victim_search_v017_test
}  // namespace gantry
