#include "cache/watch_cache.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>

#include "cache/object_keys.h"

namespace gantry::cache {

namespace {

// A node's NUMA zones as the kubelet's Topology Manager reports them (Node Feature Discovery's
// topology-updater, the resource-topology-exporter): one cluster-scoped object per node, named
// like the node. Only the cache reads it.
const kube::ResourceType kNodeResourceTopologies{
    "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "NodeResourceTopology", false};

// `from`'s member `key`, copied into `to` when it is there.
void CopyHeldMember(const Object& from, const char* key, Object& to) {
  if (const auto it = from.find(key); it != from.end()) to[key] = *it;
}

// Whether two records of one PodGroup differ at most in their start and stale times (the
// scheduler's own annotations), i.e. make the same job but for those two fields.
bool SameExceptTimes(const PodGroupRecord& a, PodGroupRecord b) {
  b.last_start_ms = a.last_start_ms;
  b.stale_since_ms = a.stale_since_ms;
  return a == b;
}

}  // namespace

Object HeldFields(Kind kind, const Object& object, const std::string& pool_label_key) {
  Object out = Object::object();
  if (!object.is_object()) return out;
  if (const auto meta = object.find("metadata"); meta != object.end()) {
    if (meta->is_object()) {
      Object m = Object::object();
      for (const char* key : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
        CopyHeldMember(*meta, key, m);
      }
      if (const auto labels = meta->find("labels"); labels != meta->end()) {
        if (!labels->is_object()) {
          m["labels"] = *labels;
        } else if (!pool_label_key.empty()) {
          if (const auto v = labels->find(pool_label_key); v != labels->end()) {
            m["labels"][pool_label_key] = *v;
          }
        }
      }
      out["metadata"] = std::move(m);
    } else {
      out["metadata"] = *meta;
    }
  }
  const auto status = object.find("status");
  const bool status_object = status != object.end() && status->is_object();
  if (kind == Kind::kPod && status_object) {
    // PodUnschedulablePatch (live/decisions.h): the PodScheduled condition already written.
    if (const auto conditions = status->find("conditions");
        conditions != status->end() && conditions->is_array()) {
      Object kept = Object::array();
      for (const Object& c : *conditions) {
        if (!c.is_object()) continue;
        const auto type = c.find("type");
        if (type != c.end() && type->is_string() &&
            type->get_ref<const std::string&>() == "PodScheduled") {
          kept.push_back(c);
        }
      }
      if (!kept.empty()) out["status"]["conditions"] = std::move(kept);
    }
  }
  if (kind == Kind::kPodGroup) {
    // The scheduling loop's MarkPending, NodePoolPrefix, UnschedulableStatusPatch and
    // ClearConditionsPatch (live/decisions.h).
    if (const auto spec = object.find("spec"); spec != object.end() && spec->is_object()) {
      Object s = Object::object();
      CopyHeldMember(*spec, "markUnschedulable", s);
      CopyHeldMember(*spec, "schedulingBackoff", s);
      if (!s.empty()) out["spec"] = std::move(s);
    }
    if (status_object) {
      Object s = Object::object();
      CopyHeldMember(*status, "schedulingConditions", s);
      if (!s.empty()) out["status"] = std::move(s);
    }
  }
  return out;
}

// The held fields leave out metadata.name and metadata.namespace when the object's key gives them
// back (RestoreHeld): "namespace/name", or "name" for an object without a namespace; and
// metadata.uid when the entry's record holds it (`uid`, pods and PodGroups). An object whose name,
// namespace or uid these would not give back exactly keeps them.
namespace {

void DropRestorable(Object& held, const std::string* uid) {
  const auto meta = held.find("metadata");
  if (meta == held.end() || !meta->is_object()) return;
  if (uid != nullptr && !uid->empty()) {
    const auto u = meta->find("uid");
    if (u != meta->end() && u->is_string() && u->get_ref<const std::string&>() == *uid) {
      meta->erase(u);
    }
  }
  const auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return;
  }
  const auto ns = meta->find("namespace");
  if (ns != meta->end() && (!ns->is_string() || ns->get_ref<const std::string&>().empty())) {
    return;
  }
  meta->erase("name");
  meta->erase("namespace");
}

void RestoreHeld(const std::string& key, const std::string* uid, Object& held) {
  const auto meta = held.find("metadata");
  if (meta == held.end() || !meta->is_object()) return;
  if (uid != nullptr && !uid->empty() && !meta->contains("uid")) (*meta)["uid"] = *uid;
  if (meta->contains("name")) return;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) {
    if (!key.empty()) (*meta)["name"] = key;
  } else if (slash + 1 < key.size()) {
    (*meta)["namespace"] = key.substr(0, slash);
    (*meta)["name"] = key.substr(slash + 1);
  }
}

// The uid a record holds (what RestoreHeld gives back), for the kinds whose records have one.
const std::string* RecordUid(const PodRecord& r) { return &r.pod.uid; }
const std::string* RecordUid(const PodGroupRecord& r) { return &r.uid; }
template <typename T>
const std::string* RecordUid(const T& /*record*/) {
  return nullptr;
}

}  // namespace

template <typename T>
void WatchCache::Keep(Kind kind, Object&& object, Entry<T>& entry, Result<T> converted) const {
  if (hold_ == Hold::kWhole) {
    // Field-manager bookkeeping is often the bulk of an object and nothing here reads it: it is
    // not kept. The object itself is taken over, not copied.
    if (object.is_object()) {
      auto meta = object.find("metadata");
      if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
    }
    entry.raw.template emplace<Object>(std::move(object));
  } else {
    Object held = HeldFields(kind, object, pool_.label_key);
    DropRestorable(held, converted.ok() ? RecordUid(converted.value()) : nullptr);
    std::string text = held.dump();
    text.shrink_to_fit();
    entry.raw.template emplace<std::string>(std::move(text));
    object = Object();  // freed now (a relist's item is not held twice)
  }
  if (converted.ok()) {
    entry.record = std::move(converted).value();
    entry.error.reset();
  } else {
    entry.record.reset();
    entry.error = std::make_unique<const std::string>(converted.error());
  }
}

size_t WatchCache::PodNodeBytes() {
  // libstdc++'s tree node: color and three links, then the value (key and entry).
  return 4 * sizeof(void*) + sizeof(Store<PodRecord>::value_type);
}

void WatchCache::WithHeld(const std::string& key, const HeldRef& held,
                          const std::function<void(const Object&)>& fn) const {
  if (const Object* whole = std::get_if<Object>(held.raw)) {
    fn(*whole);
  } else {
    Object o = Object::parse(std::get<std::string>(*held.raw));
    RestoreHeld(key, held.uid, o);
    fn(o);
  }
}

bool WatchCache::InPool(const Held& raw) const {
  if (const Object* whole = std::get_if<Object>(&raw)) return pool_.Holds(*whole);
  if (pool_.label_key.empty()) return true;
  const std::string& text = std::get<std::string>(raw);
  // A label the text does not name is not there (the usual case: no parsing back).
  if (text.find(pool_key_json_) == std::string::npos) return pool_.value.empty();
  return pool_.Holds(Object::parse(text));  // reads no names or uids
}

// One row per watched kind: what it is, and how the cache stores, converts, deletes and finds its
// objects. The generic operations serve kinds whose every change needs a full assembly; pods,
// PodGroups and BindRequests have their own (their changes may be patched, see TryPatch).
struct WatchCache::KindOps {
  KindInfo info;
  // Stores `object` under `key`, converted; sets full_ or the dirty sets for what it changes.
  void (*put)(WatchCache& cache, Kind kind, const std::string& key, Object&& object);
  // Forgets the object under `key` (none: nothing); sets full_ or the dirty sets.
  void (*remove)(WatchCache& cache, const std::string& key);
  // Forgets every object of the kind (a relist follows).
  void (*clear)(WatchCache& cache);
  // The entry under `key` (see Entry): what it holds of its object (raw null: no entry).
  HeldRef (*find)(const WatchCache& cache, const std::string& key);
  // An ObjectError for each object whose conversion failed.
  void (*conversion_errors)(const WatchCache& cache, Kind kind, std::vector<ObjectError>& out);
  // A watch event bringing the resourceVersion held already is not converted again (the kinds the
  // scheduler writes and then applies the answer of).
  bool skip_held_version;

  // The row of a kind holding plain records (`kConvert` makes them): every change of one needs
  // a full assembly.
  template <auto kStore, auto kConvert>
  static constexpr KindOps Plain(KindInfo info) {
    return {.info = info,
            .put = &Put<kStore, kConvert>,
            .remove = &Remove<kStore>,
            .clear = &Clear<kStore>,
            .find = &Find<kStore>,
            .conversion_errors = &ConversionErrors<kStore>,
            .skip_held_version = false};
  }

  template <auto kStore, auto kConvert>
  static void Put(WatchCache& c, Kind kind, const std::string& key, Object&& object) {
    c.full_ = true;
    auto converted = kConvert(object);
    c.Keep(kind, std::move(object), (c.*kStore)[key], std::move(converted));
  }
  template <auto kStore>
  static void Remove(WatchCache& c, const std::string& key) {
    c.full_ = true;
    (c.*kStore).erase(key);
  }
  template <auto kStore>
  static void Clear(WatchCache& c) {
    (c.*kStore).clear();
  }
  template <auto kStore>
  static HeldRef Find(const WatchCache& c, const std::string& key) {
    auto it = (c.*kStore).find(key);
    if (it == (c.*kStore).end()) return {};
    const auto& e = it->second;
    return {.raw = &e.raw, .uid = e.record ? RecordUid(*e.record) : nullptr};
  }
  template <auto kStore>
  static void ConversionErrors(const WatchCache& c, Kind kind, std::vector<ObjectError>& out) {
    for (const auto& [key, e] : c.*kStore) {
      if (!e.record) out.push_back(ErrorAt(kind, key, e.error ? *e.error : std::string()));
    }
  }

  // A change to an existing pod is patched; a new pod means new pod ids.
  static void PutPod(WatchCache& c, Kind kind, const std::string& key, Object&& object) {
    auto [it, added] = c.pods_.try_emplace(key);
    auto converted = ConvertPod(object);
    if (converted.ok()) {
      // Equal lists held once (most pods carry admission's default tolerations).
      Pod& pod = converted.value().pod;
      pod.labels.ShareFrom(c.labels_pool_);
      pod.tolerations = c.tolerations_pool_.Intern(std::move(pod.tolerations));
      pod.config_maps = c.config_maps_pool_.Intern(std::move(pod.config_maps));
    }
    c.Keep(kind, std::move(object), it->second, std::move(converted));
    if (added) {
      c.full_ = true;
    } else {
      c.dirty_pods_.insert(key);
    }
  }
  // The scheduler's own timestamp annotations change on every job start: those are patched.
  static void PutPodGroup(WatchCache& c, Kind kind, const std::string& key, Object&& object) {
    auto [it, added] = c.pod_groups_.try_emplace(key);
    Result<PodGroupRecord> converted = ConvertPodGroup(object);
    if (converted.ok()) {
      LabelList& labels = converted.value().labels;
      labels = c.labels_pool_.Intern(std::move(labels));
    }
    const bool times_only = !added && it->second.record && converted.ok() &&
                            SameExceptTimes(*it->second.record, converted.value());
    c.Keep(kind, std::move(object), it->second, std::move(converted));
    if (times_only) {
      c.dirty_pod_groups_.insert(key);
    } else {
      c.full_ = true;
    }
  }
  // Requests are indexed by the pod they name; a change re-evaluates the request and its pod.
  static void PutBindRequest(WatchCache& c, Kind kind, const std::string& key, Object&& object) {
    auto& entry = c.bind_requests_[key];
    if (entry.record) c.IndexBindRequest(key, *entry.record, false);
    auto converted = ConvertBindRequest(object);
    c.Keep(kind, std::move(object), entry, std::move(converted));
    if (entry.record) c.IndexBindRequest(key, *entry.record, true);
    c.dirty_bind_requests_.insert(key);
  }
  static void RemoveBindRequest(WatchCache& c, const std::string& key) {
    if (auto it = c.bind_requests_.find(key); it != c.bind_requests_.end()) {
      if (it->second.record) c.IndexBindRequest(key, *it->second.record, false);
      c.bind_requests_.erase(it);
      c.dirty_bind_requests_.insert(key);
    }
  }
  static void ClearBindRequests(WatchCache& c) {
    c.bind_requests_.clear();
    c.requests_by_pod_.clear();
  }
  // Only an added or removed ConfigMap changes the model (its set of names), and that is
  // patched; an object gaining or losing a conversion error takes the full assembly (which
  // lists the errors).
  static void PutConfigMap(WatchCache& c, Kind kind, const std::string& key, Object&& object) {
    auto [it, added] = c.config_maps_.try_emplace(key);
    const bool had = it->second.record.has_value();
    auto converted = ConvertConfigMap(object);
    const bool has = converted.ok();
    c.Keep(kind, std::move(object), it->second, std::move(converted));
    if (added && has) {
      c.config_maps_changed_ = true;
    } else if (had != has || !has) {
      c.config_maps_changed_ = true;
      c.full_ = true;
    }
  }
  static void RemoveConfigMap(WatchCache& c, const std::string& key) {
    auto it = c.config_maps_.find(key);
    if (it == c.config_maps_.end()) return;
    if (!it->second.record) c.full_ = true;
    c.config_maps_.erase(it);
    c.config_maps_changed_ = true;
  }
  static void ClearConfigMaps(WatchCache& c) {
    c.config_maps_.clear();
    c.config_maps_changed_ = true;
  }
};

const WatchCache::KindOps& WatchCache::OpsOf(Kind kind) {
  using namespace kube::resources;
  using K = KindOps;
  // KindInfo: kind, name, resource, optional_api, dra.
  static constexpr KindOps kRows[] = {
      K::Plain<&WatchCache::nodes_, &ConvertNode>({Kind::kNode, "Node", &kNodes, false, false}),
      {.info = {Kind::kPod, "Pod", &kPods, false, false},
       .put = &K::PutPod,
       .remove = &K::Remove<&WatchCache::pods_>,
       .clear = &K::Clear<&WatchCache::pods_>,
       .find = &K::Find<&WatchCache::pods_>,
       .conversion_errors = &K::ConversionErrors<&WatchCache::pods_>,
       .skip_held_version = true},
      K::Plain<&WatchCache::queues_, &ConvertQueue>(
          {Kind::kQueue, "Queue", &kQueues, false, false}),
      {.info = {Kind::kPodGroup, "PodGroup", &kPodGroups, false, false},
       .put = &K::PutPodGroup,
       .remove = &K::Remove<&WatchCache::pod_groups_>,
       .clear = &K::Clear<&WatchCache::pod_groups_>,
       .find = &K::Find<&WatchCache::pod_groups_>,
       .conversion_errors = &K::ConversionErrors<&WatchCache::pod_groups_>,
       .skip_held_version = true},
      {.info = {Kind::kBindRequest, "BindRequest", &kBindRequests, false, false},
       .put = &K::PutBindRequest,
       .remove = &K::RemoveBindRequest,
       .clear = &K::ClearBindRequests,
       .find = &K::Find<&WatchCache::bind_requests_>,
       .conversion_errors = &K::ConversionErrors<&WatchCache::bind_requests_>,
       .skip_held_version = true},
      K::Plain<&WatchCache::priority_classes_, &ConvertPriorityClass>(
          {Kind::kPriorityClass, "PriorityClass", &kPriorityClasses, false, false}),
      K::Plain<&WatchCache::topologies_, &ConvertTopology>(
          {Kind::kTopology, "Topology", &kTopologies, true, false}),
      K::Plain<&WatchCache::node_topologies_, &ConvertNodeResourceTopology>(
          {Kind::kNodeResourceTopology, "NodeResourceTopology", &kNodeResourceTopologies, true,
           false}),
      K::Plain<&WatchCache::device_classes_, &ConvertDeviceClass>(
          {Kind::kDeviceClass, "DeviceClass", &kDeviceClasses, true, true}),
      K::Plain<&WatchCache::resource_slices_, &ConvertResourceSlice>(
          {Kind::kResourceSlice, "ResourceSlice", &kResourceSlices, true, true}),
      K::Plain<&WatchCache::resource_claims_, &ConvertResourceClaim>(
          {Kind::kResourceClaim, "ResourceClaim", &kResourceClaims, true, true}),
      {.info = {Kind::kConfigMap, "ConfigMap", &kConfigMaps, false, false},
       .put = &K::PutConfigMap,
       .remove = &K::RemoveConfigMap,
       .clear = &K::ClearConfigMaps,
       .find = &K::Find<&WatchCache::config_maps_>,
       .conversion_errors = &K::ConversionErrors<&WatchCache::config_maps_>,
       .skip_held_version = false},
  };
  static_assert(std::size(kRows) == kNumKinds, "every Kind needs its row in this table");
  static_assert(
      [] {
        for (int i = 0; i < kNumKinds; ++i) {
          if (static_cast<int>(kRows[i].info.kind) != i) return false;
        }
        return true;
      }(),
      "the rows must be in the order of enum Kind");
  const int i = static_cast<int>(kind);
  if (i < 0 || i >= kNumKinds) {
    std::fprintf(stderr, "watch cache: no table row for kind %d\n", i);
    std::abort();
  }
  return kRows[i];
}

const KindInfo& InfoOf(Kind kind) { return WatchCache::OpsOf(kind).info; }

const kube::ResourceType& ResourceOf(Kind kind) { return *InfoOf(kind).resource; }

std::shared_ptr<const kube::FieldFilter> FieldsOf(Kind kind) {
  if (kind == Kind::kConfigMap) {
    // Names only: a ConfigMap's data can be large, and only its existence is read.
    static const auto config_maps = std::make_shared<const kube::FieldFilter>(
        kube::FieldFilter::FromPaths({"apiVersion", "kind", "metadata.name", "metadata.namespace",
                                      "metadata.uid", "metadata.resourceVersion"})
            .value());
    return config_maps;
  }
  if (kind != Kind::kPod) return nullptr;
  // What ConvertPod and ConvertPodClaims read, plus what the scheduler reads from the cached
  // object (status.conditions: the Unschedulable condition already written; metadata for events).
  static const auto pods = std::make_shared<const kube::FieldFilter>(
      kube::FieldFilter::FromPaths({"apiVersion",
                                    "kind",
                                    "metadata",
                                    "spec.schedulerName",
                                    "spec.nodeName",
                                    "spec.containers.name",  // KEP-5004's container mappings
                                    "spec.containers.resources",
                                    "spec.containers.ports",
                                    "spec.containers.env",
                                    "spec.containers.envFrom",
                                    "spec.containers.volumeMounts",
                                    "spec.initContainers.name",
                                    "spec.initContainers.resources",
                                    "spec.initContainers.restartPolicy",
                                    "spec.initContainers.ports",
                                    "spec.initContainers.env",
                                    "spec.initContainers.envFrom",
                                    "spec.initContainers.volumeMounts",
                                    "spec.ephemeralContainers.env",
                                    "spec.ephemeralContainers.envFrom",
                                    "spec.ephemeralContainers.volumeMounts",
                                    "spec.volumes",
                                    "spec.overhead",
                                    "spec.nodeSelector",
                                    "spec.affinity",
                                    "spec.tolerations",
                                    "spec.schedulingGates",
                                    "spec.resourceClaims",
                                    "status.phase",
                                    "status.qosClass",
                                    "status.nominatedNodeName",
                                    "status.conditions.type",
                                    "status.conditions.status",
                                    "status.conditions.reason",
                                    "status.conditions.message",
                                    "status.resourceClaimStatuses"})
          .value());
  return pods;
}

std::string ObjectError::ToString() const {
  return std::string(InfoOf(kind).name) + " " + Key(namespace_, name) + ": " + message;
}

WatchCache::WatchCache(std::string scheduler_name, NodePool pool, Hold hold)
    : scheduler_name_(std::move(scheduler_name)),
      pool_(std::move(pool)),
      hold_(hold),
      pool_key_json_(Object(pool_.label_key).dump()) {
  for (int k = 0; k < kNumKinds; ++k) {
    handlers_.push_back(std::make_unique<KindHandler>(*this, static_cast<Kind>(k)));
  }
  model_ = std::make_shared<Cluster>();
}

kube::WatchHandler& WatchCache::handler(Kind kind) {
  return *handlers_[static_cast<int>(OpsOf(kind).info.kind)];
}

void WatchCache::KindHandler::OnSync(std::vector<Object> items, const std::string&) {
  {
    std::lock_guard lock(cache_.mu_);
    cache_.not_served_[static_cast<int>(kind_)] = false;
  }
  cache_.Replace(kind_, std::move(items));
}

void WatchCache::KindHandler::OnEvent(kube::EventType type, const Object& object) {
  cache_.Apply(kind_, type, object);
}

void WatchCache::KindHandler::OnOwnedEvent(kube::EventType type, Object&& object) {
  cache_.Apply(kind_, type, std::move(object));
}

void WatchCache::KindHandler::OnError(const kube::ApiError& error, kube::Clock::Duration) {
  std::function<void(Kind, const kube::ApiError&)> on_error;
  {
    std::lock_guard lock(cache_.mu_);
    on_error = cache_.on_error_;
  }
  if (on_error) on_error(kind_, error);
  if (InfoOf(kind_).optional_api && error.IsNotFound() && !cache_.synced(kind_)) {
    {
      std::lock_guard lock(cache_.mu_);
      cache_.not_served_[static_cast<int>(kind_)] = true;
    }
    cache_.Replace(kind_, {});
  }
}

void WatchCache::SetErrorHandler(std::function<void(Kind, const kube::ApiError&)> on_error) {
  std::lock_guard lock(mu_);
  on_error_ = std::move(on_error);
}

ObjectError WatchCache::ErrorAt(Kind kind, const std::string& key, std::string message) {
  // Key(): names and namespaces hold no '/'.
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {kind, "", key, std::move(message)};
  return {kind, key.substr(0, slash), key.substr(slash + 1), std::move(message)};
}

void WatchCache::ClearKind(Kind kind) { OpsOf(kind).clear(*this); }

void WatchCache::IndexBindRequest(const std::string& key, const BindRequestRecord& r, bool add) {
  const std::string pod_key = Key(r.namespace_, r.pod_name);
  if (add) {
    requests_by_pod_[pod_key].insert(key);
  } else if (auto it = requests_by_pod_.find(pod_key); it != requests_by_pod_.end()) {
    it->second.erase(key);
    if (it->second.empty()) requests_by_pod_.erase(it);
  }
  // The pod's binding may change with the request.
  dirty_pods_.insert(pod_key);
}

void WatchCache::Put(Kind kind, Object object) {
  const std::string key = KeyOf(object);
  ++stats_.conversions;
  dirty_ = true;
  OpsOf(kind).put(*this, kind, key, std::move(object));
}

bool WatchCache::HeldAtVersion(Kind kind, const Object& object) const {
  const KindOps& ops = OpsOf(kind);
  if (!ops.skip_held_version) return false;
  const std::string rv = kube::ResourceVersionOf(object);
  if (rv.empty()) return false;
  const std::string key = KeyOf(object);
  const HeldRef held = ops.find(*this, key);
  if (held.raw == nullptr) return false;
  bool same = false;
  WithHeld(key, held, [&](const Object& o) { same = kube::ResourceVersionOf(o) == rv; });
  return same;
}

void WatchCache::Remove(Kind kind, const Object& object) {
  dirty_ = true;
  OpsOf(kind).remove(*this, KeyOf(object));
}

void WatchCache::Replace(Kind kind, std::vector<Object> objects) {
  std::lock_guard lock(mu_);
  ClearKind(kind);
  for (Object& o : objects) Put(kind, std::move(o));
  synced_[static_cast<int>(kind)] = true;
  dirty_ = true;
  full_ = true;
}

void WatchCache::Apply(Kind kind, kube::EventType type, const Object& object) {
  Apply(kind, type, Object(object));
}

void WatchCache::Apply(Kind kind, kube::EventType type, Object&& object) {
  std::lock_guard lock(mu_);
  switch (type) {
    case kube::EventType::kAdded:
    case kube::EventType::kModified:
      if (HeldAtVersion(kind, object)) break;
      Put(kind, std::move(object));
      break;
    case kube::EventType::kDeleted:
      Remove(kind, object);
      break;
    default:
      break;
  }
}

bool WatchCache::synced() const {
  std::lock_guard lock(mu_);
  return std::all_of(std::begin(synced_), std::end(synced_), [](bool s) { return s; });
}

bool WatchCache::synced(Kind kind) const {
  std::lock_guard lock(mu_);
  return synced_[static_cast<int>(kind)];
}

CacheStats WatchCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool WatchCache::Inspect(Kind kind, const std::string& ns, const std::string& name,
                         const std::function<void(const Object&)>& fn) const {
  std::lock_guard lock(mu_);
  const std::string key = ResourceOf(kind).namespaced ? Key(ns, name) : name;
  const HeldRef held = OpsOf(kind).find(*this, key);
  if (held.raw == nullptr) return false;
  WithHeld(key, held, fn);
  return true;
}

void WatchCache::ConversionErrors(std::vector<ObjectError>& out) const {
  for (int k = 0; k < kNumKinds; ++k) {
    const KindOps& ops = OpsOf(static_cast<Kind>(k));
    ops.conversion_errors(*this, ops.info.kind, out);
  }
}

std::optional<Object> WatchCache::Get(Kind kind, const std::string& ns,
                                      const std::string& name) const {
  std::optional<Object> out;
  Inspect(kind, ns, name, [&](const Object& o) { out = o; });
  return out;
}

Snapshot WatchCache::Take() {
  std::lock_guard lock(mu_);
  if (dirty_) {
    if (TryPatch()) {
      ++stats_.patches;
    } else {
      std::vector<ObjectError> errors;
      Assemble(errors);
      std::sort(errors.begin(), errors.end(), [](const ObjectError& a, const ObjectError& b) {
        return std::tie(a.kind, a.namespace_, a.name, a.message) <
               std::tie(b.kind, b.namespace_, b.name, b.message);
      });
      error_keys_.clear();
      for (const ObjectError& e : errors) {
        error_keys_.insert(std::string(InfoOf(e.kind).name) + "/" + Key(e.namespace_, e.name));
      }
      last_.errors = std::move(errors);
      ++last_.layout;
      ++stats_.assemblies;
    }
    last_.stale_bind_requests = StaleList();
    ++last_.generation;
    dirty_ = false;
    full_ = false;
    dirty_pods_.clear();
    dirty_bind_requests_.clear();
    dirty_pod_groups_.clear();
  }
  Snapshot out = last_;
  out.cluster = model_;
  return out;
}

std::shared_ptr<const std::unordered_set<std::string>> WatchCache::ConfigMapSet() {
  if (config_maps_changed_ || !config_map_set_) {
    auto set = std::make_shared<std::unordered_set<std::string>>();
    set->reserve(config_maps_.size());
    for (const auto& [key, e] : config_maps_) {
      if (e.record) set->insert(e.record->namespace_ + "/" + e.record->name);
    }
    config_map_set_ = std::move(set);
    config_maps_changed_ = false;
  }
  return config_map_set_;
}

std::vector<ObjectRef> WatchCache::StaleList() const {
  std::vector<ObjectRef> out;
  out.reserve(stale_keys_.size());
  for (const std::string& key : stale_keys_) {
    const BindRequestRecord& r = *bind_requests_.at(key).record;
    out.push_back({r.namespace_, r.name});
  }
  return out;
}

}  // namespace gantry::cache
