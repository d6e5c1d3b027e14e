// predicates (filters, taints, affinity, max pods, host ports, ConfigMaps) and inter-pod affinity.

#include <memory>
#include <set>
#include <string_view>
#include <unordered_set>

#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

class PredicatesTest : public PluginTestBase {};

// What happened to the one pending pod of a single-node cluster whose node has `taint`.
struct TaintOutcome {
  PodStatus status = PodStatus::kUnknown;
  std::string node;
  std::string fit_errors;
};

TaintOutcome ScheduleOnTaintedNode(Taint taint, std::vector<Toleration> tolerations) {
  Cluster c;
  AddQueue(c, "q");
  const NodeId n = AddNode(c, "n-a", 4);
  c.nodes[n].taints.push_back(std::move(taint));
  const JobId j = AddJob(c, "t", {.queue = "q", .pod = kGpuPod});
  const PodId p = PodOf(c, j, 0);
  c.pods[p].tolerations = std::move(tolerations);
  c.Finalize();
  auto cycle = RunCycle(c);
  return {cycle->pod(p).status, NodeName(*cycle, p), FitErrors(*cycle, j)};
}

TEST_F(PredicatesTest, NoScheduleTaintBlocksPodWithoutToleration) {
  const auto out = ScheduleOnTaintedNode({"gpu", "true", "NoSchedule"}, {});
  EXPECT_EQ(out.status, PodStatus::kPending);
  EXPECT_TRUE(Contains(out.fit_errors, "1 node(s) had untolerated taint {gpu: true}"));
}

TEST_F(PredicatesTest, NoExecuteTaintBlocksToo) {
  EXPECT_EQ(ScheduleOnTaintedNode({"gpu", "true", "NoExecute"}, {}).status, PodStatus::kPending);
}

TEST_F(PredicatesTest, TolerationsThatMatchAllowTheNode) {
  const std::vector<std::pair<const char*, Toleration>> matching = {
      {"Equal key and value", {"gpu", "Equal", "true", ""}},
      {"Equal with the taint's effect", {"gpu", "Equal", "true", "NoSchedule"}},
      {"Exists on the key", {"gpu", "Exists", "", ""}},
      {"Exists without a key (tolerates everything)", {"", "Exists", "", ""}},
  };
  for (const auto& [what, toleration] : matching) {
    const auto out = ScheduleOnTaintedNode({"gpu", "true", "NoSchedule"}, {toleration});
    EXPECT_EQ(out.status, PodStatus::kBinding) << what;
    EXPECT_EQ(out.node, "n-a") << what;
  }
}

TEST_F(PredicatesTest, TolerationsThatDoNotMatchKeepBlocking) {
  const std::vector<std::pair<const char*, Toleration>> other = {
      {"Equal with another value", {"gpu", "Equal", "false", ""}},
      {"Equal with another key", {"cpu", "Equal", "true", ""}},
      {"Exists on another key", {"cpu", "Exists", "", ""}},
      {"another effect", {"gpu", "Equal", "true", "NoExecute"}},
  };
  for (const auto& [what, toleration] : other) {
    const auto out = ScheduleOnTaintedNode({"gpu", "true", "NoSchedule"}, {toleration});
    EXPECT_EQ(out.status, PodStatus::kPending) << what;
  }
}

TEST_F(PredicatesTest, PreferNoScheduleTaintIsIgnored) {
  const auto out = ScheduleOnTaintedNode({"gpu", "true", "PreferNoSchedule"}, {});
  EXPECT_EQ(out.status, PodStatus::kBinding);
  EXPECT_EQ(out.node, "n-a");
}

TEST_F(PredicatesTest, NodeSelectorPicksTheMatchingNode) {
  const NodeId a = AddNode(c_, "n-a", 4);
  const NodeId b = AddNode(c_, "n-b", 4);
  c_.nodes[a].labels.Set("zone", "a");
  c_.nodes[b].labels.Set("zone", "b");
  const PodId to_b = Pending("to-b");
  c_.pods[to_b].node_selector.Set("zone", "b");  // without it n-a would win (name, binpack)
  const PodId to_c = Pending("to-c");
  c_.pods[to_c].node_selector.Set("zone", "c");
  const PodId free = Pending("free");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, to_b), "n-b");
  EXPECT_EQ(cycle->pod(to_c).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[to_c].job),
                       "2 node(s) didn't match Pod's node affinity/selector"));
  EXPECT_EQ(cycle->pod(free).status, PodStatus::kBinding);
}

TEST_F(PredicatesTest, RequiredNodeAffinityTermsAreOred) {
  const NodeId a = AddNode(c_, "n-a", 4);
  const NodeId b = AddNode(c_, "n-b", 4);
  c_.nodes[a].labels.Set("zone", "a");
  c_.nodes[b].labels.Set("zone", "b");
  const PodId in_b = Pending("in-b");
  c_.pods[in_b].required_node_affinity = {
      {{{"zone", "In", {"x"}}}},       // matches nothing
      {{{"zone", "In", {"b", "y"}}}},  // matches n-b
  };
  const PodId not_a = Pending("not-a");
  c_.pods[not_a].required_node_affinity = {{{{"zone", "NotIn", {"a"}}}}};
  const PodId nowhere = Pending("nowhere");
  // Both requirements in one term must hold: no node is in zone a and zone b.
  c_.pods[nowhere].required_node_affinity = {{{{"zone", "In", {"a"}}, {"zone", "In", {"b"}}}}};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, in_b), "n-b");
  EXPECT_EQ(NodeName(*cycle, not_a), "n-b");
  EXPECT_EQ(cycle->pod(nowhere).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[nowhere].job),
                       "didn't match Pod's node affinity/selector"));
}

TEST_F(PredicatesTest, MaxPodsFullNodeTakesNoMorePods) {
  const NodeId a = AddNode(c_, "n-a", 4, 16000, 64e9, /*max_pods=*/1);
  Fill("running", a, 1, kCpuPod);
  const PodId p = Pending("second", kCpuPod);
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[p].job), "1 node(s) pod number exceeded"));
}

TEST_F(PredicatesTest, MaxPodsSendsThePodToANodeWithFreeSlots) {
  // n-a is fuller (binpack's choice) but has no pod slot left.
  const NodeId a = AddNode(c_, "n-a", 4, 16000, 64e9, /*max_pods=*/1);
  AddNode(c_, "n-b", 4);
  Fill("running", a, 1, kGpuPod);
  const PodId p = Pending("second");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-b");
}

TEST_F(PredicatesTest, UnschedulableNodeIsSkipped) {
  const NodeId a = AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 4);
  c_.nodes[a].unschedulable = true;
  Fill("running", a, 2, kGpuPod);  // n-a is the fuller node: binpack would pick it
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-b");
}

TEST_F(PredicatesTest, UnschedulableOnlyNodeLeavesPodPending) {
  const NodeId a = AddNode(c_, "n-a", 4);
  c_.nodes[a].unschedulable = true;
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[p].job), "1 node(s) were unschedulable"));
}

TEST_F(PredicatesTest, FitErrorsExplainEveryNode) {
  // Three nodes, each rejecting a 1-GPU pod for a different reason.
  const NodeId a = AddNode(c_, "n-a", 1);
  const NodeId b = AddNode(c_, "n-b", 4);
  const NodeId n = AddNode(c_, "n-c", 4);
  Fill("run", a, 1, kGpuPod);  // n-a: its only GPU is taken
  c_.nodes[b].taints.push_back({"k", "v", "NoSchedule"});
  c_.nodes[n].unschedulable = true;
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  // KAI's layout: job reason line, then the pod's message; the pod's reasons are counted,
  // sorted and joined with ". \n".
  EXPECT_EQ(FitErrors(*cycle, c_.pods[p].job),
            "\nPodSchedulingErrors."
            "\nResources were not found for pod ns/p-0 due to: no nodes with enough resources "
            "were found: 1 node(s) didn't have enough resources: GPUs. \n"
            "1 node(s) had untolerated taint {k: v}. \n"
            "1 node(s) were unschedulable..");
}

TEST_F(PredicatesTest, MaxNodeResourcesRejectsPodBiggerThanEveryNode) {
  AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 2);
  const PodId big = Pending("big", {.gpus = 8, .cpu_millis = 1000, .memory_bytes = 1e9});
  const PodId wide = Pending("wide", {.gpus = 0, .cpu_millis = 20000, .memory_bytes = 1e9});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(big).status, PodStatus::kPending);
  EXPECT_EQ(cycle->pod(wide).status, PodStatus::kPending);
  const std::string big_err = FitErrors(*cycle, c_.pods[big].job);
  // KAI names the line by its predicate map key, MaxNodePoolResources.
  EXPECT_TRUE(Contains(big_err,
                       "Scheduling conditions were not met for pod ns/big-0:\n"
                       "MaxNodePoolResources: The pod ns/big-0 requires"))
      << big_err;
  // The largest node has 4 GPUs; the pod asks for 8 GPUs, 1 core, 1 GB.
  EXPECT_TRUE(
      Contains(big_err, "The pod ns/big-0 requires GPU: 8, CPU: 1 (cores), memory: 1 (GB)"));
  EXPECT_TRUE(Contains(big_err,
                       "Max GPU resources available in a single node in the default "
                       "node-pool is topped at 4"));
  // 20000m > 16000m on every node: 16 cores.
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[wide].job),
                       "Max CPU resources available in a single node in the default node-pool "
                       "is topped at 16 cores"));
}

// The predicates' fast path answers only the pod-slot check for a plain pod on a plain node.
// Pods that the node-type and GPU-memory rules apply to (MIG, GPU-memory requests) and nodes with
// DRA GPUs must go through the full checks: each case below fits the node's resources, so only
// those rules can reject it (a fast path taking them would accept).
TEST_F(PredicatesTest, FastPathLeavesMigGpuMemoryAndDraCasesToTheFullChecks) {
  const int mig_slot = c_.resource_names.Intern("nvidia.com/mig-1g.10gb");
  ASSERT_GE(mig_slot, 0);
  // Not MIG-enabled (its label says so) although it offers a MIG resource: a plain node.
  const NodeId mig_off = AddNode(c_, "n-mig-off", 2);
  c_.nodes[mig_off].labels.Set("node-role.kubernetes.io/mig-enabled", "false");
  c_.nodes[mig_off].allocatable.scalars[mig_slot] = 4;
  // Whole GPUs but no known GPU memory: a plain node too.
  const NodeId no_memory = AddNode(c_, "n-no-memory", 2);
  // Device-plugin GPUs next to DRA GPUs: not plain (shared-GPU requests are kept off it).
  const NodeId dra = AddNode(c_, "n-dra", 2);
  c_.nodes[dra].dra_gpus = 2;
  const NodeId plain = AddNode(c_, "n-plain", 2);
  c_.nodes[plain].gpu_memory_mib = 40000;

  const PodId mig = Pending("mig", {.gpus = 0});
  c_.pods[mig].request.scalars[mig_slot] = 1;
  c_.pods[mig].gpu_kind = GpuRequestKind::kMig;
  const PodId memory = Pending("memory", {.gpus = 0});
  c_.pods[memory].gpu_memory_mib = 100;
  c_.pods[memory].gpu_kind = GpuRequestKind::kMemory;
  const PodId whole = Pending("whole");
  c_.pods[whole].gpu_kind = GpuRequestKind::kWhole;
  c_.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
  ASSERT_EQ(c_.nodes[no_memory].gpu_memory_mib, 0);

  // FittingNode checks node by node; rankings filter with the predicates' batch form: both
  // must agree.
  auto reason = [&](PodId p, NodeId n) {
    TaskFitErrors errors;
    const bool fits = ssn->FittingNode(p, n, &errors);
    const std::vector<NodeId> candidates{n};
    ssn->RankFittingNodes(p, candidates, /*record=*/false);
    EXPECT_EQ(ssn->NextRankedNode(), fits ? n : kNone) << c_.pods[p].name << " on " << n;
    return fits ? std::string("fits") : errors.Render();
  };
  // Control: the same pods where the rules allow them, and the whole-GPU pod on a plain node.
  EXPECT_EQ(reason(memory, plain), "fits");
  EXPECT_EQ(reason(whole, plain), "fits");
  EXPECT_EQ(reason(whole, mig_off), "fits");
  EXPECT_EQ(reason(whole, no_memory), "fits");
  EXPECT_TRUE(Contains(reason(mig, mig_off), "MIG job cannot be scheduled on non-MIG node"));
  EXPECT_TRUE(Contains(reason(memory, no_memory),
                       "node is not a gpu node or the gpu memory count on the node was not "
                       "synced yet"));
  // KAI v0.17 (KEP-5004) lets whole-GPU requests onto DRA nodes; shared ones stay off them.
  EXPECT_EQ(reason(whole, dra), "fits");
  EXPECT_TRUE(Contains(reason(memory, dra),
                       "fractional/shared GPU pods are not yet supported on DRA-only nodes"));
}

// Rankings check and score their candidates with the plugins' batch functions (predicates,
// nodeplacement, nodeavailability): the nodes they keep must be those FittingNode accepts one by
// one, and their order that of the per-node scores (binpack and availability, spelled out here).
TEST_F(PredicatesTest, RankingsKeepAndOrderNodesAsTheNodeByNodeChecks) {
  const NodeId empty = AddNode(c_, "n-0", 8);
  const NodeId full_two = AddNode(c_, "n-1", 8);
  const NodeId full_five = AddNode(c_, "n-2", 8);
  const NodeId releasing = AddNode(c_, "n-3", 4);
  const NodeId tainted = AddNode(c_, "n-4", 8);
  const NodeId no_slot = AddNode(c_, "n-5", 8, 16000, 64e9, /*max_pods=*/1);
  const NodeId unschedulable = AddNode(c_, "n-6", 8);
  const NodeId no_gpu = AddNode(c_, "n-7", 4);
  Fill("six", full_two, 6, kGpuPod);
  Fill("three", full_five, 3, kGpuPod);
  Fill("going", releasing, 4, kGpuPod, PodStatus::kReleasing);
  c_.nodes[tainted].taints.push_back({"k", "v", "NoSchedule"});
  Fill("cpu", no_slot, 1, kCpuPod);
  c_.nodes[unschedulable].unschedulable = true;
  Fill("four", no_gpu, 4, kGpuPod);
  const PodId plain = Pending("plain");
  const PodId selective = Pending("selective");
  const PodId fraction = Pending("fraction", {.gpus = 0});  // fits where a device is free
  c_.pods[fraction].gpu_kind = GpuRequestKind::kFraction;
  c_.pods[fraction].gpu_fraction = 0.5;
  c_.pods[fraction].gpu_devices = 1;
  for (NodeId n : {empty, full_five, tainted}) c_.nodes[n].labels.Set("zone", "a");
  c_.pods[selective].node_selector.Set("zone", "a");
  c_.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
  // (A copy of the node list: ranked node by node, not by class.)
  const std::vector<NodeId> all(ssn->all_nodes().begin(), ssn->all_nodes().end());
  auto ranked = [&](PodId p) {
    std::vector<NodeId> out;
    ssn->RankFittingNodes(p, all, /*record=*/false);
    for (NodeId n = ssn->NextRankedNode(); n != kNone; n = ssn->NextRankedNode()) out.push_back(n);
    return out;
  };
  for (PodId p : {plain, selective, fraction}) {
    std::vector<NodeId> got = ranked(p);
    std::sort(got.begin(), got.end());
    std::vector<NodeId> want;
    for (NodeId n : all) {
      if (ssn->FittingNode(p, n, /*record=*/false)) want.push_back(n);
    }
    EXPECT_EQ(got, want) << c_.pods[p].name;
  }
  // Binpack over the candidates' unallocated GPUs (0 to 8): 9 * (1 - free / 8); nodes where the
  // pod fits without waiting for releasing GPUs get 100 more. n-1 (2 free): 106.75, n-2 (5 free):
  // 103.375, n-0 (8 free): 100, n-3 (4 releasing): 4.5.
  EXPECT_EQ(ranked(plain), (std::vector<NodeId>{full_two, full_five, empty, releasing}));
  EXPECT_EQ(ranked(selective), (std::vector<NodeId>{full_five, empty}));
}

// Kubernetes' NodePorts rules, as KAI's predicates apply them: same protocol and port conflict
// when the host IPs are equal or either is 0.0.0.0.
TEST(HostPortTest, ConflictsAsKubernetesNodePorts) {
  auto port = [](std::string ip, std::string protocol, int32_t n) {
    return HostPort{std::move(ip), std::move(protocol), n};
  };
  const HostPort any_tcp = port("0.0.0.0", "TCP", 8080);
  EXPECT_TRUE(any_tcp.ConflictsWith(port("0.0.0.0", "TCP", 8080)));
  EXPECT_TRUE(any_tcp.ConflictsWith(port("10.0.0.1", "TCP", 8080)));
  EXPECT_TRUE(port("10.0.0.1", "TCP", 8080).ConflictsWith(any_tcp));
  EXPECT_TRUE(port("10.0.0.1", "TCP", 8080).ConflictsWith(port("10.0.0.1", "TCP", 8080)));
  EXPECT_FALSE(port("10.0.0.1", "TCP", 8080).ConflictsWith(port("10.0.0.2", "TCP", 8080)));
  EXPECT_FALSE(any_tcp.ConflictsWith(port("0.0.0.0", "UDP", 8080)));
  EXPECT_FALSE(any_tcp.ConflictsWith(port("0.0.0.0", "SCTP", 8080)));
  EXPECT_FALSE(any_tcp.ConflictsWith(port("0.0.0.0", "TCP", 8081)));
}

constexpr std::string_view kNoFreePorts =
    "node(s) didn't have free ports for the requested pod ports";

// Two 4-GPU nodes; n-a runs a 2-GPU pod (so binpack prefers it) with `used` host ports.
class HostPortsTest : public PluginTestBase {
 protected:
  void SetUp() override { Build(); }
  void Build() {
    c_ = Cluster();
    PluginTestBase::SetUp();
    a_ = AddNode(c_, "n-a", 4);
    b_ = AddNode(c_, "n-b", 4);
    const JobId filler = Fill("filler", a_, 1, {.gpus = 2, .cpu_millis = 1000});
    filler_ = PodOf(c_, filler, 0);
  }
  // Where a 1-GPU pod asking for `want` goes when the pod on n-a uses `used` (on a fresh
  // cluster).
  std::string NodeFor(std::vector<HostPort> used, std::vector<HostPort> want) {
    Build();
    c_.pods[filler_].host_ports = std::move(used);
    const PodId p = Pending("p");
    c_.pods[p].host_ports = std::move(want);
    c_.Finalize();
    auto cycle = RunCycle(c_);
    return NodeName(*cycle, p);
  }
  NodeId a_ = kNone, b_ = kNone;
  PodId filler_ = kNone;
};

TEST_F(HostPortsTest, APortUsedOnTheNodeSendsThePodElsewhere) {
  EXPECT_EQ(NodeFor({{"0.0.0.0", "TCP", 8080}}, {{"0.0.0.0", "TCP", 8080}}), "n-b");
  // 0.0.0.0 against a specific address, either way round.
  EXPECT_EQ(NodeFor({{"0.0.0.0", "TCP", 8080}}, {{"10.0.0.1", "TCP", 8080}}), "n-b");
  EXPECT_EQ(NodeFor({{"10.0.0.1", "TCP", 8080}}, {{"0.0.0.0", "TCP", 8080}}), "n-b");
}

TEST_F(HostPortsTest, OtherPortsProtocolsAndAddressesDoNotConflict) {
  const std::vector<std::pair<const char*, HostPort>> free = {
      {"another port", {"0.0.0.0", "TCP", 8081}},
      {"UDP against TCP", {"0.0.0.0", "UDP", 8080}},
      {"another specific address", {"10.0.0.2", "TCP", 8080}},
  };
  for (const auto& [what, want] : free) {
    EXPECT_EQ(NodeFor({{"10.0.0.1", "TCP", 8080}}, {want}), "n-a") << what;
  }
  // A pod without host ports ignores the ports in use (binpack: n-a).
  EXPECT_EQ(NodeFor({{"0.0.0.0", "TCP", 8080}}, {}), "n-a");
}

TEST_F(HostPortsTest, NoFreeNodeLeavesThePodPendingWithKaisReason) {
  c_.pods[filler_].host_ports = {{"0.0.0.0", "TCP", 9100}};
  const JobId other = Fill("other", b_, 1, kCpuPod, PodStatus::kReleasing);
  c_.pods[PodOf(c_, other, 0)].host_ports = {{"0.0.0.0", "TCP", 9100}};
  const PodId p = Pending("p");
  c_.pods[p].host_ports = {{"0.0.0.0", "TCP", 9100}};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  // A releasing pod still holds its port (KAI's node info keeps it until it is gone).
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[p].job), "2 " + std::string(kNoFreePorts)))
      << FitErrors(*cycle, c_.pods[p].job);
}

TEST_F(HostPortsTest, PodsOfOneGangPlacedEarlierInTheStatementCount) {
  // Two pods with the same host port: one per node, although binpack would stack them on n-a.
  const JobId j = AddJob(c_, "gang", {.queue = "q", .pods = 2, .pod = kGpuPod});
  for (PodId p : c_.jobs[j].pods) c_.pods[p].host_ports = {{"0.0.0.0", "TCP", 7000}};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  const std::set<std::string> nodes = {NodeName(*cycle, PodOf(c_, j, 0)),
                                       NodeName(*cycle, PodOf(c_, j, 1))};
  EXPECT_EQ(nodes, (std::set<std::string>{"n-a", "n-b"}));

  // Three such pods on two nodes: the gang cannot be placed.
  Cluster c;
  AddQueue(c, "q");
  AddNode(c, "n-a", 4);
  AddNode(c, "n-b", 4);
  const JobId three = AddJob(c, "three", {.queue = "q", .pods = 3, .pod = kGpuPod});
  for (PodId p : c.jobs[three].pods) c.pods[p].host_ports = {{"0.0.0.0", "UDP", 7000}};
  c.Finalize();
  auto again = RunCycle(c);
  for (PodId p : c.jobs[three].pods) EXPECT_EQ(again->pod(p).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*again, three), std::string(kNoFreePorts)))
      << FitErrors(*again, three);
}

// Nodes of one class (same shape and state) differ in the pods on them: a pod with host ports is
// checked node by node, and the batch form keeps exactly the nodes FittingNode accepts.
TEST_F(HostPortsTest, PodsWithHostPortsAreCheckedNodeByNodeNotByClass) {
  // n-b runs the same pod as n-a without the port: the two nodes are one class.
  Fill("twin", b_, 1, {.gpus = 2, .cpu_millis = 1000});
  c_.pods[filler_].host_ports = {{"0.0.0.0", "TCP", 8080}};
  const PodId p = Pending("p");
  c_.pods[p].host_ports = {{"0.0.0.0", "TCP", 8080}};
  const PodId plain = Pending("plain");
  c_.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
  EXPECT_FALSE(ssn->PodRankableByClass(p));
  EXPECT_TRUE(ssn->PodRankableByClass(plain));
  const std::vector<NodeId> all(ssn->all_nodes().begin(), ssn->all_nodes().end());
  std::vector<NodeId> ranked;
  ssn->RankFittingNodes(p, all, /*record=*/false);
  for (NodeId n = ssn->NextRankedNode(); n != kNone; n = ssn->NextRankedNode()) ranked.push_back(n);
  EXPECT_EQ(ranked, std::vector<NodeId>{b_});
  TaskFitErrors errors;
  EXPECT_FALSE(ssn->FittingNode(p, a_, &errors));
  EXPECT_TRUE(Contains(errors.Render(), std::string(kNoFreePorts))) << errors.Render();
  EXPECT_TRUE(ssn->FittingNode(p, b_, /*record=*/false));
  scheduler->RunActions(*ssn);
  EXPECT_EQ(NodeName(*ssn, p), "n-b");
}

// KAI's ConfigMap pre-predicate: a pod naming a ConfigMap missing from its namespace is not
// placed anywhere.
class ConfigMapsTest : public PluginTestBase {
 protected:
  void SetUp() override {
    PluginTestBase::SetUp();
    AddNode(c_, "n-a", 4);
  }
  void Exist(std::initializer_list<const char*> keys) {
    auto set = std::make_shared<std::unordered_set<std::string>>();
    for (const char* k : keys) set->insert(k);
    c_.config_maps = std::move(set);
  }
};

TEST_F(ConfigMapsTest, PresentConfigMapsLetThePodRun) {
  Exist({"ns/settings", "ns/scripts"});
  const PodId p = Pending("p");
  c_.pods[p].config_maps = {"settings", "scripts"};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
}

TEST_F(ConfigMapsTest, MissingConfigMapsAreNamedInKaisMessage) {
  // "scripts" exists, but in another namespace.
  Exist({"ns/settings", "other/scripts"});
  const PodId p = Pending("p");
  c_.pods[p].config_maps = {"settings", "scripts", "env"};
  const PodId none = Pending("none");  // needs nothing: unaffected
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  EXPECT_EQ(NodeName(*cycle, none), "n-a");
  EXPECT_EQ(FitErrors(*cycle, c_.pods[p].job),
            "\nPodSchedulingErrors."
            "\nResources were not found for pod ns/p-0 due to: Scheduling conditions were not "
            "met for pod ns/p-0:\nConfigMap: Missing required configmaps: [scripts env].\n.");
}

TEST_F(ConfigMapsTest, NoConfigMapsKnownAtAll) {
  const PodId p = Pending("p");
  c_.pods[p].config_maps = {"settings"};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  EXPECT_TRUE(Contains(FitErrors(*cycle, c_.pods[p].job),
                       "ConfigMap: Missing required configmaps: [settings]."));
}

TEST_F(ConfigMapsTest, BothPrePredicatesFailingAreListedUnderOneHeading) {
  const PodId p = Pending("p", {.gpus = 8, .cpu_millis = 1000, .memory_bytes = 1e9});
  c_.pods[p].config_maps = {"settings"};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  const std::string errors = FitErrors(*cycle, c_.pods[p].job);
  EXPECT_TRUE(Contains(
      errors, "Scheduling conditions were not met for pod ns/p-0:\nMaxNodePoolResources: "))
      << errors;
  EXPECT_TRUE(Contains(errors,
                       "is topped at 4.\nConfigMap: Missing required configmaps: "
                       "[settings].\n"))
      << errors;
}

// Nodes n-a (zone a) and n-b (zone b), 4 GPUs each. n-a runs a 2-GPU pod, so binpack prefers it
// for a 1-GPU pod (score 9 against 0).
class InterPodAffinityTest : public PluginTestBase {
 protected:
  void SetUp() override {
    PluginTestBase::SetUp();
    a_ = AddNode(c_, "n-a", 4);
    b_ = AddNode(c_, "n-b", 4);
    c_.nodes[a_].labels.Set("zone", "a");
    c_.nodes[b_].labels.Set("zone", "b");
    const JobId filler = Fill("filler", a_, 1, {.gpus = 2, .cpu_millis = 1000});
    filler_ = PodOf(c_, filler, 0);
  }
  static PodAffinityTerm Term(const std::string& app) {
    PodAffinityTerm t;
    t.selector.match_labels.Set("app", app);
    t.topology_key = "zone";
    return t;
  }
  NodeId a_ = kNone, b_ = kNone;
  PodId filler_ = kNone;
};

TEST_F(InterPodAffinityTest, WithoutAffinityBinpackPicksTheFullerNode) {
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
}

TEST_F(InterPodAffinityTest, PodAffinityFollowsTheMatchingPodsZone) {
  // A CPU-only "web" pod runs on n-b; the pending pod wants to share its zone.
  const JobId web = Fill("web", b_, 1, kCpuPod);
  c_.pods[PodOf(c_, web, 0)].labels.Set("app", "web");
  const PodId p = Pending("p");
  c_.pods[p].pod_affinity.push_back(Term("web"));
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-b");
}

TEST_F(InterPodAffinityTest, PodAffinityWithNoMatchingPodAnywhereFails) {
  // Nothing runs with app=web and the pod itself is not app=web: no node qualifies.
  const PodId p = Pending("p");
  c_.pods[p].pod_affinity.push_back(Term("web"));
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  EXPECT_TRUE(
      Contains(FitErrors(*cycle, c_.pods[p].job), "2 node(s) didn't match pod affinity rules"));
}

TEST_F(InterPodAffinityTest, PodAntiAffinityAvoidsTheMatchingPodsZone) {
  c_.pods[filler_].labels.Set("app", "web");  // runs on n-a
  const PodId p = Pending("p");
  c_.pods[p].pod_anti_affinity.push_back(Term("web"));
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-b");
}

TEST_F(InterPodAffinityTest, ExistingPodsAntiAffinityRejectsTheIncomingPod) {
  // The running pod on n-a refuses app=batch pods in its zone.
  c_.pods[filler_].pod_anti_affinity.push_back(Term("batch"));
  const PodId p = Pending("p");
  c_.pods[p].labels.Set("app", "batch");
  const PodId other = Pending("other");  // not app=batch: free to go to n-a
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-b");
  EXPECT_EQ(NodeName(*cycle, other), "n-a");
}

TEST_F(InterPodAffinityTest, MatchingPodOnANodeWithoutTheKeyDoesNotBlockTheFirstPodRule) {
  // Regression (fixed): Kubernetes' InterPodAffinity (which KAI's predicates call, spec
  // section 13.4) counts a matching pod only on nodes that carry the term's topology key
  // (topologyToMatchedTermCount.update ignores nodes without the label). Here the only app=web pod
  // runs on n-x, which has no zone label, so the counts are empty and the self-affine pending pod
  // may go to any node with a zone (binpack: n-a). PredicatesPlugin::RefreshView sets
  // any_affinity_match for a matching pod on any node, so the first-pod rule is skipped and every
  // node fails with "didn't match pod affinity rules".
  const NodeId x = AddNode(c_, "n-x", 4);  // no zone label
  const JobId web = Fill("web", x, 1, kCpuPod);
  c_.pods[PodOf(c_, web, 0)].labels.Set("app", "web");
  const PodId p = Pending("p");
  c_.pods[p].labels.Set("app", "web");
  c_.pods[p].pod_affinity.push_back(Term("web"));
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
}

TEST_F(InterPodAffinityTest, AffinityCountsOnlyPodsMatchingAllTerms) {
  // Regression (fixed): Kubernetes counts an existing pod for the incoming pod's required affinity
  // only when it matches ALL the terms (updateWithAffinityTerms / podMatchesAllAffinityTerms). The
  // pod on n-a matches only the first term and the pod on n-b only the second, so no pod counts,
  // the first-pod rule applies, and the pending pod (which matches both of its terms) may go to any
  // node with a zone. Gantry collects domains per term ({a} and {b}), finds no node in both and
  // leaves the pod pending. (Scenario files generate at most one term per pod.)
  c_.pods[filler_].labels.Set("app", "web");  // on n-a
  const JobId db = Fill("db", b_, 1, kCpuPod);
  c_.pods[PodOf(c_, db, 0)].labels.Set("tier", "db");  // on n-b
  const PodId p = Pending("p");
  c_.pods[p].labels.Set("app", "web");
  c_.pods[p].labels.Set("tier", "db");
  PodAffinityTerm tier;
  tier.selector.match_labels.Set("tier", "db");
  tier.topology_key = "zone";
  c_.pods[p].pod_affinity = {Term("web"), tier};
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");  // binpack among the allowed nodes
}

TEST_F(InterPodAffinityTest, ExistingAntiAffinityIsSeenByAReusedScheduler) {
  // Regression (fixed): PredicatesPlugin caches "does any pod in the cluster have anti-affinity" in
  // has_anti_affinity_known_ / has_any_anti_affinity_, which OnSessionOpen never resets. A
  // Scheduler keeps its plugin instances across cycles (scheduler/scheduler.h), so once a cycle
  // saw a cluster without anti-affinity, later cycles on a cluster whose running pods do have
  // anti-affinity skip the check for pods without their own (anti-)affinity terms and place them
  // where the existing pods' anti-affinity forbids.
  auto scheduler = testutil::MakeScheduler();
  {
    Cluster plain;  // first cycle: nobody has anti-affinity
    AddQueue(plain, "q");
    AddNode(plain, "n-a", 4);
    AddJob(plain, "x", {.queue = "q", .pod = kGpuPod});
    plain.Finalize();
    auto ssn = scheduler->OpenSession(plain, testutil::kNowMs);
    scheduler->RunActions(*ssn);
    ASSERT_EQ(ssn->pod(0).status, PodStatus::kBinding);
    scheduler->CloseSession(*ssn);
  }
  c_.pods[filler_].pod_anti_affinity.push_back(Term("batch"));
  const PodId p = Pending("p");
  c_.pods[p].labels.Set("app", "batch");
  c_.Finalize();
  auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
  scheduler->RunActions(*ssn);
  EXPECT_EQ(NodeName(*ssn, p), "n-b");  // a fresh scheduler does this (test above)
}

}  // namespace
}  // namespace gantry::plugin_test
