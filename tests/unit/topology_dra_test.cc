// Topology-aware placement (domain selection) and DRA claims.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "scenario/scenario.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::Contains;
using testutil::FitErrors;
using testutil::NodeName;

Scenario Load(const std::string& yaml) {
  auto parsed = ParseScenario(yaml, "test.yaml");
  if (!parsed.ok()) throw std::logic_error(parsed.error());
  return std::move(parsed).value();
}

// Two zones; zone z1 has racks r1 (node0, node1) and r2 (node2, node3); zone z2 has rack r3
// (node4). node0 has 3 of its 4 GPUs in use.
std::string Racks(const std::string& constraint, int pods, int gpus_per_pod,
                  const std::string& topology = "t") {
  std::string nodes = "nodes:\n";
  const char* placement[] = {"z1 r1", "z1 r1", "z1 r2", "z1 r2", "z2 r3"};
  for (int i = 0; i < 5; ++i) {
    std::string zr = placement[i];
    nodes += "- {name: node" + std::to_string(i) + ", gpus: 4, labels: {zone: " + zr.substr(0, 2) +
             ", rack: " + zr.substr(3) + "}}\n";
  }
  std::string tasks;
  for (int i = 0; i < pods; ++i) {
    tasks += "    - {name: j-" + std::to_string(i) +
             ", state: pending, gpus: " + std::to_string(gpus_per_pod) + "}\n";
  }
  return nodes + R"(
topologies:
- {name: t, levels: [zone, rack]}
queues:
- {name: q, resources: {gpu: {quota: -1, limit: -1, over_quota_weight: 1}}}
jobs:
- name: busy
  queue: q
  min_available: 1
  tasks: [{name: busy-0, state: running, node: node0, gpus: 3}]
- name: j
  queue: q
  subgroup_tree:
    name: ""
    topology_constraint: {topology: )" +
         topology + ", " + constraint + R"(}
    children:
    - {name: default, min_available: )" +
         std::to_string(pods) + R"(}
  tasks:
)" + tasks;
}

std::set<std::string> Nodes(const Session& s, const Scenario& sc, int pods) {
  std::set<std::string> nodes;
  for (int i = 0; i < pods; ++i)
    nodes.insert(NodeName(s, sc.cluster.FindPod("j-" + std::to_string(i))));
  return nodes;
}

TEST(TopologyDomains, RequiredRackKeepsTheGangInOneRackThatCanHoldIt) {
  // Two 4-GPU pods: rack r1 has room for one (node0 has 1 GPU free), so r2 (or r3) must be used.
  Scenario sc = Load(Racks("required_level: rack", 2, 4));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const auto nodes = Nodes(*cycle, sc, 2);
  EXPECT_TRUE(nodes == (std::set<std::string>{"node2", "node3"})) << "placed on " << *nodes.begin();
}

TEST(TopologyDomains, RequiredRackFailsWhenNoRackCanHoldTheGang) {
  Scenario sc = Load(Racks("required_level: rack", 3, 4));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  const JobId j = sc.cluster.FindJob("j");
  EXPECT_EQ(PodStatus::kPending, cycle->pod(sc.cluster.FindPod("j-0")).status);
  EXPECT_TRUE(Contains(FitErrors(*cycle, j),
                       "topology t, requirement rack couldn't be satisfied for job </j>"));
  // Without the constraint the same gang fits across racks.
  Scenario free = Load(Racks("preferred_level: rack", 3, 4));
  auto c2 = testutil::RunCycle(free.cluster, free.config);
  EXPECT_EQ(PodStatus::kBinding, c2->pod(free.cluster.FindPod("j-0")).status);
}

TEST(TopologyDomains, PreferredRackGathersPodsInTheSmallestSufficientDomain) {
  // Two 2-GPU pods fit in rack r1 alone (node1), in r2 and in r3; they must share one rack.
  Scenario sc = Load(Racks("preferred_level: rack, required_level: zone", 2, 2));
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  std::set<std::string> racks;
  for (int i = 0; i < 2; ++i) {
    const NodeId n = cycle->pod(sc.cluster.FindPod("j-" + std::to_string(i))).node;
    ASSERT_NE(kNone, n);
    racks.insert(*sc.cluster.nodes[n].labels.Get("rack"));
  }
  EXPECT_EQ(1u, racks.size());
}

TEST(TopologyDomains, UnknownTopologyOrLevelIsAFitErrorNotACrash) {
  Scenario unknown = Load(Racks("required_level: rack", 1, 1, "nope"));
  auto c1 = testutil::RunCycle(unknown.cluster, unknown.config);
  EXPECT_EQ(PodStatus::kPending, c1->pod(unknown.cluster.FindPod("j-0")).status);
  EXPECT_TRUE(Contains(FitErrors(*c1, unknown.cluster.FindJob("j")),
                       "Requested topology nope does not exist"));
  // The rest of the cycle goes on: other jobs are still placed.
  EXPECT_EQ(PodStatus::kRunning, c1->pod(unknown.cluster.FindPod("busy-0")).status);

  Scenario level = Load(Racks("required_level: row", 1, 1));
  auto c2 = testutil::RunCycle(level.cluster, level.config);
  EXPECT_EQ(PodStatus::kPending, c2->pod(level.cluster.FindPod("j-0")).status);
  EXPECT_TRUE(Contains(FitErrors(*c2, level.cluster.FindJob("j")),
                       "specified 'row' as the required topology constraint level, but the "
                       "topology tree 't' does not contain a level with this name"));
}

TEST(TopologyDomains, MalformedTopologiesAreRejectedNamingTheField) {
  auto dup = ParseScenario("topologies:\n- {name: t, levels: [zone, zone]}\n", "t.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(Contains(dup.error(), "topologies[0]"));
  EXPECT_TRUE(Contains(dup.error(), "levels"));
  auto empty = ParseScenario("topologies:\n- {name: t, levels: []}\n", "t.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.error(), "levels"));
}

// --- DRA ----------------------------------------------------------------------------------

std::string Dra(const std::string& claims, const std::string& jobs, int devices = 2) {
  return R"(
nodes:
- {name: node0, gpus: 0, allocatable_gpus: 0}
- {name: node1, gpus: 0, allocatable_gpus: 0}
queues:
- {name: q, resources: {gpu: {quota: -1, limit: -1, over_quota_weight: 1}}}
dra:
  device_classes: [gpu.example.com]
  resource_slices:
  - {name: s0, driver: gpu.example.com, node: node0, device_count: )" +
         std::to_string(devices) + R"(}
  - {name: s1, driver: gpu.example.com, node: node1, device_count: 1}
  resource_claims:
)" + claims +
         "jobs:\n" + jobs;
}

TEST(DraClaims, ClaimDevicesAreAllocatedOnThePodsNodeAndCountAsGpus) {
  Scenario sc = Load(Dra(
      R"(  - {name: c, namespace: ns, labels: {kai.scheduler/queue: q}, device_class: gpu.example.com, count: 2}
)",
      R"(- {name: a, namespace: ns, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, resource_claims: [c]}]}
)"));
  EXPECT_EQ(2, sc.cluster.nodes[0].allocatable.gpus) << "slice devices are node GPUs";
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  EXPECT_EQ("node0", NodeName(*cycle, 0)) << "only node0 has two devices";
  const ResourceClaim& claim = cycle->dra().claim(0);
  EXPECT_TRUE(claim.allocated);
  EXPECT_EQ(2u, claim.allocation.size());
  EXPECT_EQ(std::vector<int32_t>{0}, claim.reserved);
  EXPECT_EQ(0, cycle->node(0).idle.gpus);
  EXPECT_DOUBLE_EQ(2, (*cycle->QueueAllocated(0))[QueueResource::kGpu]);
}

TEST(DraClaims, TooManyDevicesOrAMissingClassOrNoQueueLabelKeepThePodPendingWithAReason) {
  Scenario many = Load(Dra(
      R"(  - {name: c, namespace: ns, labels: {kai.scheduler/queue: q}, device_class: gpu.example.com, count: 3}
)",
      R"(- {name: a, namespace: ns, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, resource_claims: [c]}]}
)"));
  auto c1 = testutil::RunCycle(many.cluster, many.config);
  EXPECT_EQ(PodStatus::kPending, c1->pod(0).status);

  Scenario cls = Load(Dra(
      R"(  - {name: c, namespace: ns, labels: {kai.scheduler/queue: q}, device_class: tpu.example.com, count: 1}
)",
      R"(- {name: a, namespace: ns, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, resource_claims: [c]}]}
)"));
  auto c2 = testutil::RunCycle(cls.cluster, cls.config);
  EXPECT_EQ(PodStatus::kPending, c2->pod(0).status);
  EXPECT_TRUE(Contains(FitErrors(*c2, 0), "ns/a-0"));
  EXPECT_TRUE(
      Contains(FitErrors(*c2, 0), "device class \"tpu.example.com\", which does not exist"));

  Scenario label = Load(Dra(
      R"(  - {name: c, namespace: ns, device_class: gpu.example.com, count: 1}
)",
      R"(- {name: a, namespace: ns, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, resource_claims: [c]}]}
)"));
  auto c3 = testutil::RunCycle(label.cluster, label.config);
  EXPECT_EQ(PodStatus::kPending, c3->pod(0).status);
  EXPECT_TRUE(Contains(FitErrors(*c3, 0), "is a shared GPU claim but does not have a queue label"));
}

TEST(DraClaims, EvictingTheLastConsumerReleasesTheDevicesForTheReclaimer) {
  Scenario sc = Load(R"(
nodes:
- {name: node0, gpus: 0, allocatable_gpus: 0}
queues:
- {name: over, resources: {gpu: {quota: 0, limit: -1, over_quota_weight: 0}}}
- {name: under, resources: {gpu: {quota: 1, limit: -1, over_quota_weight: 0}}}
dra:
  device_classes: [gpu.example.com]
  resource_slices:
  - {name: s0, driver: gpu.example.com, node: node0, device_count: 1}
  resource_claims:
  - name: held
    namespace: ns
    labels: {kai.scheduler/queue: over}
    device_class: gpu.example.com
    count: 1
    status:
      allocation: {devices: {results: [{device: "0", driver: gpu.example.com, pool: node0, request: r}]}}
      reserved_for: [{resource: pods, name: v-0, uid: v-0}]
  - {name: wanted, namespace: ns, labels: {kai.scheduler/queue: under}, device_class: gpu.example.com, count: 1}
jobs:
- {name: v, namespace: ns, queue: over, min_available: 1, tasks: [{name: v-0, state: running, node: node0, resource_claims: [held]}]}
- {name: r, namespace: ns, queue: under, min_available: 1, tasks: [{name: r-0, state: pending, resource_claims: [wanted]}]}
)");
  sc.config.actions = {"reclaim"};
  auto cycle = testutil::RunCycle(sc.cluster, sc.config);
  EXPECT_EQ(PodStatus::kReleasing, cycle->pod(sc.cluster.FindPod("v-0")).status);
  EXPECT_EQ(PodStatus::kPipelined, cycle->pod(sc.cluster.FindPod("r-0")).status);
  EXPECT_FALSE(cycle->dra().claim(0).allocated) << "the victim's claim gave its device back";
  EXPECT_TRUE(cycle->dra().claim(1).allocated);
}

TEST(DraClaims, UnknownClaimOrSliceNodeIsRejectedNamingTheField) {
  auto claim = ParseScenario(
      Dra("",
          R"(- {name: a, namespace: ns, queue: q, min_available: 1, tasks: [{name: a-0, state: pending, resource_claims: [nope]}]}
)"),
      "d.yaml");
  ASSERT_FALSE(claim.ok());
  EXPECT_TRUE(Contains(claim.error(), "resource_claims"));
  EXPECT_TRUE(Contains(claim.error(), "nope"));
}

}  // namespace
}  // namespace gantry
