// Carrying out one BindRequest: one attempt per call, reading everything fresh from the API.
//
// An attempt reads the BindRequest (nothing to do when it is gone, being deleted, Succeeded or
// Failed for good), the pod and the node, then:
//   - pod already bound to the selected node        -> Succeeded (a repeated attempt is harmless)
//   - pod bound to another node, being deleted, or not the pod the request's ownerReference
//     names (same name, new uid)                    -> Failed at once
//   - pod or node missing                           -> a failed attempt (retried)
//   - otherwise: the steps' PreBind (validation, node room; steps.h), then pods/binding with the
//     pod's uid as precondition (a replaced pod makes it fail), then PostBind; a failure rolls
//     the completed steps back. A bind refused because the pod is bound by now to the selected
//     node counts as success.
// A failed attempt increments status.failedAttempts and is retried after
// retry_base * 2^(failedAttempts - 1) (capped at retry_max) while failedAttempts <= backoffLimit,
// with phase Pending and the error as reason; then phase Failed (bind_request.h).
// Errors talking to the API (other than NotFound) are not attempts: they are retried with the
// work queue's backoff and change no status.
//
// The status is written through the status subresource, conditional on the resourceVersion read
// at the start (a concurrent change makes the attempt start over), and only when it changes.
// Pod events "Bound" / "BindingError" are recorded as KAI's binder does. Binds to the same node
// are serialised so that their room checks see each other.
//
// Thread-safe: workers call Reconcile concurrently for different requests.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "binder/bind_request.h"
#include "binder/steps.h"
#include "kube/client.h"

namespace gantry::binder {

struct ReconcilerOptions {
  kube::Clock::Duration retry_base = std::chrono::seconds(1);
  kube::Clock::Duration retry_max = std::chrono::minutes(5);
  // source.component of the pod events.
  std::string event_component = "binder";
  bool record_events = true;
};

struct ReconcileResult {
  enum class Next {
    kDone,        // nothing more to do for now (an update of the object may bring it back)
    kRetryAfter,  // a failed attempt: try again after `after`
    kRequeue,     // the API failed or the object changed meanwhile: try again with backoff
  };
  Next next = Next::kDone;
  kube::Clock::Duration after{0};
  // controller-runtime's result label: success, error, requeue, requeue_after.
  std::string metric_result;
  // What happened, for the log ("bound ns/pod to node", "attempt 2 failed: ...").
  std::string message;
};

class Reconciler {
 public:
  Reconciler(std::shared_ptr<kube::Client> client, BindSteps steps, ReconcilerOptions options = {});

  ReconcileResult Reconcile(const std::string& ns, const std::string& name);

 private:
  struct Attempt {
    enum class Outcome { kBound, kFailed, kApiError } outcome = Outcome::kFailed;
    std::string message;
    bool retryable = true;
    nlohmann::json pod;  // when read
  };
  Attempt TryBind(const BindRequest& br);
  ReconcileResult Finish(nlohmann::json object, const BindRequest& br, const Attempt& attempt);
  void RecordEvent(const Attempt& attempt, const BindRequest& br);

  // Exclusive use of one node name while alive.
  class NodeLock {
   public:
    NodeLock(Reconciler& r, const std::string& node);
    ~NodeLock();

   private:
    Reconciler& r_;
    std::string node_;
  };

  std::shared_ptr<kube::Client> client_;
  BindSteps steps_;
  ReconcilerOptions options_;
  std::mutex nodes_mu_;
  std::condition_variable nodes_cv_;
  std::set<std::string> held_nodes_;
};

}  // namespace gantry::binder
