// Every built-in plugin through real sessions running the allocate action. Each case is built so
// that the plugin under test decides the outcome; where it helps, the same cluster is scheduled
// again without the plugin to show the outcome changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
using testutil::FitErrors;
using testutil::JobSpec;
using testutil::NodeName;
using testutil::Place;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::RunCycle;
using testutil::WithArguments;
using testutil::Without;

using testutil::kGpuPod;
constexpr PodSpec kCpuPod{.gpus = 0, .cpu_millis = 1000, .memory_bytes = 1e9};

// Common shape: one queue "q" without quotas; tests add nodes and jobs.
class PluginTestBase : public ::testing::Test {
 protected:
  void SetUp() override { AddQueue(c_, "q"); }

  // A job of `pods` pods with `spec`, all running on `node`, to fill it.
  JobId Fill(const std::string& name, NodeId node, int pods, PodSpec spec,
             PodStatus status = PodStatus::kRunning) {
    const JobId j = AddJob(c_, name, {.queue = "q", .pods = pods, .pod = spec});
    for (PodId p : c_.jobs[j].pods) Place(c_, p, node, status);
    return j;
  }
  // A single-pod pending job; returns the pod.
  PodId Pending(const std::string& job, PodSpec spec = kGpuPod, int64_t creation_ms = 0) {
    const JobId j = AddJob(c_, job, {.queue = "q", .pod = spec, .creation_ms = creation_ms});
    return PodOf(c_, j, 0);
  }

  Cluster c_;
};

// --- predicates -------------------------------------------------------------------------------

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
  EXPECT_TRUE(Contains(big_err, "MaxNodeResources"));
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
  // Device-plugin GPUs next to DRA GPUs: not plain (device-plugin requests are kept off it).
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
  EXPECT_TRUE(Contains(reason(whole, dra),
                       "device-plugin GPU requests cannot be scheduled on DRA-only nodes"));
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
  // Scheduler keeps its plugin instances across cycles (framework/scheduler.h), so once a cycle
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

// --- nodeplacement ------------------------------------------------------------------------------

class NodePlacementTest : public PluginTestBase {
 protected:
  // Two 4-GPU nodes; `fuller` runs 3 one-GPU pods, the other 1. Returns where a 1-GPU pod goes.
  std::string PlaceGpuPod(const std::string& fuller, const std::string& strategy) {
    Cluster c;
    AddQueue(c, "q");
    const NodeId a = AddNode(c, "n-a", 4);
    const NodeId b = AddNode(c, "n-b", 4);
    const JobId f = AddJob(c, "full", {.queue = "q", .pods = 3, .pod = kGpuPod});
    const JobId e = AddJob(c, "light", {.queue = "q", .pods = 1, .pod = kGpuPod});
    for (PodId p : c.jobs[f].pods) Place(c, p, fuller == "n-a" ? a : b);
    Place(c, PodOf(c, e, 0), fuller == "n-a" ? b : a);
    const JobId j = AddJob(c, "p", {.queue = "q", .pod = kGpuPod});
    c.Finalize();
    auto cycle = RunCycle(c, WithArguments(SchedulerConfig::Default(), "nodeplacement",
                                           {{"gpu", strategy}, {"cpu", "binpack"}}));
    return NodeName(*cycle, PodOf(c, j, 0));
  }
  // Two CPU-only nodes of 16000m; `fuller` runs 12000m, the other 4000m. Where a 1000m pod goes.
  std::string PlaceCpuPod(const std::string& fuller, const std::string& strategy) {
    Cluster c;
    AddQueue(c, "q");
    const NodeId a = AddNode(c, "n-a", 0);
    const NodeId b = AddNode(c, "n-b", 0);
    const JobId f = AddJob(c, "full", {.queue = "q", .pod = {.cpu_millis = 12000}});
    const JobId e = AddJob(c, "light", {.queue = "q", .pod = {.cpu_millis = 4000}});
    Place(c, PodOf(c, f, 0), fuller == "n-a" ? a : b);
    Place(c, PodOf(c, e, 0), fuller == "n-a" ? b : a);
    const JobId j = AddJob(c, "p", {.queue = "q", .pod = kCpuPod});
    c.Finalize();
    auto cycle = RunCycle(c, WithArguments(SchedulerConfig::Default(), "nodeplacement",
                                           {{"gpu", "binpack"}, {"cpu", strategy}}));
    return NodeName(*cycle, PodOf(c, j, 0));
  }
};

TEST_F(NodePlacementTest, GpuBinpackPicksTheFullerNode) {
  // Non-allocated GPUs: fuller 1, other 3 -> binpack scores 9 and 0.
  EXPECT_EQ(PlaceGpuPod("n-a", "binpack"), "n-a");
  EXPECT_EQ(PlaceGpuPod("n-b", "binpack"), "n-b");
}

TEST_F(NodePlacementTest, GpuSpreadPicksTheEmptierNode) {
  // Spread scores free / total: fuller 1/4, other 3/4.
  EXPECT_EQ(PlaceGpuPod("n-a", "spread"), "n-b");
  EXPECT_EQ(PlaceGpuPod("n-b", "spread"), "n-a");
}

TEST_F(NodePlacementTest, CpuBinpackPicksTheFullerNode) {
  EXPECT_EQ(PlaceCpuPod("n-a", "binpack"), "n-a");
  EXPECT_EQ(PlaceCpuPod("n-b", "binpack"), "n-b");
}

TEST_F(NodePlacementTest, CpuSpreadPicksTheEmptierNode) {
  // Free CPU: fuller 4000/16000, other 12000/16000.
  EXPECT_EQ(PlaceCpuPod("n-a", "spread"), "n-b");
  EXPECT_EQ(PlaceCpuPod("n-b", "spread"), "n-a");
}

TEST_F(NodePlacementTest, DisabledNodeOrderIsNotApplied) {
  // Regression (fixed): PluginConfig::disabled_functions (config.h; scenario spec section 3: "lists
  // plugin callbacks to switch off: job_order, task_order, preemptable, reclaimable, queue_order,
  // predicate, node_order") is parsed by both loaders but never consulted: plugins register every
  // callback regardless. With nodeplacement's node_order switched off the two nodes below tie and
  // n-a wins by name; today binpack still sends the pod to the fuller n-b.
  AddNode(c_, "n-a", 4);
  const NodeId b = AddNode(c_, "n-b", 4);
  Fill("run-b", b, 2, kGpuPod);
  const PodId p = Pending("p");
  c_.Finalize();
  SchedulerConfig cfg = SchedulerConfig::Default();
  for (auto& plugin : cfg.plugins) {
    if (plugin.name == "nodeplacement") plugin.disabled_functions = {"node_order"};
  }
  auto cycle = RunCycle(c_, cfg);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
}

TEST_F(NodePlacementTest, EqualScoresGoToTheFirstNodeByName) {
  // Added out of name order: equal empty nodes score the same, the smallest name wins.
  AddNode(c_, "n-c", 4);
  AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 4);
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
}

TEST_F(NodePlacementTest, LaterPodsSeeEarlierPlacementsOfTheCycle) {
  // Two equal empty nodes and two 1-GPU jobs. The first pod goes to n-a (name order); then n-a
  // is the fuller node (3 free against 4): binpack sends the second pod there too, spread to n-b.
  AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 4);
  const PodId first = Pending("first", kGpuPod, /*creation_ms=*/1);
  const PodId second = Pending("second", kGpuPod, /*creation_ms=*/2);
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, first), "n-a");
    EXPECT_EQ(NodeName(*cycle, second), "n-a");
  }
  {
    auto cycle = RunCycle(c_, WithArguments(SchedulerConfig::Default(), "nodeplacement",
                                            {{"gpu", "spread"}, {"cpu", "binpack"}}));
    EXPECT_EQ(NodeName(*cycle, first), "n-a");
    EXPECT_EQ(NodeName(*cycle, second), "n-b");
  }
}

// --- node score plugins ------------------------------------------------------------------------

class NodeScoreTest : public PluginTestBase {};

TEST_F(NodeScoreTest, NodeAvailabilityPrefersIdleOverReleasing) {
  // n-a (2 GPUs): one running and one releasing 1-GPU pod -> idle 0, releasing 1.
  // n-b (4 GPUs): one running 1-GPU pod -> idle 3.
  // Binpack prefers n-a (1 non-allocated GPU against 3); nodeavailability adds 100 to n-b, where
  // the pod fits without waiting.
  const NodeId a = AddNode(c_, "n-a", 2);
  const NodeId b = AddNode(c_, "n-b", 4);
  Fill("run-a", a, 1, kGpuPod);
  Fill("rel-a", a, 1, kGpuPod, PodStatus::kReleasing);
  Fill("run-b", b, 1, kGpuPod);
  const PodId p = Pending("p");
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "nodeavailability"));
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kPipelined);  // waits for rel-a-0
    ASSERT_EQ(cycle->pipelined().size(), 1u);
    EXPECT_EQ(cycle->pipelined()[0].pod, p);
  }
}

TEST_F(NodeScoreTest, ResourceTypeSendsCpuPodToCpuOnlyNode) {
  // Equal CPU on both nodes: binpack ties, so without resourcetype n-a wins by name.
  AddNode(c_, "n-a", 4);
  AddNode(c_, "n-b", 0);
  const PodId p = Pending("p", kCpuPod);
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "resourcetype"));
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
  }
}

TEST_F(NodeScoreTest, NominatedNodeWinsOverBinpack) {
  const NodeId a = AddNode(c_, "n-a", 4);
  const NodeId b = AddNode(c_, "n-b", 4);
  Fill("run-b", b, 2, kGpuPod);  // binpack prefers n-b
  const PodId p = Pending("p");
  c_.pods[p].nominated_node = a;
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "nominatednode"));
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
  }
}

// --- job order: priority, elastic ---------------------------------------------------------------

class JobOrderTest : public PluginTestBase {};

TEST_F(JobOrderTest, PriorityGivesTheLastGpuToTheHigherPriorityJob) {
  AddNode(c_, "n-a", 1);
  const JobId low =
      AddJob(c_, "low", {.queue = "q", .pod = kGpuPod, .priority = 0, .creation_ms = 1});  // older
  const JobId high =
      AddJob(c_, "high", {.queue = "q", .pod = kGpuPod, .priority = 50, .creation_ms = 2});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, high, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, low, 0)).status, PodStatus::kPending);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "priority"));
    EXPECT_EQ(cycle->pod(PodOf(c_, low, 0)).status, PodStatus::kBinding);  // older first
    EXPECT_EQ(cycle->pod(PodOf(c_, high, 0)).status, PodStatus::kPending);
  }
}

TEST_F(JobOrderTest, ElasticServesJobsBelowTheirMinimumFirst) {
  // n-a: 3 GPUs, 2 taken by "above" -> 1 free.
  const NodeId a = AddNode(c_, "n-a", 3);
  // "above": 3 pods, minimum 1, 2 running (above its minimum), 1 pending; older.
  const JobId above = AddJob(
      c_, "above", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 1, .creation_ms = 1});
  Place(c_, PodOf(c_, above, 0), a);
  Place(c_, PodOf(c_, above, 1), a);
  // "below": 1 pod, minimum 1, nothing running; newer.
  const JobId below = AddJob(c_, "below", {.queue = "q", .pod = kGpuPod, .creation_ms = 2});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, below, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, above, 2)).status, PodStatus::kPending);
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "elastic"));
    EXPECT_EQ(cycle->pod(PodOf(c_, above, 2)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, below, 0)).status, PodStatus::kPending);
  }
}

// --- task order: taskorder, kubeflow, ray -------------------------------------------------------

// One GPU free; an elastic job (minimum 1) of two pods: the first pod in task order gets it.
class TaskOrderTest : public PluginTestBase {
 protected:
  void SetUp() override {
    PluginTestBase::SetUp();
    AddNode(c_, "n-a", 1);
    j_ = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod, .min_available = 1});
    p0_ = PodOf(c_, j_, 0);
    p1_ = PodOf(c_, j_, 1);
  }
  // Which pod got the GPU ("" if none or both).
  std::string Winner(const SchedulerConfig& cfg) {
    c_.Finalize();
    auto cycle = RunCycle(c_, cfg);
    const bool w0 = cycle->pod(p0_).status == PodStatus::kBinding;
    const bool w1 = cycle->pod(p1_).status == PodStatus::kBinding;
    if (w0 == w1) return "";
    return w0 ? c_.pods[p0_].name : c_.pods[p1_].name;
  }
  JobId j_ = kNone;
  PodId p0_ = kNone, p1_ = kNone;
};

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

// --- subgrouporder ------------------------------------------------------------------------------

class SubGroupOrderTest : public PluginTestBase {};

TEST_F(SubGroupOrderTest, PodSetsBelowTheirMinimumGoFirst) {
  // One job, pod sets "a" (minimum 1, one running + one pending) and "b" (minimum 1, one
  // pending). n-a has 2 GPUs, one taken by a's running pod -> 1 free.
  const NodeId n = AddNode(c_, "n-a", 2);
  const JobId j = AddEmptyJob(c_, "sg", {.queue = "q"});
  const int32_t sa = AddPodSet(c_, j, "a", 1);
  const int32_t sb = AddPodSet(c_, j, "b", 1);
  const PodId a0 = AddPod(c_, j, sa, "sg-a-0", kGpuPod);
  const PodId a1 = AddPod(c_, j, sa, "sg-a-1", kGpuPod);
  const PodId b0 = AddPod(c_, j, sb, "sg-b-0", kGpuPod);
  Place(c_, a0, n);
  c_.Finalize();
  {
    // b is below its minimum: it goes first and takes the GPU.
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kPending);
  }
  {
    // By name "a" goes first and takes the GPU with its extra pod.
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "subgrouporder"));
    EXPECT_EQ(cycle->pod(a1).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(b0).status, PodStatus::kPending);
  }
}

// --- proportion ---------------------------------------------------------------------------------

class ProportionTest : public ::testing::Test {
 protected:
  Cluster c_;
};

TEST_F(ProportionTest, JobOverTheQueueLimitStaysPending) {
  const NodeId n = AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, 2, 1}});  // quota 1, limit 2 GPUs
  const JobId run = AddJob(c_, "run", {.queue = "q", .pod = kGpuPod});
  Place(c_, PodOf(c_, run, 0), n);
  const JobId j = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  const auto& errors = cycle->job_state(j).fit_errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].reason, "OverLimit");
  ASSERT_EQ(errors[0].messages.size(), 1u);
  // 1 running + 2 requested = 3 > limit 2.
  EXPECT_EQ(errors[0].messages[0],
            "q quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 1 GPUs "
            "allocated and workload requested 2 GPUs");
}

TEST_F(ProportionTest, JobWithinTheQueueLimitIsPlaced) {
  const NodeId n = AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, 3, 1}});  // limit 3: 1 running + 2 fits exactly
  const JobId run = AddJob(c_, "run", {.queue = "q", .pod = kGpuPod});
  Place(c_, PodOf(c_, run, 0), n);
  const JobId j = AddJob(c_, "j", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
}

TEST_F(ProportionTest, NonPreemptibleJobOverDeservedQuotaStaysPending) {
  AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, kUnlimited, 1}});  // deserves 1 GPU
  const JobId np =
      AddJob(c_, "np", {.queue = "q", .pods = 2, .pod = kGpuPod, .preemptible = false});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[np].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending);
  const auto& errors = cycle->job_state(np).fit_errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].reason, "NonPreemptibleOverQuota");
  ASSERT_EQ(errors[0].messages.size(), 1u);
  EXPECT_TRUE(Contains(errors[0].messages[0],
                       "Workload requested 2 GPUs, but q quota is 1 GPUs, while 0 GPUs are "
                       "already allocated for non-preemptible pods."));
}

TEST_F(ProportionTest, PreemptibleJobMayGoOverDeservedQuota) {
  AddNode(c_, "n-a", 8);
  AddQueue(c_, "q", {.gpu = {1, kUnlimited, 1}});
  const JobId j = AddJob(c_, "p", {.queue = "q", .pods = 2, .pod = kGpuPod});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[j].pods) EXPECT_EQ(cycle->pod(p).status, PodStatus::kBinding);
}

TEST_F(ProportionTest, QueueOrderGivesTheLastGpuToTheQueueBelowItsFairShare) {
  // 3 GPUs. qa (older queue, deserves 1) already runs 2; qb (deserves 1) runs nothing.
  // Fair shares: quotas 1 + 1, the third GPU to qa (qb asks only for 1) -> qa 2, qb 1.
  // qa with its pending job would hold 3 > deserved 1; qb would hold 1 <= 1: qb goes first.
  const NodeId n = AddNode(c_, "n-a", 3);
  AddQueue(c_, "qa", {.gpu = {1, kUnlimited, 1}, .creation_ms = 1});
  AddQueue(c_, "qb", {.gpu = {1, kUnlimited, 1}, .creation_ms = 2});
  const JobId run = AddJob(c_, "run", {.queue = "qa", .pods = 2, .pod = kGpuPod});
  for (PodId p : c_.jobs[run].pods) Place(c_, p, n);
  const JobId ja = AddJob(c_, "ja", {.queue = "qa", .pod = kGpuPod, .creation_ms = 10});
  const JobId jb = AddJob(c_, "jb", {.queue = "qb", .pod = kGpuPod, .creation_ms = 20});
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(cycle->pod(PodOf(c_, jb, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, ja, 0)).status, PodStatus::kPending);
    auto fair = cycle->QueueFairShare(c_.FindQueue("qa"));
    ASSERT_TRUE(fair.has_value());
    EXPECT_EQ((*fair)[QueueResource::kGpu], 2);
  }
  {
    // Without proportion the older queue goes first.
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "proportion"));
    EXPECT_EQ(cycle->pod(PodOf(c_, ja, 0)).status, PodStatus::kBinding);
    EXPECT_EQ(cycle->pod(PodOf(c_, jb, 0)).status, PodStatus::kPending);
  }
}

// --- gangs --------------------------------------------------------------------------------------

class GangTest : public PluginTestBase {};

TEST_F(GangTest, GangOfThreeOnTwoFreeGpusPlacesNothing) {
  const NodeId n = AddNode(c_, "n-a", 4);
  Fill("run", n, 2, kGpuPod);  // 2 of 4 GPUs taken
  const JobId g = AddJob(c_, "g", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 3});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  for (PodId p : c_.jobs[g].pods) {
    EXPECT_EQ(cycle->pod(p).status, PodStatus::kPending) << c_.pods[p].name;
    EXPECT_EQ(cycle->pod(p).node, kNone) << c_.pods[p].name;
  }
  EXPECT_TRUE(cycle->binds().empty());
  EXPECT_EQ(cycle->node(n).idle.gpus, 2);  // the two placed pods were rolled back
  EXPECT_TRUE(Contains(FitErrors(*cycle, g),
                       "Resources were found for 2 pods while 3 are required for gang "
                       "scheduling"));
}

TEST_F(GangTest, ElasticJobTakesWhatFitsAboveItsMinimum) {
  const NodeId n = AddNode(c_, "n-a", 4);
  Fill("run", n, 2, kGpuPod);
  const JobId e = AddJob(c_, "e", {.queue = "q", .pods = 3, .pod = kGpuPod, .min_available = 1});
  c_.Finalize();
  auto cycle = RunCycle(c_);
  int binding = 0, pending = 0;
  for (PodId p : c_.jobs[e].pods) {
    binding += cycle->pod(p).status == PodStatus::kBinding;
    pending += cycle->pod(p).status == PodStatus::kPending;
  }
  EXPECT_EQ(binding, 2);  // the two free GPUs
  EXPECT_EQ(pending, 1);
  EXPECT_EQ(cycle->binds().size(), 2u);
  EXPECT_EQ(cycle->node(n).idle.gpus, 0);
}

}  // namespace
}  // namespace gantry
