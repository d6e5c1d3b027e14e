#include "binder/cache.h"

#include <set>

namespace gantry::binder {

namespace {

constexpr const char* kNodeIndex = "node";

// Moves `from[key]` into `to[key]` when present.
void MoveField(kube::Object& from, kube::Object& to, const char* key) {
  auto it = from.find(key);
  if (it != from.end()) to[key] = std::move(*it);
}

// The object's metadata without managedFields (an empty object when it has none).
kube::Object MetadataWithoutManagedFields(kube::Object& object) {
  auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return kube::Object::object();
  kube::Object meta = std::move(*it);
  meta.erase("managedFields");
  return meta;
}

}  // namespace

kube::Object BinderCache::TrimPod(kube::Object pod) {
  kube::Object out = kube::Object::object();
  MoveField(pod, out, "apiVersion");
  MoveField(pod, out, "kind");
  out["metadata"] = MetadataWithoutManagedFields(pod);
  MoveField(pod, out, "spec");
  auto status = pod.find("status");
  if (status != pod.end() && status->is_object()) {
    kube::Object kept = std::move(*status);
    for (const char* k : {"conditions", "containerStatuses", "initContainerStatuses",
                          "ephemeralContainerStatuses"}) {
      kept.erase(k);
    }
    out["status"] = std::move(kept);
  }
  return out;
}

std::shared_ptr<const kube::FieldFilter> BinderCache::PodFields() {
  static const auto fields = std::make_shared<const kube::FieldFilter>(
      kube::FieldFilter::FromPaths({"apiVersion", "kind", "metadata", "spec", "status.phase",
                                    "status.nominatedNodeName", "status.resourceClaimStatuses"})
          .value());
  return fields;
}

kube::Object BinderCache::TrimNode(kube::Object node) {
  if (!node.is_object()) return kube::Object::object();
  if (node.contains("metadata")) node["metadata"] = MetadataWithoutManagedFields(node);
  auto status = node.find("status");
  if (status != node.end() && status->is_object()) status->erase("images");
  return node;
}

BinderCache::BinderCache()
    : pods_({.transform = &BinderCache::TrimPod}), nodes_({.transform = &BinderCache::TrimNode}) {
  pods_.AddIndex(kNodeIndex, [](const kube::Object& pod) {
    std::string node = kube::StringAt(pod, {"spec", "nodeName"});
    return node.empty() ? std::vector<std::string>{} : std::vector<std::string>{node};
  });
  pods_.AddListener([this](kube::EventType type, const kube::Object& pod) { OnPod(type, pod); });
}

BinderCache::~BinderCache() { Stop(); }

void BinderCache::Start(std::shared_ptr<kube::Client> client, const std::string& ns,
                        kube::ClockPtr clock,
                        std::function<void(const std::string&, const kube::ApiError&)> on_error) {
  if (!informers_.empty()) return;
  struct Watched {
    kube::Store& store;
    const kube::ResourceType& type;
    std::string ns;
    std::string what;
  };
  for (const Watched& w :
       {Watched{bind_requests_, kube::resources::kBindRequests, ns, "BindRequests"},
        Watched{pods_, kube::resources::kPods, "", "pods"},
        Watched{nodes_, kube::resources::kNodes, "", "nodes"}}) {
    if (on_error) {
      w.store.SetErrorHandler(
          [on_error, what = w.what](const kube::ApiError& e, kube::Clock::Duration) {
            on_error(what, e);
          });
    }
    kube::ListWatchOptions options;
    options.ns = w.ns;
    if (&w.store == &pods_) options.filter = PodFields();
    informers_.push_back(std::make_unique<kube::Informer>(client, w.type, options, w.store, clock));
  }
  for (auto& informer : informers_) informer->Start();
}

void BinderCache::Stop() {
  for (auto& informer : informers_) informer->Stop();
}

bool BinderCache::synced() const {
  return bind_requests_.synced() && pods_.synced() && nodes_.synced();
}

std::vector<kube::ObjectPtr> BinderCache::PodsOnNode(const std::string& node) const {
  std::vector<kube::ObjectPtr> pods = pods_.ByIndex(kNodeIndex, node);
  std::lock_guard<std::mutex> lock(assumed_mu_);
  if (assumed_.empty()) return pods;
  std::set<std::string> uids;
  for (const auto& p : pods) uids.insert(kube::UidOf(*p));
  for (const auto& [key, a] : assumed_) {
    if (a.node == node && uids.count(a.uid) == 0) pods.push_back(a.pod);
  }
  return pods;
}

std::string BinderCache::AssumedNode(const std::string& ns, const std::string& name,
                                     const std::string& uid) const {
  std::lock_guard<std::mutex> lock(assumed_mu_);
  auto it = assumed_.find(kube::ObjectKey(ns, name));
  if (it == assumed_.end() || it->second.uid != uid) return "";
  return it->second.node;
}

void BinderCache::AssumeBound(const kube::Object& pod, const std::string& node) {
  const std::string ns = kube::NamespaceOf(pod), name = kube::NameOf(pod);
  const std::string key = kube::ObjectKey(ns, name), uid = kube::UidOf(pod);
  kube::Object bound = pod;
  bound["spec"]["nodeName"] = node;
  {
    std::lock_guard<std::mutex> lock(assumed_mu_);
    assumed_[key] = Assumed{uid, node, std::make_shared<const kube::Object>(std::move(bound))};
  }
  // The watch may have shown the bind before the assumption was recorded (its listener found
  // nothing to drop then): drop it here instead.
  if (auto cached = pods_.Get(ns, name); cached && kube::UidOf(*cached) == uid &&
                                         !kube::StringAt(*cached, {"spec", "nodeName"}).empty()) {
    std::lock_guard<std::mutex> lock(assumed_mu_);
    if (auto it = assumed_.find(key); it != assumed_.end() && it->second.uid == uid) {
      assumed_.erase(it);
    }
  }
}

size_t BinderCache::assumed() const {
  std::lock_guard<std::mutex> lock(assumed_mu_);
  return assumed_.size();
}

void BinderCache::OnPod(kube::EventType type, const kube::Object& pod) {
  std::string key = kube::ObjectKey(kube::NamespaceOf(pod), kube::NameOf(pod));
  std::lock_guard<std::mutex> lock(assumed_mu_);
  auto it = assumed_.find(key);
  if (it == assumed_.end()) return;
  if (type == kube::EventType::kDeleted || kube::UidOf(pod) != it->second.uid ||
      !kube::StringAt(pod, {"spec", "nodeName"}).empty()) {
    assumed_.erase(it);
  }
}

void BinderCache::StatusWritten(const kube::Object& written,
                                const std::string& replaced_resource_version) {
  bind_requests_.ReplaceIfVersion(written, replaced_resource_version);
}

}  // namespace gantry::binder
