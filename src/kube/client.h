// The Kubernetes API client: typed addressing (ResourceType), untyped objects (JSON), every verb
// the scheduler and binder need, and a low-level watch stream.
//
// Objects are nlohmann::json values as the API serves them, less metadata.managedFields (dropped
// while parsing, see json_parse.h: nothing reads it); turning them into Gantry's
// model is the watch cache's job. Every call returns ApiResult: the object the server returned,
// or an ApiError with the HTTP status and the Kubernetes Status reason (NotFound, Conflict,
// AlreadyExists, Expired, ...).
//
// Threading: a Client is safe to share between threads (the transport pools its connections and
// the rate limiter is shared). Each call takes one token from the client's rate limiter first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kube/api_error.h"
#include "kube/clock.h"
#include "kube/config.h"
#include "kube/json_parse.h"
#include "kube/rate_limiter.h"
#include "kube/resource.h"
#include "kube/transport.h"
#include "kube/watch_decoder.h"

namespace gantry::kube {

using Object = nlohmann::json;

struct ClientOptions {
  double qps = 50;  // <= 0: no client-side limit
  int burst = 100;
  std::chrono::milliseconds request_timeout{30'000};  // every call except watches
  // Retries of a response that carries Retry-After: a 429 (the server did not process the
  // request) for any verb, a 5xx only for GET. Each waits Retry-After, at most
  // max_retry_after, on the clock. Other failures are returned at once.
  int max_retries = 3;
  std::chrono::seconds max_retry_after{10};
  ClockPtr clock = RealClock();
};

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=n1"
  int64_t limit = 0;           // page size; 0: everything in one response
  std::string continue_token;  // from the previous page's metadata.continue
  std::string resource_version;
  std::string resource_version_match;  // "", "Exact", "NotOlderThan"
  // Not sent: the fields to build of each listed item or watched object (json_parse.h); null:
  // all (less metadata.managedFields). The list's own fields and the watch event's type are kept.
  std::shared_ptr<const FieldFilter> filter;
  // Watch only:
  bool allow_watch_bookmarks = true;
  int timeout_seconds = 0;  // server closes the watch after this long; 0: server default
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;  // 0: immediately
  std::string precondition_uid;                 // fail with Conflict unless the uid matches
  std::string precondition_resource_version;    // same for resourceVersion
  std::string propagation_policy;               // "", "Orphan", "Background", "Foreground"
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kJson,            // application/json-patch+json (RFC 6902): an array of operations
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
};

// How a low-level watch stream ended without error.
enum class WatchEnd {
  kServerClosed,  // the server ended the response (timeoutSeconds elapsed): watch again
  kStopped,       // the event callback returned false
};

class Client {
 public:
  explicit Client(TransportPtr transport, ClientOptions options = {});

  // A client on libcurl for `config`.
  static ApiResult<std::shared_ptr<Client>> FromConfig(const Config& config,
                                                       ClientOptions options = {});

  // `ns` is ignored for cluster-scoped types; `subresource` e.g. "status".
  ApiResult<Object> Get(const ResourceType& type, std::string_view ns, std::string_view name,
                        std::string_view subresource = "");
  // One page. `ns` empty lists every namespace. The result is the List object (items,
  // metadata.resourceVersion, metadata.continue).
  ApiResult<Object> List(const ResourceType& type, std::string_view ns,
                         const ListOptions& options = {});
  // Every page (options.limit is the page size), concatenated into one List whose
  // metadata.resourceVersion is the snapshot's. Fails with IsGone() if a continue token expired.
  ApiResult<Object> ListAll(const ResourceType& type, std::string_view ns,
                            ListOptions options = {});

  // Writes: `response` (may be null: everything) names the fields of the returned object to
  // build; with FieldFilter::Nothing() the response body is not parsed at all (the caller only
  // needs to know the write succeeded) and the result is an empty object.
  //
  // POST. The object needs metadata.name or metadata.generateName.
  ApiResult<Object> Create(const ResourceType& type, std::string_view ns, const Object& object,
                           const FieldFilter* response = nullptr);
  // PUT of the whole object (metadata.name required). A metadata.resourceVersion makes it
  // conditional: Conflict when the object changed since.
  ApiResult<Object> Update(const ResourceType& type, std::string_view ns, const Object& object);
  // PUT to the status subresource (only .status is taken by the server).
  ApiResult<Object> UpdateStatus(const ResourceType& type, std::string_view ns,
                                 const Object& object, const FieldFilter* response = nullptr);
  ApiResult<Object> Patch(const ResourceType& type, std::string_view ns, std::string_view name,
                          PatchType patch_type, const Object& patch,
                          std::string_view subresource = "", const FieldFilter* response = nullptr);
  // Returns what the server returns: the object (when deletion is graceful or has finalizers)
  // or a Status.
  ApiResult<Object> Delete(const ResourceType& type, std::string_view ns, std::string_view name,
                           const DeleteOptions& options = {});

  // Binds a pod to a node through the pods/binding subresource. With `pod_uid` the binding
  // fails (Conflict) if the pod was replaced by one with the same name. `annotations` (a JSON
  // object of strings, may be null) go into the Binding's metadata; the API server adds them to
  // the pod with the bind.
  ApiResult<Object> BindPod(std::string_view ns, std::string_view pod, std::string_view node,
                            std::string_view pod_uid = "", const Object& annotations = nullptr);

  // Opens one watch (GET ...?watch=1) from options.resource_version and delivers each ADDED,
  // MODIFIED, DELETED and BOOKMARK event to `on_event` until the server ends the stream,
  // `on_event` returns false, or `cancel` becomes true (then "cancelled", http_status 0; cancel
  // with CancelWatch, which also wakes the transport waiting on the stream). An ERROR
  // event ends the watch with its Status as the error (IsGone() for an expired
  // resourceVersion); so does an HTTP error or a malformed event. Most callers want
  // ListWatcher instead.
  ApiResult<WatchEnd> Watch(const ResourceType& type, std::string_view ns,
                            const ListOptions& options,
                            const std::function<bool(WatchEvent&&)>& on_event,
                            const std::atomic<bool>& cancel);

  // Sets `cancel` and wakes the Watch waiting on it (see Watch).
  void CancelWatch(std::atomic<bool>& cancel);

  RateLimiter& rate_limiter() { return limiter_; }
  const ClientOptions& options() const { return options_; }

 private:
  // `filter` (may be null) applies to the response as a whole.
  ApiResult<Object> Send(std::string method, std::string path, std::string content_type,
                         std::string body, const FieldFilter* filter = nullptr);
  static std::string Query(const ListOptions& options, bool watch);

  TransportPtr transport_;
  ClientOptions options_;
  RateLimiter limiter_;
};

// The string at `path` inside `object`, e.g. StringAt(pod, {"spec", "nodeName"}); "" when a step
// is missing or of another type (never throws).
std::string StringAt(const Object& object, std::initializer_list<std::string_view> path);
// The name, namespace, uid and resourceVersion of an object ("" when absent).
std::string NameOf(const Object& object);
std::string NamespaceOf(const Object& object);
std::string UidOf(const Object& object);
std::string ResourceVersionOf(const Object& object);

}  // namespace gantry::kube
