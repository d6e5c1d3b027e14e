#include "live/decisions.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "cache/convert.h"
#include "framework/fit_errors.h"
#include "kube/events.h"
#include "kube/time_format.h"
#include "util/json_fields.h"

namespace gantry::live {

namespace {

std::string TwoDecimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string JoinMessages(const std::vector<std::string>& messages) {
  std::string out;
  for (const std::string& m : messages) {
    if (!out.empty()) out += ", ";
    out += m;
  }
  return out;
}

}  // namespace

std::string ReceivedResourceType(const Pod& pod) {
  switch (pod.gpu_kind) {
    case GpuRequestKind::kFraction:
    case GpuRequestKind::kMemory:
      return "Fraction";
    case GpuRequestKind::kMig:
      return "MigInstance";
    default:
      return "Regular";
  }
}

namespace {

// One device of an AllocationResult (resource.k8s.io/v1): its request, driver, pool (the slice's
// pool, else its node, else its name) and device name.
Object DeviceResult(const Cluster& cl, const DeviceRef& d, const std::string& request) {
  const ResourceSlice& s = cl.resource_slices[d.slice];
  const std::string pool = !s.pool.empty()   ? s.pool
                           : s.node != kNone ? cl.nodes[s.node].name
                                             : s.name;
  const std::string device = d.device < static_cast<int32_t>(s.device_names.size())
                                 ? s.device_names[d.device]
                                 : std::to_string(d.device);
  return {{"request", request}, {"driver", s.driver}, {"pool", pool}, {"device", device}};
}

// The node selector Kubernetes' allocator writes for devices on one node.
Object NodeSelectorFor(const std::string& node) {
  return {{"nodeSelectorTerms",
           Object::array({{{"matchFields", Object::array({{{"key", "metadata.name"},
                                                           {"operator", "In"},
                                                           {"values", {node}}}})}}})}};
}

// The devices each of the pod's claims holds in the session (DRA), as resource.k8s.io/v1
// AllocationResults keyed by the pod's name for the claim; devices on one node come with a node
// selector for it, as Kubernetes' allocator writes them.
Object ClaimAllocations(const Session& ssn, const Pod& pod) {
  const Cluster& cl = ssn.cluster();
  Object out = Object::array();
  for (size_t i = 0; i < pod.claims.size() && i < pod.claim_names.size(); ++i) {
    const ResourceClaim& rc = ssn.dra().claim(pod.claims[i]);
    if (!rc.allocated) continue;
    Object results = Object::array();
    std::string node;
    for (size_t k = 0; k < rc.allocation.size(); ++k) {
      const DeviceRef& d = rc.allocation[k];
      results.push_back(
          DeviceResult(cl, d, k < rc.device_requests.size() ? rc.device_requests[k] : ""));
      const ResourceSlice& s = cl.resource_slices[d.slice];
      if (s.node != kNone) node = cl.nodes[s.node].name;
    }
    Object allocation{{"devices", {{"results", results}}}};
    if (!node.empty()) allocation["nodeSelector"] = NodeSelectorFor(node);
    out.push_back({{"name", pod.claim_names[i]}, {"allocation", allocation}});
  }
  return out;
}

// KEP-5004: the special claim of the pod's DRA-backed extended resources on its node, as KAI's
// BindRequest carries it (spec.extendedResourceClaimAllocation): the devices chosen, the
// claim's device requests and the containers' mappings onto them. Null when the pod has none
// there.
Object ExtendedClaimAllocation(const Session& ssn, PodId p, NodeId n) {
  const Cluster& cl = ssn.cluster();
  const ExtendedClaim* claim = ssn.dra().extended(p);
  if (claim == nullptr || claim->devices.empty()) return nullptr;
  const Pod& pod = cl.pods[p];
  std::vector<std::pair<std::string, Object>> requests;  // by name
  Object mappings = Object::array();
  for (const DraExtendedResource* e : ExtendedResourcesNeedingDra(pod, cl.nodes[n])) {
    for (const ExtendedDeviceRequest& r : e->requests) {
      requests.emplace_back(r.name, Object{{"name", r.name},
                                           {"exactly",
                                            {{"deviceClassName", e->device_class},
                                             {"allocationMode", "ExactCount"},
                                             {"count", r.count}}}});
    }
    for (const ExtendedResourceMapping& m : e->mappings) {
      mappings.push_back({{"containerName", m.container},
                          {"resourceName", e->resource},
                          {"requestName", m.request}});
    }
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Object device_requests = Object::array();
  for (auto& [name, r] : requests) device_requests.push_back(std::move(r));
  Object results = Object::array();
  bool node_local = false;
  for (size_t k = 0; k < claim->devices.size(); ++k) {
    const DeviceRef& d = claim->devices[k];
    results.push_back(DeviceResult(cl, d, claim->requests[k]));
    node_local = node_local || cl.resource_slices[d.slice].node != kNone;
  }
  Object allocation{{"devices", {{"results", results}}}};
  if (node_local) allocation["nodeSelector"] = NodeSelectorFor(cl.nodes[n].name);
  return Object{{"allocation", std::move(allocation)},
                {"deviceRequests", std::move(device_requests)},
                {"containerMappings", std::move(mappings)}};
}

}  // namespace

Object MakeBindRequest(const Session& ssn, const BindDecision& bind, int32_t backoff_limit,
                       const cache::NodePool& pool) {
  const Cluster& cl = ssn.cluster();
  const Pod& pod = cl.pods[bind.pod];
  int64_t count = 0;
  double portion = 0;
  switch (pod.gpu_kind) {
    case GpuRequestKind::kWhole:
      count = static_cast<int64_t>(pod.request.gpus);
      portion = 1;
      break;
    case GpuRequestKind::kFraction:
      count = std::max(1, pod.gpu_devices);
      portion = pod.gpu_fraction;
      break;
    case GpuRequestKind::kMemory:
      // The share of each device the GPU memory amounts to on the chosen node.
      count = std::max(1, pod.gpu_devices);
      portion = ssn.AcceptedGpus(bind.pod) / static_cast<double>(count);
      break;
    default:
      break;
  }
  Object spec{{"podName", pod.name},
              {"selectedNode", cl.nodes[bind.node].name},
              {"receivedResourceType", ReceivedResourceType(pod)},
              {"receivedGPU", {{"count", count}, {"portion", TwoDecimals(portion)}}},
              {"backoffLimit", backoff_limit}};
  if (!bind.gpu_groups.empty()) spec["selectedGPUGroups"] = bind.gpu_groups;
  if (!pod.claim_names.empty()) spec["resourceClaimAllocations"] = ClaimAllocations(ssn, pod);
  if (!pod.dra_extended.empty()) {
    if (Object ext = ExtendedClaimAllocation(ssn, bind.pod, bind.node); !ext.is_null()) {
      spec["extendedResourceClaimAllocation"] = std::move(ext);
    }
  }
  Object labels{{"selected-node", cl.nodes[bind.node].name}};
  if (!pool.label_key.empty() && !pool.value.empty()) labels[pool.label_key] = pool.value;
  return Object{
      {"apiVersion", "scheduling.run.ai/v1alpha2"},
      {"kind", "BindRequest"},
      {"metadata",
       {{"name", pod.name},
        {"namespace", pod.namespace_},
        {"labels", std::move(labels)},
        {"ownerReferences",
         Object::array(
             {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod.name}, {"uid", pod.uid}}})}}},
      {"spec", spec}};
}

Object EvictionConditionPatch(const std::string& message, const std::string& now) {
  return kube::PodConditionPatch("DisruptionTarget", "True", "PreemptionByScheduler", message, now);
}

std::string UnschedulableMessage(const Session& ssn, JobId job) {
  const JobState& js = ssn.job_state(job);
  if (js.fit_errors.empty()) return kDefaultPodGroupError;
  return RenderJobFitErrors(js.fit_errors);
}

std::string NotReadyMessage(const Session& ssn, JobId job) {
  const Job& j = ssn.cluster().jobs[job];
  std::string message = "Job is not ready for scheduling.";
  for (int32_t s = 0; s < static_cast<int32_t>(j.pod_sets.size()); ++s) {
    const PodSetCounters& c = ssn.counters(job, s);
    const PodSet& ps = j.pod_sets[s];
    if (c.alive - c.gated >= ps.min_available) continue;
    if (ps.name == "default") {
      message += " Waiting for " + std::to_string(ps.min_available) + " pods, currently " +
                 std::to_string(c.alive) + " exist, " + std::to_string(c.gated) + " are gated";
    } else {
      message += " Waiting for " + std::to_string(ps.min_available) + " pods for SubGroup " +
                 ps.name + ", currently " + std::to_string(c.alive) + " exist, " +
                 std::to_string(c.gated) + " are gated.";
    }
  }
  return message;
}

std::string PodUnschedulableMessage(const Session& ssn, PodId pod) {
  const JobState& js = ssn.job_state(ssn.cluster().pods[pod].job);
  if (auto it = js.task_fit_errors.find(pod);
      it != js.task_fit_errors.end() && !it->second.empty()) {
    return it->second.Render();
  }
  if (!js.fit_errors.empty()) return RenderJobFitErrors(js.fit_errors);
  return kDefaultPodError;
}

std::optional<Object> PodUnschedulablePatch(const Object& pod, const std::string& message,
                                            const std::string& now) {
  const Object* conditions = nullptr;
  if (pod.contains("status") && pod["status"].is_object() && pod["status"].contains("conditions")) {
    conditions = &pod["status"]["conditions"];
  }
  if (conditions && conditions->is_array()) {
    for (const Object& c : *conditions) {
      if (c.is_object() && StringOr(c, "type") == "PodScheduled" &&
          StringOr(c, "status") == "False" && StringOr(c, "reason") == "Unschedulable" &&
          StringOr(c, "message") == message) {
        return std::nullopt;
      }
    }
  }
  return kube::PodConditionPatch("PodScheduled", "False", "Unschedulable", message, now);
}

bool LeftPending(const Session& ssn, JobId job) {
  const Cluster& cl = ssn.cluster();
  bool had_pending = false;
  for (PodId p : cl.jobs[job].pods) {
    const PodStatus before = cl.pods[p].status;
    if (before != PodStatus::kPending) continue;
    had_pending = true;
    const PodStatus now = ssn.pod(p).status;
    if (now != PodStatus::kPending) return false;  // placed or pipelined this cycle
  }
  return had_pending;
}

namespace {

// KAI's GetLastSchedulingCondition: the condition with the highest transitionID (one that is not
// a number counts as -1), the first of equals; -1 when there is none. `id` gets its ID.
int64_t LastConditionIndex(const Object& conditions, int64_t& id) {
  int64_t last = -1;
  id = 0;
  for (size_t i = 0; i < conditions.size(); ++i) {
    const Object& c = conditions[i];
    if (!c.is_object()) continue;
    const std::string text = StringOr(c, "transitionID");
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) v = -1;
    if (last == -1 || v > id) {
      last = static_cast<int64_t>(i);
      id = v;
    }
  }
  return last;
}

const Object& ConditionsOf(const Object& status) {
  static const Object none = Object::array();
  if (!status.is_object()) return none;
  const auto it = status.find("schedulingConditions");
  return it != status.end() && it->is_array() ? *it : none;
}

}  // namespace

std::string NodePoolOf(const Object& podgroup, std::string_view label_key) {
  const auto meta = podgroup.find("metadata");
  if (meta == podgroup.end() || !meta->is_object()) return kDefaultNodePool;
  const auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return kDefaultNodePool;
  std::string pool = StringOr(*labels, label_key);
  return pool.empty() ? std::string(kDefaultNodePool) : pool;
}

std::string NodePoolPrefix(const Object& podgroup, const std::string& pool) {
  const auto spec = podgroup.find("spec");
  if (spec == podgroup.end() || !spec->is_object()) return {};
  const auto backoff = spec->find("schedulingBackoff");
  if (backoff == spec->end() || !backoff->is_number_integer() || backoff->get<int64_t>() != 1) {
    return {};
  }
  return "Node-Pool '" + pool + "': ";
}

std::optional<Object> UnschedulableStatusPatch(const Session& ssn, JobId job,
                                               const Object& current_status,
                                               const std::string& node_pool,
                                               const std::string& message, const std::string& now) {
  // As KAI: a job with pods already allocated keeps its condition (only the event is recorded).
  if (ssn.NumActiveAllocated(job) > 0) return std::nullopt;
  const Object& conditions = ConditionsOf(current_status);
  int64_t last_id = 0;
  const int64_t last = LastConditionIndex(conditions, last_id);
  // KAI compares with the latest condition (by transitionID) and writes nothing when it is the
  // same and is also this pool's first condition and the last in the list (older readers take
  // the list's last entry as the newest).
  if (last >= 0) {
    const Object& c = conditions[static_cast<size_t>(last)];
    const bool same = StringOr(c, "type") == kUnschedulableOnNodePool &&
                      StringOr(c, "nodePool") == node_pool &&
                      StringOr(c, "reason") == kUnschedulableReason &&
                      StringOr(c, "message") == message && StringOr(c, "status") == "True";
    size_t own = conditions.size();
    for (size_t i = 0; i < conditions.size(); ++i) {
      if (conditions[i].is_object() && StringOr(conditions[i], "nodePool") == node_pool) {
        own = i;
        break;
      }
    }
    if (same && own + 1 == conditions.size()) return std::nullopt;
  }
  Object reasons = Object::array();
  for (const JobFitError& e : ssn.job_state(job).fit_errors) {
    reasons.push_back({{"reason", e.reason}, {"message", JoinMessages(e.messages)}});
  }
  Object condition{{"type", kUnschedulableOnNodePool},
                   {"nodePool", node_pool},
                   {"reason", kUnschedulableReason},
                   {"message", message},
                   {"status", "True"},
                   {"transitionID", std::to_string(std::max<int64_t>(last_id, 0) + 1)},
                   {"lastTransitionTime", now}};
  if (!reasons.empty()) condition["reasons"] = reasons;
  // Other node pools' conditions (other scheduler shards) are kept; this pool's are squashed
  // into the new one, appended last. A merge patch replaces the whole list, so it is all written.
  Object list = Object::array();
  for (const Object& c : conditions) {
    if (c.is_object() && StringOr(c, "nodePool") != node_pool) list.push_back(c);
  }
  list.push_back(std::move(condition));
  return Object{{"status", {{"schedulingConditions", std::move(list)}}}};
}

std::optional<Object> ClearConditionsPatch(const Session& ssn, JobId job,
                                           const Object& current_status) {
  if (ConditionsOf(current_status).empty()) return std::nullopt;
  for (PodId p : ssn.cluster().jobs[job].pods) {
    switch (ssn.pod(p).status) {
      case PodStatus::kPending:
      case PodStatus::kGated:
      case PodStatus::kAllocated:
      case PodStatus::kPipelined:
      case PodStatus::kBinding:
        return std::nullopt;  // still waiting, or its bind not yet confirmed
      default:
        break;
    }
  }
  return Object{{"status", {{"schedulingConditions", nullptr}}}};
}

std::optional<Object> JobTimesPatch(const Session& ssn, JobId job) {
  const Job& read = ssn.cluster().jobs[job];
  const JobState& state = ssn.job_state(job);
  auto seconds = [](const std::optional<int64_t>& ms) -> std::optional<int64_t> {
    if (!ms) return std::nullopt;
    return *ms >= 0 ? *ms / 1000 : -((999 - *ms) / 1000);  // floor
  };
  Object annotations = Object::object();
  for (auto [key, now, was] :
       {std::tuple{cache::kLastStartAnnotation, &state.last_start_ms, &read.last_start_ms},
        std::tuple{cache::kStaleSinceAnnotation, &state.stale_since_ms, &read.stale_since_ms}}) {
    const std::optional<int64_t> s = seconds(*now);
    if (s == seconds(*was)) continue;
    if (!s) {
      annotations[key] = nullptr;
      continue;
    }
    annotations[key] =
        kube::FormatTime(std::chrono::system_clock::time_point(std::chrono::seconds(*s)));
  }
  if (annotations.empty()) return std::nullopt;
  return Object{{"metadata", {{"annotations", std::move(annotations)}}}};
}

const std::string& JobMemory::KeyOf(const Job& job) {
  key_.clear();
  key_ += job.namespace_;
  key_ += '/';
  key_ += job.name;
  key_ += '/';
  key_ += std::to_string(job.creation_ms);
  return key_;
}

void JobMemory::Restore(Session& ssn, uint64_t layout) {
  const Cluster& cl = ssn.cluster();
  const JobId n = static_cast<JobId>(cl.jobs.size());
  if (layout == 0 || layout != layout_ || by_id_.size() != cl.jobs.size()) {
    // Re-key: the jobs present, by id; the others are forgotten.
    by_id_.assign(cl.jobs.size(), Facts{});
    std::unordered_map<std::string, Entry> present;
    if (!jobs_.empty()) {
      for (JobId j = 0; j < n; ++j) {
        auto it = jobs_.find(KeyOf(cl.jobs[j]));
        if (it == jobs_.end()) continue;
        by_id_[j] = it->second.facts;
        if (layout != 0) present.insert(jobs_.extract(it));
      }
    }
    if (layout != 0) jobs_ = std::move(present);
    layout_ = layout;
  }
  if (jobs_.empty()) return;
  for (JobId j = 0; j < n; ++j) {
    if (by_id_[j].empty()) continue;
    JobState& state = ssn.job_state(j);
    state.last_start_ms = by_id_[j].last_start_ms;
    state.stale_since_ms = by_id_[j].stale_since_ms;
  }
}

void JobMemory::Record(const Session& ssn, uint64_t layout) {
  const Cluster& cl = ssn.cluster();
  const JobId n = static_cast<JobId>(cl.jobs.size());
  if (layout != 0 && layout == layout_ && by_id_.size() == cl.jobs.size()) {
    // Same jobs as restored: only the changed facts touch the map.
    for (JobId j = 0; j < n; ++j) {
      const JobState& state = ssn.job_state(j);
      const Facts now{state.last_start_ms, state.stale_since_ms};
      if (now == by_id_[j]) continue;
      by_id_[j] = now;
      const std::string& key = KeyOf(cl.jobs[j]);
      if (now.empty()) {
        jobs_.erase(key);
      } else {
        jobs_[key].facts = now;
      }
    }
    return;
  }
  ++records_;
  for (JobId j = 0; j < n; ++j) {
    const JobState& state = ssn.job_state(j);
    if (!state.last_start_ms && !state.stale_since_ms) continue;
    const std::string& key = KeyOf(cl.jobs[j]);
    auto it = jobs_.find(key);
    if (it == jobs_.end()) it = jobs_.emplace(key, Entry{}).first;
    it->second = {{state.last_start_ms, state.stale_since_ms}, records_};
  }
  std::erase_if(jobs_, [&](const auto& entry) { return entry.second.recorded != records_; });
  layout_ = 0;  // by_id_ no longer matches
}

}  // namespace gantry::live
