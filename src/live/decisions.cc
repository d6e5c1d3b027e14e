#include "live/decisions.h"

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
      const ResourceSlice& s = cl.resource_slices[d.slice];
      const std::string pool = !s.pool.empty()   ? s.pool
                               : s.node != kNone ? cl.nodes[s.node].name
                                                 : s.name;
      const std::string device = d.device < static_cast<int32_t>(s.device_names.size())
                                     ? s.device_names[d.device]
                                     : std::to_string(d.device);
      const std::string request = k < rc.device_requests.size() ? rc.device_requests[k] : "";
      results.push_back(
          {{"request", request}, {"driver", s.driver}, {"pool", pool}, {"device", device}});
      if (s.node != kNone) node = cl.nodes[s.node].name;
    }
    Object allocation{{"devices", {{"results", results}}}};
    if (!node.empty()) {
      allocation["nodeSelector"] = {
          {"nodeSelectorTerms",
           Object::array({{{"matchFields", Object::array({{{"key", "metadata.name"},
                                                           {"operator", "In"},
                                                           {"values", {node}}}})}}})}};
    }
    out.push_back({{"name", pod.claim_names[i]}, {"allocation", allocation}});
  }
  return out;
}

}  // namespace

Object MakeBindRequest(const Session& ssn, const BindDecision& bind, int32_t backoff_limit) {
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
  return Object{
      {"apiVersion", "scheduling.run.ai/v1alpha2"},
      {"kind", "BindRequest"},
      {"metadata",
       {{"name", pod.name},
        {"namespace", pod.namespace_},
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

std::optional<Object> UnschedulableStatusPatch(const Session& ssn, JobId job,
                                               const Object& current_status,
                                               const std::string& message, const std::string& now) {
  // As KAI: a job with pods already allocated keeps its condition (only the event is recorded).
  if (ssn.NumActiveAllocated(job) > 0) return std::nullopt;
  int64_t transition = 0;
  if (current_status.is_object() && current_status.contains("schedulingConditions") &&
      current_status["schedulingConditions"].is_array()) {
    for (const Object& c : current_status["schedulingConditions"]) {
      if (!c.is_object() || StringOr(c, "type") != kUnschedulableOnNodePool) continue;
      if (StringOr(c, "message") == message && StringOr(c, "status") == "True") {
        return std::nullopt;
      }
      try {
        transition = std::stoll(StringOr(c, "transitionID", "0"));
      } catch (...) {
        transition = 0;
      }
    }
  }
  Object reasons = Object::array();
  for (const JobFitError& e : ssn.job_state(job).fit_errors) {
    reasons.push_back({{"reason", e.reason}, {"message", JoinMessages(e.messages)}});
  }
  Object condition{{"type", kUnschedulableOnNodePool},
                   {"nodePool", kDefaultNodePool},
                   {"reason", kUnschedulableReason},
                   {"message", message},
                   {"status", "True"},
                   {"transitionID", std::to_string(transition + 1)},
                   {"lastTransitionTime", now}};
  if (!reasons.empty()) condition["reasons"] = reasons;
  return Object{{"status", {{"schedulingConditions", Object::array({condition})}}}};
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
