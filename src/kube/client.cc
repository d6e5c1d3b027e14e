#include "kube/client.h"

#include <algorithm>
#include <vector>

#include "kube/json_parse.h"

namespace gantry::kube {

namespace {

std::string Field(const Object& object, std::string_view key) {
  return StringAt(object, {"metadata", key});
}

// Request bodies: invalid UTF-8 in a caller's strings is replaced (U+FFFD) rather than thrown.
std::string Serialize(const Object& o) {
  return o.dump(-1, ' ', false, Object::error_handler_t::replace);
}

// A request refused before sending it.
ApiError LocalError(std::string message) { return ApiError{0, "Invalid", std::move(message)}; }

// An object name as Kubernetes allows it before it reaches a URL: 1 to 253 characters of
// letters, digits, '-', '.', '_' and ':' (DNS subdomains, plus the ':' of RBAC names and the
// upper case some custom resources use), and not "." or ".." (apimachinery's path-segment rule).
// Anything else, CR/LF above all, is refused here; ResourceType also percent-encodes every
// segment, so a name can never add to the request line or headers.
bool ValidSegment(std::string_view s) {
  if (s.empty() || s.size() > 253 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == ':';
  });
}

// A namespace is a DNS label (RFC 1123): 1 to 63 of [a-z0-9-], starting and ending alphanumeric.
// Empty means cluster-wide (or a cluster-scoped type).
bool ValidNamespace(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

const char* PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

}  // namespace

std::string StringAt(const Object& object, std::initializer_list<std::string_view> path) {
  const Object* at = &object;
  for (std::string_view key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::string NameOf(const Object& object) { return Field(object, "name"); }
std::string NamespaceOf(const Object& object) { return Field(object, "namespace"); }
std::string UidOf(const Object& object) { return Field(object, "uid"); }
std::string ResourceVersionOf(const Object& object) { return Field(object, "resourceVersion"); }

Client::Client(TransportPtr transport, ClientOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      limiter_(options_.qps, options_.burst, options_.clock) {}

ApiResult<std::shared_ptr<Client>> Client::FromConfig(const Config& config, ClientOptions options) {
  ApiResult<TransportPtr> transport = MakeCurlTransport(config);
  if (!transport.ok()) return transport.error();
  return std::make_shared<Client>(std::move(transport).value(), std::move(options));
}

std::string Client::Query(const ListOptions& o, bool watch) {
  std::vector<std::string> parts;
  if (watch) parts.emplace_back("watch=1");
  if (!o.label_selector.empty()) parts.push_back("labelSelector=" + UrlEncode(o.label_selector));
  if (!o.field_selector.empty()) parts.push_back("fieldSelector=" + UrlEncode(o.field_selector));
  if (!watch && o.limit > 0) parts.push_back("limit=" + std::to_string(o.limit));
  if (!watch && !o.continue_token.empty()) {
    parts.push_back("continue=" + UrlEncode(o.continue_token));
  }
  if (!o.resource_version.empty()) {
    parts.push_back("resourceVersion=" + UrlEncode(o.resource_version));
  }
  if (!o.resource_version_match.empty()) {
    parts.push_back("resourceVersionMatch=" + UrlEncode(o.resource_version_match));
  }
  if (watch && o.allow_watch_bookmarks) parts.emplace_back("allowWatchBookmarks=true");
  if (watch && o.timeout_seconds > 0) {
    parts.push_back("timeoutSeconds=" + std::to_string(o.timeout_seconds));
  }
  std::string out;
  for (const std::string& p : parts) {
    out += out.empty() ? "?" : "&";
    out += p;
  }
  return out;
}

ApiResult<Object> Client::Send(std::string method, std::string path, std::string content_type,
                               std::string body, const FieldFilter* filter) {
  HttpRequest req{std::move(method), std::move(path), std::move(content_type), std::move(body),
                  options_.request_timeout};
  ApiResult<HttpResponse> resp = ApiError{};
  for (int attempt = 0;; ++attempt) {
    limiter_.Accept();
    resp = transport_->Do(req);
    if (!resp.ok()) return resp.error();
    const HttpResponse& r = resp.value();
    bool retryable =
        r.retry_after_seconds >= 0 && (r.status == 429 || (r.status >= 500 && req.method == "GET"));
    if (!retryable || attempt >= options_.max_retries) break;
    auto wait = std::min<Clock::Duration>(std::chrono::seconds(r.retry_after_seconds),
                                          options_.max_retry_after);
    options_.clock->SleepFor(wait, nullptr);
  }
  const HttpResponse& r = resp.value();
  if (r.status < 200 || r.status >= 300) return DecodeStatusError(r.status, r.body);
  Object out;
  if (filter != nullptr && filter->keeps_nothing()) return Object::object();
  if (!ParseFiltered(r.body, filter, out) || !out.is_object()) {
    return ApiError{r.status, "", req.method + " " + req.path + ": response is not a JSON object"};
  }
  return out;
}

ApiResult<Object> Client::Get(const ResourceType& type, std::string_view ns, std::string_view name,
                              std::string_view subresource) {
  if (!ValidSegment(name)) return LocalError("get " + type.Describe() + ": invalid name");
  if (!ValidNamespace(ns)) return LocalError("get " + type.Describe() + ": invalid namespace");
  return Send("GET", type.ObjectPath(ns, name, subresource), "", "");
}

ApiResult<Object> Client::List(const ResourceType& type, std::string_view ns,
                               const ListOptions& options) {
  if (!ValidNamespace(ns)) return LocalError("list " + type.Describe() + ": invalid namespace");
  if (options.filter == nullptr) {
    return Send("GET", type.CollectionPath(ns) + Query(options, false), "", "");
  }
  const FieldFilter items = options.filter->Under("items");
  return Send("GET", type.CollectionPath(ns) + Query(options, false), "", "", &items);
}

ApiResult<Object> Client::ListAll(const ResourceType& type, std::string_view ns,
                                  ListOptions options) {
  Object all;
  Object items = Object::array();
  for (;;) {
    ApiResult<Object> page = List(type, ns, options);
    if (!page.ok()) return page.error();
    Object& p = page.value();
    auto page_items = p.find("items");
    if (page_items != p.end() && page_items->is_array()) {
      for (Object& item : *page_items) items.push_back(std::move(item));
    } else if (page_items != p.end() && !page_items->is_null()) {
      return ApiError{200, "", "list " + type.Describe() + ": \"items\" is not an array"};
    }
    std::string next = StringAt(p, {"metadata", "continue"});
    if (all.is_null()) {
      all = std::move(p);
      all.erase("items");
    } else if (p.contains("metadata")) {
      all["metadata"] = std::move(p["metadata"]);
    }
    if (next.empty()) break;
    options.continue_token = next;
    // Later pages are served from the first page's snapshot; a resourceVersion must not be set.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
  if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
  all["items"] = std::move(items);
  return all;
}

ApiResult<Object> Client::Create(const ResourceType& type, std::string_view ns,
                                 const Object& object, const FieldFilter* response) {
  if (!object.is_object()) return LocalError("create " + type.Describe() + ": not an object");
  if (NameOf(object).empty() && Field(object, "generateName").empty()) {
    return LocalError("create " + type.Describe() + ": metadata.name missing");
  }
  if (type.namespaced && ns.empty()) {
    return LocalError("create " + type.Describe() + " " + NameOf(object) + ": namespace missing");
  }
  if (!ValidNamespace(ns)) return LocalError("create " + type.Describe() + ": invalid namespace");
  return Send("POST", type.CollectionPath(ns), "application/json", Serialize(object), response);
}

ApiResult<Object> Client::Update(const ResourceType& type, std::string_view ns,
                                 const Object& object) {
  std::string name = NameOf(object);
  if (!ValidSegment(name)) {
    return LocalError("update " + type.Describe() + ": metadata.name missing or invalid");
  }
  if (!ValidNamespace(ns)) return LocalError("update " + type.Describe() + ": invalid namespace");
  return Send("PUT", type.ObjectPath(ns, name), "application/json", Serialize(object));
}

ApiResult<Object> Client::UpdateStatus(const ResourceType& type, std::string_view ns,
                                       const Object& object, const FieldFilter* response) {
  std::string name = NameOf(object);
  if (!ValidSegment(name)) {
    return LocalError("update status of " + type.Describe() + ": metadata.name missing or invalid");
  }
  if (!ValidNamespace(ns)) {
    return LocalError("update status of " + type.Describe() + ": invalid namespace");
  }
  return Send("PUT", type.ObjectPath(ns, name, "status"), "application/json", Serialize(object),
              response);
}

ApiResult<Object> Client::Patch(const ResourceType& type, std::string_view ns,
                                std::string_view name, PatchType patch_type, const Object& patch,
                                std::string_view subresource, const FieldFilter* response) {
  if (!ValidSegment(name)) return LocalError("patch " + type.Describe() + ": invalid name");
  if (!ValidNamespace(ns)) return LocalError("patch " + type.Describe() + ": invalid namespace");
  if (patch_type == PatchType::kJson ? !patch.is_array() : !patch.is_object()) {
    return LocalError("patch " + type.Describe() + " " + std::string(name) +
                      (patch_type == PatchType::kJson ? ": a JSON patch must be an array"
                                                      : ": a merge patch must be an object"));
  }
  return Send("PATCH", type.ObjectPath(ns, name, subresource), PatchContentType(patch_type),
              Serialize(patch), response);
}

ApiResult<Object> Client::Delete(const ResourceType& type, std::string_view ns,
                                 std::string_view name, const DeleteOptions& options) {
  if (!ValidSegment(name)) return LocalError("delete " + type.Describe() + ": invalid name");
  if (!ValidNamespace(ns)) return LocalError("delete " + type.Describe() + ": invalid namespace");
  Object body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  return Send("DELETE", type.ObjectPath(ns, name), "application/json", Serialize(body));
}

ApiResult<Object> Client::BindPod(std::string_view ns, std::string_view pod, std::string_view node,
                                  std::string_view pod_uid, const Object& annotations) {
  if (!ValidSegment(pod)) return LocalError("bind pod: invalid pod name");
  if (!ValidNamespace(ns)) return LocalError("bind pod: invalid namespace");
  if (!ValidSegment(node))
    return LocalError("bind pod " + std::string(pod) + ": invalid node name");
  Object binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", std::string(pod)}, {"namespace", std::string(ns)}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", std::string(node)}}}};
  if (!pod_uid.empty()) binding["metadata"]["uid"] = std::string(pod_uid);
  if (annotations.is_object() && !annotations.empty()) {
    binding["metadata"]["annotations"] = annotations;
  }
  return Send("POST", resources::kPods.ObjectPath(ns, pod, "binding"), "application/json",
              Serialize(binding));
}

void Client::CancelWatch(std::atomic<bool>& cancel) {
  cancel.store(true);
  cancel.notify_all();  // FakeTransport waits on it
  transport_->Wake(cancel);
}

ApiResult<WatchEnd> Client::Watch(const ResourceType& type, std::string_view ns,
                                  const ListOptions& options,
                                  const std::function<bool(WatchEvent&&)>& on_event,
                                  const std::atomic<bool>& cancel) {
  if (!ValidNamespace(ns)) return LocalError("watch " + type.Describe() + ": invalid namespace");
  limiter_.Accept();
  HttpRequest req{"GET", type.CollectionPath(ns) + Query(options, true), "", "",
                  std::chrono::milliseconds(0)};
  WatchDecoder decoder(options.filter.get());
  std::vector<WatchEvent> events;
  std::optional<ApiError> failure;
  bool stopped = false;
  BodySink sink = [&](std::string_view chunk) {
    events.clear();
    Result<size_t> n = decoder.Feed(chunk, events);
    if (!n.ok()) {
      failure = ApiError{200, "", "watch " + type.Describe() + ": " + n.error()};
      return false;
    }
    for (WatchEvent& ev : events) {
      if (ev.type == EventType::kError) {
        failure = DecodeStatusError(0, ev.object.dump());
        if (failure->message.empty()) failure->message = "watch ERROR event";
        return false;
      }
      if (!on_event(std::move(ev))) {
        stopped = true;
        return false;
      }
    }
    return true;
  };
  ApiResult<HttpResponse> resp = transport_->Stream(req, sink, cancel);
  if (failure) return *failure;
  if (stopped) return WatchEnd::kStopped;
  if (!resp.ok()) return resp.error();
  const HttpResponse& r = resp.value();
  if (r.status < 200 || r.status >= 300) return DecodeStatusError(r.status, r.body);
  if (decoder.pending() > 0) {
    return ApiError{r.status, "", "watch " + type.Describe() + ": stream ended mid-event"};
  }
  return WatchEnd::kServerClosed;
}

}  // namespace gantry::kube
