#include "binder/reconciler.h"

#include <algorithm>

#include "kube/events.h"

namespace gantry::binder {

namespace {

std::string PodKey(const BindRequest& br) { return br.ns + "/" + br.pod_name; }

}  // namespace

Reconciler::NodeLock::NodeLock(Reconciler& r, const std::string& node) : r_(r), node_(node) {
  std::unique_lock<std::mutex> lock(r_.nodes_mu_);
  r_.nodes_cv_.wait(lock, [&] { return r_.held_nodes_.count(node_) == 0; });
  r_.held_nodes_.insert(node_);
}

Reconciler::NodeLock::~NodeLock() {
  {
    std::lock_guard<std::mutex> lock(r_.nodes_mu_);
    r_.held_nodes_.erase(node_);
  }
  r_.nodes_cv_.notify_all();
}

Reconciler::Reconciler(std::shared_ptr<kube::Client> client, BindSteps steps,
                       ReconcilerOptions options)
    : client_(std::move(client)), steps_(std::move(steps)), options_(std::move(options)) {}

ReconcileResult Reconciler::Reconcile(const std::string& ns, const std::string& name) {
  using Next = ReconcileResult::Next;
  auto got = client_->Get(kube::resources::kBindRequests, ns, name);
  if (!got.ok()) {
    if (got.error().IsNotFound()) return {Next::kDone, {}, "success", "deleted"};
    return {Next::kRequeue, {}, "error", "reading the BindRequest: " + got.error().ToString()};
  }
  auto parsed = ParseBindRequest(got.value());
  if (!parsed.ok()) {
    // Unusable: fail it for good so that the scheduler moves on.
    BindRequest br;
    br.ns = ns;
    br.name = name;
    br.resource_version = kube::ResourceVersionOf(got.value());
    const auto& object = got.value();
    if (object.contains("spec") && object["spec"].is_object() &&
        object["spec"].contains("backoffLimit") &&
        object["spec"]["backoffLimit"].is_number_integer()) {
      br.backoff_limit = object["spec"]["backoffLimit"].get<int>();
    }
    if (kube::StringAt(got.value(), {"status", "phase"}) == kPhaseFailed) {
      return {Next::kDone, {}, "success", "invalid and already Failed"};
    }
    Attempt invalid;
    invalid.message = parsed.error();
    invalid.retryable = false;
    return Finish(std::move(got).value(), br, invalid);
  }
  const BindRequest& br = parsed.value();
  if (br.deleting) return {Next::kDone, {}, "success", "being deleted"};
  if (br.Finished()) return {Next::kDone, {}, "success", "already " + br.status.phase};

  Attempt attempt = TryBind(br);
  if (attempt.outcome == Attempt::Outcome::kApiError) {
    return {Next::kRequeue, {}, "error", attempt.message};
  }
  return Finish(std::move(got).value(), br, attempt);
}

Reconciler::Attempt Reconciler::TryBind(const BindRequest& br) {
  Attempt a;
  auto api_error = [&](const std::string& what, const kube::ApiError& e) {
    a.outcome = Attempt::Outcome::kApiError;
    a.message = what + ": " + e.ToString();
    return a;
  };
  auto failed = [&](std::string message, bool retryable) {
    a.outcome = Attempt::Outcome::kFailed;
    a.message = std::move(message);
    a.retryable = retryable;
    return a;
  };
  auto pod = client_->Get(kube::resources::kPods, br.ns, br.pod_name);
  if (!pod.ok()) {
    if (pod.error().IsNotFound()) return failed("pod " + PodKey(br) + " not found", true);
    return api_error("reading pod " + PodKey(br), pod.error());
  }
  a.pod = std::move(pod).value();
  const std::string uid = kube::UidOf(a.pod);
  const std::string bound_to = kube::StringAt(a.pod, {"spec", "nodeName"});
  if (!br.owner_pod_uid.empty() && br.owner_pod_uid != uid) {
    return failed("pod " + PodKey(br) + " was replaced (uid " + uid + ", the request is for " +
                      br.owner_pod_uid + ")",
                  false);
  }
  if (bound_to == br.selected_node) {
    a.outcome = Attempt::Outcome::kBound;
    a.message = "pod " + PodKey(br) + " is already bound to node " + br.selected_node;
    return a;
  }
  if (!bound_to.empty()) {
    return failed(
        "pod " + PodKey(br) + " is bound to node " + bound_to + ", not " + br.selected_node, false);
  }
  if (!kube::StringAt(a.pod, {"metadata", "deletionTimestamp"}).empty()) {
    return failed("pod " + PodKey(br) + " is being deleted", false);
  }

  NodeLock node_lock(*this, br.selected_node);
  auto node = client_->Get(kube::resources::kNodes, "", br.selected_node);
  if (!node.ok()) {
    if (node.error().IsNotFound()) return failed("node " + br.selected_node + " not found", true);
    return api_error("reading node " + br.selected_node, node.error());
  }
  BindAttempt step_attempt{br, a.pod, node.value()};
  size_t completed = 0;
  std::vector<std::string> rollback_errors;
  if (auto err = steps_.PreBind(step_attempt, completed, rollback_errors)) {
    std::string message = err->message;
    for (const auto& r : rollback_errors) message += "; rollback " + r;
    return failed(message, err->retryable);
  }
  auto bound = client_->BindPod(br.ns, br.pod_name, br.selected_node, uid);
  if (!bound.ok()) {
    std::string message = "binding pod " + PodKey(br) + " to node " + br.selected_node + ": " +
                          bound.error().ToString();
    // Bound meanwhile (by an earlier attempt whose answer was lost)?
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
  steps_.PostBind(step_attempt);
  a.outcome = Attempt::Outcome::kBound;
  a.message = "bound pod " + PodKey(br) + " to node " + br.selected_node;
  return a;
}

ReconcileResult Reconciler::Finish(nlohmann::json object, const BindRequest& br,
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
      auto delay = options_.retry_base * (int64_t{1} << std::min(failed - 1, 30));
      result = {Next::kRetryAfter, std::min<kube::Clock::Duration>(delay, options_.retry_max),
                "error",
                "attempt " + std::to_string(failed) + " failed, retrying: " + attempt.message};
    }
  }
  if (!(status == br.status)) {
    object["status"] = StatusJson(status);
    auto written = client_->UpdateStatus(kube::resources::kBindRequests, br.ns, object);
    if (!written.ok()) {
      // Conflict: the request changed since we read it; start over from the new version.
      return {Next::kRequeue,
              {},
              written.error().IsConflict() ? "requeue" : "error",
              "writing the status of BindRequest " + br.Key() + ": " + written.error().ToString()};
    }
    RecordEvent(attempt, br);
  }
  return result;
}

void Reconciler::RecordEvent(const Attempt& attempt, const BindRequest& br) {
  if (!options_.record_events || !attempt.pod.is_object() || attempt.pod.empty()) return;
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
  auto event = kube::MakeEvent(kube::resources::kPods, attempt.pod, info,
                               client_->options().clock->WallNow());
  (void)client_->Create(kube::resources::kEvents, br.ns, event);  // best effort
}

}  // namespace gantry::binder
