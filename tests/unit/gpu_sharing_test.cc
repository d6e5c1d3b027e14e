// Shared GPUs (fractions and GPU-memory requests) and MIG: device accounting, device choice,
// queue charges, and bad requests.
#include <gtest/gtest.h>

#include <string>

#include "framework/statement.h"
#include "scenario/scenario.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::Contains;
using testutil::ExpectSameState;
using testutil::FitErrors;
using testutil::Take;

Scenario Load(const std::string& yaml) {
  auto parsed = ParseScenario(yaml, "test.yaml");
  if (!parsed.ok()) throw std::logic_error(parsed.error());
  return std::move(parsed).value();
}

// One node of 2 GPUs (100 MiB each), one queue, and the given jobs.
std::string TwoGpuNode(const std::string& jobs, const std::string& extra_node = "") {
  return R"(
nodes:
- {name: node0, gpus: 2, cpu_millis: 16000, memory_bytes: 64000000000, gpu_memory_mib: 100}
)" + extra_node +
         R"(
queues:
- {name: q, resources: {gpu: {quota: -1, limit: -1, over_quota_weight: 1}}}
jobs:
)" + jobs;
}

PodId SharedPodNamed(const Cluster& c, const std::string& name) { return c.FindPod(name); }

TEST(SharedGpuAccounting, AFractionTakesOneDeviceOutOfIdleWhateverItsSize) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: running, node: node0, gpu_fraction: 0.1, gpu_groups: [g1]}]}
)"));
  auto sched = testutil::MakeScheduler(sc.config);
  auto ssn = sched->OpenSession(sc.cluster, testutil::kNowMs);
  EXPECT_EQ(1, ssn->node(0).idle.gpus);
  EXPECT_EQ(0, ssn->node(0).releasing.gpus);
  ASSERT_EQ(1u, ssn->shared_gpus(0).devices().size());
  EXPECT_EQ(10, ssn->shared_gpus(0).devices()[0].used);
  EXPECT_EQ(10, ssn->shared_gpus(0).devices()[0].allocated);
}

TEST(SharedGpuAccounting, AReleasedFractionReturnsExactlyToItsDevice) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: running, node: node0, gpu_fraction: 0.5, gpu_groups: [g1]}]}
- {name: b, queue: q, min_available: 1, tasks: [{name: b-0, state: running, node: node0, gpu_fraction: 0.3, gpu_groups: [g1]}]}
- {name: c, queue: q, min_available: 1, tasks: [{name: c-0, state: pending, gpu_fraction: 0.2}]}
)"));
  auto sched = testutil::MakeScheduler(sc.config);
  auto ssn = sched->OpenSession(sc.cluster, testutil::kNowMs);
  const auto before = Take(*ssn);
  const PodId a = SharedPodNamed(sc.cluster, "a-0");
  const PodId c = SharedPodNamed(sc.cluster, "c-0");
  {
    Statement stmt(*ssn);
    stmt.Evict(a, "test");
    // Half of the shared device is now releasing; the device itself is still in use.
    const SharedGpu& d = ssn->shared_gpus(0).devices()[0];
    EXPECT_EQ(80, d.used);
    EXPECT_EQ(50, d.releasing);
    EXPECT_EQ(0, ssn->node(0).releasing.gpus);
    EXPECT_EQ(1, ssn->node(0).idle.gpus);
    // The pending fraction fits on the shared device (counting the releasing half).
    std::vector<int32_t> groups;
    bool needs_releasing = false;
    ASSERT_TRUE(ssn->SelectSharedGpus(c, 0, false, groups, needs_releasing));
    ASSERT_EQ(1u, groups.size());
    EXPECT_EQ("g1", ssn->GroupName(groups[0])) << "an already shared device comes first";
    EXPECT_FALSE(needs_releasing) << "0.2 fits next to 0.3 without waiting for the release";
    stmt.Allocate(c, 0, groups);
    EXPECT_EQ(100, ssn->shared_gpus(0).devices()[0].used);
    stmt.Discard();
  }
  ExpectSameState(before, Take(*ssn), sc.cluster, "after discarding evict + allocate");
}

TEST(SharedGpuAccounting, ADeviceWhoseUsersAllReleaseCountsAsOneReleasingGpu) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: releasing, node: node0, gpu_fraction: 0.5, gpu_groups: [g1]}]}
)"));
  auto sched = testutil::MakeScheduler(sc.config);
  auto ssn = sched->OpenSession(sc.cluster, testutil::kNowMs);
  EXPECT_EQ(1, ssn->node(0).idle.gpus);
  EXPECT_EQ(1, ssn->node(0).releasing.gpus);
}

TEST(SharedGpuAccounting, FractionsFillASharedDeviceBeforeOpeningAnother) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: running, node: node0, gpu_fraction: 0.5, gpu_groups: [g1]}]}
- {name: b, queue: q, min_available: 1, tasks: [{name: b-0, state: pending, gpu_fraction: 0.5}]}
)"));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const PodId b = SharedPodNamed(sc.cluster, "b-0");
  ASSERT_EQ(PodStatus::kBinding, cycle->pod(b).status);
  ASSERT_EQ(1u, cycle->pod_groups(b).size());
  EXPECT_EQ("g1", cycle->GroupName(cycle->pod_groups(b)[0]));
  EXPECT_EQ(1, cycle->node(0).idle.gpus) << "the second device stays whole";
  ASSERT_EQ(1u, cycle->binds().size());
  EXPECT_EQ(std::vector<std::string>{"g1"}, cycle->binds()[0].gpu_groups)
      << "the bind decision carries the shared-GPU group";
}

// gpusharingorder: of two nodes equal for every other score (one whole GPU taken on each), a
// fraction goes to the one with a shared device it fits on, even though the other comes first by
// name; without the plugin the name decides.
TEST(SharedGpuAccounting, FractionsPreferANodeWithASharedDevice) {
  Scenario sc = Load(TwoGpuNode(
      R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: running, node: node1, gpu_fraction: 0.5, gpu_groups: [g1]}]}
- {name: w, queue: q, min_available: 1, tasks: [{name: w-0, state: running, node: node0, gpus: 1}]}
- {name: b, queue: q, min_available: 1, tasks: [{name: b-0, state: pending, gpu_fraction: 0.5}]}
)",
      R"(- {name: node1, gpus: 2, cpu_millis: 16000, memory_bytes: 64000000000, gpu_memory_mib: 100}
)"));
  const PodId b = SharedPodNamed(sc.cluster, "b-0");
  {
    auto cycle = testutil::RunCycle(sc.cluster, sc.config);
    ASSERT_EQ(PodStatus::kBinding, cycle->pod(b).status);
    EXPECT_EQ("node1", testutil::NodeName(*cycle, b));
  }
  {
    auto cycle = testutil::RunCycle(sc.cluster, testutil::Without(sc.config, "gpusharingorder"));
    ASSERT_EQ(PodStatus::kBinding, cycle->pod(b).status);
    EXPECT_EQ("node0", testutil::NodeName(*cycle, b));
  }
}

// A gang that must wait for a releasing device: its pods that first fitted on the free device
// are turned into pipelined ones too. Both devices are then spoken for (one by the pods that
// were allocated first, one by the pod waiting for the release), so the node has no idle GPU
// left for a later whole-GPU pod, and no releasing GPU either.
TEST(SharedGpuAccounting, AGangTurnedPipelinedKeepsBothDevicesTaken) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: releasing, node: node0, gpu_fraction: 0.6, gpu_groups: [g1]}]}
- {name: b, queue: q, priority: 100, min_available: 3, tasks: [{name: b-0, state: pending, gpu_fraction: 0.5}, {name: b-1, state: pending, gpu_fraction: 0.5}, {name: b-2, state: pending, gpu_fraction: 0.5}]}
- {name: c, queue: q, priority: 50, min_available: 1, tasks: [{name: c-0, state: pending, gpus: 1}]}
)"));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  for (const char* name : {"b-0", "b-1", "b-2"}) {
    EXPECT_EQ(PodStatus::kPipelined, cycle->pod(SharedPodNamed(sc.cluster, name)).status) << name;
  }
  EXPECT_EQ(0, cycle->node(0).idle.gpus);
  EXPECT_EQ(0, cycle->node(0).releasing.gpus);
  EXPECT_EQ(PodStatus::kPending, cycle->pod(SharedPodNamed(sc.cluster, "c-0")).status)
      << "no device is free for a whole GPU";
  EXPECT_TRUE(cycle->binds().empty());
}

TEST(SharedGpuAccounting, GpuSpreadOpensAFreeDeviceFirst) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: running, node: node0, gpu_fraction: 0.5, gpu_groups: [g1]}]}
- {name: b, queue: q, min_available: 1, tasks: [{name: b-0, state: pending, gpu_fraction: 0.5}]}
)"));
  for (auto& p : sc.config.plugins) {
    if (p.name == "gpupack") p.name = "gpuspread";
  }
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const PodId b = SharedPodNamed(sc.cluster, "b-0");
  ASSERT_EQ(PodStatus::kBinding, cycle->pod(b).status);
  EXPECT_NE("g1", cycle->GroupName(cycle->pod_groups(b)[0]));
  EXPECT_EQ(0, cycle->node(0).idle.gpus);
}

TEST(SharedGpuAccounting, GpuMemoryBecomesADeviceShareOfTheNode) {
  Scenario sc = Load(R"(
nodes:
- {name: node0, gpus: 1, gpu_memory_mib: 40000}
queues:
- {name: q, resources: {gpu: {quota: -1, limit: -1, over_quota_weight: 1}}}
jobs:
- {name: m, queue: q, min_available: 1, tasks: [{name: m-0, state: pending, gpu_memory_mib: 10001}]}
)");
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const PodId m = SharedPodNamed(sc.cluster, "m-0");
  ASSERT_EQ(PodStatus::kBinding, cycle->pod(m).status);
  // 10001 / 40000 = 0.250025, rounded up to hundredths.
  EXPECT_DOUBLE_EQ(0.26, cycle->AcceptedGpus(m));
  EXPECT_DOUBLE_EQ(0.26, (*cycle->QueueAllocated(0))[QueueResource::kGpu]);
}

TEST(SharedGpuAccounting, GpuMemoryAboveEveryDeviceIsUnschedulableWithAReason) {
  Scenario sc = Load(TwoGpuNode(R"(
- {name: m, queue: q, min_available: 1, tasks: [{name: m-0, state: pending, gpu_memory_mib: 150}]}
)"));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const JobId m = sc.cluster.FindJob("m");
  EXPECT_EQ(PodStatus::kPending, cycle->pod(SharedPodNamed(sc.cluster, "m-0")).status);
  EXPECT_TRUE(Contains(FitErrors(*cycle, m), "didn't have enough resources: GPU memory"));
  EXPECT_TRUE(Contains(FitErrors(*cycle, m), "m-0"));
}

TEST(SharedGpuAccounting, ReclaimEvictsAFractionAndTheDeviceIsReused) {
  Scenario sc = Load(R"(
nodes:
- {name: node0, gpus: 1, gpu_memory_mib: 100}
queues:
- {name: over, resources: {gpu: {quota: 0, limit: -1, over_quota_weight: 0}}}
- {name: under, resources: {gpu: {quota: 1, limit: -1, over_quota_weight: 0}}}
jobs:
- {name: v, queue: over, min_available: 1, tasks: [{name: v-0, state: running, node: node0, gpu_fraction: 0.7, gpu_groups: [g1]}]}
- {name: r, queue: under, min_available: 1, tasks: [{name: r-0, state: pending, gpu_fraction: 0.6}]}
)");
  sc.config.actions = {"reclaim"};
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  EXPECT_EQ(PodStatus::kReleasing, cycle->pod(SharedPodNamed(sc.cluster, "v-0")).status);
  EXPECT_EQ(PodStatus::kPipelined, cycle->pod(SharedPodNamed(sc.cluster, "r-0")).status);
  ASSERT_EQ(1u, cycle->evictions().size());
}

TEST(SharedGpuValidation, FractionOutsideZeroToOneIsRejectedNamingTheField) {
  for (const char* f : {"0", "-0.5", "1.5"}) {
    auto parsed = ParseScenario(TwoGpuNode(std::string(R"(
- {name: a, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, gpu_fraction: )") +
                                           f + "}]}\n"),
                                "bad.yaml");
    ASSERT_FALSE(parsed.ok()) << f;
    EXPECT_TRUE(Contains(parsed.error(), "gpu_fraction")) << parsed.error();
    EXPECT_TRUE(Contains(parsed.error(), "a-0")) << parsed.error();
  }
}

// --- MIG ----------------------------------------------------------------------------------

std::string MigNode(const std::string& strategy) {
  return R"(
nodes:
- name: node0
  gpus: 0
  allocatable_gpus: 0
  mig_strategy: )" +
         strategy + R"(
  mig_devices: {nvidia.com/mig-1g.10gb: 4, nvidia.com/mig-2g.20gb: 1}
  labels: {node-role.kubernetes.io/mig-enabled: "true"}
- {name: node1, gpus: 2}
queues:
- {name: q, resources: {gpu: {quota: 3, limit: -1, over_quota_weight: 1}}}
jobs:
)";
}

TEST(MigAccounting, InstancesAreCountedPerProfileAndChargedAsGpuEquivalents) {
  Scenario sc = Load(MigNode("mixed") + R"(
- {name: m, queue: q, min_available: 1, tasks: [{name: m-0, state: pending, mig_devices: {nvidia.com/mig-1g.10gb: 2}}]}
- {name: n, queue: q, min_available: 1, tasks: [{name: n-0, state: pending, mig_devices: {nvidia.com/mig-2g.20gb: 1}}]}
)");
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const int slot_1g = sc.cluster.resource_names.Find("nvidia.com/mig-1g.10gb");
  const int slot_2g = sc.cluster.resource_names.Find("nvidia.com/mig-2g.20gb");
  ASSERT_GE(slot_1g, 0);
  ASSERT_GE(slot_2g, 0);
  EXPECT_EQ(PodStatus::kBinding, cycle->pod(SharedPodNamed(sc.cluster, "m-0")).status);
  EXPECT_EQ(PodStatus::kBinding, cycle->pod(SharedPodNamed(sc.cluster, "n-0")).status);
  EXPECT_EQ(2, cycle->node(0).idle.scalars[slot_1g]);
  EXPECT_EQ(0, cycle->node(0).idle.scalars[slot_2g]);
  // 2 x 1g + 1 x 2g = 4 GPU-equivalents charged to the queue.
  EXPECT_DOUBLE_EQ(4, (*cycle->QueueAllocated(0))[QueueResource::kGpu]);
}

TEST(MigAccounting, QueueLimitCountsMigGpuEquivalents) {
  Scenario sc = Load(MigNode("mixed") + R"(
- {name: m, queue: q, min_available: 1, tasks: [{name: m-0, state: pending, mig_devices: {nvidia.com/mig-1g.10gb: 4}}]}
)");
  for (auto& q : sc.cluster.queues) q.gpu.limit = 3;
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  EXPECT_EQ(PodStatus::kPending, cycle->pod(SharedPodNamed(sc.cluster, "m-0")).status);
  EXPECT_TRUE(Contains(FitErrors(*cycle, 0), "OverLimit"));
}

TEST(MigAccounting, StrategiesKeepOtherRequestsAway) {
  Scenario sc = Load(MigNode("mixed") + R"(
- {name: w, queue: q, min_available: 1, tasks: [{name: w-0, state: pending, gpus: 1}]}
- {name: f, queue: q, min_available: 1, tasks: [{name: f-0, state: pending, gpu_fraction: 0.5}]}
)");
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  EXPECT_EQ("node1", testutil::NodeName(*cycle, SharedPodNamed(sc.cluster, "w-0")));
  EXPECT_EQ("node1", testutil::NodeName(*cycle, SharedPodNamed(sc.cluster, "f-0")));

  Scenario legacy = Load(MigNode("mixed") + R"(
- {name: l, queue: q, min_available: 1, tasks: [{name: l-0, state: pending, legacy_mig_task: true}]}
)");
  auto c2 = testutil::RunCycle(legacy.cluster, legacy.config);
  EXPECT_EQ(PodStatus::kPending, c2->pod(0).status);
  EXPECT_TRUE(Contains(FitErrors(*c2, 0), "Legacy MIG jobs cannot be scheduled on node"));
}

TEST(MigAccounting, UnknownMigProfileIsRejectedNamingThePod) {
  auto parsed = ParseScenario(MigNode("mixed") + R"(
- {name: m, queue: q, min_available: 1, tasks: [{name: m-0, state: pending, mig_devices: {nvidia.com/mig-banana: 1}}]}
)",
                              "bad.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(Contains(parsed.error(), "m-0"));
  EXPECT_TRUE(Contains(parsed.error(), "mig_devices"));
}

}  // namespace
}  // namespace gantry
