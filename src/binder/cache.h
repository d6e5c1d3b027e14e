// What the binder reads, from watch caches instead of the API server: BindRequests (in the
// watched namespace), and every Pod and Node of the cluster (a node's room counts the pods of all
// namespaces bound to it).
//
// Pods are stored trimmed: metadata without managedFields, spec, and of the status the phase,
// nominated node and resource claim statuses (the rest is not even built while parsing); nodes
// without managedFields and status.images. Pods are indexed by spec.nodeName.
//
// The caches lag the API server by the time a watch event takes to arrive, so the binder's own
// writes are folded in at once:
//   - AssumeBound: after a successful pods/binding, the pod counts as bound to that node (for
//     the "already bound" check and for the node's room) until the pod watch shows it bound, the
//     pod is deleted or replaced (another uid), or a relist no longer has it.
//   - StatusWritten: the BindRequest the status write returned replaces the cached one, unless
//     the watch delivered something newer already (Store::ReplaceIfVersion).
//
//   BinderCache cache;
//   cache.Start(client, "", clock);   // list + watch BindRequests, pods, nodes
//   cache.synced();                   // all three listed
//   cache.Pod("ns", "p");             // null when the cache has no such pod (yet)
//   cache.Stop();
//
// Tests fill the stores directly (they are WatchHandlers: OnSync / OnEvent) without Start().
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/informer.h"

namespace gantry::binder {

class BinderCache {
 public:
  BinderCache();
  ~BinderCache();
  BinderCache(const BinderCache&) = delete;
  BinderCache& operator=(const BinderCache&) = delete;

  // Lists and watches BindRequests (in `ns`; empty: all namespaces), pods and nodes until Stop().
  // List and watch failures go to `on_error` (may be empty).
  void Start(std::shared_ptr<kube::Client> client, const std::string& ns, kube::ClockPtr clock,
             std::function<void(const std::string& what, const kube::ApiError&)> on_error = {});
  void Stop();
  // All three kinds have been listed.
  bool synced() const;

  kube::Store& bind_requests() { return bind_requests_; }
  kube::Store& pods() { return pods_; }
  kube::Store& nodes() { return nodes_; }

  kube::ObjectPtr BindRequest(const std::string& ns, const std::string& name) const {
    return bind_requests_.Get(ns, name);
  }
  kube::ObjectPtr Pod(const std::string& ns, const std::string& name) const {
    return pods_.Get(ns, name);
  }
  kube::ObjectPtr Node(const std::string& name) const { return nodes_.Get("", name); }

  // The pods bound to `node`: those the cache shows there, plus those this binder bound there
  // that the cache does not show bound yet (each pod once).
  std::vector<kube::ObjectPtr> PodsOnNode(const std::string& node) const;

  // The node this binder bound the pod `ns/name` with `uid` to, while the cache does not show it
  // bound yet; "" when none.
  std::string AssumedNode(const std::string& ns, const std::string& name,
                          const std::string& uid) const;
  // `pod` was bound to `node` by this binder.
  void AssumeBound(const kube::Object& pod, const std::string& node);
  // Binds assumed and not yet confirmed by the pod watch.
  size_t assumed() const;

  // A status write of ours succeeded: `written` is what the server returned, replacing the
  // version `replaced_resource_version`.
  void StatusWritten(const kube::Object& written, const std::string& replaced_resource_version);

  // The trimmed forms the caches store.
  static kube::Object TrimPod(kube::Object pod);
  // The fields of a pod the pod watch builds (kube/json_parse.h): what TrimPod keeps less the
  // status fields nobody reads (a pod's status is never written back whole: conditions are
  // patched).
  static std::shared_ptr<const kube::FieldFilter> PodFields();
  static kube::Object TrimNode(kube::Object node);

 private:
  struct Assumed {
    std::string uid;
    std::string node;
    kube::ObjectPtr pod;  // with spec.nodeName set
  };
  // Pod listener: drops assumptions the watch has caught up with.
  void OnPod(kube::EventType type, const kube::Object& pod);

  kube::Store bind_requests_;
  kube::Store pods_;
  kube::Store nodes_;
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  mutable std::mutex assumed_mu_;
  std::map<std::string, Assumed> assumed_;  // by "namespace/name"
};

}  // namespace gantry::binder
