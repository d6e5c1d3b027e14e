// The watch cache: converters from API objects to the model, and event sequences -> model state.
#include "cache/watch_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "cache/convert.h"
#include "framework/session.h"
#include "sanitizer_scale.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "util/duration.h"

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
std::string Dump(const Snapshot& s);

class WatchCacheTest : public ::testing::Test {
 protected:
  WatchCacheTest() : cache_("kai-scheduler") {
    cache_.Replace(Kind::kNode, {NodeObj("n1", 4), NodeObj("n2", 4)});
    cache_.Replace(Kind::kQueue, {QueueObj("root"), QueueObj("team-a", "root")});
    for (Kind k : {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest, Kind::kPriorityClass,
                   Kind::kTopology, Kind::kNodeResourceTopology}) {
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

TEST(ConvertTest, AmdGpusCountAsGpusAsKaiDoes) {
  json n = NodeObj("amd", 0, "32", "256Gi");
  n["status"]["allocatable"]["amd.com/gpu"] = "4";
  auto node = ConvertNode(n);
  ASSERT_TRUE(node.ok()) << node.error();
  EXPECT_EQ(node.value().node.allocatable.gpus, 4);
  EXPECT_EQ(node.value().node.gpu_count, 4);

  json pod = PodObj("ns", "p", 0);
  pod["spec"]["containers"][0]["resources"]["requests"]["amd.com/gpu"] = "2";
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().pod.request.gpus, 2);
  EXPECT_EQ(r.value().pod.gpu_kind, GpuRequestKind::kWhole);
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

TEST(ConvertTest, PodPreferredAffinityTermsWithWeights) {
  json pod = PodObj("ns", "p", 1);
  pod["spec"]["affinity"] = json::parse(R"({
      "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 30, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}},
                                           "topologyKey": "zone", "namespaces": ["data"]}}]},
      "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web"]}]},
          "topologyKey": "kubernetes.io/hostname"}},
        {"weight": 1, "podAffinityTerm": {"topologyKey": "rack"}}]}})");
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  const Pod& p = r.value().pod;
  EXPECT_TRUE(p.pod_affinity.empty());
  EXPECT_TRUE(p.pod_anti_affinity.empty());
  ASSERT_EQ(p.preferred_pod_affinity.size(), 1u);
  EXPECT_EQ(p.preferred_pod_affinity[0].weight, 30);
  EXPECT_EQ(p.preferred_pod_affinity[0].term.topology_key, "zone");
  EXPECT_EQ(*p.preferred_pod_affinity[0].term.selector.match_labels.Get("app"), "db");
  EXPECT_EQ(p.preferred_pod_affinity[0].term.namespaces, std::vector<std::string>{"data"});
  ASSERT_EQ(p.preferred_pod_anti_affinity.size(), 2u);
  EXPECT_EQ(p.preferred_pod_anti_affinity[0].weight, 100);
  EXPECT_EQ(p.preferred_pod_anti_affinity[0].term.selector.expressions.size(), 1u);
  EXPECT_EQ(p.preferred_pod_anti_affinity[1].weight, 1);
  EXPECT_EQ(p.preferred_pod_anti_affinity[1].term.topology_key, "rack");

  // Bad input is named by its field.
  const std::string anti =
      "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnored"
      "DuringExecution";
  json bad = pod;
  bad["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][1]
     ["weight"] = 0;
  auto e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find(anti + "[1].weight: must be a whole number from 1 to 100"),
            std::string::npos)
      << e.error();
  bad = pod;
  bad["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][1]
      .erase("weight");
  e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), anti + "[1].weight: missing");
  bad = pod;
  bad["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][1]
      .erase("podAffinityTerm");
  e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), anti + "[1].podAffinityTerm: missing");
  bad = pod;
  bad["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
     ["podAffinityTerm"]
         .erase("topologyKey");
  e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(),
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".podAffinityTerm.topologyKey: missing");
  bad = pod;
  bad["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = 3;
  e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(),
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution: must be a "
            "list");
}

TEST(ConvertTest, PodHostPortsAsKubernetesNodePortsReadsThem) {
  json pod = PodObj("ns", "p", 1);
  pod["spec"]["containers"][0]["ports"] = json::parse(R"([
      {"containerPort": 80},
      {"containerPort": 80, "hostPort": 0},
      {"containerPort": 80, "hostPort": 8080},
      {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}])");
  pod["spec"]["initContainers"] = json::parse(R"([
      {"name": "sidecar", "restartPolicy": "Always", "ports": [{"hostPort": 9000}]},
      {"name": "setup", "ports": [{"hostPort": 9001}]}])");
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  // The sidecar's first (it runs as long as the pod), the plain init container's not at all.
  EXPECT_EQ(r.value().pod.host_ports,
            (std::vector<HostPort>{
                {"0.0.0.0", "TCP", 9000}, {"0.0.0.0", "TCP", 8080}, {"10.0.0.1", "UDP", 53}}));

  json bad = pod;
  bad["spec"]["containers"][0]["ports"][2]["protocol"] = "HTTP";
  auto e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(),
            "spec.containers[0].ports[2].protocol: must be TCP, UDP or SCTP (got \"HTTP\")");
  bad = pod;
  bad["spec"]["containers"][0]["ports"][2]["hostPort"] = 70000;
  e = ConvertPod(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("spec.containers[0].ports[2].hostPort: must be a whole number from 0 "
                           "to 65535"),
            std::string::npos)
      << e.error();
}

TEST(ConvertTest, PodRequiredConfigMapsAsKaisConfigMapPredicateReadsThem) {
  json pod = PodObj("ns", "p", 1);
  pod["metadata"]["annotations"]["runai/shared-gpu-configmap"] = "p-shared-gpu";
  pod["spec"]["volumes"] = json::parse(R"([
      {"name": "cfg", "configMap": {"name": "settings"}},
      {"name": "opt", "configMap": {"name": "maybe", "optional": true}},
      {"name": "unmounted", "configMap": {"name": "unused"}},
      {"name": "bundle", "projected": {"sources": [
        {"configMap": {"name": "proj"}}, {"secret": {"name": "s"}},
        {"configMap": {"name": "proj-opt", "optional": true}}]}},
      {"name": "gpu", "configMap": {"name": "p-shared-gpu-0"}},
      {"name": "scratch", "emptyDir": {}}])");
  pod["spec"]["containers"][0]["volumeMounts"] = json::parse(R"([
      {"name": "cfg", "mountPath": "/a"}, {"name": "opt", "mountPath": "/b"},
      {"name": "gpu", "mountPath": "/c"}, {"name": "scratch", "mountPath": "/d"}])");
  pod["spec"]["containers"][0]["env"] = json::parse(R"([
      {"name": "A", "value": "x"},
      {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "b"}}},
      {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "env-opt", "key": "c",
                                                      "optional": true}}},
      {"name": "D", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "d"}}},
      {"name": "E", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "e"}}}])");
  pod["spec"]["containers"][0]["envFrom"] =
      json::parse(R"([{"configMapRef": {"name": "all-env"}}, {"secretRef": {"name": "s"}}])");
  pod["spec"]["initContainers"] = json::parse(R"([
      {"name": "init", "volumeMounts": [{"name": "bundle", "mountPath": "/p"}],
       "envFrom": [{"configMapRef": {"name": "init-env"}}]}])");
  pod["spec"]["ephemeralContainers"] = json::parse(R"([
      {"name": "debug", "env": [{"name": "F",
        "valueFrom": {"configMapKeyRef": {"name": "debug-cm", "key": "f"}}}]}])");
  auto r = ConvertPod(pod);
  ASSERT_TRUE(r.ok()) << r.error();
  // Volumes first (mounted ones only; not optional; not the shared-GPU prefix), then init, app
  // and ephemeral containers' env; each name once.
  EXPECT_EQ(r.value().pod.config_maps, (std::vector<std::string>{"settings", "proj", "init-env",
                                                                 "env-cm", "all-env", "debug-cm"}));

  pod["spec"]["volumes"][0]["configMap"]["optional"] = "yes";
  auto e = ConvertPod(pod);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), "spec.volumes[0].configMap.optional: must be true or false");
}

TEST(ConvertTest, ConfigMapsAreReadByName) {
  auto r = ConvertConfigMap(
      json{{"metadata", {{"name", "settings"}, {"namespace", "team"}}}, {"data", {{"k", "v"}}}});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().namespace_, "team");
  EXPECT_EQ(r.value().name, "settings");
  auto e = ConvertConfigMap(json{{"metadata", {{"namespace", "team"}}}});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), "metadata.name: missing");
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

TEST(ConvertTest, PodGroupV017FieldsAreReadAndBadOnesNamed) {
  json pg = PodGroupObj("ns", "pg", "team-a", 2);
  pg["spec"]["minSubGroup"] = 1;
  pg["spec"]["preemptionDelay"] = "10m";
  pg["spec"]["stalenessGracePeriod"] = "-1s";
  pg["spec"]["subGroups"] = json::array(
      {{{"name", "g"}, {"minSubGroup", 0}}, {{"name", "a"}, {"minMember", 0}, {"parent", "g"}}});
  auto r = ConvertPodGroup(pg);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().min_sub_group, 1);
  EXPECT_DOUBLE_EQ(r.value().preemption_delay_seconds, 600);
  EXPECT_EQ(r.value().staleness_grace_period_seconds, -1);
  EXPECT_EQ(r.value().sub_groups[0].min_sub_group, 0);
  EXPECT_EQ(r.value().sub_groups[1].min_member, 0);
  pg["spec"]["preemptionDelay"] = "soon";
  r = ConvertPodGroup(pg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("spec.preemptionDelay"), std::string::npos) << r.error();
  EXPECT_EQ(ParseGoDurationSeconds("1h30m").value(), 5400);
  EXPECT_EQ(ParseGoDurationSeconds("0").value(), 0);
  EXPECT_FALSE(ParseGoDurationSeconds("5 minutes").ok());
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
  // No priority class and no global default: KAI's default priority, 50 (preemptible, < 100).
  EXPECT_EQ(job.priority, 50);
}

TEST_F(WatchCacheTest, APendingPodNamingAMissingPodGroupIsAnErrorNamingIt) {
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "lost", 1, "ghost"));
  Snapshot s = cache_.Take();
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].name, "lost");
  EXPECT_NE(s.errors[0].message.find("PodGroup \"ghost\" not found"), std::string::npos)
      << s.errors[0].message;
  EXPECT_TRUE(s.cluster->pods.empty());
  // Once the PodGroup exists the pod is its job's.
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "ghost", "team-a", 1));
  Snapshot t = cache_.Take();
  EXPECT_TRUE(t.errors.empty());
  ASSERT_EQ(t.cluster->jobs.size(), 1u);
  EXPECT_EQ(t.cluster->jobs[0].pods.size(), 1u);
}

// spec.schedulingBackoff (KAI v0.17): with any value but -1, a PodGroup whose last scheduling
// condition (highest transitionID) is for its own node pool is left out; its running pods still
// occupy their node. Unset or -1: scheduled every cycle.
TEST_F(WatchCacheTest, SchedulingBackoffLeavesOutAPodGroupTriedForItsNodePool) {
  json pg = PodGroupObj("ns", "once", "team-a", 2);
  pg["spec"]["schedulingBackoff"] = 1;
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, pg);
  json running = PodObj("ns", "w0", 1, "once");
  running["spec"]["nodeName"] = "n1";
  running["status"]["phase"] = "Running";
  cache_.Apply(Kind::kPod, EventType::kAdded, running);
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w1", 1, "once"));
  Snapshot s = cache_.Take();
  EXPECT_TRUE(s.errors.empty());
  ASSERT_EQ(s.cluster->jobs.size(), 1u) << "no scheduling condition yet: scheduled";

  auto condition = [](const std::string& pool, const std::string& id) {
    return json{{"type", "UnschedulableOnNodePool"}, {"nodePool", pool}, {"transitionID", id}};
  };
  // Tried once for the default pool: left out; the running pod still holds its GPU on n1, the
  // pending one waits without an error.
  pg["status"]["schedulingConditions"] = json::array({condition("default", "1")});
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  Snapshot t = cache_.Take();
  EXPECT_TRUE(t.errors.empty());
  EXPECT_TRUE(t.cluster->jobs.empty());
  const Pod* w0 = FindPod(*t.cluster, "w0");
  ASSERT_NE(w0, nullptr);
  EXPECT_EQ(w0->job, kNone);
  EXPECT_EQ(t.cluster->nodes[w0->node].name, "n1");
  EXPECT_EQ(FindPod(*t.cluster, "w1"), nullptr);

  // The last condition (highest transitionID, not the last listed) is for another pool.
  pg["status"]["schedulingConditions"] =
      json::array({condition("pool-b", "3"), condition("default", "2")});
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  EXPECT_EQ(cache_.Take().cluster->jobs.size(), 1u);
  // ... until a later one is for its own pool again. (A PodGroup labelled for another pool is
  // another shard's: WatchCachePoolTest; the label key: NodePoolLabelKeyIsTheSchedulers.)
  pg["status"]["schedulingConditions"] =
      json::array({condition("pool-b", "3"), condition("default", "4")});
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  EXPECT_TRUE(cache_.Take().cluster->jobs.empty());

  // -1 (KAI's default): scheduled whatever its conditions say.
  pg["spec"]["schedulingBackoff"] = -1;
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  EXPECT_EQ(cache_.Take().cluster->jobs.size(), 1u);

  pg["spec"]["schedulingBackoff"] = 1.5;
  auto bad = ConvertPodGroup(pg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("spec.schedulingBackoff"), std::string::npos) << bad.error();
}

// Node pools (KAI's scheduling shards, --partition-label-value): a shard's scheduler holds the
// Nodes, Queues and PodGroups labelled with its pool; the default shard those without the label.
// Pods of another shard's PodGroups are left out without an error; its BindRequests (to nodes
// this shard does not hold) are not stale here.
TEST(WatchCachePoolTest, AShardHoldsItsPoolsObjectsAndLeavesTheOthersAlone) {
  auto labelled = [](json o, const std::string& pool) {
    o["metadata"]["labels"]["kai.scheduler/node-pool"] = pool;
    return o;
  };
  auto fill = [&](WatchCache& c) {
    c.Replace(Kind::kNode, {NodeObj("plain", 4), labelled(NodeObj("a1", 4), "pool-a"),
                            labelled(NodeObj("b1", 4), "pool-b")});
    c.Replace(Kind::kQueue,
              {QueueObj("root"), QueueObj("q", "root"), labelled(QueueObj("root-a"), "pool-a"),
               labelled(QueueObj("qa", "root-a"), "pool-a")});
    c.Replace(Kind::kPodGroup, {PodGroupObj("ns", "plain-job", "q", 1),
                                labelled(PodGroupObj("ns", "a-job", "qa", 1), "pool-a"),
                                labelled(PodGroupObj("ns", "b-job", "qb", 1), "pool-b")});
    c.Replace(Kind::kPod, {PodObj("ns", "plain-0", 1, "plain-job"), PodObj("ns", "a-0", 1, "a-job"),
                           PodObj("ns", "b-0", 1, "b-job"), PodObj("ns", "b-1", 1, "b-job")});
    // b-1 is being bound by pool-b's scheduler to its node.
    c.Replace(Kind::kBindRequest, {labelled(BindRequestObj("ns", "b-1", "b1"), "pool-b")});
    for (Kind k : {Kind::kPriorityClass, Kind::kTopology, Kind::kNodeResourceTopology}) {
      c.Replace(k, {});
    }
  };
  auto names = [](const auto& items) {
    std::set<std::string> out;
    for (const auto& i : items) out.insert(i.name);
    return out;
  };

  WatchCache shard("kai-scheduler", NodePool{"kai.scheduler/node-pool", "pool-a"});
  fill(shard);
  Snapshot a = shard.Take();
  EXPECT_TRUE(a.errors.empty()) << a.errors[0].ToString();
  EXPECT_EQ(names(a.cluster->nodes), (std::set<std::string>{"a1"}));
  EXPECT_EQ(names(a.cluster->queues), (std::set<std::string>{"root-a", "qa"}));
  EXPECT_EQ(names(a.cluster->jobs), (std::set<std::string>{"a-job"}));
  EXPECT_TRUE(a.stale_bind_requests.empty()) << "pool-b's request is pool-b's to judge";

  WatchCache defaults("kai-scheduler");
  fill(defaults);
  Snapshot d = defaults.Take();
  EXPECT_TRUE(d.errors.empty()) << d.errors[0].ToString();
  EXPECT_EQ(names(d.cluster->nodes), (std::set<std::string>{"plain"}));
  EXPECT_EQ(names(d.cluster->queues), (std::set<std::string>{"root", "q"}));
  EXPECT_EQ(names(d.cluster->jobs), (std::set<std::string>{"plain-job"}));
  EXPECT_TRUE(d.stale_bind_requests.empty());

  // A request of this pool's for a node that is gone is stale, as before.
  shard.Apply(Kind::kBindRequest, EventType::kAdded,
              labelled(BindRequestObj("ns", "a-0", "a-gone"), "pool-a"));
  EXPECT_EQ(shard.Take().stale_bind_requests, (std::vector<ObjectRef>{{"ns", "a-0"}}));

  // A node relabelled into the pool joins it; a PodGroup relabelled out leaves it.
  shard.Apply(Kind::kNode, EventType::kModified, labelled(NodeObj("plain", 4), "pool-a"));
  shard.Apply(Kind::kPodGroup, EventType::kModified,
              labelled(PodGroupObj("ns", "a-job", "qa", 1), "pool-b"));
  Snapshot moved = shard.Take();
  EXPECT_EQ(names(moved.cluster->nodes), (std::set<std::string>{"a1", "plain"}));
  EXPECT_TRUE(moved.cluster->jobs.empty());
  EXPECT_TRUE(moved.errors.empty());
}

// The node-pool label's key is the scheduler's (--nodepool-label-key).
TEST(WatchCacheBackoffTest, NodePoolLabelKeyIsTheSchedulers) {
  auto pg = ConvertPodGroup(json{
      {"metadata", {{"name", "g"}, {"namespace", "ns"}, {"labels", {{"pools/name", "a"}}}}},
      {"spec", {{"queue", "q"}, {"schedulingBackoff", 1}}},
      {"status",
       {{"schedulingConditions", json::array({{{"nodePool", "a"}, {"transitionID", "1"}}})}}}});
  ASSERT_TRUE(pg.ok()) << pg.error();
  EXPECT_TRUE(pg.value().BackedOff("pools/name"));
  EXPECT_FALSE(pg.value().BackedOff("kai.scheduler/node-pool"));  // its pool: "default"
}

TEST_F(WatchCacheTest, AGlobalDefaultPriorityClassReplacesKaisDefaultPriority) {
  cache_.Apply(Kind::kPriorityClass, EventType::kAdded,
               json{{"metadata", {{"name", "everyone"}}}, {"value", 7}, {"globalDefault", true}});
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w0", 1, "train"));
  Snapshot s = cache_.Take();
  ASSERT_EQ(s.cluster->jobs.size(), 1u);
  EXPECT_EQ(s.cluster->jobs[0].priority, 7);
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

// ConfigMaps only change the model's set of names: an added or deleted one is patched in, a
// changed one changes nothing.
TEST_F(WatchCacheTest, ConfigMapsArePatchedIntoTheModelByName) {
  cache_.Replace(Kind::kConfigMap, {json{{"metadata", {{"name", "a"}, {"namespace", "ns"}}}}});
  Snapshot first = cache_.Take();
  EXPECT_TRUE(first.cluster->HasConfigMap("ns", "a"));
  EXPECT_FALSE(first.cluster->HasConfigMap("other", "a"));
  EXPECT_FALSE(first.cluster->HasConfigMap("ns", "b"));
  const int64_t assemblies = cache_.stats().assemblies;

  json b{{"metadata", {{"name", "b"}, {"namespace", "ns"}}}, {"data", {{"k", "1"}}}};
  cache_.Apply(Kind::kConfigMap, EventType::kAdded, b);
  Snapshot added = cache_.Take();
  EXPECT_TRUE(added.cluster->HasConfigMap("ns", "b"));
  EXPECT_FALSE(first.cluster->HasConfigMap("ns", "b")) << "the old snapshot is unchanged";

  b["data"]["k"] = "2";
  cache_.Apply(Kind::kConfigMap, EventType::kModified, b);
  EXPECT_EQ(cache_.Take().cluster.get(), added.cluster.get()) << "nothing the model shows changed";

  cache_.Apply(Kind::kConfigMap, EventType::kDeleted, b);
  Snapshot deleted = cache_.Take();
  EXPECT_FALSE(deleted.cluster->HasConfigMap("ns", "b"));
  EXPECT_TRUE(deleted.cluster->HasConfigMap("ns", "a"));
  EXPECT_EQ(cache_.stats().assemblies, assemblies) << "patched, never assembled again";
}

TEST_F(WatchCacheTest, AVersionHeldAlreadyIsNotConvertedAgain) {
  json pod = PodObj("ns", "w0", 1, "train");
  pod["metadata"]["resourceVersion"] = "5";
  cache_.Apply(Kind::kPod, EventType::kAdded, pod);  // the answer to a write of ours
  const int64_t before = cache_.stats().conversions;
  Snapshot a = cache_.Take();
  cache_.Apply(Kind::kPod, EventType::kModified, pod);  // the watch brings the same version
  EXPECT_EQ(cache_.stats().conversions, before);
  EXPECT_EQ(cache_.Take().cluster.get(), a.cluster.get()) << "nothing changed";
  pod["metadata"]["resourceVersion"] = "6";
  pod["spec"]["nodeName"] = "n2";
  cache_.Apply(Kind::kPod, EventType::kModified, pod);
  EXPECT_EQ(cache_.stats().conversions, before + 1);
  EXPECT_EQ(FindPod(*cache_.Take().cluster, "w0")->status, PodStatus::kBound);
  // The same for a PodGroup (the answer to a timestamp patch, then its watch event).
  json pg = PodGroupObj("ns", "train", "team-a", 1);
  pg["metadata"]["resourceVersion"] = "7";
  pg["metadata"]["annotations"][kLastStartAnnotation] = "2026-11-30T10:00:00Z";
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  const int64_t with_pg = cache_.stats().conversions;
  Snapshot b = cache_.Take();
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  EXPECT_EQ(cache_.stats().conversions, with_pg);
  EXPECT_EQ(cache_.Take().cluster.get(), b.cluster.get()) << "nothing changed";
}

// The per-kind table covers every kind: each row is its own kind's, names the API kind its
// resource serves, and files objects in a store of its own (an object of one kind is found under
// that kind only, never in another kind's store), and a deletion reaches it.
TEST(WatchCacheKindTableTest, EveryKindHasARowWithItsOwnStore) {
  std::set<std::string> names;
  for (int k = 0; k < kNumKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    const KindInfo& info = InfoOf(kind);
    EXPECT_EQ(info.kind, kind) << k;
    ASSERT_NE(info.name, nullptr) << k;
    ASSERT_NE(info.resource, nullptr) << info.name;
    EXPECT_EQ(info.resource->kind, info.name);
    EXPECT_EQ(&ResourceOf(kind), info.resource);
    EXPECT_TRUE(names.insert(info.name).second) << "two rows for " << info.name;
    // Only resource.k8s.io kinds switch DRA off, and those are optional APIs.
    EXPECT_EQ(info.dra, info.resource->group == "resource.k8s.io") << info.name;
    if (info.dra) {
      EXPECT_TRUE(info.optional_api) << info.name;
    }
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumKinds));

  WatchCache cache("kai-scheduler");
  auto object_of = [](Kind kind) {
    const kube::ResourceType& r = ResourceOf(kind);
    json o{{"apiVersion", r.ApiVersion()},
           {"kind", r.kind},
           {"metadata", {{"name", "obj-" + r.resource}, {"resourceVersion", "1"}}}};
    if (r.namespaced) o["metadata"]["namespace"] = "ns";
    return o;
  };
  for (int k = 0; k < kNumKinds; ++k) {
    cache.Apply(static_cast<Kind>(k), EventType::kAdded, object_of(static_cast<Kind>(k)));
  }
  for (int k = 0; k < kNumKinds; ++k) {
    for (int other = 0; other < kNumKinds; ++other) {
      const kube::ResourceType& r = ResourceOf(static_cast<Kind>(other));
      const bool found = cache.Get(static_cast<Kind>(k), "ns", "obj-" + r.resource).has_value();
      EXPECT_EQ(found, k == other)
          << InfoOf(static_cast<Kind>(k)).name << " store, object of " << r.kind;
    }
  }
  for (int k = 0; k < kNumKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    cache.Apply(kind, EventType::kDeleted, object_of(kind));
    EXPECT_FALSE(cache.Get(kind, "ns", "obj-" + ResourceOf(kind).resource).has_value())
        << InfoOf(kind).name;
  }
}

// What Hold::kReadFields keeps of an object: what the scheduling loop reads back (events,
// condition patches, creation times, node-pool labels), nothing else.
TEST(WatchCacheHoldTest, HeldFieldsAreWhatTheSchedulingLoopReadsBack) {
  json pod = PodObj("ns", "p", 1, "pg");
  pod["metadata"]["uid"] = "uid-p";
  pod["metadata"]["resourceVersion"] = "42";
  pod["metadata"]["creationTimestamp"] = "2026-12-01T10:00:00Z";
  pod["metadata"]["labels"] = {{"app", "x"}, {"kai.scheduler/node-pool", "pool-a"}};
  pod["metadata"]["ownerReferences"] = json::array({{{"kind", "Job"}, {"name", "j"}}});
  pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "False"}},
                                             {{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", "no GPUs"}}});
  const json expected_pod{{"metadata",
                           {{"name", "p"},
                            {"namespace", "ns"},
                            {"uid", "uid-p"},
                            {"resourceVersion", "42"},
                            {"creationTimestamp", "2026-12-01T10:00:00Z"},
                            {"labels", {{"kai.scheduler/node-pool", "pool-a"}}}}},
                          {"status",
                           {{"conditions", json::array({{{"type", "PodScheduled"},
                                                         {"status", "False"},
                                                         {"reason", "Unschedulable"},
                                                         {"message", "no GPUs"}}})}}}};
  EXPECT_EQ(HeldFields(Kind::kPod, pod, "kai.scheduler/node-pool"), expected_pod);
  // Another pool label key: no label kept.
  EXPECT_FALSE(HeldFields(Kind::kPod, pod, "other/pool")["metadata"].contains("labels"));

  json pg = PodGroupObj("ns", "pg", "q", 2);
  pg["metadata"]["uid"] = "pg-uid";
  pg["spec"]["markUnschedulable"] = false;
  pg["spec"]["schedulingBackoff"] = 1;
  pg["status"]["schedulingConditions"] = json::array({{{"nodePool", "default"}}});
  pg["status"]["phase"] = "Running";
  EXPECT_EQ(
      HeldFields(Kind::kPodGroup, pg, "kai.scheduler/node-pool"),
      (json{{"metadata", {{"name", "pg"}, {"namespace", "ns"}, {"uid", "pg-uid"}}},
            {"spec", {{"markUnschedulable", false}, {"schedulingBackoff", 1}}},
            {"status", {{"schedulingConditions", json::array({{{"nodePool", "default"}}})}}}}));

  // A node: its metadata's identity only (no status, images, conditions).
  json node = NodeObj("n1", 8);
  node["metadata"]["uid"] = "n-uid";
  EXPECT_EQ(HeldFields(Kind::kNode, node, "kai.scheduler/node-pool"),
            (json{{"metadata", {{"name", "n1"}, {"uid", "n-uid"}}}}));

  // The cache gives back exactly that, after the object itself is gone.
  NodePool pool_a;
  pool_a.value = "pool-a";
  WatchCache cache("kai-scheduler", pool_a);
  cache.Apply(Kind::kPod, EventType::kAdded, pod);
  EXPECT_EQ(cache.Get(Kind::kPod, "ns", "p"), expected_pod);
  bool seen = false;
  EXPECT_TRUE(cache.Inspect(Kind::kPod, "ns", "p", [&](const json& o) {
    seen = true;
    EXPECT_EQ(o, expected_pod);
  }));
  EXPECT_TRUE(seen);
  // Held at its version: the same version again is not converted again.
  const int64_t conversions = cache.stats().conversions;
  cache.Apply(Kind::kPod, EventType::kModified, pod);
  EXPECT_EQ(cache.stats().conversions, conversions);
  pod["metadata"]["resourceVersion"] = "43";
  cache.Apply(Kind::kPod, EventType::kModified, pod);
  EXPECT_EQ(cache.stats().conversions, conversions + 1);
}

// The two ways of holding objects make the same snapshots, node pools and errors included.
TEST(WatchCacheHoldTest, ReadFieldsAndWholeObjectsMakeTheSameSnapshots) {
  for (const std::string pool_value : {"", "pool-a"}) {
    NodePool pool;
    pool.value = pool_value;
    WatchCache whole("kai-scheduler", pool, Hold::kWhole);
    WatchCache held("kai-scheduler", pool);
    auto in_pool = [](json o, const std::string& label) {
      if (!label.empty()) o["metadata"]["labels"]["kai.scheduler/node-pool"] = label;
      return o;
    };
    std::vector<json> nodes = {in_pool(NodeObj("n1", 8), ""), in_pool(NodeObj("n2", 8), "pool-a"),
                               in_pool(NodeObj("n3", 8), "pool-b"), NodeObj("", 8)};
    std::vector<json> queues = {
        in_pool(QueueObj("root"), pool_value), in_pool(QueueObj("a", "root"), pool_value),
        in_pool(QueueObj("b", "root"), "pool-b"), in_pool(QueueObj("c", "missing"), pool_value)};
    std::vector<json> groups = {in_pool(PodGroupObj("ns", "g1", "a", 1), pool_value),
                                in_pool(PodGroupObj("ns", "g2", "b", 1), pool_value),
                                in_pool(PodGroupObj("ns", "g3", "root", 1), pool_value),
                                in_pool(PodGroupObj("ns", "g4", "a", 1), "pool-b")};
    std::vector<json> pods = {PodObj("ns", "p1", 1, "g1"), PodObj("ns", "p2", 1, "g4"),
                              PodObj("ns", "p3", 1, "g1"), PodObj("ns", "p4", 1, "g3")};
    pods[2]["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "nope";
    for (WatchCache* c : {&whole, &held}) {
      c->Replace(Kind::kNode, nodes);
      c->Replace(Kind::kQueue, queues);
      c->Replace(Kind::kPodGroup, groups);
      c->Replace(Kind::kPod, pods);
      for (Kind k : {Kind::kBindRequest, Kind::kPriorityClass, Kind::kTopology,
                     Kind::kNodeResourceTopology, Kind::kConfigMap}) {
        c->Replace(k, {});
      }
    }
    const Snapshot a = whole.Take();
    const Snapshot b = held.Take();
    EXPECT_EQ(Dump(a), Dump(b)) << "pool " << pool_value;
    EXPECT_FALSE(a.errors.empty());
    EXPECT_FALSE(a.cluster->nodes.empty());
  }
}

// The held text leaves out the name and namespace the entry's key gives back; Get and Inspect
// give them back exactly, also where the key could not (then the text keeps them).
TEST(WatchCacheHoldTest, NamesTheKeyGivesBackAreGivenBackExactly) {
  WatchCache cache("kai-scheduler", NodePool{}, Hold::kReadFields);
  json pod = PodObj("ns", "p", 1, "pg");
  pod["metadata"]["resourceVersion"] = "7";
  cache.Apply(Kind::kPod, EventType::kAdded, pod);
  EXPECT_EQ(cache.Get(Kind::kPod, "ns", "p"), HeldFields(Kind::kPod, pod, ""));
  EXPECT_EQ(cache.Get(Kind::kPod, "ns", "p")->at("metadata").at("namespace"), "ns");

  // Cluster-scoped: a name, no namespace.
  const json node = NodeObj("n1", 8);
  cache.Apply(Kind::kNode, EventType::kAdded, node);
  const std::optional<json> got = cache.Get(Kind::kNode, "", "n1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, HeldFields(Kind::kNode, node, ""));
  EXPECT_FALSE(got->at("metadata").contains("namespace"));

  // An empty namespace string files the pod under its name alone: the text keeps both.
  json bare = PodObj("", "q", 1, "pg");
  bare["metadata"]["namespace"] = "";
  cache.Apply(Kind::kPod, EventType::kAdded, bare);
  EXPECT_EQ(cache.Get(Kind::kPod, "", "q"), HeldFields(Kind::kPod, bare, ""));
}

// Equal lists are held once: the pods of one job share their labels, all pods admission's
// default tolerations, and the snapshot's pods share them too.
TEST_F(WatchCacheTest, EqualListsOfPodsAreHeldOnce) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "pg", "team-a", 1));
  const json tolerations = json::array(
      {{{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"effect", "NoExecute"}},
       {{"key", "node.kubernetes.io/unreachable"},
        {"operator", "Exists"},
        {"effect", "NoExecute"}}});
  for (const char* name : {"a", "b", "c"}) {
    json pod = PodObj("ns", name, 1, "pg");
    pod["metadata"]["labels"]["app"] = std::string(name) == "c" ? "other" : "job";
    pod["spec"]["tolerations"] = tolerations;
    cache_.Apply(Kind::kPod, EventType::kAdded, pod);
  }
  const Snapshot s = cache_.Take();
  const Pod* a = FindPod(*s.cluster, "a");
  const Pod* b = FindPod(*s.cluster, "b");
  const Pod* c = FindPod(*s.cluster, "c");
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(a->tolerations.size(), 2u);
  EXPECT_EQ(a->tolerations[1].key, "node.kubernetes.io/unreachable");
  EXPECT_TRUE(a->tolerations.SharesWith(b->tolerations));
  EXPECT_TRUE(a->tolerations.SharesWith(c->tolerations));
  EXPECT_TRUE(a->labels.SharesWith(b->labels));
  EXPECT_FALSE(a->labels.SharesWith(c->labels));
  EXPECT_EQ(*c->labels.Get("app"), "other");
  EXPECT_EQ(*a->labels.Get("app"), "job");
}

// A pod's map node in the cache (the tree's links, the key, the entry) is one allocation per pod;
// with jemalloc it takes the 896-byte size class. One field more in Pod or PodRecord can take it
// to the 1,024-byte class: 128 MB more for a million pods (docs/performance.md, "The watch
// cache"). Fields that most pods leave empty belong in a SharedList or out of line.
TEST(WatchCacheHoldTest, APodsMapNodeFitsTheSizeClassItWasMeasuredIn) {
  EXPECT_LE(WatchCache::PodNodeBytes(), 896u);
}

TEST(WatchCacheHoldTest, KeepsObjectsWithoutManagedFields) {
  for (Hold hold : {Hold::kWhole, Hold::kReadFields}) {
    WatchCache cache("kai-scheduler", NodePool{}, hold);
    json node = NodeObj("n9", 1);
    node["metadata"]["managedFields"] = json::array({{{"manager", "kubelet"}}});
    cache.Apply(Kind::kNode, EventType::kAdded, node);
    auto stored = cache.Get(Kind::kNode, "", "n9");
    ASSERT_TRUE(stored.has_value());
    EXPECT_FALSE(stored->at("metadata").contains("managedFields"));
    EXPECT_EQ(stored->at("metadata").at("name"), "n9");
    EXPECT_EQ(stored->contains("status"), hold == Hold::kWhole);
    EXPECT_FALSE(cache.Get(Kind::kNode, "", "nope").has_value());
  }
}

TEST(WatchCacheSyncTest, AClusterWithoutTopologiesDoesNotHoldSchedulingBack) {
  WatchCache cache("kai-scheduler");
  std::vector<std::string> seen;
  cache.SetErrorHandler([&](Kind kind, const kube::ApiError& e) {
    seen.push_back(ResourceOf(kind).resource + " " + std::to_string(e.http_status));
  });
  for (Kind k : {Kind::kNode, Kind::kPod, Kind::kQueue, Kind::kPodGroup, Kind::kBindRequest,
                 Kind::kPriorityClass, Kind::kDeviceClass, Kind::kResourceSlice,
                 Kind::kResourceClaim, Kind::kConfigMap}) {
    cache.Replace(k, {});
  }
  cache.handler(Kind::kNodeResourceTopology)
      .OnError(kube::ApiError{404, "NotFound", "not served"}, std::chrono::seconds(1));
  EXPECT_FALSE(cache.synced());
  // A required kind that is not served keeps the cache unsynced; Topology and
  // NodeResourceTopology do not.
  cache.handler(Kind::kQueue)
      .OnError(kube::ApiError{404, "NotFound", "not served"}, std::chrono::seconds(1));
  EXPECT_FALSE(cache.synced());
  cache.handler(Kind::kTopology).OnError(kube::ApiError{500, "", "boom"}, std::chrono::seconds(1));
  EXPECT_FALSE(cache.synced());
  cache.handler(Kind::kTopology)
      .OnError(kube::ApiError{404, "", "page not found"}, std::chrono::seconds(1));
  EXPECT_TRUE(cache.synced());
  EXPECT_EQ(seen, (std::vector<std::string>{"noderesourcetopologies 404", "queues 404",
                                            "topologies 500", "topologies 404"}));
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
  errors.reserve(s.errors.size());
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
// A readable dump of everything a snapshot tells the scheduler, to compare two of them.
std::string Dump(const Snapshot& s) {
  std::ostringstream out;
  const Cluster& c = *s.cluster;
  for (const Node& n : c.nodes) out << "node " << n.name << " rank " << n.name_rank << "\n";
  for (int slot = 0; slot < c.resource_names.size(); ++slot) {
    out << "resource " << c.resource_names.Name(slot) << "\n";
  }
  for (const Queue& q : c.queues) out << "queue " << q.name << " parent " << q.parent << "\n";
  for (const Job& j : c.jobs) {
    out << "job " << j.namespace_ << "/" << j.name << " queue " << j.queue << " priority "
        << j.priority << " start " << j.last_start_ms.value_or(-1) << " stale "
        << j.stale_since_ms.value_or(-1) << " pods";
    for (PodId p : j.pods) out << " " << p;
    for (const PodSet& ps : j.pod_sets) {
      out << " | set " << ps.name << " min " << ps.min_available << ":";
      for (PodId p : ps.pods) out << " " << p;
    }
    out << "\n";
  }
  for (const Pod& p : c.pods) {
    out << "pod " << p.namespace_ << "/" << p.name << " uid " << p.uid << " job " << p.job
        << " set " << p.pod_set << " status " << static_cast<int>(p.status) << " node " << p.node
        << " nominated " << p.nominated_node << " gpus " << p.request.gpus << " cpu "
        << p.request.cpu_millis << " groups";
    for (const std::string& g : p.gpu_groups) out << " " << g;
    out << " ports";
    for (const HostPort& hp : p.host_ports) out << " " << hp.host_ip << ":" << hp.port;
    out << " configmaps";
    for (const std::string& cm : p.config_maps) out << " " << cm;
    for (int slot = 0; slot < c.resource_names.size(); ++slot) {
      out << " " << p.request.scalars[slot];
    }
    out << "\n";
  }
  if (c.config_maps) {
    const std::set<std::string> sorted(c.config_maps->begin(), c.config_maps->end());
    for (const std::string& cm : sorted) out << "configmap " << cm << "\n";
  }
  for (PodId p : c.pods_by_name()) out << "by name " << p << "\n";
  for (const ObjectError& e : s.errors) out << "error " << e.ToString() << "\n";
  for (const ObjectRef& r : s.stale_bind_requests) {
    out << "stale " << r.namespace_ << "/" << r.name << "\n";
  }
  return out.str();
}

// Random event sequences: the cache patched event by event hands out exactly what a cache that
// lists the same objects at once assembles in full, and a snapshot still held never changes.
TEST(WatchCacheIncrementalTest, PatchedSnapshotsEqualAFullAssemblyOnRandomEvents) {
  std::mt19937 rng(20261130);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int64_t patches = 0;
  int64_t assemblies = 0;
  const int rounds = test_scale::SanitizerScaled(20, 5);
  for (int round = 0; round < rounds; ++round) {
    WatchCache cache("kai-scheduler");
    // What the API server holds now, per kind, by key.
    std::map<Kind, std::map<std::string, json>> objects;
    auto key_of = [](const json& o) {
      const std::string ns = o["metadata"].value("namespace", "");
      std::string name = o["metadata"]["name"];
      if (ns.empty()) return name;
      std::string key = ns;
      key += "/";
      key += name;
      return key;
    };
    auto put = [&](Kind kind, const json& o) {
      const bool known = objects[kind].count(key_of(o)) > 0;
      objects[kind][key_of(o)] = o;
      cache.Apply(kind, known ? EventType::kModified : EventType::kAdded, o);
    };
    auto remove = [&](Kind kind, const std::string& key) {
      auto it = objects[kind].find(key);
      if (it == objects[kind].end()) return;
      cache.Apply(kind, EventType::kDeleted, it->second);
      objects[kind].erase(it);
    };
    std::vector<json> nodes;
    nodes.reserve(4);
    for (int n = 0; n < 4; ++n) nodes.push_back(NodeObj("n" + std::to_string(n), 8));
    cache.Replace(Kind::kNode, nodes);
    for (const json& n : nodes) objects[Kind::kNode][key_of(n)] = n;
    std::vector<json> queues = {QueueObj("root"), QueueObj("team-a", "root")};
    cache.Replace(Kind::kQueue, queues);
    for (const json& q : queues) objects[Kind::kQueue][key_of(q)] = q;
    for (Kind k : {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest, Kind::kPriorityClass,
                   Kind::kTopology, Kind::kNodeResourceTopology, Kind::kConfigMap}) {
      cache.Replace(k, {});
    }
    for (int g = 0; g < 5; ++g) {
      json pg = PodGroupObj("ns", "g" + std::to_string(g), "team-a", 1 + g % 2);
      if (g == 4) {
        pg["spec"]["subGroups"] = json::array({{{"name", "workers"}, {"minMember", 1}}});
      }
      put(Kind::kPodGroup, pg);
    }
    int uid_counter = 0;
    auto make_pod = [&](int i) {
      const std::string name = "p" + std::to_string(i);
      json pod = PodObj("ns", name, 1 + i % 2, i % 7 == 6 ? "" : "g" + std::to_string(i % 5),
                        i % 9 == 8 ? "other-scheduler" : "kai-scheduler");
      pod["metadata"]["uid"] = name + "-" + std::to_string(uid_counter++);
      if (i % 11 == 10) {
        pod["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = "1";
      }
      if (i % 5 == 4 && i % 10 == 9)
        pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "workers";
      if (i % 4 == 1) {
        pod["spec"]["containers"][0]["ports"] = json::array({{{"hostPort", 8000 + i % 3}}});
        pod["spec"]["containers"][0]["envFrom"] =
            json::array({{{"configMapRef", {{"name", "cm" + std::to_string(i % 3)}}}}});
      }
      return pod;
    };
    for (int i = 0; i < 12; ++i) put(Kind::kPod, make_pod(i));
    Snapshot held = cache.Take();
    std::string held_dump = Dump(held);
    for (int step = 0; step < 150; ++step) {
      const int what = pick(100);
      const std::string pod_name = "p" + std::to_string(pick(14));
      const std::string pod_key = "ns/" + pod_name;
      auto pod_it = objects[Kind::kPod].find(pod_key);
      const std::string node = "n" + std::to_string(pick(5));  // n4 does not exist
      if (what < 30 && pod_it != objects[Kind::kPod].end()) {
        // The pod moves on: bound, running, finished, terminating, or back to pending.
        json pod = pod_it->second;
        switch (pick(6)) {
          case 0:
            pod["spec"]["nodeName"] = node;
            break;
          case 1:
            pod["spec"]["nodeName"] = node;
            pod["status"]["phase"] = "Running";
            break;
          case 2:
            pod["status"]["phase"] = "Succeeded";
            break;
          case 3:
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
            break;
          case 4:
            pod["status"]["nominatedNodeName"] = node;
            break;
          default:
            pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                                        {"status", "False"},
                                                        {"message", std::to_string(step)}}});
            break;
        }
        put(Kind::kPod, pod);
      } else if (what < 60) {
        // A BindRequest for the pod: new, advanced by the binder, or given up on.
        json br = BindRequestObj("ns", pod_name, node);
        br["metadata"]["name"] = pod_name + (pick(4) == 0 ? "-b" : "");
        if (pod_it != objects[Kind::kPod].end() && pick(3) > 0) {
          br["metadata"]["ownerReferences"] = json::array(
              {{{"kind", "Pod"}, {"name", pod_name}, {"uid", pod_it->second["metadata"]["uid"]}}});
        } else if (pick(2) == 0) {
          br["metadata"]["ownerReferences"] =
              json::array({{{"kind", "Pod"}, {"name", pod_name}, {"uid", "earlier"}}});
        }
        const int phase = pick(5);
        if (phase == 1) br["status"]["phase"] = "Succeeded";
        if (phase == 2 || phase == 3) {
          br["status"]["phase"] = "Failed";
          br["spec"]["backoffLimit"] = 2;
          br["status"]["failedAttempts"] = phase == 2 ? 1 : 2;
        }
        if (pick(3) == 0) br["spec"]["selectedGPUGroups"] = json::array({"group-" + node});
        if (pick(25) == 0) br["spec"].erase("selectedNode");  // a conversion error
        put(Kind::kBindRequest, br);
      } else if (what < 72) {
        auto& brs = objects[Kind::kBindRequest];
        if (!brs.empty()) {
          auto it = brs.begin();
          std::advance(it, pick(static_cast<int>(brs.size())));
          remove(Kind::kBindRequest, it->first);
        }
      } else if (what < 82) {
        // The pod is deleted, or (re)created with a new uid.
        if (pod_it != objects[Kind::kPod].end() && pick(2) == 0) {
          remove(Kind::kPod, pod_key);
        } else {
          put(Kind::kPod, make_pod(std::stoi(pod_name.substr(1))));
        }
      } else if (what < 86) {
        if (objects[Kind::kNode].count("n4")) {
          remove(Kind::kNode, "n4");
        } else {
          put(Kind::kNode, NodeObj("n4", 8));
        }
      } else if (what < 88) {
        const std::string g = "g" + std::to_string(pick(6));
        if (objects[Kind::kPodGroup].count("ns/" + g) && pick(2) == 0) {
          remove(Kind::kPodGroup, "ns/" + g);
        } else {
          put(Kind::kPodGroup, PodGroupObj("ns", g, "team-a", 1));
        }
      } else if (what < 94) {
        // The scheduler stamps a job's start or staleness (patched), or clears it; now and then
        // a malformed stamp (an error) or another change along with it (a full assembly).
        const std::string g = "g" + std::to_string(pick(6));
        auto it = objects[Kind::kPodGroup].find("ns/" + g);
        if (it != objects[Kind::kPodGroup].end()) {
          json pg = it->second;
          const char* annotation = pick(2) == 0 ? kLastStartAnnotation : kStaleSinceAnnotation;
          switch (pick(8)) {
            case 0:
              if (pg["metadata"].contains("annotations")) {
                pg["metadata"]["annotations"].erase(annotation);
              }
              break;
            case 1:
              pg["metadata"]["annotations"][annotation] = "not a time";
              break;
            case 2:
              pg["spec"]["minMember"] = 1 + pick(2);
              [[fallthrough]];
            default:
              pg["metadata"]["annotations"][annotation] =
                  "2026-11-30T10:" + std::to_string(10 + pick(50)) + ":00Z";
              break;
          }
          put(Kind::kPodGroup, pg);
        }
      } else if (what < 97) {
        // A ConfigMap is created, changed (nothing the model shows) or deleted; now and then
        // one without a name (an error).
        const std::string name = "cm" + std::to_string(pick(4));
        const int op = pick(8);
        if (op == 0) {
          remove(Kind::kConfigMap, "ns/" + name);
        } else {
          json cm{{"metadata", {{"name", op == 1 ? "" : name}, {"namespace", "ns"}}},
                  {"data", {{"step", std::to_string(step)}}}};
          if (op == 1) cm["metadata"]["generateName"] = name;
          put(Kind::kConfigMap, cm);
        }
      }
      // else: no event; Take hands out the same cluster.
      if (pick(3) == 0) continue;  // several events between cycles
      Snapshot s = cache.Take();
      // The reference: whole objects held (the cache under test holds the fields read back).
      WatchCache fresh("kai-scheduler", NodePool{}, Hold::kWhole);
      for (int k = 0; k < kNumKinds; ++k) {
        std::vector<json> all;
        for (const auto& [key, o] : objects[static_cast<Kind>(k)]) all.push_back(o);
        fresh.Replace(static_cast<Kind>(k), all);
      }
      ASSERT_EQ(Dump(s), Dump(fresh.Take())) << "round " << round << " step " << step;
      for (Kind k : {Kind::kPod, Kind::kPodGroup, Kind::kBindRequest}) {
        for (const auto& [key, o] : objects[k]) {
          const std::string ns = o["metadata"].value("namespace", "");
          const std::string name = o["metadata"]["name"];
          const std::optional<json> whole = fresh.Get(k, ns, name);
          const std::optional<json> kept = cache.Get(k, ns, name);
          ASSERT_TRUE(whole && kept) << key;
          ASSERT_EQ(*kept, HeldFields(k, *whole, NodePool{}.label_key)) << key;
        }
      }
      ASSERT_EQ(Dump(held), held_dump) << "a held snapshot changed, round " << round;
      if (pick(2) == 0) {
        held = s;  // kept through the next Take: that one must copy
        held_dump = Dump(held);
      }
    }
    patches += cache.stats().patches;
    assemblies += cache.stats().assemblies;
  }
  EXPECT_GT(patches, 200) << "the patch path was exercised";
  EXPECT_GT(assemblies, 100) << "so was the full one";
}

TEST_F(WatchCacheTest, PodAndRequestChangesPatchTheClusterInPlaceWhenNoSnapshotIsHeld) {
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, PodGroupObj("ns", "train", "team-a", 1));
  json pod = PodObj("ns", "w0", 1, "train");
  cache_.Apply(Kind::kPod, EventType::kAdded, pod);
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w1", 1, "train"));
  const Cluster* first = cache_.Take().cluster.get();  // not held
  const int64_t assemblies = cache_.stats().assemblies;
  const uint64_t layout = cache_.Take().layout;
  cache_.Apply(Kind::kBindRequest, EventType::kAdded, BindRequestObj("ns", "w0", "n1"));
  Snapshot s = cache_.Take();
  EXPECT_EQ(s.cluster.get(), first) << "patched in place";
  EXPECT_EQ(s.layout, layout) << "same ids";
  EXPECT_EQ(FindPod(*s.cluster, "w0")->status, PodStatus::kBinding);
  EXPECT_EQ(cache_.stats().assemblies, assemblies);
  EXPECT_EQ(cache_.stats().patches, 1);
  EXPECT_EQ(cache_.stats().pods_patched, 1);
  // Held: the next patch goes to a copy.
  pod["spec"]["nodeName"] = "n1";
  pod["status"]["phase"] = "Running";
  cache_.Apply(Kind::kPod, EventType::kModified, pod);
  Snapshot t = cache_.Take();
  EXPECT_NE(t.cluster.get(), s.cluster.get());
  EXPECT_EQ(FindPod(*s.cluster, "w0")->status, PodStatus::kBinding);
  EXPECT_EQ(FindPod(*t.cluster, "w0")->status, PodStatus::kRunning);
  EXPECT_EQ(cache_.stats().patch_copies, 1);
  EXPECT_EQ(cache_.stats().assemblies, assemblies);
  // A new pod needs new ids: a full assembly.
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w2", 1, "train"));
  EXPECT_GT(cache_.Take().layout, layout);
  EXPECT_EQ(cache_.stats().assemblies, assemblies + 1);
}

TEST_F(WatchCacheTest, AJobsStartAndStaleTimesArePatchedOtherPodGroupChangesAreNot) {
  json pg = PodGroupObj("ns", "train", "team-a", 1);
  cache_.Apply(Kind::kPodGroup, EventType::kAdded, pg);
  cache_.Apply(Kind::kPod, EventType::kAdded, PodObj("ns", "w0", 1, "train"));
  Snapshot before = cache_.Take();
  const int64_t assemblies = cache_.stats().assemblies;
  pg["metadata"]["annotations"][kLastStartAnnotation] = "2026-11-30T10:00:00Z";
  pg["metadata"]["annotations"][kStaleSinceAnnotation] = "2026-11-30T10:05:00Z";
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  Snapshot s = cache_.Take();
  EXPECT_EQ(cache_.stats().assemblies, assemblies);
  EXPECT_EQ(cache_.stats().patches, 1);
  EXPECT_EQ(s.layout, before.layout);
  const Job& job = s.cluster->jobs[s.cluster->FindJob("train")];
  EXPECT_EQ(job.last_start_ms, int64_t{1'796'032'800'000});
  EXPECT_EQ(job.stale_since_ms, int64_t{1'796'033'100'000});
  EXPECT_FALSE(before.cluster->jobs[before.cluster->FindJob("train")].last_start_ms.has_value())
      << "the held snapshot keeps its times";
  // Cleared again: patched too.
  pg["metadata"]["annotations"].erase(kStaleSinceAnnotation);
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  s = cache_.Take();
  EXPECT_EQ(cache_.stats().patches, 2);
  EXPECT_FALSE(s.cluster->jobs[s.cluster->FindJob("train")].stale_since_ms.has_value());
  // Any other change to the PodGroup takes the full assembly.
  pg["spec"]["minMember"] = 2;
  cache_.Apply(Kind::kPodGroup, EventType::kModified, pg);
  s = cache_.Take();
  EXPECT_EQ(cache_.stats().assemblies, assemblies + 1);
  EXPECT_EQ(s.cluster->jobs[s.cluster->FindJob("train")].pod_sets[0].min_available, 2);
}

TEST(WatchCacheScaleTest, AssemblyOfALargeCluster) {
  WatchCache cache("kai-scheduler");
  std::vector<json> nodes, pods, groups;
  const int num_nodes = test_scale::SanitizerScaled(2000, 10);
  const int num_jobs = test_scale::SanitizerScaled(5000, 10);
  for (int i = 0; i < num_nodes; ++i) nodes.push_back(NodeObj("node-" + std::to_string(i), 8));
  for (int j = 0; j < num_jobs; ++j) {
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
  // One pod bound while the first snapshot is still held: patched on a copy.
  json bound = pods[0];
  bound["spec"]["nodeName"] = "node-0";
  cache.Apply(Kind::kPod, EventType::kModified, bound);
  Snapshot s2 = cache.Take();
  const auto t2 = std::chrono::steady_clock::now();
  // A cycle's worth of changes (10 pods bound, 10 BindRequests) with no snapshot held: patched
  // in place.
  const size_t pods_in_s = s.cluster->pods.size();
  s = {};
  s2 = {};
  // Five such cycles; the figure is the last one's (the first pays for the allocator tidying up
  // after the frees above).
  auto t3 = std::chrono::steady_clock::now();
  auto t3b = t3;
  Snapshot s3;
  for (int round = 0; round < 5; ++round) {
    t3 = std::chrono::steady_clock::now();
    for (int i = 1; i <= 10; ++i) {
      const size_t bound_pod = static_cast<size_t>(round) * 20 + static_cast<size_t>(i);
      json b = pods[bound_pod];
      b["spec"]["nodeName"] = "node-" + std::to_string(i);
      cache.Apply(Kind::kPod, EventType::kModified, b);
      cache.Apply(Kind::kBindRequest, EventType::kAdded,
                  BindRequestObj("ns", pods[bound_pod + 10]["metadata"]["name"],
                                 "node-" + std::to_string(i)));
    }
    t3b = std::chrono::steady_clock::now();
    s3 = {};
    s3 = cache.Take();
  }
  const auto t4 = std::chrono::steady_clock::now();
  Cluster copy = *s3.cluster;
  const auto t5 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "%d nodes / %d pods: full assembly %.1f ms; one pod changed, snapshot held (copy + "
      "patch) %.2f ms; 10 pods + 10 BindRequests changed, none held: events %.2f ms, patch in "
      "place %.3f ms; plain copy of the Cluster %.1f ms\n",
      num_nodes, 4 * num_jobs, ms(t1 - t0), ms(t2 - t1), ms(t3b - t3), ms(t4 - t3b), ms(t5 - t4));
  EXPECT_EQ(pods_in_s, 4 * static_cast<size_t>(num_jobs));
  EXPECT_EQ(copy.jobs.size(), static_cast<size_t>(num_jobs));
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.assemblies, 1);
  EXPECT_EQ(stats.patches, 6);
  EXPECT_EQ(stats.patch_copies, 1);
  EXPECT_EQ(stats.pods_patched, 1 + 5 * 20);
}

}  // namespace
}  // namespace gantry::cache
