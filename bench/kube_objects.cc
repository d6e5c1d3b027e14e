#include "kube_objects.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "cache/convert.h"
#include "kube/time_format.h"

namespace gantry::bench {

namespace {

using KubeJson = nlohmann::json;
using cache::Kind;

// RFC 4122-shaped uids from a counter (unique within one call).
class Uids {
 public:
  std::string Next() {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "00000000-0000-4000-8000-%012llx",
                  static_cast<unsigned long long>(++n_));
    return buf;
  }

 private:
  uint64_t n_ = 0;
};

std::string Time(int64_t ms) {
  return kube::FormatTime(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

// A quantity as the API server writes it: whole numbers plain, CPU as millicores when needed.
std::string Cpu(double millis) {
  const auto m = static_cast<int64_t>(std::llround(millis));
  return m % 1000 == 0 ? std::to_string(m / 1000) : std::to_string(m) + "m";
}
std::string Count(double v) { return std::to_string(static_cast<int64_t>(std::llround(v))); }
std::string Fraction(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

KubeJson Metadata(const std::string& name, const std::string& ns, Uids& uids, uint64_t& version,
                  int64_t created_ms) {
  KubeJson m;
  m["name"] = name;
  if (!ns.empty()) m["namespace"] = ns;
  m["uid"] = uids.Next();
  m["resourceVersion"] = std::to_string(++version);
  m["creationTimestamp"] = Time(created_ms);
  return m;
}

KubeJson QueueQuotaJson(const QueueQuota& q, double scale) {
  auto v = [&](double x) { return x < 0 ? x : x / scale; };
  return KubeJson{
      {"quota", v(q.quota)}, {"limit", v(q.limit)}, {"overQuotaWeight", q.over_quota_weight}};
}

KubeJson NodeObject(const Node& n, Uids& uids, uint64_t& version, int64_t created_ms) {
  KubeJson o{{"apiVersion", "v1"}, {"kind", "Node"}};
  KubeJson meta = Metadata(n.name, "", uids, version, created_ms);
  KubeJson labels = KubeJson::object();
  for (const auto& [k, v] : n.labels.items()) labels[k] = v;
  labels["kubernetes.io/hostname"] = n.name;
  labels["kubernetes.io/arch"] = "amd64";
  labels["kubernetes.io/os"] = "linux";
  labels["beta.kubernetes.io/arch"] = "amd64";
  labels["beta.kubernetes.io/os"] = "linux";
  labels["node.kubernetes.io/instance-type"] = "gpu-8x";
  labels["nvidia.com/gpu.present"] = "true";
  labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  labels["nvidia.com/cuda.driver.major"] = "550";
  meta["labels"] = std::move(labels);
  meta["annotations"] =
      KubeJson{{"node.alpha.kubernetes.io/ttl", "0"},
               {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}};
  o["metadata"] = std::move(meta);
  o["spec"] = KubeJson{{"podCIDR", "10.0.0.0/24"}, {"podCIDRs", KubeJson::array({"10.0.0.0/24"})}};
  KubeJson alloc{{"cpu", Cpu(n.allocatable.cpu_millis)},
                 {"memory", Count(n.allocatable.memory_bytes)},
                 {"pods", Count(n.allocatable.pods)},
                 {"ephemeral-storage", "1000000000000"},
                 {"hugepages-1Gi", "0"},
                 {"hugepages-2Mi", "0"}};
  if (n.allocatable.gpus > 0) alloc["nvidia.com/gpu"] = Count(n.allocatable.gpus);
  KubeJson status;
  status["capacity"] = alloc;
  status["allocatable"] = std::move(alloc);
  const std::string beat = Time(created_ms);
  KubeJson conditions = KubeJson::array();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    const bool ready = std::string(type) == "Ready";
    conditions.push_back(KubeJson{{"type", type},
                                  {"status", ready ? "True" : "False"},
                                  {"lastHeartbeatTime", beat},
                                  {"lastTransitionTime", beat},
                                  {"reason", ready ? "KubeletReady" : "KubeletHasSufficientMemory"},
                                  {"message", ready ? "kubelet is posting ready status"
                                                    : "kubelet has sufficient memory available"}});
  }
  status["conditions"] = std::move(conditions);
  status["addresses"] = KubeJson::array({KubeJson{{"type", "InternalIP"}, {"address", "10.0.0.1"}},
                                         KubeJson{{"type", "Hostname"}, {"address", n.name}}});
  status["daemonEndpoints"] = KubeJson{{"kubeletEndpoint", KubeJson{{"Port", 10250}}}};
  status["nodeInfo"] = KubeJson{
      {"machineID", uids.Next()},        {"systemUUID", uids.Next()},
      {"bootID", uids.Next()},           {"kernelVersion", "6.8.0-1015-nvidia"},
      {"osImage", "Ubuntu 22.04.4 LTS"}, {"containerRuntimeVersion", "containerd://1.7.12"},
      {"kubeletVersion", "v1.31.1"},     {"kubeProxyVersion", ""},
      {"operatingSystem", "linux"},      {"architecture", "amd64"}};
  // The kubelet reports up to 50 cached images; a few here.
  KubeJson images = KubeJson::array();
  for (int i = 0; i < 8; ++i) {
    const std::string repo = "registry.example.com/team/image-" + std::to_string(i);
    images.push_back(KubeJson{
        {"names", KubeJson::array({repo + "@sha256:" + std::string(64, 'a' + static_cast<char>(i)),
                                   repo + ":v1." + std::to_string(i)})},
        {"sizeBytes", 1'000'000'000 + i}});
  }
  status["images"] = std::move(images);
  o["status"] = std::move(status);
  return o;
}

KubeJson PodObject(const Pod& p, const Job& job, const Cluster& cl, const std::string& scheduler,
                   const std::string& owner_uid, Uids& uids, uint64_t& version) {
  KubeJson o{{"apiVersion", "v1"}, {"kind", "Pod"}};
  KubeJson meta = Metadata(p.name, p.namespace_.empty() ? job.namespace_ : p.namespace_, uids,
                           version, job.creation_ms);
  meta["generateName"] = job.name + "-";
  KubeJson labels{{cache::kQueueLabel, job.queue_name}, {"app", job.name}};
  if (!p.gpu_groups.empty()) labels[cache::kGpuGroupLabel] = p.gpu_groups.front();
  meta["labels"] = std::move(labels);
  KubeJson annotations{{cache::kPodGroupAnnotation, job.name}};
  if (p.gpu_kind == GpuRequestKind::kFraction) {
    annotations[cache::kGpuFractionAnnotation] = Fraction(p.gpu_fraction);
  }
  meta["annotations"] = std::move(annotations);
  meta["ownerReferences"] = KubeJson::array({KubeJson{{"apiVersion", "batch/v1"},
                                                      {"kind", "Job"},
                                                      {"name", job.name},
                                                      {"uid", owner_uid},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}});
  o["metadata"] = std::move(meta);

  KubeJson requests{{"cpu", Cpu(p.request.cpu_millis)}, {"memory", Count(p.request.memory_bytes)}};
  KubeJson resources{{"requests", requests}};
  if (p.request.gpus > 0) {
    resources["requests"]["nvidia.com/gpu"] = Count(p.request.gpus);
    resources["limits"] = KubeJson{{"nvidia.com/gpu", Count(p.request.gpus)}};
  }
  const std::string volume =
      "kube-api-access-" + p.name.substr(p.name.size() > 5 ? p.name.size() - 5 : 0);
  KubeJson spec;
  spec["schedulerName"] = scheduler;
  if (p.node != kNone && p.status != PodStatus::kPending) {
    spec["nodeName"] = cl.nodes[static_cast<size_t>(p.node)].name;
  }
  spec["containers"] = KubeJson::array({KubeJson{
      {"name", "main"},
      {"resources", std::move(resources)},
      {"volumeMounts", KubeJson::array({KubeJson{
                           {"name", volume},
                           {"readOnly", true},
                           {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}}})}}});
  spec["volumes"] = KubeJson::array({KubeJson{
      {"name", volume},
      {"projected",
       KubeJson{{"sources",
                 KubeJson::array(
                     {KubeJson{{"serviceAccountToken",
                                KubeJson{{"expirationSeconds", 3607}, {"path", "token"}}}},
                      KubeJson{{"configMap",
                                KubeJson{{"name", "kube-root-ca.crt"},
                                         {"items", KubeJson::array({KubeJson{
                                                       {"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
                      KubeJson{{"downwardAPI",
                                KubeJson{{"items", KubeJson::array({KubeJson{
                                                       {"path", "namespace"},
                                                       {"fieldRef",
                                                        KubeJson{{"apiVersion", "v1"},
                                                                 {"fieldPath",
                                                                  "metadata.namespace"}}}}})}}}}})},
                {"defaultMode", 420}}}}});
  spec["tolerations"] = KubeJson::array({KubeJson{{"key", "node.kubernetes.io/not-ready"},
                                                  {"operator", "Exists"},
                                                  {"effect", "NoExecute"},
                                                  {"tolerationSeconds", 300}},
                                         KubeJson{{"key", "node.kubernetes.io/unreachable"},
                                                  {"operator", "Exists"},
                                                  {"effect", "NoExecute"},
                                                  {"tolerationSeconds", 300}}});
  o["spec"] = std::move(spec);

  KubeJson status;
  KubeJson conditions = KubeJson::array();
  if (p.status == PodStatus::kRunning) {
    status["phase"] = "Running";
    for (const char* type :
         {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
      conditions.push_back(KubeJson{{"type", type}, {"status", "True"}});
    }
  } else {
    status["phase"] = "Pending";
    conditions.push_back(
        KubeJson{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}});
  }
  status["conditions"] = std::move(conditions);
  status["qosClass"] = "Burstable";
  o["status"] = std::move(status);
  return o;
}

}  // namespace

void ClusterKubeObjects(const Cluster& cluster, const std::string& scheduler_name,
                        const std::function<void(Kind, KubeJson&&)>& emit) {
  Uids uids;
  uint64_t version = 1000;
  int64_t oldest = 0;
  for (const Job& j : cluster.jobs)
    oldest = oldest == 0 ? j.creation_ms : std::min(oldest, j.creation_ms);

  // Priority classes, one per job priority.
  std::set<int32_t> priorities;
  for (const Job& j : cluster.jobs) priorities.insert(j.priority);
  for (int32_t v : priorities) {
    KubeJson o{{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}};
    o["metadata"] = Metadata("bench-priority-" + std::to_string(v), "", uids, version, oldest);
    o["value"] = v;
    emit(Kind::kPriorityClass, std::move(o));
  }
  for (const Topology& t : cluster.topologies) {
    KubeJson o{{"apiVersion", "kai.scheduler/v1alpha1"}, {"kind", "Topology"}};
    o["metadata"] = Metadata(t.name, "", uids, version, oldest);
    KubeJson levels = KubeJson::array();
    for (const std::string& l : t.levels) levels.push_back(KubeJson{{"nodeLabel", l}});
    o["spec"] = KubeJson{{"levels", std::move(levels)}};
    emit(Kind::kTopology, std::move(o));
  }
  std::set<std::string> namespaces;
  for (const Job& j : cluster.jobs) namespaces.insert(j.namespace_);
  for (const std::string& ns : namespaces) {
    KubeJson o{{"apiVersion", "v1"}, {"kind", "ConfigMap"}};
    o["metadata"] = Metadata("kube-root-ca.crt", ns, uids, version, oldest);
    emit(Kind::kConfigMap, std::move(o));
  }
  for (const Queue& q : cluster.queues) {
    KubeJson o{{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}};
    o["metadata"] = Metadata(q.name, "", uids, version, q.creation_ms);
    KubeJson spec;
    if (!q.parent_name.empty()) spec["parentQueue"] = q.parent_name;
    spec["resources"] = KubeJson{{"gpu", QueueQuotaJson(q.gpu, 1)},
                                 {"cpu", QueueQuotaJson(q.cpu, 1)},
                                 {"memory", QueueQuotaJson(q.memory, 1e6)}};
    o["spec"] = std::move(spec);
    emit(Kind::kQueue, std::move(o));
  }
  for (const Node& n : cluster.nodes) emit(Kind::kNode, NodeObject(n, uids, version, oldest));
  std::vector<std::string> owner_uids;
  owner_uids.reserve(cluster.jobs.size());
  for (const Job& j : cluster.jobs) {
    owner_uids.push_back(uids.Next());
    KubeJson o{{"apiVersion", "scheduling.run.ai/v2alpha2"}, {"kind", "PodGroup"}};
    KubeJson meta = Metadata(j.name, j.namespace_, uids, version, j.creation_ms);
    meta["labels"] = KubeJson{{cache::kQueueLabel, j.queue_name}};
    meta["ownerReferences"] = KubeJson::array({KubeJson{{"apiVersion", "batch/v1"},
                                                        {"kind", "Job"},
                                                        {"name", j.name},
                                                        {"uid", owner_uids.back()},
                                                        {"controller", true},
                                                        {"blockOwnerDeletion", true}}});
    o["metadata"] = std::move(meta);
    KubeJson spec;
    spec["queue"] = j.queue_name;
    spec["priorityClassName"] = "bench-priority-" + std::to_string(j.priority);
    spec["preemptibility"] = j.preemptible ? "preemptible" : "non-preemptible";
    int32_t min_member = 0;
    const TopologyConstraint* topology = nullptr;
    for (const PodSet& s : j.pod_sets) {
      min_member += s.min_available;
      if (s.topology) topology = &*s.topology;
    }
    if (!j.groups.empty() && j.groups[0].topology) topology = &*j.groups[0].topology;
    spec["minMember"] = min_member;
    if (topology != nullptr) {
      KubeJson c{{"topology", topology->topology}};
      if (!topology->required_level.empty()) c["requiredTopologyLevel"] = topology->required_level;
      if (!topology->preferred_level.empty()) {
        c["preferredTopologyLevel"] = topology->preferred_level;
      }
      spec["topologyConstraint"] = std::move(c);
    }
    o["spec"] = std::move(spec);
    o["status"] = KubeJson::object();
    emit(Kind::kPodGroup, std::move(o));
  }
  for (const Pod& p : cluster.pods) {
    if (p.job == kNone) continue;
    const Job& job = cluster.jobs[static_cast<size_t>(p.job)];
    emit(Kind::kPod, PodObject(p, job, cluster, scheduler_name,
                               owner_uids[static_cast<size_t>(p.job)], uids, version));
  }
}

}  // namespace gantry::bench
