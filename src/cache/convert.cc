#include "cache/convert.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "cache/convert_fields.h"
#include "kube/quantity.h"
#include "kube/time_format.h"
#include "util/checked_number.h"
#include "util/duration.h"

namespace gantry::cache {

namespace {

using convert_detail::AffinityTerms;
using convert_detail::At;
using convert_detail::BadField;
using convert_detail::Fail;
using convert_detail::Guard;
using convert_detail::IntField;
using convert_detail::List;
using convert_detail::Number;
using convert_detail::ParseQuantity;
using convert_detail::PreferredAffinityTerms;
using convert_detail::Requirements;
using convert_detail::ResourceList;
using convert_detail::Shown;
using convert_detail::Str;
using convert_detail::StrMap;

bool IsMigResource(const std::string& name) {
  int g = 0, m = 0;
  return ParseMigProfile(name, g, m);
}

// AMD's device plugin resource: KAI counts it as GPUs too.
constexpr std::string_view kAmdGpuResourceName = "amd.com/gpu";

// Splits named quantities into the fixed model fields and the extended (MIG) ones.
void Distribute(const std::map<std::string, double>& named, Resources& r, NamedQuantities& ext,
                bool include_pods) {
  for (const auto& [name, v] : named) {
    if (name == "cpu") {
      r.cpu_millis = std::round(v * 1000);
    } else if (name == "memory") {
      r.memory_bytes = v;
    } else if (name == kGpuResourceName || name == kAmdGpuResourceName) {
      r.gpus += v;  // KAI counts AMD's GPUs as GPUs too
    } else if (name == "pods") {
      if (include_pods) r.pods = v;
    } else if (IsMigResource(name) && v > 0) {
      ext.emplace_back(name, v);
    }
  }
}

std::optional<TopologyConstraint> Constraint(const Object* c) {
  if (!c || !c->is_object()) return std::nullopt;
  TopologyConstraint t{Str(*c, {"topology"}), Str(*c, {"requiredTopologyLevel"}),
                       Str(*c, {"preferredTopologyLevel"})};
  if (t.topology.empty() && t.required_level.empty() && t.preferred_level.empty()) {
    return std::nullopt;
  }
  return t;
}

int64_t ToMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The shared-GPU groups a pod was bound into: the binder's labels (KAI's runai-gpu-group, and
// runai-gpu-group/<group> on pods spanning several devices).
std::vector<std::string> PodGpuGroups(const Labels& labels) {
  std::vector<std::string> groups;
  if (const std::string* g = labels.Get(kGpuGroupLabel); g && !g->empty()) groups.push_back(*g);
  const std::string prefix = std::string(kGpuGroupLabel) + "/";
  for (const auto& [key, value] : labels.items()) {  // sorted by key
    if (!key.starts_with(prefix) || value.empty()) continue;
    if (std::find(groups.begin(), groups.end(), value) == groups.end()) groups.push_back(value);
  }
  return groups;
}

// The effective pod request of every named resource, as Kubernetes computes it (kube/quantity.h).
std::map<std::string, double> PodRequests(const Object& spec) {
  auto requests = kube::PodSpecRequests(spec);
  if (!requests.ok()) throw BadField{requests.error()};
  std::map<std::string, double> out;
  for (const auto& [name, q] : requests.value()) out.emplace(name, q.Value());
  return out;
}

double MigGpuEquivalents(const NamedQuantities& ext) {
  double gpus = 0;
  for (const auto& [name, v] : ext) {
    int g = 0, m = 0;
    if (ParseMigProfile(name, g, m)) gpus += g * v;
  }
  return gpus;
}

// The pod's host ports (Kubernetes' GetHostPorts): restartable init containers' ("sidecars",
// which run as long as the pod), then app containers'; a port with hostPort 0 (or none) uses no
// host port.
std::vector<HostPort> HostPorts(const Object& spec) {
  std::vector<HostPort> out;
  for (const char* list : {"initContainers", "containers"}) {
    const bool init = std::string_view(list) == "initContainers";
    const Object& containers = List(spec, {list}, std::string("spec.") + list);
    for (size_t c = 0; c < containers.size(); ++c) {
      if (init && Str(containers[c], {"restartPolicy"}) != "Always") continue;
      const std::string where = std::string("spec.") + list + "[" + std::to_string(c) + "].ports";
      const Object& ports = List(containers[c], {"ports"}, where);
      for (size_t i = 0; i < ports.size(); ++i) {
        const std::string field = where + "[" + std::to_string(i) + "]";
        const auto host_port = Number(ports[i], {"hostPort"}, field + ".hostPort");
        if (!host_port) continue;
        const auto port = IntField<int32_t>(*host_port, field + ".hostPort", 0, 65535);
        if (port == 0) continue;
        HostPort hp;
        hp.port = port;
        if (std::string protocol = Str(ports[i], {"protocol"}); !protocol.empty()) {
          if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
            Fail(field + ".protocol", "must be TCP, UDP or SCTP (got \"" + protocol + "\")");
          }
          hp.protocol = std::move(protocol);
        }
        if (std::string ip = Str(ports[i], {"hostIP"}); !ip.empty()) hp.host_ip = std::move(ip);
        out.push_back(std::move(hp));
      }
    }
  }
  return out;
}

// An `optional` flag of a ConfigMap reference; absent: false.
bool OptionalRef(const Object& ref, const std::string& field) {
  const Object* o = At(ref, {"optional"});
  if (o == nullptr) return false;
  if (!o->is_boolean()) Fail(field + ".optional", "must be true or false");
  return o->get<bool>();
}

// The ConfigMaps the pod needs (Pod::config_maps): those of mounted configMap volumes and
// projected configMap sources, then those of the containers' env and envFrom (init, app, then
// ephemeral containers); not optional ones, nor those named with the shared-GPU prefix.
std::vector<std::string> RequiredConfigMaps(const Object& spec, const Labels& annotations) {
  static constexpr const char* kContainerLists[] = {"initContainers", "containers",
                                                    "ephemeralContainers"};
  const std::string* shared_gpu_prefix = annotations.Get("runai/shared-gpu-configmap");
  std::vector<std::string> out;
  auto add = [&](const Object& ref, const std::string& field) {
    if (OptionalRef(ref, field)) return;
    std::string name = Str(ref, {"name"});
    if (shared_gpu_prefix && name.starts_with(*shared_gpu_prefix)) return;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  };
  std::set<std::string> mounted;
  for (const char* list : kContainerLists) {
    const Object& containers = List(spec, {list}, std::string("spec.") + list);
    for (size_t c = 0; c < containers.size(); ++c) {
      const std::string field =
          std::string("spec.") + list + "[" + std::to_string(c) + "].volumeMounts";
      for (const Object& m : List(containers[c], {"volumeMounts"}, field)) {
        mounted.insert(Str(m, {"name"}));
      }
    }
  }
  const Object& volumes = List(spec, {"volumes"}, "spec.volumes");
  for (size_t v = 0; v < volumes.size(); ++v) {
    if (!mounted.count(Str(volumes[v], {"name"}))) continue;
    const std::string field = "spec.volumes[" + std::to_string(v) + "]";
    if (const Object* cm = At(volumes[v], {"configMap"})) add(*cm, field + ".configMap");
    const Object& sources =
        List(volumes[v], {"projected", "sources"}, field + ".projected.sources");
    for (size_t i = 0; i < sources.size(); ++i) {
      if (const Object* cm = At(sources[i], {"configMap"})) {
        add(*cm, field + ".projected.sources[" + std::to_string(i) + "].configMap");
      }
    }
  }
  for (const char* list : kContainerLists) {
    const Object& containers = List(spec, {list}, std::string("spec.") + list);
    for (size_t c = 0; c < containers.size(); ++c) {
      const std::string where = std::string("spec.") + list + "[" + std::to_string(c) + "]";
      const Object& env = List(containers[c], {"env"}, where + ".env");
      for (size_t i = 0; i < env.size(); ++i) {
        if (const Object* ref = At(env[i], {"valueFrom", "configMapKeyRef"})) {
          add(*ref, where + ".env[" + std::to_string(i) + "].valueFrom.configMapKeyRef");
        }
      }
      const Object& env_from = List(containers[c], {"envFrom"}, where + ".envFrom");
      for (size_t i = 0; i < env_from.size(); ++i) {
        if (const Object* ref = At(env_from[i], {"configMapRef"})) {
          add(*ref, where + ".envFrom[" + std::to_string(i) + "].configMapRef");
        }
      }
    }
  }
  return out;
}

void CheckQuota(const Object& spec, const char* res, double scale, QueueQuota& q) {
  const Object* r = At(spec, {"resources", res});
  if (!r) return;
  const std::string field = std::string("spec.resources.") + res;
  auto value = [&](const char* key, double fallback) {
    auto v = Number(*r, {key}, field + "." + key);
    if (!v) return fallback;
    if (*v < 0 && *v != -1) {
      Fail(field + "." + key, "must be -1 (unlimited) or >= 0 (got " + FormatNumber(*v) + ")");
    }
    return *v == -1 ? *v : *v * scale;
  };
  q.quota = value("quota", 0);
  q.limit = value("limit", kUnlimited);
  auto w = Number(*r, {"overQuotaWeight"}, field + ".overQuotaWeight");
  q.over_quota_weight = w ? *w : 1;
  if (q.over_quota_weight < 0 && q.over_quota_weight != -1) {
    Fail(field + ".overQuotaWeight", "must be -1 or >= 0");
  }
}

}  // namespace

PodStatus ModelPodStatus(std::string_view phase, bool has_node, bool terminating, bool gated) {
  if (phase == "Succeeded") return PodStatus::kSucceeded;
  if (phase == "Failed") return PodStatus::kFailed;
  if (phase == "Unknown") return PodStatus::kUnknown;
  if (terminating) return has_node ? PodStatus::kReleasing : PodStatus::kDeleted;
  if (phase == "Running") return PodStatus::kRunning;
  if (has_node) return PodStatus::kBound;
  if (gated) return PodStatus::kGated;
  return PodStatus::kPending;
}

std::optional<int64_t> TimestampMs(const Object& object, std::initializer_list<const char*> path) {
  const Object* v = At(object, path);
  if (!v || !v->is_string()) return std::nullopt;
  auto t = kube::ParseTime(v->get<std::string>());
  if (!t) return std::nullopt;
  return ToMs(*t);
}

Result<NodeRecord> ConvertNode(const Object& node) {
  return Guard<NodeRecord>([&] {
    NodeRecord rec;
    Node& n = rec.node;
    n.name = Str(node, {"metadata", "name"});
    if (n.name.empty()) Fail("metadata.name", "missing");
    n.labels = StrMap(node, {"metadata", "labels"}, "metadata.labels");
    const Object& taints = List(node, {"spec", "taints"}, "spec.taints");
    for (const auto& t : taints) {
      n.taints.push_back({Str(t, {"key"}), Str(t, {"value"}), Str(t, {"effect"})});
    }
    const Object* u = At(node, {"spec", "unschedulable"});
    n.unschedulable = u && u->is_boolean() && u->get<bool>();
    const auto allocatable =
        ResourceList(At(node, {"status", "allocatable"}), "status.allocatable");
    Distribute(allocatable, n.allocatable, rec.extended, /*include_pods=*/true);
    for (const auto& [name, v] : allocatable) {  // sorted: a std::map
      if (v > 0 && IsExtendedResourceName(name)) n.extended_resources.push_back(name);
    }
    // Allocatable GPUs are whole devices; fractions of a device are not a Kubernetes quantity
    // a device plugin reports, so they are floored (as a count of devices).
    n.gpu_count = IntField<int32_t>(std::floor(n.allocatable.gpus),
                                    "status.allocatable." + std::string(kGpuResourceName), 0,
                                    kMaxGpusPerNode);
    if (const std::string* c = n.labels.Get(kGpuCountLabel)) {
      const std::string field = std::string("metadata.labels.") + kGpuCountLabel;
      auto v = ParseQuantity(*c);
      if (!v || *v < 0) Fail(field, "must be a count");
      n.gpu_count = IntField<int32_t>(*v, field, 0, kMaxGpusPerNode);
    }
    // KAI floors the GPU memory label (MiB) to a multiple of 100 MiB.
    n.gpu_memory_mib = 100;
    if (const std::string* m = n.labels.Get(kGpuMemoryLabel)) {
      auto v = ParseQuantity(*m);
      if (!v || *v < 0 || *v > kMaxGpuMemoryMib) {
        Fail(std::string("metadata.labels.") + kGpuMemoryLabel,
             "must be MiB from 0 to " + Shown(kMaxGpuMemoryMib) + " (got \"" + *m + "\")");
      }
      n.gpu_memory_mib = std::floor(*v / 100) * 100;
    }
    if (const std::string* s = n.labels.Get(kMigStrategyLabel)) {
      if (*s == "single" || *s == "mixed") n.mig_strategy = *s;
    }
    return rec;
  });
}

Result<PodRecord> ConvertPod(const Object& pod) {
  return Guard<PodRecord>([&] {
    PodRecord rec;
    Pod& p = rec.pod;
    p.name = Str(pod, {"metadata", "name"});
    p.namespace_ = Str(pod, {"metadata", "namespace"});
    p.uid = Str(pod, {"metadata", "uid"});
    if (p.name.empty()) Fail("metadata.name", "missing");
    rec.creation_ms = TimestampMs(pod, {"metadata", "creationTimestamp"}).value_or(0);
    p.labels = StrMap(pod, {"metadata", "labels"}, "metadata.labels");
    const Labels annotations = StrMap(pod, {"metadata", "annotations"}, "metadata.annotations");
    const Object empty_spec = Object::object();
    const Object* spec_ptr = At(pod, {"spec"});
    const Object& spec = spec_ptr ? *spec_ptr : empty_spec;
    rec.scheduler_name = Str(spec, {"schedulerName"});
    rec.node_name = Str(spec, {"nodeName"});
    rec.nominated_node_name = Str(pod, {"status", "nominatedNodeName"});
    if (const std::string* g = annotations.Get(kPodGroupAnnotation)) rec.pod_group = *g;
    if (const std::string* s = p.labels.Get(kSubGroupLabel)) rec.subgroup = *s;
    p.gpu_groups = PodGpuGroups(p.labels);

    Distribute(PodRequests(spec), p.request, rec.extended, /*include_pods=*/false);
    p.request.pods = 1;
    const double whole = p.request.gpus;
    if (whole != std::floor(whole)) {
      Fail("spec.containers.resources.requests.nvidia.com/gpu", "must be a whole number");
    }
    if (whole > 0) p.gpu_kind = GpuRequestKind::kWhole;
    // KAI's GPU reservation pods (app=kai-resource-reservation) hold the device of a shared GPU
    // group; the group's pods account for that device, so the reservation pod's GPU is not
    // counted (as in KAI's node accounting).
    if (const std::string* app = p.labels.Get(kAppLabel); app && *app == kReservationAppValue) {
      p.request.gpus = 0;
      p.gpu_kind = GpuRequestKind::kNoGpu;
      p.gpu_groups.clear();
    }
    if (const std::string* f = annotations.Get(kGpuFractionAnnotation)) {
      const std::string field = std::string("metadata.annotations.") + kGpuFractionAnnotation;
      char* end = nullptr;
      const double v = std::strtod(f->c_str(), &end);
      if (f->empty() || *end != '\0' || !(v > 0 && v <= 1)) {
        Fail(field, "must be a number in (0, 1] (got \"" + *f + "\")");
      }
      if (v < kMinGpuFraction) {
        Fail(field,
             "must be at least 0.005, or a BindRequest's two-decimal portion would be "
             "0.00 (got \"" +
                 *f + "\")");
      }
      if (whole > 0) Fail(field, "cannot be combined with an nvidia.com/gpu request");
      int devices = 1;
      if (const std::string* d = annotations.Get(kGpuFractionDevicesAnnotation)) {
        errno = 0;
        const long long n = std::strtoll(d->c_str(), &end, 10);
        if (d->empty() || *end != '\0' || errno == ERANGE || n < 1 || n > kMaxGpuDevicesPerPod) {
          Fail(std::string("metadata.annotations.") + kGpuFractionDevicesAnnotation,
               "must be an integer from 1 to " + std::to_string(kMaxGpuDevicesPerPod) + " (got \"" +
                   *d + "\")");
        }
        devices = static_cast<int>(n);
      }
      if (v == 1) {
        p.gpu_kind = GpuRequestKind::kWhole;  // a whole device is a whole-GPU request
        p.request.gpus = devices;
      } else {
        p.gpu_kind = GpuRequestKind::kFraction;
        p.gpu_fraction = v;
        p.gpu_devices = devices;
      }
    }
    if (const std::string* m = annotations.Get(kGpuMemoryAnnotation)) {
      const std::string field = std::string("metadata.annotations.") + kGpuMemoryAnnotation;
      char* end = nullptr;
      const double v = std::strtod(m->c_str(), &end);
      if (m->empty() || *end != '\0' || !(v > 0 && v <= kMaxGpuMemoryMib)) {
        Fail(field, "must be a positive number of MiB up to " + Shown(kMaxGpuMemoryMib) +
                        " (got \"" + *m + "\")");
      }
      if (p.gpu_kind == GpuRequestKind::kNoGpu) {
        p.gpu_kind = GpuRequestKind::kMemory;
        p.gpu_devices = 1;
      }
      p.gpu_memory_mib = v;
    }
    if (!rec.extended.empty() && p.gpu_kind == GpuRequestKind::kNoGpu) {
      p.gpu_kind = GpuRequestKind::kMig;
    }
    p.mig_gpus = MigGpuEquivalents(rec.extended);

    p.node_selector = StrMap(spec, {"nodeSelector"}, "spec.nodeSelector");
    const Object& terms =
        List(spec,
             {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
              "nodeSelectorTerms"},
             "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    for (size_t i = 0; i < terms.size(); ++i) {
      const std::string f =
          "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
          "Execution.nodeSelectorTerms[" +
          std::to_string(i) + "].matchExpressions";
      NodeSelectorTerm t;
      if (const Object* e = At(terms[i], {"matchExpressions"}))
        t.requirements = Requirements(*e, f);
      p.required_node_affinity.push_back(std::move(t));
    }
    p.pod_affinity = AffinityTerms(spec, "podAffinity", "spec.affinity.podAffinity");
    p.pod_anti_affinity = AffinityTerms(spec, "podAntiAffinity", "spec.affinity.podAntiAffinity");
    p.preferred_pod_affinity = PreferredAffinityTerms(spec, "podAffinity");
    p.preferred_pod_anti_affinity = PreferredAffinityTerms(spec, "podAntiAffinity");
    for (const auto& t : List(spec, {"tolerations"}, "spec.tolerations")) {
      Toleration tol;
      tol.key = Str(t, {"key"});
      tol.op = Str(t, {"operator"});
      if (tol.op.empty()) tol.op = "Equal";
      tol.value = Str(t, {"value"});
      tol.effect = Str(t, {"effect"});
      p.tolerations.push_back(std::move(tol));
    }

    p.host_ports = HostPorts(spec);
    p.config_maps = RequiredConfigMaps(spec, annotations);

    // KAI's numa plugin reads the QoS class the API server assigned (never derives it).
    rec.qos_guaranteed = Str(pod, {"status", "qosClass"}) == "Guaranteed";
    if (const std::string* placed = annotations.Get(kNumaPlacementObservedAnnotation)) {
      auto zones = ConvertNumaPlacement(
          *placed, std::string("metadata.annotations.") + kNumaPlacementObservedAnnotation);
      if (!zones.ok()) throw BadField{zones.error()};
      p.numa_observed = std::move(zones).value();
    }

    const bool terminating = At(pod, {"metadata", "deletionTimestamp"}) != nullptr;
    const bool gated = !List(spec, {"schedulingGates"}, "spec.schedulingGates").empty();
    p.status =
        ModelPodStatus(Str(pod, {"status", "phase"}), !rec.node_name.empty(), terminating, gated);
    if (At(spec, {"resourceClaims"})) {
      auto claims = ConvertPodClaims(pod);
      if (!claims.ok()) throw BadField{claims.error()};
      rec.claims = std::move(claims).value();
    }
    // KEP-5004: only a pod still to be placed can get the special claim (a placed one has it).
    if (rec.node_name.empty()) rec.extended_requests = ContainerExtendedRequests(spec);
    return rec;
  });
}

Result<Queue> ConvertQueue(const Object& queue) {
  return Guard<Queue>([&] {
    Queue q;
    q.name = Str(queue, {"metadata", "name"});
    if (q.name.empty()) Fail("metadata.name", "missing");
    q.creation_ms = TimestampMs(queue, {"metadata", "creationTimestamp"}).value_or(0);
    const Object empty = Object::object();
    const Object* spec_ptr = At(queue, {"spec"});
    const Object& spec = spec_ptr ? *spec_ptr : empty;
    q.parent_name = Str(spec, {"parentQueue"});
    q.display_name = Str(spec, {"displayName"});
    if (q.parent_name == q.name) Fail("spec.parentQueue", "a queue cannot be its own parent");
    if (auto pr = Number(spec, {"priority"}, "spec.priority")) {
      q.priority = IntField<int32_t>(*pr, "spec.priority", std::numeric_limits<int32_t>::min(),
                                     std::numeric_limits<int32_t>::max());
    }
    if (!At(spec, {"resources"})) {
      // No resource spec: zero quota, limit and weight (KAI's reading of a legacy queue).
      q.cpu = q.memory = q.gpu = QueueQuota{0, 0, 0};
    } else {
      CheckQuota(spec, "gpu", 1, q.gpu);
      CheckQuota(spec, "cpu", 1, q.cpu);          // millicores
      CheckQuota(spec, "memory", 1e6, q.memory);  // megabytes
    }
    for (const char* key : {"preemptMinRuntime", "reclaimMinRuntime"}) {
      const std::string s = Str(spec, {key});
      if (s.empty()) continue;
      auto d = ParseGoDurationSeconds(s);
      if (!d.ok() || d.value() < 0) {
        Fail(std::string("spec.") + key, "malformed duration \"" + s + "\"");
      }
      (std::string(key) == "preemptMinRuntime" ? q.preempt_min_runtime_seconds
                                               : q.reclaim_min_runtime_seconds) = d.value();
    }
    return q;
  });
}

namespace {

// Every parent exists, the parents form no cycle and no chain is deeper than kMaxSubGroupDepth.
// Linear in the number of sub-groups: each one's depth is computed once and remembered.
void CheckSubGroupTree(const std::vector<SubGroupSpec>& groups) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < groups.size(); ++i) index.emplace(groups[i].name, i);
  constexpr int kUnknown = -1, kOnPath = -2;
  std::vector<int> depth(groups.size(), kUnknown);
  std::vector<size_t> path;
  for (size_t i = 0; i < groups.size(); ++i) {
    // Walk up from i until the root or a sub-group whose depth is known.
    path.clear();
    size_t cur = i;
    int base = 0;
    while (depth[cur] == kUnknown) {
      depth[cur] = kOnPath;
      path.push_back(cur);
      const std::string& parent = groups[cur].parent;
      if (parent.empty()) break;
      auto it = index.find(parent);
      const std::string field = "spec.subGroups[" + std::to_string(cur) + "].parent";
      if (it == index.end()) Fail(field, "unknown sub-group \"" + parent + "\"");
      if (depth[it->second] == kOnPath) {
        Fail(field, "the sub-group tree has a cycle through \"" + parent + "\"");
      }
      cur = it->second;
      if (depth[cur] >= 0) base = depth[cur];
    }
    // path holds i ... top; the top's parent is the root (base 0) or has depth `base`.
    for (size_t k = path.size(); k-- > 0;) {
      depth[path[k]] = ++base;
      if (base > kMaxSubGroupDepth) {
        Fail("spec.subGroups[" + std::to_string(path[k]) + "].parent",
             "the sub-group tree is deeper than " + std::to_string(kMaxSubGroupDepth) + " levels");
      }
    }
  }
}

}  // namespace

bool PodGroupRecord::BackedOff(std::string_view nodepool_label_key) const {
  if (scheduling_backoff == -1 || !last_condition_node_pool) return false;
  std::string pool = "default";
  for (const auto& [key, value] : labels) {
    if (key == nodepool_label_key && !value.empty()) pool = value;
  }
  return *last_condition_node_pool == pool;
}

Result<PodGroupRecord> ConvertPodGroup(const Object& pg) {
  return Guard<PodGroupRecord>([&] {
    PodGroupRecord r;
    r.name = Str(pg, {"metadata", "name"});
    r.namespace_ = Str(pg, {"metadata", "namespace"});
    r.uid = Str(pg, {"metadata", "uid"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    r.creation_ms = TimestampMs(pg, {"metadata", "creationTimestamp"}).value_or(0);
    r.deleting = At(pg, {"metadata", "deletionTimestamp"}) != nullptr;
    const Object empty = Object::object();
    const Object* spec_ptr = At(pg, {"spec"});
    const Object& spec = spec_ptr ? *spec_ptr : empty;
    r.queue = Str(spec, {"queue"});
    if (r.queue.empty()) {
      // KAI falls back to the queue label of the PodGroup.
      const Labels labels = StrMap(pg, {"metadata", "labels"}, "metadata.labels");
      if (const std::string* q = labels.Get(kQueueLabel)) r.queue = *q;
    }
    if (r.queue.empty())
      Fail("spec.queue", "missing (and no " + std::string(kQueueLabel) + " label)");
    r.priority_class = Str(spec, {"priorityClassName"});
    r.preemptibility = Str(spec, {"preemptibility"});
    if (!r.preemptibility.empty() && r.preemptibility != "preemptible" &&
        r.preemptibility != "non-preemptible") {
      Fail("spec.preemptibility",
           "must be preemptible or non-preemptible (got \"" + r.preemptibility + "\")");
    }
    if (auto m = Number(spec, {"minMember"}, "spec.minMember")) {
      r.min_member = IntField<int32_t>(*m, "spec.minMember", 0, kMaxCount);
    }
    if (auto m = Number(spec, {"minSubGroup"}, "spec.minSubGroup")) {
      r.min_sub_group = IntField<int32_t>(*m, "spec.minSubGroup", 0, kMaxCount);
    }
    for (auto [field, target] :
         {std::pair<const char*, std::optional<double>*>{"preemptionDelay", nullptr},
          std::pair<const char*, std::optional<double>*>{"stalenessGracePeriod",
                                                         &r.staleness_grace_period_seconds}}) {
      const std::string text = Str(spec, {field});
      if (text.empty()) continue;
      const auto seconds = ParseGoDurationSeconds(text);
      if (!seconds.ok()) {
        Fail(std::string("spec.") + field, "not a duration (got \"" + text + "\", e.g. 10m)");
      }
      if (target != nullptr) {
        *target = seconds.value();
      } else {
        r.preemption_delay_seconds = seconds.value();
      }
    }
    r.topology = Constraint(At(spec, {"topologyConstraint"}));
    std::set<std::string> names;
    const Object& subs = List(spec, {"subGroups"}, "spec.subGroups");
    for (size_t i = 0; i < subs.size(); ++i) {
      const std::string f = "spec.subGroups[" + std::to_string(i) + "]";
      SubGroupSpec s;
      s.name = Str(subs[i], {"name"});
      if (s.name.empty()) Fail(f + ".name", "missing");
      if (!names.insert(s.name).second) Fail(f + ".name", "duplicate sub-group \"" + s.name + "\"");
      if (auto m = Number(subs[i], {"minMember"}, f + ".minMember")) {
        s.min_member = IntField<int32_t>(*m, f + ".minMember", 0, kMaxCount);
      }
      if (auto m = Number(subs[i], {"minSubGroup"}, f + ".minSubGroup")) {
        if (*m < 0 || *m != std::floor(*m))
          Fail(f + ".minSubGroup", "must be a non-negative integer");
        s.min_sub_group = static_cast<int32_t>(*m);
      }
      s.parent = Str(subs[i], {"parent"});
      s.topology = Constraint(At(subs[i], {"topologyConstraint"}));
      r.sub_groups.push_back(std::move(s));
    }
    CheckSubGroupTree(r.sub_groups);
    if (auto b = Number(spec, {"schedulingBackoff"}, "spec.schedulingBackoff")) {
      r.scheduling_backoff =
          IntField<int32_t>(*b, "spec.schedulingBackoff", std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
    }
    // Always read: the node-pool label decides which shard schedules it (node_pool.h).
    r.labels = StrMap(pg, {"metadata", "labels"}, "metadata.labels").items();
    if (r.scheduling_backoff != -1) {
      // KAI's GetLastSchedulingCondition: the highest transitionID (one that is not a number
      // counts as -1), the first of equals.
      const Object& conditions =
          List(pg, {"status", "schedulingConditions"}, "status.schedulingConditions");
      int64_t last_id = 0;
      for (const Object& c : conditions) {
        if (!c.is_object()) continue;
        const std::string text = Str(c, {"transitionID"});
        int64_t id = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size()) id = -1;
        if (!r.last_condition_node_pool || id > last_id) {
          r.last_condition_node_pool = Str(c, {"nodePool"});
          last_id = id;
        }
      }
    }
    const Labels annotations = StrMap(pg, {"metadata", "annotations"}, "metadata.annotations");
    for (auto [key, target] : {std::pair{kLastStartAnnotation, &r.last_start_ms},
                               std::pair{kStaleSinceAnnotation, &r.stale_since_ms}}) {
      if (const std::string* v = annotations.Get(key)) {
        if (auto t = kube::ParseTime(*v)) *target = ToMs(*t);
      }
    }
    return r;
  });
}

Result<Topology> ConvertTopology(const Object& topology) {
  return Guard<Topology>([&] {
    Topology t;
    t.name = Str(topology, {"metadata", "name"});
    if (t.name.empty()) Fail("metadata.name", "missing");
    std::set<std::string> seen;
    const Object& levels = List(topology, {"spec", "levels"}, "spec.levels");
    for (size_t i = 0; i < levels.size(); ++i) {
      const std::string label = Str(levels[i], {"nodeLabel"});
      const std::string f = "spec.levels[" + std::to_string(i) + "].nodeLabel";
      if (label.empty()) Fail(f, "missing");
      if (!seen.insert(label).second) Fail(f, "duplicate level \"" + label + "\"");
      t.levels.push_back(label);
    }
    if (t.levels.empty()) Fail("spec.levels", "must name at least one level");
    return t;
  });
}

Result<ConfigMapRecord> ConvertConfigMap(const Object& config_map) {
  return Guard<ConfigMapRecord>([&] {
    ConfigMapRecord r;
    r.namespace_ = Str(config_map, {"metadata", "namespace"});
    r.name = Str(config_map, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    return r;
  });
}

Result<BindRequestRecord> ConvertBindRequest(const Object& br) {
  return Guard<BindRequestRecord>([&] {
    BindRequestRecord r;
    r.name = Str(br, {"metadata", "name"});
    r.namespace_ = Str(br, {"metadata", "namespace"});
    r.pod_name = Str(br, {"spec", "podName"});
    r.selected_node = Str(br, {"spec", "selectedNode"});
    r.phase = Str(br, {"status", "phase"});
    r.labels = StrMap(br, {"metadata", "labels"}, "metadata.labels");
    if (r.pod_name.empty()) Fail("spec.podName", "missing");
    if (r.selected_node.empty()) Fail("spec.selectedNode", "missing");
    if (auto a = Number(br, {"status", "failedAttempts"}, "status.failedAttempts")) {
      r.failed_attempts = IntField<int32_t>(*a, "status.failedAttempts", 0, kMaxCount);
    }
    if (auto b = Number(br, {"spec", "backoffLimit"}, "spec.backoffLimit")) {
      r.backoff_limit = IntField<int32_t>(*b, "spec.backoffLimit", 0, kMaxCount);
    }
    for (const auto& o : List(br, {"metadata", "ownerReferences"}, "metadata.ownerReferences")) {
      if (Str(o, {"kind"}) == "Pod" && Str(o, {"name"}) == r.pod_name) r.pod_uid = Str(o, {"uid"});
    }
    for (const auto& g : List(br, {"spec", "selectedGPUGroups"}, "spec.selectedGPUGroups")) {
      if (!g.is_string()) Fail("spec.selectedGPUGroups", "must be a list of strings");
      r.gpu_groups.push_back(g.get<std::string>());
    }
    const Object& allocations =
        List(br, {"spec", "resourceClaimAllocations"}, "spec.resourceClaimAllocations");
    for (size_t i = 0; i < allocations.size(); ++i) {
      const std::string f = "spec.resourceClaimAllocations[" + std::to_string(i) + "]";
      const std::string name = Str(allocations[i], {"name"});
      if (name.empty()) Fail(f + ".name", "missing");
      const Object* results = At(allocations[i], {"allocation", "devices", "results"});
      auto devices = ConvertDeviceResults(results ? *results : Object::array(),
                                          f + ".allocation.devices.results");
      if (!devices.ok()) throw BadField{devices.error()};
      r.claim_allocations.emplace_back(name, std::move(devices).value());
    }
    if (const Object* ext = At(br, {"spec", "extendedResourceClaimAllocation"});
        ext && !ext->is_null()) {
      const Object* results = At(*ext, {"allocation", "devices", "results"});
      auto devices =
          ConvertDeviceResults(results ? *results : Object::array(),
                               "spec.extendedResourceClaimAllocation.allocation.devices.results");
      if (!devices.ok()) throw BadField{devices.error()};
      r.extended_allocation = std::move(devices).value();
    }
    return r;
  });
}

Result<PriorityClassRecord> ConvertPriorityClass(const Object& pc) {
  return Guard<PriorityClassRecord>([&] {
    PriorityClassRecord r;
    r.name = Str(pc, {"metadata", "name"});
    const Object* v = At(pc, {"value"});
    if (!v || !v->is_number_integer()) Fail("value", "must be an integer");
    // Kubernetes priorities are int32; a wider integer would wrap.
    auto value = v->is_number_unsigned()
                     ? NarrowIn<int32_t>(v->get<uint64_t>(), std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max())
                     : NarrowIn<int32_t>(v->get<int64_t>(), std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max());
    if (!value) Fail("value", "must be a 32-bit integer (got " + v->dump() + ")");
    r.value = *value;
    const Object* d = At(pc, {"globalDefault"});
    r.global_default = d && d->is_boolean() && d->get<bool>();
    return r;
  });
}

}  // namespace gantry::cache
