#include "binder/reconciler.h"

#include <algorithm>

#include "binder/gpu_sharing_step.h"
#include "kube/events.h"
#include "kube/rate_limiter.h"
#include "kube/time_format.h"

namespace gantry::binder {

namespace {

std::string PodKey(const BindRequest& br) { return br.ns + "/" + br.pod_name; }

}  // namespace

Reconciler::Reconciler(std::shared_ptr<kube::Client> client, BinderCache& cache, BindSteps steps,
                       ReconcilerOptions options)
    : client_(std::move(client)),
      cache_(cache),
      steps_(std::move(steps)),
      options_(std::move(options)) {}

ReconcileResult Reconciler::Reconcile(const std::string& ns, const std::string& name) {
  using Next = ReconcileResult::Next;
  // Keys come from the cache's events, so a request the cache lacks has been deleted.
  kube::ObjectPtr cached = cache_.BindRequest(ns, name);
  if (cached == nullptr) return {Next::kDone, {}, "success", "deleted"};
  const kube::Object& object = *cached;
  auto parsed = ParseBindRequest(object);
  if (!parsed.ok()) {
    // Unusable: fail it for good so that the scheduler moves on.
    BindRequest br;
    br.ns = ns;
    br.name = name;
    br.resource_version = kube::ResourceVersionOf(object);
    if (object.contains("spec") && object["spec"].is_object() &&
        object["spec"].contains("backoffLimit") &&
        object["spec"]["backoffLimit"].is_number_integer()) {
      br.backoff_limit = object["spec"]["backoffLimit"].get<int>();
    }
    if (kube::StringAt(object, {"status", "phase"}) == kPhaseFailed) {
      return {Next::kDone, {}, "success", "invalid and already Failed"};
    }
    Attempt invalid;
    invalid.message = parsed.error();
    invalid.retryable = false;
    return Finish(object, br, invalid);
  }
  const BindRequest& br = parsed.value();
  if (br.deleting) return {Next::kDone, {}, "success", "being deleted"};
  if (br.Finished()) return {Next::kDone, {}, "success", "already " + br.status.phase};

  Attempt attempt = TryBind(br);
  if (attempt.outcome == Attempt::Outcome::kApiError) {
    return {Next::kRequeue, {}, "error", attempt.message};
  }
  if (attempt.outcome == Attempt::Outcome::kCacheMiss) {
    return {Next::kRetryAfter, options_.cache_miss_delay, "requeue_after", attempt.message};
  }
  return Finish(object, br, attempt);
}

kube::ObjectPtr Reconciler::Lookup(const kube::ResourceType& type, const std::string& ns,
                                   const std::string& name, const std::string& what,
                                   Attempt& attempt) {
  // Pods and nodes are the only objects looked up.
  const std::string miss_key = type.resource + " " + kube::ObjectKey(ns, name);
  kube::ObjectPtr found =
      type.resource == kube::resources::kPods.resource ? cache_.Pod(ns, name) : cache_.Node(name);
  if (found != nullptr) {
    std::lock_guard<std::mutex> lock(misses_mu_);
    if (!missed_once_.empty()) missed_once_.erase(miss_key);
    return found;
  }
  {
    std::lock_guard<std::mutex> lock(misses_mu_);
    // Entries of requests deleted while waiting are never looked up again: keep the set bounded
    // (forgetting one only costs a second short wait).
    if (missed_once_.size() >= 100'000) missed_once_.clear();
    if (missed_once_.insert(miss_key).second) {
      attempt.outcome = Attempt::Outcome::kCacheMiss;
      attempt.message = what + " is not in the cache yet";
      return nullptr;
    }
    missed_once_.erase(miss_key);
  }
  auto got = client_->Get(type, ns, name);
  if (got.ok()) return std::make_shared<const kube::Object>(std::move(got).value());
  if (got.error().IsNotFound()) {
    attempt.outcome = Attempt::Outcome::kFailed;
    attempt.message = what + " not found";
    attempt.retryable = true;
  } else {
    attempt.outcome = Attempt::Outcome::kApiError;
    attempt.message = "reading " + what + ": " + got.error().ToString();
  }
  return nullptr;
}

std::optional<Reconciler::Attempt> Reconciler::JudgePod(const BindRequest& br,
                                                        const kube::Object& pod,
                                                        const std::string& assumed_node) const {
  Attempt a;
  auto failed = [&](std::string message) {
    a.outcome = Attempt::Outcome::kFailed;
    a.message = std::move(message);
    a.retryable = false;
    return a;
  };
  const std::string uid = kube::UidOf(pod);
  std::string bound_to = kube::StringAt(pod, {"spec", "nodeName"});
  if (bound_to.empty()) bound_to = assumed_node;
  if (!br.owner_pod_uid.empty() && br.owner_pod_uid != uid) {
    return failed("pod " + PodKey(br) + " was replaced (uid " + uid + ", the request is for " +
                  br.owner_pod_uid + ")");
  }
  if (bound_to == br.selected_node) {
    a.outcome = Attempt::Outcome::kBound;
    a.message = "pod " + PodKey(br) + " is already bound to node " + br.selected_node;
    return a;
  }
  if (!bound_to.empty()) {
    return failed("pod " + PodKey(br) + " is bound to node " + bound_to + ", not " +
                  br.selected_node);
  }
  if (!kube::StringAt(pod, {"metadata", "deletionTimestamp"}).empty()) {
    return failed("pod " + PodKey(br) + " is being deleted");
  }
  return std::nullopt;
}

Reconciler::Attempt Reconciler::TryBind(const BindRequest& br) {
  Attempt a;
  auto failed = [&](std::string message, bool retryable) {
    a.outcome = Attempt::Outcome::kFailed;
    a.message = std::move(message);
    a.retryable = retryable;
    return a;
  };
  a.pod = Lookup(kube::resources::kPods, br.ns, br.pod_name, "pod " + PodKey(br), a);
  if (a.pod == nullptr) return a;
  if (auto judged =
          JudgePod(br, *a.pod, cache_.AssumedNode(br.ns, br.pod_name, kube::UidOf(*a.pod)))) {
    if (judged->outcome == Attempt::Outcome::kBound) {
      judged->pod = a.pod;
      return *judged;
    }
    // Giving up for good on what the cache says: confirm with the API server first (the cache
    // may hold an earlier pod of the same name, or be behind).
    auto live = client_->Get(kube::resources::kPods, br.ns, br.pod_name);
    if (!live.ok()) {
      if (live.error().IsNotFound()) return failed("pod " + PodKey(br) + " not found", true);
      a.outcome = Attempt::Outcome::kApiError;
      a.message = "reading pod " + PodKey(br) + ": " + live.error().ToString();
      return a;
    }
    a.pod = std::make_shared<const kube::Object>(std::move(live).value());
    if (auto confirmed = JudgePod(br, *a.pod, "")) {
      confirmed->pod = a.pod;
      return *confirmed;
    }
  }
  const std::string uid = kube::UidOf(*a.pod);

  NameLock node_lock(node_locks_, br.selected_node);
  kube::ObjectPtr node =
      Lookup(kube::resources::kNodes, "", br.selected_node, "node " + br.selected_node, a);
  if (node == nullptr) return a;
  BindAttempt step_attempt{br, *a.pod, *node};
  size_t completed = 0;
  std::vector<std::string> rollback_errors;
  if (auto err = steps_.PreBind(step_attempt, completed, rollback_errors)) {
    std::string message = err->message;
    for (const auto& r : rollback_errors) message += "; rollback " + r;
    return failed(message, err->retryable);
  }
  // KAI's binder patches the annotation received-resource-type onto every pod before binding it
  // (a write of its own); here the Binding carries it and the API server adds it to the pod
  // with the bind, at no extra request.
  const kube::Object annotations = {{kReceivedResourceTypeAnnotation, br.received_resource_type}};
  auto bound = client_->BindPod(br.ns, br.pod_name, br.selected_node, uid, annotations);
  if (!bound.ok()) {
    std::string message = "binding pod " + PodKey(br) + " to node " + br.selected_node + ": " +
                          bound.error().ToString();
    // Bound meanwhile (by an earlier attempt whose answer was lost, or one the cache did not
    // show yet)?
    auto again = client_->Get(kube::resources::kPods, br.ns, br.pod_name);
    bool done = again.ok() && kube::UidOf(again.value()) == uid &&
                kube::StringAt(again.value(), {"spec", "nodeName"}) == br.selected_node;
    if (!done) {
      for (const auto& r : steps_.Rollback(step_attempt, completed)) message += "; rollback " + r;
      bool transport = bound.error().IsTransport() || bound.error().IsServerError() ||
                       bound.error().IsTooManyRequests();
      if (transport) {
        a.outcome = Attempt::Outcome::kApiError;
        a.message = message;
        return a;
      }
      return failed(message, true);
    }
  }
  // Before the node is released: the next room check on it counts this pod.
  cache_.AssumeBound(*a.pod, br.selected_node);
  steps_.PostBind(step_attempt);
  a.outcome = Attempt::Outcome::kBound;
  a.message = "bound pod " + PodKey(br) + " to node " + br.selected_node;
  return a;
}

ReconcileResult Reconciler::Finish(const kube::Object& cached, const BindRequest& br,
                                   const Attempt& attempt) {
  using Next = ReconcileResult::Next;
  BindRequestStatus status = br.status;
  ReconcileResult result;
  if (attempt.outcome == Attempt::Outcome::kBound) {
    status.phase = kPhaseSucceeded;
    status.reason.clear();
    result = {Next::kDone, {}, "success", attempt.message};
  } else {
    int failed = status.failed_attempts + 1;
    bool give_up = !attempt.retryable || failed > br.Retries();
    status.reason = attempt.message;
    if (give_up) {
      status.phase = kPhaseFailed;
      status.failed_attempts = std::max(failed, br.Retries() + 1);
      result = {
          Next::kDone,
          {},
          "error",
          "failed for good after " + std::to_string(failed) + " attempt(s): " + attempt.message};
    } else {
      status.phase = kPhasePending;
      status.failed_attempts = failed;
      const kube::BackoffPolicy retries{options_.retry_base, options_.retry_max, 2.0, 0.0};
      result = {Next::kRetryAfter, kube::BackoffDelay(retries, failed), "error",
                "attempt " + std::to_string(failed) + " failed, retrying: " + attempt.message};
    }
  }
  if (!(status == br.status)) {
    kube::Object object = cached;
    object["status"] = StatusJson(status);
    auto written = client_->UpdateStatus(kube::resources::kBindRequests, br.ns, object);
    if (!written.ok()) {
      // Conflict: the request changed since the cached version (or the cache is behind our own
      // last write); start over from the newer version.
      return {Next::kRequeue,
              {},
              written.error().IsConflict() ? "requeue" : "error",
              "writing the status of BindRequest " + br.Key() + ": " + written.error().ToString()};
    }
    cache_.StatusWritten(written.value(), br.resource_version);
    RecordEvent(attempt, br);
  }
  return result;
}

void Reconciler::RecordEvent(const Attempt& attempt, const BindRequest& br) {
  if (!options_.record_events || attempt.pod == nullptr || !attempt.pod->is_object() ||
      attempt.pod->empty()) {
    return;
  }
  kube::EventInfo info;
  info.component = options_.event_component;
  if (attempt.outcome == Attempt::Outcome::kBound) {
    info.reason = "Bound";
    info.message = "Pod bound successfully to node " + br.selected_node;
  } else {
    info.type = "Warning";
    info.reason = "BindingError";
    info.message = "Failed to bind pod " + PodKey(br) + " to node " + br.selected_node + ": " +
                   attempt.message;
  }
  const auto now = client_->options().clock->WallNow();
  auto event = kube::MakeEvent(kube::resources::kPods, *attempt.pod, info, now);
  if (options_.send_event) {
    options_.send_event(std::move(event));
  } else {
    (void)client_->Create(kube::resources::kEvents, br.ns, event);  // best effort
  }
  // KAI's binder also records the outcome as the pod condition PodBound.
  const bool bound = attempt.outcome == Attempt::Outcome::kBound;
  kube::Object patch = kube::PodConditionPatch("PodBound", bound ? "True" : "False", info.reason,
                                               info.message, kube::FormatTime(now));
  if (options_.patch_pod_status) {
    options_.patch_pod_status(br.ns, br.pod_name, std::move(patch));
  } else {
    (void)client_->Patch(kube::resources::kPods, br.ns, br.pod_name,
                         kube::PatchType::kStrategicMerge, patch, "status");  // best effort
  }
}

}  // namespace gantry::binder
