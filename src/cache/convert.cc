#include "cache/convert.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cache/quantity.h"
#include "kube/time_format.h"

namespace gantry::cache {

namespace {

// Thrown inside this file only; converted to an Error by the public functions.
struct BadField {
  std::string message;
};

[[noreturn]] void Fail(const std::string& field, const std::string& problem) {
  throw BadField{field + ": " + problem};
}

const Object* At(const Object& o, std::initializer_list<const char*> path) {
  const Object* cur = &o;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end() || it->is_null()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string Str(const Object& o, std::initializer_list<const char*> path) {
  const Object* v = At(o, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// A string-to-string map such as metadata.labels; absent -> empty.
Labels StrMap(const Object& o, std::initializer_list<const char*> path, const std::string& field) {
  Labels out;
  const Object* m = At(o, path);
  if (!m) return out;
  if (!m->is_object()) Fail(field, "must be a map of strings");
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (!it.value().is_string()) Fail(field + "." + it.key(), "must be a string");
    out.Set(it.key(), it.value().get<std::string>());
  }
  return out;
}

const Object& List(const Object& o, std::initializer_list<const char*> path,
                   const std::string& field) {
  static const Object empty = Object::array();
  const Object* v = At(o, path);
  if (!v) return empty;
  if (!v->is_array()) Fail(field, "must be a list");
  return *v;
}

// A number that may be a JSON number or (as CRD float fields sometimes arrive) a string.
std::optional<double> Number(const Object& o, std::initializer_list<const char*> path,
                             const std::string& field) {
  const Object* v = At(o, path);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    auto q = ParseQuantity(v->get<std::string>());
    if (q) return q;
  }
  Fail(field, "must be a number");
}

double Quantity(const Object& value, const std::string& field) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string()) Fail(field, "must be a quantity");
  auto q = ParseQuantity(value.get<std::string>());
  if (!q) Fail(field, "malformed quantity \"" + value.get<std::string>() + "\"");
  if (*q < 0) Fail(field, "must not be negative");
  return *q;
}

// A resource list (requests, allocatable, overhead) into named quantities.
std::map<std::string, double> ResourceList(const Object* list, const std::string& field) {
  std::map<std::string, double> out;
  if (!list) return out;
  if (!list->is_object()) Fail(field, "must be a map of quantities");
  for (auto it = list->begin(); it != list->end(); ++it) {
    out[it.key()] = Quantity(it.value(), field + "." + it.key());
  }
  return out;
}

bool IsMigResource(const std::string& name) {
  int g = 0, m = 0;
  return ParseMigProfile(name, g, m);
}

// Splits named quantities into the fixed model fields and the extended (MIG) ones.
void Distribute(const std::map<std::string, double>& named, Resources& r, NamedQuantities& ext,
                bool include_pods) {
  for (const auto& [name, v] : named) {
    if (name == "cpu") {
      r.cpu_millis = std::round(v * 1000);
    } else if (name == "memory") {
      r.memory_bytes = v;
    } else if (name == kGpuResourceName) {
      r.gpus = v;
    } else if (name == "pods") {
      if (include_pods) r.pods = v;
    } else if (IsMigResource(name) && v > 0) {
      ext.emplace_back(name, v);
    }
  }
}

std::vector<SelectorRequirement> Requirements(const Object& list, const std::string& field) {
  std::vector<SelectorRequirement> out;
  if (!list.is_array()) Fail(field, "must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    SelectorRequirement r;
    r.key = Str(list[i], {"key"});
    r.op = Str(list[i], {"operator"});
    if (r.key.empty()) Fail(f + ".key", "missing");
    if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist" &&
        r.op != "Gt" && r.op != "Lt") {
      Fail(f + ".operator", "unknown operator \"" + r.op + "\"");
    }
    for (const auto& v : List(list[i], {"values"}, f + ".values")) {
      if (!v.is_string()) Fail(f + ".values", "must be a list of strings");
      r.values.push_back(v.get<std::string>());
    }
    out.push_back(std::move(r));
  }
  return out;
}

LabelSelector Selector(const Object* sel, const std::string& field) {
  LabelSelector out;
  if (!sel) return out;
  out.match_labels = StrMap(*sel, {"matchLabels"}, field + ".matchLabels");
  if (const Object* e = At(*sel, {"matchExpressions"})) {
    out.expressions = Requirements(*e, field + ".matchExpressions");
  }
  return out;
}

std::vector<PodAffinityTerm> AffinityTerms(const Object& spec, const char* kind,
                                           const std::string& field) {
  std::vector<PodAffinityTerm> out;
  const Object& terms =
      List(spec, {"affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution"}, field);
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    PodAffinityTerm t;
    t.selector = Selector(At(terms[i], {"labelSelector"}), f + ".labelSelector");
    t.topology_key = Str(terms[i], {"topologyKey"});
    if (t.topology_key.empty()) Fail(f + ".topologyKey", "missing");
    for (const auto& ns : List(terms[i], {"namespaces"}, f + ".namespaces")) {
      if (ns.is_string()) t.namespaces.push_back(ns.get<std::string>());
    }
    out.push_back(std::move(t));
  }
  return out;
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

template <typename T, typename Fn>
Result<T> Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const BadField& e) {
    return Error{e.message};
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("malformed object: ") + e.what()};
  }
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

// The effective pod request of every named resource, as Kubernetes computes it.
std::map<std::string, double> PodRequests(const Object& spec) {
  auto container_requests = [](const Object& c, const std::string& field) {
    // Requests default to limits (the API server does this for new pods; kept for objects
    // created before defaulting or served by other sources).
    std::map<std::string, double> r =
        ResourceList(At(c, {"resources", "limits"}), field + ".resources.limits");
    for (auto& [k, v] :
         ResourceList(At(c, {"resources", "requests"}), field + ".resources.requests")) {
      r[k] = v;
    }
    return r;
  };
  auto add = [](std::map<std::string, double>& into, const std::map<std::string, double>& r) {
    for (const auto& [k, v] : r) into[k] += v;
  };
  std::map<std::string, double> total;
  const Object& containers = List(spec, {"containers"}, "spec.containers");
  for (size_t i = 0; i < containers.size(); ++i) {
    add(total, container_requests(containers[i], "spec.containers[" + std::to_string(i) + "]"));
  }
  std::map<std::string, double> sidecars;  // restartable init containers started so far
  std::map<std::string, double> init_peak;
  const Object& inits = List(spec, {"initContainers"}, "spec.initContainers");
  for (size_t i = 0; i < inits.size(); ++i) {
    const auto r = container_requests(inits[i], "spec.initContainers[" + std::to_string(i) + "]");
    if (Str(inits[i], {"restartPolicy"}) == "Always") {
      add(sidecars, r);
      for (const auto& [k, v] : sidecars) init_peak[k] = std::max(init_peak[k], v);
      continue;
    }
    std::map<std::string, double> during = sidecars;
    add(during, r);
    for (const auto& [k, v] : during) init_peak[k] = std::max(init_peak[k], v);
  }
  add(total, sidecars);
  for (const auto& [k, v] : init_peak) total[k] = std::max(total[k], v);
  add(total, ResourceList(At(spec, {"overhead"}), "spec.overhead"));
  return total;
}

double MigGpuEquivalents(const NamedQuantities& ext) {
  double gpus = 0;
  for (const auto& [name, v] : ext) {
    int g = 0, m = 0;
    if (ParseMigProfile(name, g, m)) gpus += g * v;
  }
  return gpus;
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

std::optional<double> DurationSeconds(const std::string& s) {
  // Go durations as metav1.Duration serialises them: "1h2m3.5s", "90s", "500ms".
  if (s.empty()) return std::nullopt;
  double total = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = pos;
    while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) {
      ++end;
    }
    if (end == pos) return std::nullopt;
    const double v = std::strtod(s.substr(pos, end - pos).c_str(), nullptr);
    size_t unit_end = end;
    while (unit_end < s.size() && std::isalpha(static_cast<unsigned char>(s[unit_end]))) ++unit_end;
    const std::string unit = s.substr(end, unit_end - end);
    double scale = 0;
    if (unit == "h")
      scale = 3600;
    else if (unit == "m")
      scale = 60;
    else if (unit == "s")
      scale = 1;
    else if (unit == "ms")
      scale = 1e-3;
    else if (unit == "us" || unit == "µs")
      scale = 1e-6;
    else if (unit == "ns")
      scale = 1e-9;
    else
      return std::nullopt;
    total += v * scale;
    pos = unit_end;
  }
  return total;
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
    Distribute(ResourceList(At(node, {"status", "allocatable"}), "status.allocatable"),
               n.allocatable, rec.extended, /*include_pods=*/true);
    n.gpu_count = static_cast<int>(n.allocatable.gpus);
    if (const std::string* c = n.labels.Get(kGpuCountLabel)) {
      auto v = ParseQuantity(*c);
      if (!v || *v < 0) Fail(std::string("metadata.labels.") + kGpuCountLabel, "must be a count");
      n.gpu_count = static_cast<int>(*v);
    }
    // KAI floors the GPU memory label (MiB) to a multiple of 100 MiB.
    n.gpu_memory_mib = 100;
    if (const std::string* m = n.labels.Get(kGpuMemoryLabel)) {
      auto v = ParseQuantity(*m);
      if (!v || *v < 0) Fail(std::string("metadata.labels.") + kGpuMemoryLabel, "must be MiB");
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
      if (whole > 0) Fail(field, "cannot be combined with an nvidia.com/gpu request");
      int devices = 1;
      if (const std::string* d = annotations.Get(kGpuFractionDevicesAnnotation)) {
        const long n = std::strtol(d->c_str(), &end, 10);
        if (d->empty() || *end != '\0' || n < 1) {
          Fail(std::string("metadata.annotations.") + kGpuFractionDevicesAnnotation,
               "must be a positive integer (got \"" + *d + "\")");
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
      if (m->empty() || *end != '\0' || !(v > 0)) {
        Fail(field, "must be a positive number of MiB (got \"" + *m + "\")");
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
    for (const auto& t : List(spec, {"tolerations"}, "spec.tolerations")) {
      Toleration tol;
      tol.key = Str(t, {"key"});
      tol.op = Str(t, {"operator"});
      if (tol.op.empty()) tol.op = "Equal";
      tol.value = Str(t, {"value"});
      tol.effect = Str(t, {"effect"});
      p.tolerations.push_back(std::move(tol));
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
    if (q.parent_name == q.name) Fail("spec.parentQueue", "a queue cannot be its own parent");
    if (auto pr = Number(spec, {"priority"}, "spec.priority")) q.priority = static_cast<int>(*pr);
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
      auto d = DurationSeconds(s);
      if (!d) Fail(std::string("spec.") + key, "malformed duration \"" + s + "\"");
      (std::string(key) == "preemptMinRuntime" ? q.preempt_min_runtime_seconds
                                               : q.reclaim_min_runtime_seconds) = *d;
    }
    return q;
  });
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
      if (*m < 0 || *m != std::floor(*m)) Fail("spec.minMember", "must be a non-negative integer");
      r.min_member = static_cast<int32_t>(*m);
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
        if (*m < 0 || *m != std::floor(*m))
          Fail(f + ".minMember", "must be a non-negative integer");
        s.min_member = static_cast<int32_t>(*m);
      }
      s.parent = Str(subs[i], {"parent"});
      s.topology = Constraint(At(subs[i], {"topologyConstraint"}));
      r.sub_groups.push_back(std::move(s));
    }
    for (size_t i = 0; i < r.sub_groups.size(); ++i) {
      // Every parent exists and following parents ends at the root.
      std::set<std::string> seen;
      std::string cur = r.sub_groups[i].name;
      while (!cur.empty()) {
        if (!seen.insert(cur).second) {
          Fail("spec.subGroups[" + std::to_string(i) + "].parent",
               "the sub-group tree has a cycle through \"" + cur + "\"");
        }
        auto it = std::find_if(r.sub_groups.begin(), r.sub_groups.end(),
                               [&](const SubGroupSpec& s) { return s.name == cur; });
        if (it == r.sub_groups.end()) {
          Fail("spec.subGroups[" + std::to_string(i) + "].parent",
               "unknown sub-group \"" + cur + "\"");
        }
        cur = it->parent;
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

Result<BindRequestRecord> ConvertBindRequest(const Object& br) {
  return Guard<BindRequestRecord>([&] {
    BindRequestRecord r;
    r.name = Str(br, {"metadata", "name"});
    r.namespace_ = Str(br, {"metadata", "namespace"});
    r.pod_name = Str(br, {"spec", "podName"});
    r.selected_node = Str(br, {"spec", "selectedNode"});
    r.phase = Str(br, {"status", "phase"});
    if (r.pod_name.empty()) Fail("spec.podName", "missing");
    if (r.selected_node.empty()) Fail("spec.selectedNode", "missing");
    if (auto a = Number(br, {"status", "failedAttempts"}, "status.failedAttempts")) {
      r.failed_attempts = static_cast<int32_t>(*a);
    }
    if (auto b = Number(br, {"spec", "backoffLimit"}, "spec.backoffLimit")) {
      r.backoff_limit = static_cast<int32_t>(*b);
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
    return r;
  });
}

Result<PriorityClassRecord> ConvertPriorityClass(const Object& pc) {
  return Guard<PriorityClassRecord>([&] {
    PriorityClassRecord r;
    r.name = Str(pc, {"metadata", "name"});
    const Object* v = At(pc, {"value"});
    if (!v || !v->is_number_integer()) Fail("value", "must be an integer");
    r.value = v->get<int32_t>();
    const Object* d = At(pc, {"globalDefault"});
    r.global_default = d && d->is_boolean() && d->get<bool>();
    return r;
  });
}

// ---- DRA (resource.k8s.io/v1) ----

namespace {

// The driver a CEL selector pins: `device.driver == "x"` (or 'x'), nothing else.
std::string DriverOfSelector(const std::string& expression) {
  std::string e;
  for (char c : expression) {
    if (c != ' ' && c != '\t' && c != '\n') e += c;
  }
  const std::string prefix = "device.driver==";
  if (!e.starts_with(prefix) || e.size() < prefix.size() + 2) return "";
  const char quote = e[prefix.size()];
  if ((quote != '"' && quote != '\'') || e.back() != quote) return "";
  std::string driver = e.substr(prefix.size() + 1, e.size() - prefix.size() - 2);
  if (driver.find_first_of("\"'\\") != std::string::npos) return "";
  return driver;
}

}  // namespace

Result<DeviceClassRecord> ConvertDeviceClass(const Object& device_class) {
  return Guard<DeviceClassRecord>([&] {
    DeviceClassRecord r;
    r.name = Str(device_class, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    const Object& selectors = List(device_class, {"spec", "selectors"}, "spec.selectors");
    for (const auto& sel : selectors) {
      const std::string driver = DriverOfSelector(Str(sel, {"cel", "expression"}));
      if (!driver.empty() && r.driver.empty()) r.driver = driver;
    }
    return r;
  });
}

Result<ResourceSliceRecord> ConvertResourceSlice(const Object& slice) {
  return Guard<ResourceSliceRecord>([&] {
    ResourceSliceRecord r;
    r.name = Str(slice, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    r.driver = Str(slice, {"spec", "driver"});
    if (r.driver.empty()) Fail("spec.driver", "missing");
    r.pool = Str(slice, {"spec", "pool", "name"});
    if (r.pool.empty()) Fail("spec.pool.name", "missing");
    r.node_name = Str(slice, {"spec", "nodeName"});
    const Object* all = At(slice, {"spec", "allNodes"});
    r.all_nodes = all && all->is_boolean() && all->get<bool>();
    if (At(slice, {"spec", "nodeSelector"})) {
      Fail("spec.nodeSelector", "slices limited by a node selector are not supported");
    }
    const Object* per_device = At(slice, {"spec", "perDeviceNodeSelection"});
    if (per_device && per_device->is_boolean() && per_device->get<bool>()) {
      Fail("spec.perDeviceNodeSelection", "per-device node selection is not supported");
    }
    if (r.node_name.empty() && !r.all_nodes) {
      Fail("spec.nodeName", "a slice needs spec.nodeName or spec.allNodes");
    }
    const Object& devices = List(slice, {"spec", "devices"}, "spec.devices");
    std::set<std::string> seen;
    for (size_t i = 0; i < devices.size(); ++i) {
      const std::string name = Str(devices[i], {"name"});
      const std::string f = "spec.devices[" + std::to_string(i) + "].name";
      if (name.empty()) Fail(f, "missing");
      if (!seen.insert(name).second) Fail(f, "device \"" + name + "\" listed twice");
      r.devices.push_back(name);
    }
    return r;
  });
}

Result<std::vector<DeviceResult>> ConvertDeviceResults(const Object& results,
                                                       const std::string& field) {
  return Guard<std::vector<DeviceResult>>([&] {
    if (!results.is_array()) Fail(field, "must be a list");
    std::vector<DeviceResult> out;
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string f = field + "[" + std::to_string(i) + "]";
      DeviceResult d{Str(results[i], {"request"}), Str(results[i], {"driver"}),
                     Str(results[i], {"pool"}), Str(results[i], {"device"})};
      if (d.driver.empty()) Fail(f + ".driver", "missing");
      if (d.pool.empty()) Fail(f + ".pool", "missing");
      if (d.device.empty()) Fail(f + ".device", "missing");
      out.push_back(std::move(d));
    }
    return out;
  });
}

Result<ResourceClaimRecord> ConvertResourceClaim(const Object& claim) {
  return Guard<ResourceClaimRecord>([&] {
    ResourceClaimRecord r;
    ResourceClaim& rc = r.claim;
    rc.name = Str(claim, {"metadata", "name"});
    rc.namespace_ = Str(claim, {"metadata", "namespace"});
    if (rc.name.empty()) Fail("metadata.name", "missing");
    r.uid = Str(claim, {"metadata", "uid"});
    rc.labels = StrMap(claim, {"metadata", "labels"}, "metadata.labels");
    const Object& requests = List(claim, {"spec", "devices", "requests"}, "spec.devices.requests");
    for (size_t i = 0; i < requests.size(); ++i) {
      const Object& req = requests[i];
      const std::string f = "spec.devices.requests[" + std::to_string(i) + "]";
      const std::string name = Str(req, {"name"});
      if (name.empty()) Fail(f + ".name", "missing");
      if (At(req, {"firstAvailable"})) {
        Fail(f + ".firstAvailable", "prioritized lists of devices are not supported");
      }
      const Object* exactly = At(req, {"exactly"});
      if (!exactly) Fail(f + ".exactly", "missing");
      const std::string cls = Str(*exactly, {"deviceClassName"});
      if (cls.empty()) Fail(f + ".exactly.deviceClassName", "missing");
      if (!List(*exactly, {"selectors"}, f + ".exactly.selectors").empty()) {
        Fail(f + ".exactly.selectors", "device selectors are not supported");
      }
      const std::string mode = Str(*exactly, {"allocationMode"});
      if (!mode.empty() && mode != "ExactCount") {
        Fail(f + ".exactly.allocationMode", "only ExactCount is supported (got \"" + mode + "\")");
      }
      int32_t count = 1;
      if (auto c = Number(*exactly, {"count"}, f + ".exactly.count")) {
        if (*c < 1 || *c != std::floor(*c))
          Fail(f + ".exactly.count", "must be a positive integer");
        count = static_cast<int32_t>(*c);
      }
      if (!rc.device_class.empty() && rc.device_class != cls) {
        Fail(f + ".exactly.deviceClassName",
             "requests of more than one device class in a claim are not supported (\"" +
                 rc.device_class + "\" and \"" + cls + "\")");
      }
      rc.device_class = cls;
      rc.count += count;
      for (int32_t k = 0; k < count; ++k) rc.device_requests.push_back(name);
    }
    if (rc.count == 0) Fail("spec.devices.requests", "no device requests");
    if (const Object* alloc = At(claim, {"status", "allocation"})) {
      r.allocated = true;
      const Object* results = At(*alloc, {"devices", "results"});
      auto devices = ConvertDeviceResults(results ? *results : Object::array(),
                                          "status.allocation.devices.results");
      if (!devices.ok()) throw BadField{devices.error()};
      r.results = std::move(devices).value();
    }
    const Object& reserved = List(claim, {"status", "reservedFor"}, "status.reservedFor");
    for (const auto& ref : reserved) {
      r.reserved_for.push_back({Str(ref, {"resource"}), Str(ref, {"name"}), Str(ref, {"uid"})});
    }
    return r;
  });
}

Result<std::vector<PodClaimRef>> ConvertPodClaims(const Object& pod) {
  return Guard<std::vector<PodClaimRef>>([&] {
    std::vector<PodClaimRef> out;
    const Object& claims = List(pod, {"spec", "resourceClaims"}, "spec.resourceClaims");
    const Object& statuses =
        List(pod, {"status", "resourceClaimStatuses"}, "status.resourceClaimStatuses");
    for (size_t i = 0; i < claims.size(); ++i) {
      const std::string f = "spec.resourceClaims[" + std::to_string(i) + "]";
      PodClaimRef ref;
      ref.name = Str(claims[i], {"name"});
      if (ref.name.empty()) Fail(f + ".name", "missing");
      ref.claim_name = Str(claims[i], {"resourceClaimName"});
      if (ref.claim_name.empty()) {
        if (Str(claims[i], {"resourceClaimTemplateName"}).empty()) {
          Fail(f, "names neither resourceClaimName nor resourceClaimTemplateName");
        }
        ref.from_template = true;
        for (const auto& st : statuses) {
          if (Str(st, {"name"}) == ref.name) ref.claim_name = Str(st, {"resourceClaimName"});
        }
      }
      out.push_back(std::move(ref));
    }
    return out;
  });
}

}  // namespace gantry::cache
