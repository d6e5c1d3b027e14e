// Carrying out one BindRequest: one attempt per call, reading the BindRequest, its pod and its
// node from the binder's watch caches (cache.h); only writes go to the API server.
//
// An attempt takes the BindRequest from the cache (nothing to do when it is gone, being deleted,
// Succeeded or Failed for good), then its pod and node, then:
//   - pod already bound to the selected node (by the cache, or by a bind of this binder the cache
//     does not show yet)                            -> Succeeded (a repeated attempt is harmless)
//   - pod bound to another node, being deleted, or not the pod the request's ownerReference
//     names (same name, new uid)                    -> Failed at once; the cache may be behind,
//                                                      so the pod is read from the API server to
//                                                      confirm before giving up
//   - pod or node missing                           -> a failed attempt (retried)
//   - otherwise: the steps' PreBind (validation, node room; steps.h), then pods/binding with the
//     pod's uid as precondition (a replaced pod makes it fail) and KAI's annotation
//     `received-resource-type: <spec.receivedResourceType>` (the API server copies a Binding's
//     annotations onto the pod), then PostBind; a failure rolls the completed steps back. A bind
//     refused because the pod is bound by now to the selected node (read from the API server)
//     counts as success.
// A pod or node the cache does not have may just not have arrived yet: the first time, the
// request is tried again after cache_miss_delay (no attempt, no status change); the next time,
// the object is read from the API server, and only if it is not there either is it missing.
//
// A failed attempt increments status.failedAttempts and is retried after
// retry_base * 2^(failedAttempts - 1) (capped at retry_max) while failedAttempts <= backoffLimit,
// with phase Pending and the error as reason; then phase Failed (bind_request.h).
// Errors talking to the API (other than NotFound) are not attempts: they are retried with the
// work queue's backoff and change no status.
//
// The status is written through the status subresource, conditional on the resourceVersion of
// the cached BindRequest (a concurrent change, or a cache behind our own last write, makes the
// write conflict and the attempt start over), and only when it changes. Pod events "Bound" /
// "BindingError" are recorded as KAI's binder does. Binds to the same node are serialised so
// that their room checks see each other.
//
// API calls of a successful first-time bind: pods/binding, the status write, the event.
//
// Thread-safe: workers call Reconcile concurrently for different requests.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "binder/bind_request.h"
#include "binder/cache.h"
#include "binder/name_locks.h"
#include "binder/steps.h"
#include "kube/client.h"

namespace gantry::binder {

struct ReconcilerOptions {
  kube::Clock::Duration retry_base = std::chrono::seconds(1);
  kube::Clock::Duration retry_max = std::chrono::minutes(5);
  // source.component of the pod events.
  std::string event_component = "binder";
  bool record_events = true;
  // How long to wait for the cache when it lacks the pod or the node (see above).
  kube::Clock::Duration cache_miss_delay = std::chrono::milliseconds(200);
  // Sends a pod event (kube::MakeEvent); empty: created through the reconciler's client, inline.
  std::function<void(kube::Object event)> send_event = nullptr;
  // Writes KAI's PodBound condition (a strategic-merge patch of the pod's status); empty: through
  // the reconciler's client, inline. Only when record_events is set.
  std::function<void(std::string ns, std::string name, kube::Object patch)> patch_pod_status =
      nullptr;
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
  // `cache` must outlive the reconciler.
  Reconciler(std::shared_ptr<kube::Client> client, BinderCache& cache, BindSteps steps,
             ReconcilerOptions options = {});

  ReconcileResult Reconcile(const std::string& ns, const std::string& name);

 private:
  struct Attempt {
    // kCacheMiss: the cache lacks the pod or node; try again after cache_miss_delay.
    enum class Outcome { kBound, kFailed, kApiError, kCacheMiss } outcome = Outcome::kFailed;
    std::string message;
    bool retryable = true;
    kube::ObjectPtr pod;  // when found
  };
  // The outcome the pod alone decides (already bound, bound elsewhere, replaced, being deleted),
  // or nullopt when it is free to bind. `assumed_node`: where this binder bound it, if anywhere.
  std::optional<Attempt> JudgePod(const BindRequest& br, const kube::Object& pod,
                                  const std::string& assumed_node) const;
  // An object from the cache; on a miss, kCacheMiss the first time and a read from the API server
  // the next (null with `attempt` filled when missing or unreadable).
  kube::ObjectPtr Lookup(const kube::ResourceType& type, const std::string& ns,
                         const std::string& name, const std::string& what, Attempt& attempt);
  Attempt TryBind(const BindRequest& br);
  ReconcileResult Finish(const kube::Object& cached, const BindRequest& br, const Attempt& attempt);
  // The pod event and KAI's PodBound condition (True "Bound" / False "BindingError") of an
  // attempt's outcome; best effort.
  void RecordEvent(const Attempt& attempt, const BindRequest& br);

  std::shared_ptr<kube::Client> client_;
  BinderCache& cache_;
  BindSteps steps_;
  ReconcilerOptions options_;
  NameLocks node_locks_;  // a node is checked for room and bound to by one worker at a time
  std::mutex misses_mu_;
  std::set<std::string> missed_once_;  // "pod ns/name", "node name": missed by the last lookup
};

}  // namespace gantry::binder
