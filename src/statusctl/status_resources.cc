#include "statusctl/status_resources.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/json_fields.h"

namespace gantry::statusctl {

namespace {

std::string Annotation(const Object& pod, const char* key) {
  return kube::StringAt(pod, {"metadata", "annotations", key});
}

bool Scheduled(const Object& pod) {
  const Object* conditions = nullptr;
  if (auto s = pod.find("status"); s != pod.end() && s->is_object()) {
    if (auto c = s->find("conditions"); c != s->end() && c->is_array()) conditions = &*c;
  }
  if (conditions == nullptr) return false;
  for (const auto& c : *conditions) {
    if (c.is_object() && StringOr(c, "type") == "PodScheduled") {
      return StringOr(c, "status") == "True";
    }
  }
  return false;
}

Result<kube::Quantity> ParseAnnotation(const Object& pod, const char* key) {
  auto q = kube::Quantity::Parse(Annotation(pod, key));
  if (!q.ok()) return Error{std::string("metadata.annotations.") + key + ": " + q.error()};
  if (q.value().negative()) {
    return Error{std::string("metadata.annotations.") + key + ": must not be negative"};
  }
  return q;
}

// `q` times a whole number of devices.
kube::Quantity Times(kube::Quantity q, int64_t n) {
  kube::Quantity out;
  for (int64_t i = 0; i < n; ++i) out += q;
  return out;
}

// A double as a quantity, to the nano-unit (KAI formats the fraction with strconv 'f', -1).
kube::Quantity FromDouble(double v) {
  return kube::Quantity::FromNanos(static_cast<kube::Quantity::Nanos>(std::llround(v * 1e9)));
}

Result<ResourceQuantities> ParseList(const Object* status, const char* key,
                                     const std::string& field) {
  const Object* list = nullptr;
  if (status != nullptr && status->is_object()) {
    if (auto it = status->find(key); it != status->end()) list = &*it;
  }
  return kube::ParseResourceList(list, field + "." + key);
}

void SetList(Object& into, const char* key, const ResourceQuantities& q) {
  if (q.empty()) {
    into.erase(key);
  } else {
    into[key] = ToResourceList(q);
  }
}

}  // namespace

Result<PodResources> PodStatusResources(const Object& pod, const NodeGpuMemory& node_gpu_memory) {
  PodResources out;
  const std::string phase = kube::StringAt(pod, {"status", "phase"});
  const bool active = phase == "Pending" || phase == "Running";
  const bool allocated = phase == "Running" || (phase == "Pending" && Scheduled(pod));
  if (!active) return out;  // Succeeded / Failed (or no phase yet) hold and ask for nothing

  static const Object no_spec = Object::object();
  auto spec = pod.find("spec");
  auto requests = kube::PodSpecRequests(spec == pod.end() ? no_spec : *spec);
  if (!requests.ok()) return Error{requests.error()};
  out.requested = requests.value();

  int64_t devices = 1;
  if (!Annotation(pod, kGpuFractionDevicesAnnotation).empty()) {
    auto n = ParseAnnotation(pod, kGpuFractionDevicesAnnotation);
    if (!n.ok()) return Error{n.error()};
    if (n.value().nanos() % 1'000'000'000 != 0) {
      return Error{std::string("metadata.annotations.") + kGpuFractionDevicesAnnotation +
                   ": must be a whole number of devices"};
    }
    devices = n.value().CeilScaled(1);
  }
  std::optional<kube::Quantity> fraction;
  if (!Annotation(pod, kGpuFractionAnnotation).empty()) {
    auto f = ParseAnnotation(pod, kGpuFractionAnnotation);
    if (!f.ok()) return Error{f.error()};
    fraction = f.value();
    out.requested[kGpuResource] += Times(f.value(), devices);
  }
  std::optional<kube::Quantity> memory;
  if (!Annotation(pod, kGpuMemoryAnnotation).empty()) {
    auto m = ParseAnnotation(pod, kGpuMemoryAnnotation);
    if (!m.ok()) return Error{m.error()};
    memory = m.value();
    out.requested[kGpuMemoryResource] += Times(m.value(), devices);
  }

  if (!allocated) return out;
  out.allocated = requests.value();
  if (Annotation(pod, kReceivedTypeAnnotation) == "Fraction") {
    if (fraction) {
      out.allocated[kGpuResource] += *fraction;
    } else if (memory) {
      const std::string node = kube::StringAt(pod, {"spec", "nodeName"});
      std::optional<double> per_device = node_gpu_memory ? node_gpu_memory(node) : std::nullopt;
      if (!per_device || *per_device <= 0) {
        return Error{std::string("metadata.annotations.") + kGpuMemoryAnnotation +
                     ": the share of a device cannot be computed: node \"" + node +
                     "\" has no label " + kNodeGpuMemoryLabel};
      }
      out.allocated[kGpuResource] += FromDouble(memory->Value() / *per_device);
    } else {
      return Error{std::string("metadata.annotations.") + kReceivedTypeAnnotation +
                   ": Fraction, but the pod has neither a gpu-fraction nor a gpu-memory "
                   "annotation"};
    }
  }
  return out;
}

bool IsPreemptible(const std::string& preemptibility, int32_t priority) {
  if (preemptibility == "preemptible") return true;
  if (preemptibility == "non-preemptible") return false;
  return priority < kNonPreemptiblePriority;
}

Object ToResourceList(const ResourceQuantities& q) {
  Object out = Object::object();
  for (const auto& [name, v] : q) out[name] = v.ToString();
  return out;
}

Result<ResourcesStatus> ParseResourcesStatus(const Object* status, const std::string& field) {
  ResourcesStatus s;
  auto requested = ParseList(status, "requested", field);
  if (!requested.ok()) return Error{requested.error()};
  auto allocated = ParseList(status, "allocated", field);
  if (!allocated.ok()) return Error{allocated.error()};
  auto non_preemptible = ParseList(status, "allocatedNonPreemptible", field);
  if (!non_preemptible.ok()) return Error{non_preemptible.error()};
  s.requested = std::move(requested).value();
  s.allocated = std::move(allocated).value();
  s.allocated_non_preemptible = std::move(non_preemptible).value();
  return s;
}

Object ToJson(const ResourcesStatus& s) {
  Object out = Object::object();
  SetList(out, "requested", s.requested);
  SetList(out, "allocated", s.allocated);
  SetList(out, "allocatedNonPreemptible", s.allocated_non_preemptible);
  return out;
}

ResourcesStatus PodGroupResourcesStatus(const std::vector<PodResources>& pods, bool preemptible,
                                        const ResourcesStatus& current) {
  ResourcesStatus s;
  for (const auto& p : pods) {
    kube::AddQuantities(s.requested, p.requested);
    kube::AddQuantities(s.allocated, p.allocated);
  }
  s.allocated_non_preemptible = preemptible ? current.allocated_non_preemptible : s.allocated;
  return s;
}

QueueStatus QueueStatusFrom(std::vector<std::string> child_names,
                            const std::vector<ResourcesStatus>& children,
                            const std::vector<ResourcesStatus>& pod_groups) {
  QueueStatus q;
  std::sort(child_names.begin(), child_names.end());
  q.child_queues = std::move(child_names);
  auto add = [&](const ResourcesStatus& r) {
    kube::AddQuantities(q.resources.requested, r.requested);
    kube::AddQuantities(q.resources.allocated, r.allocated);
    kube::AddQuantities(q.resources.allocated_non_preemptible, r.allocated_non_preemptible);
  };
  for (const auto& c : children) add(c);
  for (const auto& pg : pod_groups) add(pg);
  return q;
}

void SetPodGroupResourcesStatus(Object& pod_group, const ResourcesStatus& s) {
  Object& status = pod_group["status"];
  if (!status.is_object()) status = Object::object();
  Object& rs = status["resourcesStatus"];
  if (!rs.is_object()) rs = Object::object();
  SetList(rs, "requested", s.requested);
  SetList(rs, "allocated", s.allocated);
  SetList(rs, "allocatedNonPreemptible", s.allocated_non_preemptible);
}

void SetQueueStatus(Object& queue, const QueueStatus& s) {
  Object& status = queue["status"];
  if (!status.is_object()) status = Object::object();
  if (s.child_queues.empty()) {
    status.erase("childQueues");
  } else {
    status["childQueues"] = s.child_queues;
  }
  SetList(status, "requested", s.resources.requested);
  SetList(status, "allocated", s.resources.allocated);
  SetList(status, "allocatedNonPreemptible", s.resources.allocated_non_preemptible);
}

Result<QueueStatus> ParseQueueStatus(const Object& queue) {
  QueueStatus q;
  const Object* status = nullptr;
  if (auto it = queue.find("status"); it != queue.end() && it->is_object()) status = &*it;
  auto resources = ParseResourcesStatus(status, "status");
  if (!resources.ok()) return Error{resources.error()};
  q.resources = std::move(resources).value();
  if (status != nullptr) {
    if (auto c = status->find("childQueues"); c != status->end() && !c->is_null()) {
      if (!c->is_array()) return Error{"status.childQueues: must be a list of queue names"};
      for (const auto& name : *c) {
        if (!name.is_string()) return Error{"status.childQueues: must be a list of queue names"};
        q.child_queues.push_back(name.get<std::string>());
      }
      std::sort(q.child_queues.begin(), q.child_queues.end());
    }
  }
  return q;
}

}  // namespace gantry::statusctl
