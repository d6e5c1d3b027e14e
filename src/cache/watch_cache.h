// The watch cache: the Kubernetes objects the scheduler needs, kept current by ListWatchers, and
// the Cluster model built from them for each scheduling cycle.
//
// Objects are converted (convert.h) once, when they arrive: a watch event re-converts only the
// object it carries, and a relist (OnSync) replaces one kind wholesale. Snapshot() then assembles
// a Cluster from the converted records — resolving names to ids, PodGroups to jobs and their
// sub-group trees, BindRequests to placements — only if something changed since the previous
// snapshot; otherwise it hands out the same immutable Cluster again (shared, never copied).
//
// What counts, as in KAI's cluster snapshot:
//  - Pods whose spec.schedulerName is the scheduler's and that name a PodGroup (the
//    pod-group-name annotation) are scheduled as members of that PodGroup's job.
//  - Every other pod (other schedulers, no PodGroup) only occupies its node while it is bound,
//    running or terminating there; pending ones are ignored.
//  - A pod with a BindRequest the binder has not given up on counts as Binding on the request's
//    selected node, so a pod is never placed twice while the binder works or the watch lags (a
//    request owned by an earlier pod of the same name, per its ownerReferences uid, does not
//    count). Requests that hold nothing any more are listed in Snapshot::stale_bind_requests.
//  - DRA (resource.k8s.io/v1): device classes, slices on known nodes (GPU slices add to their
//    node's GPUs) and claims fill Cluster's DRA fields; a pod's claims are resolved by name (a
//    claim not there yet stands in as one that cannot be allocated, and the pod is reported); a
//    pod being bound holds the devices its BindRequest names. Bound pods carry the shared-GPU
//    groups of their runai-gpu-group labels.
//  - Objects that cannot be used are left out and reported in Snapshot::errors, each naming the
//    object and field: a malformed field, a PodGroup naming a missing or non-leaf queue, a queue
//    whose parent is missing or that sits on a cycle, a pod naming an unknown sub-group. Everything
//    else keeps being scheduled.
//
// Threading: all methods are thread-safe (one mutex). The ListWatchers call the handlers from
// their own threads; the scheduling loop calls Snapshot() from its thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/convert.h"
#include "kube/list_watcher.h"
#include "kube/resource.h"
#include "model/cluster.h"

namespace gantry::cache {

enum class Kind : int {
  kNode,
  kPod,
  kQueue,
  kPodGroup,
  kBindRequest,
  kPriorityClass,
  kTopology,
  // DRA (resource.k8s.io/v1).
  kDeviceClass,
  kResourceSlice,
  kResourceClaim,
};
inline constexpr int kNumKinds = 10;

// The API resource of a kind.
const kube::ResourceType& ResourceOf(Kind kind);

// An object left out of the model, and why.
struct ObjectError {
  Kind kind;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string name;
  std::string message;  // "<field>: <problem>"
  // "PodGroup team-a/train: spec.queue: unknown queue \"research\"".
  std::string ToString() const;
  bool operator==(const ObjectError&) const = default;
};

// A namespaced object's address.
struct ObjectRef {
  std::string namespace_;
  std::string name;
  bool operator==(const ObjectRef&) const = default;
};

struct Snapshot {
  std::shared_ptr<const Cluster> cluster;  // never null
  std::vector<ObjectError> errors;         // sorted by kind, namespace, name
  // BindRequests to delete (KAI's stale requests): the binder gave up on them, their node is
  // gone, or they belong to an earlier pod of the same name. They hold no pod in `cluster`.
  std::vector<ObjectRef> stale_bind_requests;
  uint64_t generation = 0;  // grows each time a new Cluster is assembled
};

struct CacheStats {
  int64_t conversions = 0;  // objects converted (one per add / update, all on a relist)
  int64_t assemblies = 0;   // Clusters assembled by Snapshot()
};

class WatchCache {
 public:
  // `scheduler_name`: pods with this spec.schedulerName are scheduled; others only occupy nodes.
  explicit WatchCache(std::string scheduler_name);
  WatchCache(const WatchCache&) = delete;
  WatchCache& operator=(const WatchCache&) = delete;

  // The handler to give the ListWatcher of `kind`.
  kube::WatchHandler& handler(Kind kind);

  // Called (from the watchers' threads) with every list or watch failure, for logging. A cluster
  // that does not serve Topology objects (no such CRD: 404) counts as having none, so scheduling
  // does not wait for it; the watcher keeps retrying and picks them up once served. The same
  // holds for the DRA kinds (resource.k8s.io/v1 not served); while one of them is not served,
  // DRA counts as off (Cluster::dra_enabled), so pods with resource claims are not placed.
  void SetErrorHandler(std::function<void(Kind, const kube::ApiError&)> on_error);

  // Replace every object of `kind` (a relist). Marks the kind synced.
  void Replace(Kind kind, const std::vector<Object>& objects);
  // One change: kAdded / kModified store the object, kDeleted removes it; others are ignored.
  void Apply(Kind kind, kube::EventType type, const Object& object);

  // True once every kind has been listed at least once.
  bool synced() const;
  bool synced(Kind kind) const;

  // The model of the objects held now (see the header comment).
  Snapshot Take();

  // The object last seen of `kind` named `name` (in `ns` for namespaced kinds), without its
  // metadata.managedFields (not kept).
  std::optional<Object> Get(Kind kind, const std::string& ns, const std::string& name) const;
  // Calls `fn` with that object without copying it (under the cache's lock: `fn` must not call
  // back into the cache). False when there is no such object.
  bool Inspect(Kind kind, const std::string& ns, const std::string& name,
               const std::function<void(const Object&)>& fn) const;

  CacheStats stats() const;

 private:
  class KindHandler : public kube::WatchHandler {
   public:
    KindHandler(WatchCache& cache, Kind kind) : cache_(cache), kind_(kind) {}
    void OnSync(std::vector<Object> items, const std::string& resource_version) override;
    void OnEvent(kube::EventType type, const Object& object) override;
    void OnError(const kube::ApiError& error, kube::Clock::Duration retry_in) override;

   private:
    WatchCache& cache_;
    Kind kind_;
  };

  template <typename T>
  struct Entry {
    Object raw;
    std::optional<T> record;  // empty when conversion failed
    std::string error;        // why it failed
  };
  template <typename T>
  using Store = std::map<std::string, Entry<T>>;  // by "namespace/name" or "name"

  void Put(Kind kind, const Object& object);  // mu_ held
  void Remove(Kind kind, const Object& object);
  void ClearKind(Kind kind);
  std::shared_ptr<Cluster> Assemble(std::vector<ObjectError>& errors,
                                    std::vector<ObjectRef>& stale) const;  // mu_ held
  // Fills the cluster's DRA fields (device classes, slices and the GPUs they add to nodes,
  // claims with their allocations and reservations) and the pods' claims; called by Assemble
  // once nodes and pods are in (mu_ held).
  void AssembleDra(Cluster& cl, std::vector<ObjectError>& errors) const;

  const std::string scheduler_name_;
  std::vector<std::unique_ptr<KindHandler>> handlers_;

  mutable std::mutex mu_;
  std::function<void(Kind, const kube::ApiError&)> on_error_;
  bool synced_[kNumKinds] = {};
  Store<NodeRecord> nodes_;
  Store<PodRecord> pods_;
  Store<Queue> queues_;
  Store<PodGroupRecord> pod_groups_;
  Store<BindRequestRecord> bind_requests_;
  Store<PriorityClassRecord> priority_classes_;
  Store<Topology> topologies_;
  // DRA.
  Store<DeviceClassRecord> device_classes_;
  Store<ResourceSliceRecord> resource_slices_;
  Store<ResourceClaimRecord> resource_claims_;
  bool not_served_[kNumKinds] = {};  // the kind's list answered 404 (API not served)
  bool dirty_ = true;
  Snapshot last_;
  CacheStats stats_;
};

}  // namespace gantry::cache
