// The watch cache: the Kubernetes objects the scheduler needs, kept current by ListWatchers, and
// the Cluster model built from them for each scheduling cycle.
//
// Objects are converted (convert.h) once, when they arrive: a watch event re-converts only the
// object it carries, and a relist (OnSync) replaces one kind wholesale. Take() then hands out the
// model of the records held now as an immutable shared Cluster:
//  - nothing changed since the previous Take(): the same Cluster again (shared, never copied);
//  - only existing pods and BindRequests changed, and PodGroups only in their start / stale
//    times (the steady state of a busy cluster: pods bound, running, finished; requests created
//    and advanced by the binder; jobs' last-start-timestamp annotations written): the previous
//    Cluster is patched — each changed pod is rebuilt in its slot (same PodId), each such job
//    takes its new times, and the stale-request list is re-evaluated for the requests
//    involved — in place when no snapshot of it is held any more,
//    else on a copy (copy-on-write), so a snapshot never changes under its holder. Cost: the
//    changes, not the cluster. A patch is taken only when its result equals a full assembly; a
//    change it cannot express (a pod added or deleted, a pod that joins or leaves the model or
//    moves to another job or pod set, a new extended resource, an object gaining or losing an
//    error, any change while DRA claims are in the model) falls back to a full assembly;
//  - anything else (nodes, queues, PodGroups, priority classes, topologies, relists): a full
//    assembly — resolving names to ids, PodGroups to jobs and their sub-group trees,
//    BindRequests to placements.
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
//  - ConfigMaps fill Cluster::config_maps (names only). One added or removed changes that set
//    alone: the Cluster is patched, not assembled again; a changed one changes nothing.
//  - NodeResourceTopology objects give the node of the same name its NUMA layout (Node::numa;
//    convert.h says how it is read). One for a node that does not exist is kept and used once
//    the node appears.
//  - Objects that cannot be used are left out and reported in Snapshot::errors, each naming the
//    object and field: a malformed field, a PodGroup naming a missing or non-leaf queue, a queue
//    whose parent is missing or that sits on a cycle, a pod naming an unknown sub-group. Everything
//    else keeps being scheduled.
//
// Threading: all methods are thread-safe (one mutex). The ListWatchers call the handlers from
// their own threads; the scheduling loop calls Take() from its thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "cache/convert.h"
#include "cache/node_pool.h"
#include "kube/list_watcher.h"
#include "kube/resource.h"
#include "model/cluster.h"

namespace gantry::cache {

// The watched kinds. Everything the cache does per kind (API resource, conversion, store,
// deletion, lookup) is one row of the table in watch_cache.cc: a kind added here without its row
// does not compile (the table is checked against kNumKinds, row by row).
enum class Kind : int {
  kNode,
  kPod,
  kQueue,
  kPodGroup,
  kBindRequest,
  kPriorityClass,
  kTopology,
  kNodeResourceTopology,  // topology.node.k8s.io/v1alpha2: NUMA zones per node
  // DRA (resource.k8s.io/v1).
  kDeviceClass,
  kResourceSlice,
  kResourceClaim,
  kConfigMap,  // only the names (KAI's ConfigMap predicate)
  kCount,      // not a kind: the number of kinds (new kinds go above it)
};
inline constexpr int kNumKinds = static_cast<int>(Kind::kCount);

// What a kind is, from its row of the table.
struct KindInfo {
  Kind kind;
  const char* name;                    // the API kind: "PodGroup" (in ObjectError texts)
  const kube::ResourceType* resource;  // what its ListWatcher lists and watches
  // A cluster may not serve it (an optional CRD or API group): a 404 on the first list counts as
  // no objects, so scheduling does not wait for it.
  bool optional_api;
  bool dra;  // resource.k8s.io: DRA is off while one of these is not served
};
// The row of `kind`; a value outside the enum is a programming error (aborts, naming it).
const KindInfo& InfoOf(Kind kind);

// The API resource of a kind.
const kube::ResourceType& ResourceOf(Kind kind);

// The fields of `kind` the cache reads (kube/json_parse.h), for its ListWatcher to build only
// those; null: all. Pods: metadata, and of spec and status what convert.h and the scheduler's
// writes read (a converter reading a new pod field must add it here). Objects are never written
// back whole (updates are patches), so nothing is lost by not building the rest.
std::shared_ptr<const kube::FieldFilter> FieldsOf(Kind kind);

// What the cache keeps of each object beside its converted record: what Get() and Inspect() give
// back. Either way the converted records, and so every Snapshot, are the same.
enum class Hold {
  // Only what the scheduling loop reads back from a held object (events, condition patches,
  // creation times, node-pool labels), as compact JSON text, parsed again by each Get / Inspect
  // (a few hundred bytes, about a microsecond): HeldFields(). The default.
  kReadFields,
  // The whole object as received (without metadata.managedFields), as a tree: the reference
  // (about six times its JSON text; for a pod some 10 KB).
  kWhole,
};

// The fields of `object` (of `kind`) that Hold::kReadFields keeps:
//  - every kind: metadata.name, .namespace, .uid, .resourceVersion, .creationTimestamp and, of
//    metadata.labels, only `pool_label_key` (the node pool's label, node_pool.h);
//  - Pod: of status.conditions, the entries whose type is PodScheduled (the Unschedulable
//    condition already written);
//  - PodGroup: spec.markUnschedulable, spec.schedulingBackoff, status.schedulingConditions.
// A field that is there but of the wrong type is kept as it is (the readers check types). A
// reader that needs another field must add it here.
Object HeldFields(Kind kind, const Object& object, const std::string& pool_label_key);

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
  uint64_t generation = 0;  // grows each time a new Cluster is assembled or patched
  // Grows with each full assembly: every snapshot of one layout has the same nodes, jobs, queues
  // and pods under the same ids (patches change only pods' contents), so per-id state kept by
  // the caller stays valid while the layout is the same.
  uint64_t layout = 0;
};

struct CacheStats {
  int64_t conversions = 0;   // objects converted (one per add / update, all on a relist)
  int64_t assemblies = 0;    // Clusters assembled in full by Take()
  int64_t patches = 0;       // Clusters made by patching the previous one (see the header comment)
  int64_t patch_copies = 0;  // of those, patched on a copy because a snapshot was still held
  int64_t pods_patched = 0;  // pods rebuilt by patches
};

class WatchCache {
 public:
  // `scheduler_name`: pods with this spec.schedulerName are scheduled; others only occupy nodes.
  // `pool`: the node pool served (node_pool.h): Nodes, Queues and PodGroups outside it are left
  // out, and so are the pods of its PodGroups (silently: another shard schedules them). A
  // PodGroup with a spec.schedulingBackoff whose last scheduling condition is for its pool is
  // left out too, as KAI does; its running pods only occupy nodes.
  // `hold`: what Get() and Inspect() give back (see Hold).
  explicit WatchCache(std::string scheduler_name, NodePool pool = {},
                      Hold hold = Hold::kReadFields);
  WatchCache(const WatchCache&) = delete;
  WatchCache& operator=(const WatchCache&) = delete;

  // The handler to give the ListWatcher of `kind`.
  kube::WatchHandler& handler(Kind kind);

  // Called (from the watchers' threads) with every list or watch failure, for logging. A cluster
  // that does not serve Topology or NodeResourceTopology objects (no such CRD: 404) counts as
  // having none, so scheduling does not wait for it; the watcher keeps retrying and picks them up
  // once served. The same holds for the DRA kinds (resource.k8s.io/v1 not served); while one of
  // them is not served, DRA counts as off (Cluster::dra_enabled), so pods with resource claims are
  // not placed.
  void SetErrorHandler(std::function<void(Kind, const kube::ApiError&)> on_error);

  // Replace every object of `kind` (a relist). Marks the kind synced. The objects are taken
  // over one by one (moved into the store, or freed once converted), never copied: a relist of
  // a million pods does not hold their trees twice.
  void Replace(Kind kind, std::vector<Object> objects);
  // One change: kAdded / kModified store the object, kDeleted removes it; others are ignored.
  // A pod, BindRequest or PodGroup at the resourceVersion held already (the scheduler applies
  // the answers to its own writes, and the watch brings the same version again) is not converted
  // again.
  void Apply(Kind kind, kube::EventType type, const Object& object);
  // The same, taking the object over (no copy).
  void Apply(Kind kind, kube::EventType type, Object&& object);

  // True once every kind has been listed at least once.
  bool synced() const;
  bool synced(Kind kind) const;

  // The model of the objects held now (see the header comment).
  Snapshot Take();

  // The object last seen of `kind` named `name` (in `ns` for namespaced kinds), without its
  // metadata.managedFields (not kept); with Hold::kReadFields, only HeldFields() of it.
  std::optional<Object> Get(Kind kind, const std::string& ns, const std::string& name) const;
  // Calls `fn` with that object (under the cache's lock: `fn` must not call back into the
  // cache): Hold::kWhole, the one held, not copied; Hold::kReadFields, its held fields parsed
  // back. False when there is no such object.
  bool Inspect(Kind kind, const std::string& ns, const std::string& name,
               const std::function<void(const Object&)>& fn) const;

  CacheStats stats() const;

 private:
  class KindHandler : public kube::WatchHandler {
   public:
    KindHandler(WatchCache& cache, Kind kind) : cache_(cache), kind_(kind) {}
    void OnSync(std::vector<Object> items, const std::string& resource_version) override;
    void OnEvent(kube::EventType type, const Object& object) override;
    void OnOwnedEvent(kube::EventType type, Object&& object) override;
    void OnError(const kube::ApiError& error, kube::Clock::Duration retry_in) override;

   private:
    WatchCache& cache_;
    Kind kind_;
  };

  // What an entry holds of its object (see Entry::raw).
  using Held = std::variant<Object, std::string>;
  template <typename T>
  struct Entry;

 public:
  // The bytes of a pod's node in its store (std::map: its links, key and entry), which the
  // allocator rounds up to a size class; see Entry.
  static size_t PodNodeBytes();

 private:
  template <typename T>
  struct Entry {
    // Hold::kWhole: the object; Hold::kReadFields: HeldFields() of it as JSON text, without the
    // name and namespace the entry's key gives back and the uid its record does (WithHeld).
    Held raw;
    std::optional<T> record;  // empty when conversion failed
    // Why it failed: out of line, since conversions rarely fail. A pod's map node (key, entry) is
    // a jemalloc allocation of 896 bytes; 1,024 with the message inline (watch_cache_test.cc
    // checks the size, which a million pods multiply).
    std::unique_ptr<const std::string> error;
  };
  template <typename T>
  using Store = std::map<std::string, Entry<T>>;  // by "namespace/name" or "name"

  // The per-kind operations (one row per kind, in watch_cache.cc).
  struct KindOps;
  static const KindOps& OpsOf(Kind kind);
  friend const KindInfo& InfoOf(Kind kind);

  // The error `message` about the object stored under `key` ("namespace/name" or "name").
  static ObjectError ErrorAt(Kind kind, const std::string& key, std::string message);

  // All with mu_ held.
  // Whether a pod, BindRequest or PodGroup is held at `object`'s (non-empty) resourceVersion.
  bool HeldAtVersion(Kind kind, const Object& object) const;
  void Put(Kind kind, Object object);
  // Stores `object` and `converted` in `entry` as hold_ says.
  template <typename T>
  void Keep(Kind kind, Object&& object, Entry<T>& entry, Result<T> converted) const;
  // An entry's `raw`, and the uid its record holds (pods and PodGroups; else null).
  struct HeldRef {
    const Held* raw = nullptr;
    const std::string* uid = nullptr;
  };
  // Calls `fn` with the object an entry holds (as Get() gives it); `key` is the entry's.
  void WithHeld(const std::string& key, const HeldRef& held,
                const std::function<void(const Object&)>& fn) const;
  // pool_.Holds() of the object an entry's `raw` holds (without parsing it back when its text
  // does not name the pool's label).
  bool InPool(const Held& raw) const;
  void Remove(Kind kind, const Object& object);
  void ClearKind(Kind kind);
  // An ObjectError for each object, of every kind, whose conversion failed.
  void ConversionErrors(std::vector<ObjectError>& out) const;
  void IndexBindRequest(const std::string& key, const BindRequestRecord& r, bool add);
  // A full assembly into model_; fills the indexes below.
  void Assemble(std::vector<ObjectError>& errors);
  // Patches model_ for dirty_pods_ / dirty_bind_requests_; false (model_ untouched; the full
  // assembly that follows recomputes the indexes) when the result could differ from a full
  // assembly. A patch rewrites only the changed pods' slots: whatever else of the Cluster a pod
  // feeds (other objects' lists of pods, per-job counts) must make it return false when it
  // would change.
  bool TryPatch();
  // Whether the BindRequest no longer holds its pod (KAI's stale requests), in `cl`.
  bool IsStale(const BindRequestRecord& r, const Cluster& cl) const;
  // What a pod record contributes to `cl`: left out, an error (`error` set), or kept as `p` with
  // its node, job, binding and extended resources resolved and, for a job's member, the name of
  // its pod set in `set_name` (p.pod_set is the caller's to set). `may_intern`: new extended
  // resource names get slots in `cl` (a full assembly); else an unknown one is an error.
  enum class PodOutcome { kLeftOut, kError, kKept };
  PodOutcome BuildPod(Cluster& cl, bool may_intern, const std::string& key, const PodRecord& r,
                      Pod& p, std::string& set_name, std::string& error) const;
  std::vector<ObjectRef> StaleList() const;
  // config_map_set_, brought up to date first.
  std::shared_ptr<const std::unordered_set<std::string>> ConfigMapSet();
  // Fills the cluster's DRA fields (device classes, slices and the GPUs they add to nodes,
  // claims with their allocations and reservations) and the pods' claims; called by Assemble
  // once nodes and pods are in.
  void AssembleDra(Cluster& cl, std::vector<ObjectError>& errors) const;
  // KEP-5004 (part of AssembleDra): the device classes' extended resource names resolved into
  // the pending pods' DraExtendedResources, and stand-in claims holding the devices of the
  // BindRequests of placed pods. `device_index` finds a device by (driver, pool,
  // name).
  void AssembleDraExtended(Cluster& cl,
                           const std::map<std::tuple<std::string, std::string, std::string>,
                                          DeviceRef>& device_index) const;

  const std::string scheduler_name_;
  const NodePool pool_;
  const Hold hold_;
  const std::string pool_key_json_;  // pool_.label_key as a JSON string ("\"key\"")
  // The pods' labels, tolerations and required ConfigMaps and the PodGroups' labels, equal lists
  // held once (with mu_ held): most pods carry admission's default tolerations, the pods of one
  // job the same labels.
  LabelListPool labels_pool_;
  SharedListPool<Toleration, TolerationHash> tolerations_pool_;
  SharedListPool<std::string, std::hash<std::string>> config_maps_pool_;
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
  Store<NodeTopologyRecord> node_topologies_;
  // DRA.
  Store<DeviceClassRecord> device_classes_;
  Store<ResourceSliceRecord> resource_slices_;
  Store<ResourceClaimRecord> resource_claims_;
  Store<ConfigMapRecord> config_maps_;
  // The names in config_maps_ as Cluster::config_maps holds them, rebuilt by ConfigMapSet() after
  // one was added or removed (config_maps_changed_).
  std::shared_ptr<const std::unordered_set<std::string>> config_map_set_;
  bool config_maps_changed_ = true;
  bool not_served_[kNumKinds] = {};  // the kind's list answered 404 (API not served)
  // BindRequest keys (with a record) by the key of the pod they name, in key order.
  std::map<std::string, std::set<std::string>> requests_by_pod_;

  // The model last handed out and what it was built from.
  std::shared_ptr<Cluster> model_;
  std::unordered_map<std::string, PodId> pod_ids_;  // pods in model_, by key
  std::unordered_map<std::string, JobId> job_ids_;  // jobs in model_, by PodGroup key
  std::set<std::string> stale_keys_;                // stale BindRequests, by key
  std::unordered_set<std::string> error_keys_;      // "<kind>/<key>" of objects in last_.errors
  // Changes since model_ was made.
  bool dirty_ = true;                          // anything
  bool full_ = true;                           // something a patch cannot express
  std::set<std::string> dirty_pods_;           // pod keys to rebuild
  std::set<std::string> dirty_bind_requests_;  // request keys to re-evaluate
  std::set<std::string> dirty_pod_groups_;     // PodGroup keys whose times changed
  Snapshot last_;  // errors, stale requests, generation (the cluster is model_)
  CacheStats stats_;
};

}  // namespace gantry::cache
