// KAI v0.17 additions that no conformance table exercises: pod sets and groups with a minimum of
// 0, the NUMA solver's policies on their own, preemption-delay formatting and the scenario
// loader's checks of the new fields.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/preemption_delay.h"
#include "framework/subgroup_tree.h"
#include "plugins/numa/numa_solver.h"
#include "scenario/scenario.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddEmptyJob;
using testutil::AddJob;
using testutil::AddNode;
using testutil::AddPod;
using testutil::AddPodSet;
using testutil::AddQueue;
using testutil::kGpuPod;
using testutil::Place;
using testutil::PodOf;
using testutil::RunCycle;

SchedulerConfig AllocateOnly() {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.actions = {"allocate"};
  return cfg;
}

// --- minMember 0 / minSubGroup 0 ------------------------------------------------------------

TEST(MinimumZero, PodSetWithMinimumZeroIsSatisfiedAndAllocatedOnePodAtATime) {
  Cluster c;
  AddQueue(c, "q");
  AddNode(c, "n1", 2);
  const JobId j = AddEmptyJob(c, "elastic", {.queue = "q"});
  AddPodSet(c, j, "workers", 0);
  for (int i = 0; i < 3; ++i) AddPod(c, j, 0, "w-" + std::to_string(i), kGpuPod);
  c.Finalize();
  auto cycle = RunCycle(c, AllocateOnly());
  const Session& s = *cycle;
  // Ready with nothing alive required; each attempt takes one elastic pod, so two of three fit.
  EXPECT_TRUE(s.IsReadyForScheduling(j));
  int placed = 0;
  for (PodId p : c.jobs[j].pods) placed += s.pod(p).node != kNone ? 1 : 0;
  EXPECT_EQ(placed, 2);
  std::vector<PodId> next;
  s.TasksToAllocate(j, next);
  EXPECT_EQ(next.size(), 1u);
}

TEST(MinimumZero, RequiredMembersGoBeforeOptionalOnes) {
  EXPECT_LT(CompareByAllocationRatio(5, 1, 0, 0), 0);  // satisfied required before optional
  EXPECT_GT(CompareByAllocationRatio(0, 0, 1, 1), 0);
  EXPECT_LT(CompareByAllocationRatio(0, 0, 2, 0), 0);  // two optional: fewer allocated first
  EXPECT_LT(CompareByAllocationRatio(0, 2, 0, 0), 0);  // below its threshold first
  EXPECT_EQ(CompareByAllocationRatio(0, 2, 1, 3), 0);  // both below: equal (name decides)
  EXPECT_LT(CompareByAllocationRatio(2, 2, 3, 2), 0);  // lower ratio first
}

// A root with min_subgroups 0 over two gangs: the job is ready and satisfied with nothing
// running, and an attempt takes the first member that yields pods, whole gang at a time.
TEST(MinimumZero, GroupWithMinSubgroupsZeroIsElastic) {
  Cluster c;
  AddQueue(c, "q");
  AddNode(c, "n1", 8);
  const JobId j = AddEmptyJob(c, "tree", {.queue = "q"});
  c.jobs[j].groups[0].min_subgroups = 0;
  const int32_t a = AddPodSet(c, j, "a", 2);
  const int32_t b = AddPodSet(c, j, "b", 2);
  for (int i = 0; i < 2; ++i) AddPod(c, j, a, "a-" + std::to_string(i), kGpuPod);
  for (int i = 0; i < 2; ++i) AddPod(c, j, b, "b-" + std::to_string(i), kGpuPod);
  // b's pods cannot all be alive: b is not ready, but the root needs none of its members.
  c.pods[c.jobs[j].pod_sets[b].pods[1]].status = PodStatus::kGated;
  c.Finalize();
  auto cycle = testutil::MakeScheduler(AllocateOnly());
  auto ssn = cycle->OpenSession(c, testutil::kNowMs);
  const SubGroupTree tree(*ssn, j, true);
  EXPECT_EQ(tree.Threshold({true, 0}), 0);
  EXPECT_TRUE(tree.Satisfied({true, 0}));
  EXPECT_FALSE(tree.Ready({false, b}));
  EXPECT_TRUE(ssn->IsReadyForScheduling(j));
  std::vector<PodId> tasks;
  ssn->TasksToAllocate(j, tasks);
  // Elastic phase: the first member in order (both below their minimum: by name, "a") gives its
  // shortfall of two pods.
  ASSERT_EQ(tasks.size(), 2u);
  for (PodId p : tasks) EXPECT_EQ(c.pods[p].pod_set, a);
}

// --- NUMA solver ----------------------------------------------------------------------------

NumaTopology TwoZones(NumaPolicy policy, double cpu0, double cpu1) {
  NumaTopology t;
  t.policy = policy;
  t.zones.push_back(
      {"zone-0", {{"cpu", 8000}, {"memory", 16e9}}, {{"cpu", cpu0}, {"memory", 16e9}}});
  t.zones.push_back(
      {"zone-1", {{"cpu", 8000}, {"memory", 16e9}}, {{"cpu", cpu1}, {"memory", 16e9}}});
  return t;
}

TEST(NumaSolver, SingleNumaNodeTakesTheFirstZoneThatHoldsEverything) {
  const auto l = numa::ZoneLedger::From(TwoZones(NumaPolicy::kSingleNumaNode, 2000, 6000));
  ASSERT_EQ(l.resources, (std::vector<std::string>{"cpu", "memory"}));
  numa::ZoneAllocation alloc;
  ASSERT_TRUE(numa::Solve(l, {true, true}, {4000, 1e9}, &alloc));
  ASSERT_EQ(alloc.size(), 1u);
  EXPECT_EQ(alloc.begin()->first, 1);
  EXPECT_DOUBLE_EQ(alloc.begin()->second[0], 4000);
  EXPECT_FALSE(numa::Solve(l, {true, true}, {7000, 1e9}, nullptr));
}

TEST(NumaSolver, RestrictedSpansTheNarrowestWidthAllocatableAllows) {
  const auto l = numa::ZoneLedger::From(TwoZones(NumaPolicy::kRestricted, 8000, 8000));
  numa::ZoneAllocation alloc;
  ASSERT_TRUE(numa::Solve(l, {true, true}, {12000, 0}, &alloc));
  ASSERT_EQ(alloc.size(), 2u);
  EXPECT_DOUBLE_EQ(alloc[0][0], 8000);
  EXPECT_DOUBLE_EQ(alloc[1][0], 4000);
  // Resources that need different widths cannot be aligned together.
  EXPECT_FALSE(numa::Solve(l, {true, true}, {12000, 1e9}, nullptr));
  // Resources not aligned (not Guaranteed: cpu and memory are free) always fit.
  EXPECT_TRUE(numa::Solve(l, {false, false}, {12000, 1e9}, nullptr));
}

TEST(NumaSolver, BestEffortCoversGreedilyByLargestContribution) {
  const auto l = numa::ZoneLedger::From(TwoZones(NumaPolicy::kBestEffort, 1000, 5000));
  numa::ZoneAllocation alloc;
  ASSERT_TRUE(numa::Solve(l, {true, false}, {5500, 0}, &alloc));
  ASSERT_EQ(alloc.size(), 2u);
  EXPECT_DOUBLE_EQ(alloc[1][0], 5000);  // the zone covering most is drawn first
  EXPECT_DOUBLE_EQ(alloc[0][0], 500);
  EXPECT_FALSE(numa::Solve(l, {true, false}, {7000, 0}, nullptr));
}

// --- Preemption delay formatting ------------------------------------------------------------

TEST(PreemptionDelay, FormatsLikeGo) {
  EXPECT_EQ(GoDurationString(600), "10m0s");
  EXPECT_EQ(GoDurationString(3600), "1h0m0s");
  EXPECT_EQ(GoDurationString(90.5), "1m30.5s");
  EXPECT_EQ(GoDurationString(5), "5s");
  EXPECT_EQ(Rfc3339Utc(1'700'000'000'000), "2023-11-14T22:13:20Z");
}

// --- Loader: the new fields and their errors --------------------------------------------------

std::string WithNode(const std::string& numa) {
  return R"({"nodes": [{"name": "n1", "numa_topology": )" + numa +
         R"(}], "queues": [{"name": "q"}], "jobs": []})";
}

TEST(ScenarioV017, NumaTopologyLoadsAndBadFieldsAreNamed) {
  auto ok = ParseScenario(WithNode(R"({"policy": "restricted", "scope": "pod", "zones": [
      {"id": "zone-0", "allocatable": {"cpu": 4000}}]})"),
                          "s.json");
  ASSERT_TRUE(ok.ok()) << ok.error();
  const auto& topo = *ok.value().cluster.nodes[0].numa;
  EXPECT_EQ(topo.policy, NumaPolicy::kRestricted);
  EXPECT_EQ(topo.scope, NumaScope::kPod);
  EXPECT_DOUBLE_EQ(topo.zones[0].available.at("cpu"), 4000);  // absent: the allocatable

  auto bad_policy = ParseScenario(WithNode(R"({"policy": "strict", "zones": []})"), "s.json");
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_NE(bad_policy.error().find("nodes[0] (n1).numa_topology: field \"policy\""),
            std::string::npos)
      << bad_policy.error();
  auto bad_amount = ParseScenario(
      WithNode(R"({"policy": "none", "zones": [{"id": "z", "allocatable": {"cpu": -1}}]})"),
      "s.json");
  ASSERT_FALSE(bad_amount.ok());
  EXPECT_NE(bad_amount.error().find("zones[0]: field \"allocatable.cpu\""), std::string::npos)
      << bad_amount.error();
  auto dup = ParseScenario(WithNode(R"({"policy": "none", "zones": [{"id": "z"}, {"id": "z"}]})"),
                           "s.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().find("duplicate zone"), std::string::npos) << dup.error();
}

TEST(ScenarioV017, MinSubgroupsOnlyOnGroupsAndWithinTheMemberCount) {
  auto tree = [](const std::string& root) {
    return R"({"nodes": [], "queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q",
        "subgroup_tree": )" +
           root + R"(, "tasks": [{"name": "t", "state": "pending", "subgroup": "a"}]}]})";
  };
  auto ok = ParseScenario(
      tree(R"({"name": "", "min_subgroups": 0, "children": [{"name": "a", "min_available": 0}]})"),
      "s.json");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok.value().cluster.jobs[0].groups[0].min_subgroups, 0);
  EXPECT_EQ(ok.value().cluster.jobs[0].pod_sets[0].min_available, 0);
  auto too_many = ParseScenario(
      tree(R"({"name": "", "min_subgroups": 2, "children": [{"name": "a", "min_available": 1}]})"),
      "s.json");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().find("\"min_subgroups\""), std::string::npos) << too_many.error();
  auto on_pod_set = ParseScenario(
      tree(R"({"name": "", "children": [{"name": "a", "min_available": 1, "min_subgroups": 1}]})"),
      "s.json");
  ASSERT_FALSE(on_pod_set.ok());
  EXPECT_NE(on_pod_set.error().find("only a group"), std::string::npos) << on_pod_set.error();
}

TEST(ScenarioV017, TopologyLevelAliasesResolveToTheirLevels) {
  auto parsed = ParseScenario(R"({"nodes": [], "queues": [{"name": "q"}],
      "topologies": [{"name": "dc", "levels": ["zone", "rack"],
                      "level_aliases": {"nvlink-domain": "rack", "az": "zone"}}],
      "jobs": [{"name": "j", "queue": "q", "subgroup_tree": {"name": "",
          "topology_constraint": {"topology": "dc", "required_level": "az",
                                  "preferred_level": "nvlink-domain"},
          "children": [{"name": "default", "min_available": 1,
              "topology_constraint": {"topology": "dc", "required_level": "rack"}}]},
        "tasks": [{"name": "t", "state": "pending"}]}]})",
                              "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Job& job = parsed.value().cluster.jobs[0];
  EXPECT_EQ(job.groups[0].topology->required_level, "zone");
  EXPECT_EQ(job.groups[0].topology->preferred_level, "rack");
  EXPECT_EQ(job.pod_sets[0].topology->required_level, "rack");  // a level name stays as it is

  auto bad = ParseScenario(R"({"topologies": [{"name": "dc", "levels": ["zone"],
      "level_aliases": {"az": "region"}}]})",
                           "s.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("level_aliases.az"), std::string::npos) << bad.error();
}

// KAI's queueDepthPerAction: an action tries at most that many jobs of each leaf queue per cycle,
// the first by the job order (here: higher priority first).
TEST(QueueDepthPerAction, AllocateTriesOnlyTheFirstJobsOfEachQueue) {
  Cluster c;
  AddQueue(c, "a");
  AddQueue(c, "b");
  AddNode(c, "n1", 8);
  std::vector<JobId> a, b;
  for (int i = 0; i < 3; ++i) {
    a.push_back(AddJob(c, "a" + std::to_string(i), {.queue = "a", .pod = kGpuPod, .priority = i}));
    b.push_back(AddJob(c, "b" + std::to_string(i), {.queue = "b", .pod = kGpuPod, .priority = i}));
  }
  c.Finalize();
  auto placed = [&](const Session& s, JobId j) { return s.pod(PodOf(c, j, 0)).node != kNone; };

  SchedulerConfig cfg = AllocateOnly();
  cfg.queue_depth_per_action["allocate"] = 2;
  auto limited = RunCycle(c, cfg);
  // Room for all six; only the two highest-priority jobs of each queue were tried.
  for (const auto& jobs : {a, b}) {
    EXPECT_FALSE(placed(*limited, jobs[0]));
    EXPECT_TRUE(placed(*limited, jobs[1]));
    EXPECT_TRUE(placed(*limited, jobs[2]));
  }
  // Without the limit (or with a limit for another action) every job is tried.
  cfg.queue_depth_per_action = {{"reclaim", 1}};
  auto all = RunCycle(c, cfg);
  for (const auto& jobs : {a, b}) {
    for (JobId j : jobs) EXPECT_TRUE(placed(*all, j));
  }
}

}  // namespace
}  // namespace gantry
