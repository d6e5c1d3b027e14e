// The watch cache: converters from API objects to the model, and event sequences -> model state.
#include "cache/watch_cache.h"

#include <gtest/gtest.h>

#include <chrono>

#include "cache/convert.h"
#include "cache/quantity.h"
#include "framework/scheduler.h"
#include "framework/session.h"

namespace gantry::cache {
namespace {

using kube::EventType;
using nlohmann::json;

json NodeObj(const std::string& name, int gpus, const std::string& cpu = "64",
             const std::string& memory = "512Gi") {
  return json{{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"status",
               {{"allocatable",
                 {{"cpu", cpu},
                  {"memory", memory},
                  {"pods", "110"},
                  {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

json PodObj(const std::string& ns, const std::string& name, int gpus, const std::string& group = "",
            const std::string& scheduler = "kai-scheduler") {
  json pod{{"metadata",
            {{"name", name},
             {"namespace", ns},
             {"uid", "uid-" + name},
             {"labels", {{"kai.scheduler/queue", "team-a"}}}}},
           {"spec",
            {{"schedulerName", scheduler},
             {"containers",
              json::array({{{"name", "main"},
                            {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}},
           {"status", {{"phase", "Pending"}}}};
  if (gpus > 0) {
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  if (!group.empty()) pod["metadata"]["annotations"]["pod-group-name"] = group;
  return pod;
}

json QueueObj(const std::string& name, const std::string& parent = "", double gpu_quota = 0) {
  json q{{"metadata", {{"name", name}}},
         {"spec",
          {{"resources",
            {{"gpu", {{"quota", gpu_quota}, {"limit", -1}, {"overQuotaWeight", 1}}},
             {"cpu", {{"quota", 0}, {"limit", -1}, {"overQuotaWeight", 1}}},
             {"memory", {{"quota", 0}, {"limit", -1}, {"overQuotaWeight", 1}}}}}}}};
  if (!parent.empty()) q["spec"]["parentQueue"] = parent;
  return q;
}

json PodGroupObj(const std::string& ns, const std::string& name, const std::string& queue,
                 int min_member) {
  return json{{"metadata", {{"name", name}, {"namespace", ns}, {"uid", "pg-" + name}}},
              {"spec", {{"queue", queue}, {"minMember", min_member}}}};
}

json BindRequestObj(const std::string& ns, const std::string& pod, const std::string& node,
                    const std::string& phase = "") {
  json br{{"metadata", {{"name", pod}, {"namespace", ns}}},
          {"spec", {{"podName", pod}, {"selectedNode", node}}}};
  if (!phase.empty()) br["status"]["phase"] = phase;
  return br;
}

// A cache with two 4-GPU nodes and queues root <- team-a, every kind synced.
class WatchCacheTest : public ::testing::Test {
 protected:
  WatchCacheTest() : cache_("kai-scheduler") {
    cache_.Replace(Kind::kNode, {NodeObj("n1", 4), NodeObj("n2", 4)});
    cache_.Replace(Kind::kQueue, {QueueObj("root"), QueueObj("team-a", "root")});
    for (Kind k :
         {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest, Kind::kPriorityClass, Kind::kTopology}) {
      cache_.Replace(k, {});
    }
  }
  const Pod* FindPod(const Cluster& c, const std::string& name) {
    for (const Pod& p : c.pods) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }
  WatchCache cache_;
};

TEST(QuantityTest, ParsesKubernetesForms) {
  EXPECT_DOUBLE_EQ(*ParseQuantity("500m"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseQuantity("4"), 4);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1Gi"), 1073741824.0);
  EXPECT_DOUBLE_EQ(*ParseQuantity("2k"), 2000);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*ParseQuantity("1e3"), 1000);
  EXPECT_DOUBLE_EQ(*ParseQuantity("10M"), 1e7);
  EXPECT_FALSE(ParseQuantity("").has_value());
  EXPECT_FALSE(ParseQuantity("abc").has_value());
  EXPECT_FALSE(ParseQuantity("1Qi").has_value());
  EXPECT_FALSE(ParseQuantity(".").has_value());
}

TEST(ConvertTest, NodeAllocatableLabelsTaintsAndMig) {
  json n = NodeObj("n1", 8, "96", "1Ti");
  n["metadata"]["labels"]["nvidia.com/gpu.memory"] = "40960";
  n["metadata"]["labels"]["nvidia.com/gpu.count"] = "8";
  n["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed";
  n["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7";
  n["spec"]["taints"] = json::array({{{"key", "k"}, {"value", "v"}, {"effect", "NoSchedule"}}});
  n["spec"]["unschedulable"] = true;
  auto r = ConvertNode(n);
  ASSERT_TRUE(r.ok()) << r.error();
  const Node& node = r.value().node;
  EXPECT_EQ(node.allocatable.cpu_millis, 96000);
  EXPECT_EQ(node.allocatable.memory_bytes, 1099511627776.0);
  EXPECT_EQ(node.allocatable.gpus, 8);
  EXPECT_EQ(node.allocatable.pods, 110);
  EXPECT_EQ(node.gpu_count, 8);
  EXPECT_EQ(node.gpu_memory_mib, 40900);
  EXPECT_EQ(node.mig_strategy, "mixed");
  ASSERT_EQ(node.taints.size(), 1u);
  EXPECT_EQ(node.taints[0].effect, "NoSchedule");
  EXPECT_TRUE(node.unschedulable);
  ASSERT_EQ(r.value().extended.size(), 1u);
  EXPECT_EQ(r.value().extended[0].first, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(r.value().extended[0].second, 7);
}

TEST(ConvertTest, PodRequestsCountInitContainersAndSidecarsAsKubernetesDoes) {
  json pod = PodObj("ns", "p", 2);
  // App containers: 1 cpu + 0.5 cpu. A sidecar of 0.25 cpu. An init container of 3 cpu runs
  // after the sidecar started: peak 3.25 > 1.5 + 0.25.
  pod["spec"]["containers"].push_back(
      {{"name", "second"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}});
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "sidecar"},
        {"restartPolicy", "Always"},
        {"resources", {{"requests", {{"cpu", "250m"}}}}}},
       {{"name", "init"}, {"resources", {{"requests", {{"cpu", "3"}, {"memory", "100Mi"}}}}}}});
  pod["spec"]["overhead"] = {{"cpu", "100m"}};
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  const Pod& p = r.value().pod;
  EXPECT_DOUBLE_EQ(p.request.cpu_millis, 3350);
  EXPECT_DOUBLE_EQ(p.request.memory_bytes, 1073741824.0);  // app containers' 1Gi > init 100Mi
  EXPECT_EQ(p.request.gpus, 2);
  EXPECT_EQ(p.gpu_kind, GpuRequestKind::kWhole);
  EXPECT_EQ(p.status, PodStatus::kPending);
}

TEST(ConvertTest, PodGpuKindsFromAnnotations) {
  json frac = PodObj("ns", "f", 0);
  frac["metadata"]["annotations"] = {{"gpu-fraction", "0.5"}, {"gpu-fraction-num-devices", "2"}};
  auto f = ConvertPod(frac);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f.value().pod.gpu_kind, GpuRequestKind::kFraction);
  EXPECT_EQ(f.value().pod.gpu_fraction, 0.5);
  EXPECT_EQ(f.value().pod.gpu_devices, 2);
  EXPECT_DOUBLE_EQ(f.value().pod.RequestedGpus(), 1.0);

  json mem = PodObj("ns", "m", 0);
  mem["metadata"]["annotations"] = {{"gpu-memory", "2000"}};
  auto m = ConvertPod(mem);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m.value().pod.gpu_kind, GpuRequestKind::kMemory);
  EXPECT_EQ(m.value().pod.gpu_memory_mib, 2000);

  json mig = PodObj("ns", "g", 0);
  mig["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-2g.20gb"] = "1";
  auto g = ConvertPod(mig);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g.value().pod.gpu_kind, GpuRequestKind::kMig);
  EXPECT_EQ(g.value().pod.mig_gpus, 2);

  json bad = PodObj("ns", "b", 0);
  bad["metadata"]["annotations"] = {{"gpu-fraction", "half"}};
  auto b = ConvertPod(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("metadata.annotations.gpu-fraction"), std::string::npos) << b.error();
}

TEST(ConvertTest, PodStatusMapping) {
  EXPECT_EQ(ModelPodStatus("Pending", false, false, false), PodStatus::kPending);
  EXPECT_EQ(ModelPodStatus("Pending", false, false, true), PodStatus::kGated);
  EXPECT_EQ(ModelPodStatus("Pending", true, false, false), PodStatus::kBound);
  EXPECT_EQ(ModelPodStatus("Running", true, false, false), PodStatus::kRunning);
  EXPECT_EQ(ModelPodStatus("Running", true, true, false), PodStatus::kReleasing);
  EXPECT_EQ(ModelPodStatus("Pending", false, true, false), PodStatus::kDeleted);
  EXPECT_EQ(ModelPodStatus("Succeeded", true, false, false), PodStatus::kSucceeded);
  EXPECT_EQ(ModelPodStatus("Failed", true, true, false), PodStatus::kFailed);
}

TEST(ConvertTest, PodSelectorsAffinitiesTolerations) {
  json pod = PodObj("ns", "p", 1);
  pod["spec"]["nodeSelector"] = {{"zone", "a"}};
  pod["spec"]["tolerations"] = json::array({{{"key", "gpu"}, {"operator", "Exists"}}});
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array({{{"matchExpressions",
                          json::array({{{"key", "rack"},
                                        {"operator", "In"},
                                        {"values", json::array({"r1", "r2"})}}})}}})}}}}},
      {"podAntiAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         json::array({{{"labelSelector", {{"matchLabels", {{"app", "x"}}}}},
                       {"topologyKey", "kubernetes.io/hostname"}}})}}}};
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  const Pod& p = r.value().pod;
  EXPECT_EQ(*p.node_selector.Get("zone"), "a");
  ASSERT_EQ(p.tolerations.size(), 1u);
  EXPECT_EQ(p.tolerations[0].op, "Exists");
  ASSERT_EQ(p.required_node_affinity.size(), 1u);
  EXPECT_EQ(p.required_node_affinity[0].requirements[0].values.size(), 2u);
  ASSERT_EQ(p.pod_anti_affinity.size(), 1u);
  EXPECT_EQ(p.pod_anti_affinity[0].topology_key, "kubernetes.io/hostname");
}

TEST(ConvertTest, QueueQuotasAndBadValues) {
  json q = QueueObj("q", "parent", 4);
  q["spec"]["resources"]["memory"]["quota"] = 1000;
  q["spec"]["resources"]["cpu"]["limit"] = 8000;
  q["spec"]["priority"] = 50;
  auto r = ConvertQueue(q);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().gpu.quota, 4);
  EXPECT_EQ(r.value().memory.quota, 1e9);
  EXPECT_EQ(r.value().cpu.limit, 8000);
  EXPECT_EQ(r.value().gpu.limit, kUnlimited);
  EXPECT_EQ(r.value().priority, 50);
  EXPECT_EQ(r.value().parent_name, "parent");

  json bad = QueueObj("q", "", -3);
  auto b = ConvertQueue(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("spec.resources.gpu.quota"), std::string::npos) << b.error();
}

TEST(ConvertTest, PodGroupSubGroupsAreValidated) {
  json pg = PodGroupObj("ns", "pg", "team-a", 2);
  pg["spec"]["subGroups"] = json::array(
      {{{"name", "a"}, {"minMember", 1}, {"parent", "b"}}, {{"name", "b"}, {"parent", "a"}}});
  auto r = ConvertPodGroup(pg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cycle"), std::string::npos) << r.error();
  pg["spec"]["subGroups"] = json::array({{{"name", "a"}, {"parent", "missing"}}});
  r = ConvertPodGroup(pg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unknown sub-group \"missing\""), std::string::npos) << r.error();
}

TEST_F(WatchCacheTest, GangOfPodsBecomesAJobInItsQueue) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 2));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w0", 2, "train"));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w1", 2, "train"));
  Snapshot s = cache_.Take();
  EXPECT_TRUE(s.errors.empty());
  const Cluster& c = *s.cluster;
  ASSERT_EQ(c.nodes.size(), 2u);
  ASSERT_EQ(c.queues.size(), 2u);
  ASSERT_EQ(c.jobs.size(), 1u);
  const Job& job = c.jobs[0];
  EXPECT_EQ(job.name, "train");
  EXPECT_EQ(c.queues[job.queue].name, "team-a");
  ASSERT_EQ(job.pod_sets.size(), 1u);
  EXPECT_EQ(job.pod_sets[0].min_available, 2);
  EXPECT_EQ(job.pods.size(), 2u);
  EXPECT_TRUE(job.preemptible);
}

TEST_F(WatchCacheTest, ModifyAndDeleteUpdateTheModelAndSnapshotsAreSharedUntilAChange) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  json pod = PodObj("ns", "w0", 1, "train");
  cache_.Apply(Kind::kPod, EventType::kAdded, pod);
  Snapshot a = cache_.Take();
  Snapshot b = cache_.Take();
  EXPECT_EQ(a.cluster.get(), b.cluster.get()) << "no change: the same cluster is handed out";
  EXPECT_EQ(FindPod(*a.cluster, "w0")->status, PodStatus::kPending);

  pod["spec"]["nodeName"] = "n2";
  pod["status"]["phase"] = "Running";
  cache_.Apply(Kind::kPod, EventType::kModified, pod);
  Snapshot c = cache_.Take();
  EXPECT_NE(c.cluster.get(), a.cluster.get());
  EXPECT_GT(c.generation, a.generation);
  const Pod* running = FindPod(*c.cluster, "w0");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->status, PodStatus::kRunning);
  EXPECT_EQ(c.cluster->nodes[running->node].name, "n2");
  EXPECT_EQ(FindPod(*a.cluster, "w0")->status, PodStatus::kPending) << "old snapshot unchanged";

  cache_.Apply(Kind::kPod, EventType::kDeleted, pod);
  EXPECT_EQ(FindPod(*cache_.Take().cluster, "w0"), nullptr);
  // 2 nodes and 2 queues at setup, the PodGroup, the pod's add and its update: nothing else.
  EXPECT_EQ(cache_.stats().conversions, 7);
}

TEST_F(WatchCacheTest, KeepsObjectsWithoutManagedFields) {
  json node = NodeObj("n9", 1);
  node["metadata"]["managedFields"] = json::array({{{"manager", "kubelet"}}});
  cache_.Apply(Kind::kNode, EventType::kAdded, node);
  auto stored = cache_.Get(Kind::kNode, "", "n9");
  ASSERT_TRUE(stored.has_value());
  EXPECT_FALSE(stored->at("metadata").contains("managedFields"));
  EXPECT_EQ(stored->at("metadata").at("name"), "n9");
  EXPECT_FALSE(cache_.Get(Kind::kNode, "", "nope").has_value());
}

TEST(WatchCacheSyncTest, AClusterWithoutTopologiesDoesNotHoldSchedulingBack) {
  WatchCache cache("kai-scheduler");
  std::vector<std::string> seen;
  cache.SetErrorHandler([&](Kind kind, const kube::ApiError& e) {
    seen.push_back(ResourceOf(kind).resource + " " + std::to_string(e.http_status));
  });
  for (Kind k :
       {Kind::kNode, Kind::kPod, Kind::kQueue, Kind::kPodGroup, Kind::kBindRequest,
        Kind::kPriorityClass, Kind::kDeviceClass, Kind::kResourceSlice, Kind::kResourceClaim}) {
    cache.Replace(k, {});
  }
  EXPECT_FALSE(cache.synced());
  // A required kind that is not served keeps the cache unsynced; Topology does not.
  cache.handler(Kind::kQueue)
      .OnError(kube::ApiError{404, "NotFound", "not served"}, std::chrono::seconds(1));
  EXPECT_FALSE(cache.synced());
  cache.handler(Kind::kTopology).OnError(kube::ApiError{500, "", "boom"}, std::chrono::seconds(1));
  EXPECT_FALSE(cache.synced());
  cache.handler(Kind::kTopology)
      .OnError(kube::ApiError{404, "", "page not found"}, std::chrono::seconds(1));
  EXPECT_TRUE(cache.synced());
  EXPECT_EQ(seen, (std::vector<std::string>{"queues 404", "topologies 500", "topologies 404"}));
}

TEST_F(WatchCacheTest, RelistReplacesEverythingOfTheKind) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "gone", 1, "train"));
  cache_.Replace(Kind::kPod, {PodObj("ns", "kept", 1, "train")});
  cache_.Replace(Kind::kNode, {NodeObj("n3", 8)});
  Snapshot s = cache_.Take();
  EXPECT_EQ(FindPod(*s.cluster, "gone"), nullptr);
  EXPECT_NE(FindPod(*s.cluster, "kept"), nullptr);
  ASSERT_EQ(s.cluster->nodes.size(), 1u);
  EXPECT_EQ(s.cluster->nodes[0].name, "n3");
}

TEST_F(WatchCacheTest, PodWithAPendingBindRequestCountsAsBindingOnItsNode) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w0", 4, "train"));
  cache_.Apply(Kind::kBindRequest, EventType::kAdded, BindRequestObj("ns", "w0", "n1"));
  Snapshot s = cache_.Take();
  const Pod* p = FindPod(*s.cluster, "w0");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->status, PodStatus::kBinding);
  EXPECT_EQ(s.cluster->nodes[p->node].name, "n1");

  // The scheduler never places it again: n1 is full in a session.
  auto scheduler =
      Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(scheduler.ok()) << scheduler.error();
  auto ssn = scheduler.value()->OpenSession(*s.cluster, 0);
  scheduler.value()->RunActions(*ssn);
  EXPECT_TRUE(ssn->binds().empty());
  EXPECT_EQ(ssn->node(p->node).idle.gpus, 0);

  // A request owned by an earlier pod of the same name does not hold this one.
  json stale = BindRequestObj("ns", "w0", "n1");
  stale["metadata"]["ownerReferences"] =
      json::array({{{"kind", "Pod"}, {"name", "w0"}, {"uid", "uid-of-an-earlier-w0"}}});
  cache_.Apply(Kind::kBindRequest, EventType::kModified, stale);
  s = cache_.Take();
  EXPECT_EQ(FindPod(*s.cluster, "w0")->status, PodStatus::kPending);
  EXPECT_EQ(s.stale_bind_requests, (std::vector<ObjectRef>{{"ns", "w0"}}));
  stale["metadata"]["ownerReferences"][0]["uid"] = "uid-w0";
  cache_.Apply(Kind::kBindRequest, EventType::kModified, stale);
  EXPECT_EQ(FindPod(*cache_.Take().cluster, "w0")->status, PodStatus::kBinding);

  EXPECT_TRUE(cache_.Take().stale_bind_requests.empty());

  // Failed with attempts left: the binder retries, the pod stays Binding.
  json failed = BindRequestObj("ns", "w0", "n1", "Failed");
  failed["spec"]["backoffLimit"] = 3;
  failed["status"]["failedAttempts"] = 1;
  cache_.Apply(Kind::kBindRequest, EventType::kModified, failed);
  EXPECT_EQ(FindPod(*cache_.Take().cluster, "w0")->status, PodStatus::kBinding);
  // Given up: the pod is pending again and the request is stale.
  failed["status"]["failedAttempts"] = 3;
  cache_.Apply(Kind::kBindRequest, EventType::kModified, failed);
  s = cache_.Take();
  EXPECT_EQ(FindPod(*s.cluster, "w0")->status, PodStatus::kPending);
  EXPECT_EQ(s.stale_bind_requests, (std::vector<ObjectRef>{{"ns", "w0"}}));
  // So is a request for a node that is gone.
  cache_.Apply(Kind::kBindRequest, EventType::kModified, BindRequestObj("ns", "w0", "gone-node"));
  s = cache_.Take();
  EXPECT_EQ(FindPod(*s.cluster, "w0")->status, PodStatus::kPending);
  EXPECT_EQ(s.stale_bind_requests, (std::vector<ObjectRef>{{"ns", "w0"}}));
}

TEST_F(WatchCacheTest, OtherSchedulersPodsOnlyOccupyNodes) {
  json foreign = PodObj("ns", "foreign", 3, "", "default-scheduler");
  foreign["spec"]["nodeName"] = "n1";
  foreign["status"]["phase"] = "Running";
  cache_.Apply(Kind::kPod, EventType::kAdded, foreign);
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "foreign-pending", 1, "", "other"));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "no-group", 1));
  Snapshot s = cache_.Take();
  ASSERT_EQ(s.cluster->pods.size(), 1u);
  const Pod& p = s.cluster->pods[0];
  EXPECT_EQ(p.name, "foreign");
  EXPECT_EQ(p.job, kNone);
  EXPECT_EQ(p.status, PodStatus::kRunning);

  // A session counts it on its node; a 2-GPU gang then fits only on n2.
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w0", 2, "train"));
  s = cache_.Take();
  auto scheduler =
      Scheduler::Create(SchedulerConfig::Default(), BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(scheduler.ok());
  auto ssn = scheduler.value()->OpenSession(*s.cluster, 0);
  scheduler.value()->RunActions(*ssn);
  ASSERT_EQ(ssn->binds().size(), 1u);
  EXPECT_EQ(s.cluster->nodes[ssn->binds()[0].node].name, "n2");
}

TEST_F(WatchCacheTest, BadObjectsAreSkippedWithAnErrorNamingObjectAndField) {
  cache_.Apply(Kind::kQueue, EventType::kAdded, QueueObj("cyc-a", "cyc-b"));
  cache_.Apply(Kind::kQueue, EventType::kAdded, QueueObj("cyc-b", "cyc-a"));
  cache_.Apply(Kind::kQueue, EventType::kAdded, QueueObj("negative", "root", -2));
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "lost", "nowhere", 1));
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "parent", "root", 1));
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "good", "team-a", 1));
  json bad_pod = PodObj("ns", "bad", 1, "good");
  bad_pod["metadata"]["annotations"]["gpu-memory"] = "lots";
  cache_.Apply(Kind::kPod, EventType::kAdded, bad_pod);
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "fine", 1, "good"));
  Snapshot s = cache_.Take();

  std::vector<std::string> errors;
  for (const auto& e : s.errors) errors.push_back(e.ToString());
  ASSERT_EQ(errors.size(), 6u) << ::testing::PrintToString(errors);
  EXPECT_NE(errors[0].find("Pod ns/bad: metadata.annotations.gpu-memory"), std::string::npos);
  EXPECT_NE(errors[1].find("Queue cyc-a: spec.parentQueue: the queue hierarchy has a cycle"),
            std::string::npos);
  EXPECT_NE(errors[2].find("Queue cyc-b: spec.parentQueue"), std::string::npos);
  EXPECT_NE(errors[3].find("Queue negative: spec.resources.gpu.quota"), std::string::npos);
  EXPECT_NE(errors[4].find("PodGroup ns/lost: spec.queue: unknown queue \"nowhere\""),
            std::string::npos);
  EXPECT_NE(errors[5].find("PodGroup ns/parent: spec.queue: \"root\" is a parent queue"),
            std::string::npos);

  // The rest is scheduled.
  ASSERT_EQ(s.cluster->jobs.size(), 1u);
  EXPECT_EQ(s.cluster->jobs[0].name, "good");
  ASSERT_EQ(s.cluster->pods.size(), 1u);
  EXPECT_EQ(s.cluster->pods[0].name, "fine");
  EXPECT_EQ(s.cluster->queues.size(), 2u);

  // Fixing the object clears its error.
  cache_.Apply(Kind::kQueue, EventType::kModified, QueueObj("cyc-a", "root"));
  s = cache_.Take();
  EXPECT_EQ(s.errors.size(), 4u);
}

TEST_F(WatchCacheTest, QueuesUnderAnInvalidParentAreLeftOutNamingIt) {
  cache_.Apply(Kind::kQueue, EventType::kAdded, QueueObj("broken", "root", -5));
  cache_.Apply(Kind::kQueue, EventType::kAdded, QueueObj("child", "broken"));
  Snapshot s = cache_.Take();
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].ToString(),
            "Queue broken: spec.resources.gpu.quota: must be -1 "
            "(unlimited) or >= 0 (got -5)");
  EXPECT_EQ(s.errors[1].ToString(), "Queue child: spec.parentQueue: queue \"broken\" is invalid");
  EXPECT_EQ(s.cluster->queues.size(), 2u);
}

TEST_F(WatchCacheTest, PriorityClassesSubGroupsAndPreemptibility) {
  cache_.Apply(Kind::kPriorityClass, EventType::kAdded,
               json{{"metadata", {{"name", "inference"}}}, {"value", 125}});
  json pg = PodGroupObj("ns", "svc", "team-a", 1);
  pg["spec"]["priorityClassName"] = "inference";
  pg["spec"]["subGroups"] = json::array(
      {{{"name", "leaders"}, {"minMember", 1}}, {{"name", "workers"}, {"minMember", 2}}});
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, pg);
  json leader = PodObj("ns", "leader", 1, "svc");
  leader["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "leaders";
  json worker = PodObj("ns", "worker", 1, "svc");
  worker["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "workers";
  json stray = PodObj("ns", "stray", 1, "svc");
  stray["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "nope";
  for (const json& p : {leader, worker, stray}) cache_.Apply(Kind::kPod, EventType::kAdded, p);
  Snapshot s = cache_.Take();
  ASSERT_EQ(s.cluster->jobs.size(), 1u);
  const Job& job = s.cluster->jobs[0];
  EXPECT_EQ(job.priority, 125);
  EXPECT_FALSE(job.preemptible);
  ASSERT_EQ(job.pod_sets.size(), 2u);
  EXPECT_EQ(job.pod_sets[0].name, "leaders");
  EXPECT_EQ(job.pod_sets[1].min_available, 2);
  EXPECT_EQ(job.pod_sets[1].pods.size(), 1u);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(
      s.errors[0].ToString().find("Pod ns/stray: metadata.labels.kai.scheduler/subgroup-name"),
      std::string::npos);
}

// Measures Snapshot() on a large cluster (not a benchmark gate; prints the figures).
TEST(WatchCacheScaleTest, AssemblyOfALargeCluster) {
  WatchCache cache("kai-scheduler");
  std::vector<json> nodes, pods, groups;
  for (int i = 0; i < 2000; ++i) nodes.push_back(NodeObj("node-" + std::to_string(i), 8));
  for (int j = 0; j < 5000; ++j) {
    groups.push_back(PodGroupObj("ns", "job-" + std::to_string(j), "team-a", 4));
    for (int k = 0; k < 4; ++k) {
      json p = PodObj("ns", "job-" + std::to_string(j) + "-" + std::to_string(k), 2,
                      "job-" + std::to_string(j));
      pods.push_back(std::move(p));
    }
  }
  cache.Replace(Kind::kNode, nodes);
  cache.Replace(Kind::kQueue, {QueueObj("root"), QueueObj("team-a", "root")});
  cache.Replace(Kind::kPodGroup, groups);
  cache.Replace(Kind::kPod, pods);
  const auto t0 = std::chrono::steady_clock::now();
  Snapshot s = cache.Take();
  const auto t1 = std::chrono::steady_clock::now();
  cache.Apply(Kind::kPod, EventType::kModified, pods[0]);
  Snapshot s2 = cache.Take();
  const auto t2 = std::chrono::steady_clock::now();
  Cluster copy = *s2.cluster;
  const auto t3 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "assemble 2000 nodes / 20000 pods: first %.1f ms, after one change %.1f ms; "
      "plain copy of the Cluster %.1f ms\n",
      ms(t1 - t0), ms(t2 - t1), ms(t3 - t2));
  EXPECT_EQ(s.cluster->pods.size(), 20000u);
  EXPECT_EQ(copy.jobs.size(), 5000u);
}

}  // namespace
}  // namespace gantry::cache
