#include "cache/watch_cache.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

namespace gantry::cache {

namespace {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kNode:
      return "Node";
    case Kind::kPod:
      return "Pod";
    case Kind::kQueue:
      return "Queue";
    case Kind::kPodGroup:
      return "PodGroup";
    case Kind::kBindRequest:
      return "BindRequest";
    case Kind::kPriorityClass:
      return "PriorityClass";
    case Kind::kTopology:
      return "Topology";
    case Kind::kDeviceClass:
      return "DeviceClass";
    case Kind::kResourceSlice:
      return "ResourceSlice";
    case Kind::kResourceClaim:
      return "ResourceClaim";
  }
  return "?";
}

std::string KeyOf(const Object& object) {
  const std::string ns = kube::NamespaceOf(object);
  const std::string name = kube::NameOf(object);
  return ns.empty() ? name : ns + "/" + name;
}

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

template <typename T>
void ConvertInto(Object&& object, T& entry, Result<typename decltype(T::record)::value_type> r) {
  // Field-manager bookkeeping is often the bulk of an object and nothing here reads it: it is
  // not kept. The object itself is taken over, not copied.
  if (object.is_object()) {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
  }
  entry.raw = std::move(object);
  if (r.ok()) {
    entry.record = std::move(r).value();
    entry.error.clear();
  } else {
    entry.record.reset();
    entry.error = r.error();
  }
}

// Whether two records of one PodGroup differ at most in their start and stale times (the
// scheduler's own annotations), i.e. make the same job but for those two fields.
bool SameExceptTimes(const PodGroupRecord& a, PodGroupRecord b) {
  b.last_start_ms = a.last_start_ms;
  b.stale_since_ms = a.stale_since_ms;
  return a == b;
}

}  // namespace

const kube::ResourceType& ResourceOf(Kind kind) {
  using namespace kube::resources;
  switch (kind) {
    case Kind::kNode:
      return kNodes;
    case Kind::kPod:
      return kPods;
    case Kind::kQueue:
      return kQueues;
    case Kind::kPodGroup:
      return kPodGroups;
    case Kind::kBindRequest:
      return kBindRequests;
    case Kind::kPriorityClass:
      return kPriorityClasses;
    case Kind::kTopology:
      return kTopologies;
    case Kind::kDeviceClass:
      return kDeviceClasses;
    case Kind::kResourceSlice:
      return kResourceSlices;
    case Kind::kResourceClaim:
      return kResourceClaims;
  }
  return kPods;
}

std::shared_ptr<const kube::FieldFilter> FieldsOf(Kind kind) {
  if (kind != Kind::kPod) return nullptr;
  // What ConvertPod and ConvertPodClaims read, plus what the scheduler reads from the cached
  // object (status.conditions: the Unschedulable condition already written; metadata for events).
  static const auto pods = std::make_shared<const kube::FieldFilter>(
      kube::FieldFilter::FromPaths({"apiVersion",
                                    "kind",
                                    "metadata",
                                    "spec.schedulerName",
                                    "spec.nodeName",
                                    "spec.containers.resources",
                                    "spec.initContainers.resources",
                                    "spec.initContainers.restartPolicy",
                                    "spec.overhead",
                                    "spec.nodeSelector",
                                    "spec.affinity",
                                    "spec.tolerations",
                                    "spec.schedulingGates",
                                    "spec.resourceClaims",
                                    "status.phase",
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
  return std::string(KindName(kind)) + " " + Key(namespace_, name) + ": " + message;
}

WatchCache::WatchCache(std::string scheduler_name) : scheduler_name_(std::move(scheduler_name)) {
  for (int k = 0; k < kNumKinds; ++k) {
    handlers_.push_back(std::make_unique<KindHandler>(*this, static_cast<Kind>(k)));
  }
  model_ = std::make_shared<Cluster>();
}

kube::WatchHandler& WatchCache::handler(Kind kind) { return *handlers_[static_cast<int>(kind)]; }

void WatchCache::KindHandler::OnSync(std::vector<Object> items, const std::string&) {
  {
    std::lock_guard lock(cache_.mu_);
    cache_.not_served_[static_cast<int>(kind_)] = false;
  }
  cache_.Replace(kind_, items);
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
  const bool optional_api = kind_ == Kind::kTopology || kind_ == Kind::kDeviceClass ||
                            kind_ == Kind::kResourceSlice || kind_ == Kind::kResourceClaim;
  if (optional_api && error.IsNotFound() && !cache_.synced(kind_)) {
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

void WatchCache::ClearKind(Kind kind) {
  switch (kind) {
    case Kind::kNode:
      nodes_.clear();
      break;
    case Kind::kPod:
      pods_.clear();
      break;
    case Kind::kQueue:
      queues_.clear();
      break;
    case Kind::kPodGroup:
      pod_groups_.clear();
      break;
    case Kind::kBindRequest:
      bind_requests_.clear();
      requests_by_pod_.clear();
      break;
    case Kind::kPriorityClass:
      priority_classes_.clear();
      break;
    case Kind::kTopology:
      topologies_.clear();
      break;
    case Kind::kDeviceClass:
      device_classes_.clear();
      break;
    case Kind::kResourceSlice:
      resource_slices_.clear();
      break;
    case Kind::kResourceClaim:
      resource_claims_.clear();
      break;
  }
}

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
  // A change to an existing pod, to a BindRequest, or to an existing PodGroup's start / stale
  // times can be patched into the model (see TryPatch); any other change needs a full assembly.
  if (kind != Kind::kPod && kind != Kind::kBindRequest && kind != Kind::kPodGroup) full_ = true;
  switch (kind) {
    case Kind::kNode:
      ConvertInto(std::move(object), nodes_[key], ConvertNode(object));
      break;
    case Kind::kPod: {
      auto [it, added] = pods_.try_emplace(key);
      ConvertInto(std::move(object), it->second, ConvertPod(object));
      if (added) {
        full_ = true;  // new pod ids
      } else {
        dirty_pods_.insert(key);
      }
      break;
    }
    case Kind::kQueue:
      ConvertInto(std::move(object), queues_[key], ConvertQueue(object));
      break;
    case Kind::kPodGroup: {
      auto [it, added] = pod_groups_.try_emplace(key);
      Result<PodGroupRecord> converted = ConvertPodGroup(object);
      // The scheduler's own timestamp annotations change on every job start: those are patched.
      const bool times_only = !added && it->second.record && converted.ok() &&
                              SameExceptTimes(*it->second.record, converted.value());
      ConvertInto(std::move(object), it->second, std::move(converted));
      if (times_only) {
        dirty_pod_groups_.insert(key);
      } else {
        full_ = true;
      }
      break;
    }
    case Kind::kBindRequest: {
      auto& entry = bind_requests_[key];
      if (entry.record) IndexBindRequest(key, *entry.record, false);
      ConvertInto(std::move(object), entry, ConvertBindRequest(object));
      if (entry.record) IndexBindRequest(key, *entry.record, true);
      dirty_bind_requests_.insert(key);
      break;
    }
    case Kind::kPriorityClass:
      ConvertInto(std::move(object), priority_classes_[key], ConvertPriorityClass(object));
      break;
    case Kind::kTopology:
      ConvertInto(std::move(object), topologies_[key], ConvertTopology(object));
      break;
    case Kind::kDeviceClass:
      ConvertInto(std::move(object), device_classes_[key], ConvertDeviceClass(object));
      break;
    case Kind::kResourceSlice:
      ConvertInto(std::move(object), resource_slices_[key], ConvertResourceSlice(object));
      break;
    case Kind::kResourceClaim:
      ConvertInto(std::move(object), resource_claims_[key], ConvertResourceClaim(object));
      break;
  }
}

bool WatchCache::HeldAtVersion(Kind kind, const Object& object) const {
  if (kind != Kind::kPod && kind != Kind::kBindRequest && kind != Kind::kPodGroup) return false;
  const std::string rv = kube::ResourceVersionOf(object);
  if (rv.empty()) return false;
  auto held = [&](const auto& store) {
    auto it = store.find(KeyOf(object));
    return it != store.end() && kube::ResourceVersionOf(it->second.raw) == rv;
  };
  switch (kind) {
    case Kind::kPod:
      return held(pods_);
    case Kind::kBindRequest:
      return held(bind_requests_);
    default:
      return held(pod_groups_);
  }
}

void WatchCache::Remove(Kind kind, const Object& object) {
  const std::string key = KeyOf(object);
  dirty_ = true;
  // Removing a pod changes pod ids; removing anything but a BindRequest needs a full assembly.
  if (kind != Kind::kBindRequest) full_ = true;
  switch (kind) {
    case Kind::kNode:
      nodes_.erase(key);
      break;
    case Kind::kPod:
      pods_.erase(key);
      break;
    case Kind::kQueue:
      queues_.erase(key);
      break;
    case Kind::kPodGroup:
      pod_groups_.erase(key);
      break;
    case Kind::kBindRequest:
      if (auto it = bind_requests_.find(key); it != bind_requests_.end()) {
        if (it->second.record) IndexBindRequest(key, *it->second.record, false);
        bind_requests_.erase(it);
        dirty_bind_requests_.insert(key);
      }
      break;
    case Kind::kPriorityClass:
      priority_classes_.erase(key);
      break;
    case Kind::kTopology:
      topologies_.erase(key);
      break;
    case Kind::kDeviceClass:
      device_classes_.erase(key);
      break;
    case Kind::kResourceSlice:
      resource_slices_.erase(key);
      break;
    case Kind::kResourceClaim:
      resource_claims_.erase(key);
      break;
  }
}

void WatchCache::Replace(Kind kind, const std::vector<Object>& objects) {
  std::lock_guard lock(mu_);
  ClearKind(kind);
  for (const Object& o : objects) Put(kind, o);
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
  auto find = [&](const auto& store) {
    auto it = store.find(key);
    if (it == store.end()) return false;
    fn(it->second.raw);
    return true;
  };
  switch (kind) {
    case Kind::kNode:
      return find(nodes_);
    case Kind::kPod:
      return find(pods_);
    case Kind::kQueue:
      return find(queues_);
    case Kind::kPodGroup:
      return find(pod_groups_);
    case Kind::kBindRequest:
      return find(bind_requests_);
    case Kind::kPriorityClass:
      return find(priority_classes_);
    case Kind::kTopology:
      return find(topologies_);
    case Kind::kDeviceClass:
      return find(device_classes_);
    case Kind::kResourceSlice:
      return find(resource_slices_);
    case Kind::kResourceClaim:
      return find(resource_claims_);
  }
  return false;
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
        error_keys_.insert(std::string(KindName(e.kind)) + "/" + Key(e.namespace_, e.name));
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

std::vector<ObjectRef> WatchCache::StaleList() const {
  std::vector<ObjectRef> out;
  out.reserve(stale_keys_.size());
  for (const std::string& key : stale_keys_) {
    const BindRequestRecord& r = *bind_requests_.at(key).record;
    out.push_back({r.namespace_, r.name});
  }
  return out;
}

bool WatchCache::IsStale(const BindRequestRecord& r, const Cluster& cl) const {
  auto pod = pods_.find(Key(r.namespace_, r.pod_name));
  const bool earlier_pod = !r.pod_uid.empty() && pod != pods_.end() && pod->second.record &&
                           pod->second.record->pod.uid != r.pod_uid;
  return r.GaveUp() || r.selected_node.empty() || cl.FindNode(r.selected_node) == kNone ||
         earlier_pod;
}

WatchCache::PodOutcome WatchCache::BuildPod(Cluster& cl, bool may_intern, const std::string& key,
                                            const PodRecord& r, Pod& p, std::string& set_name,
                                            std::string& error) const {
  if (r.pod.status == PodStatus::kDeleted) return PodOutcome::kLeftOut;
  auto find_node = [&cl](const std::string& name) {
    return name.empty() ? kNone : cl.FindNode(name);
  };
  const NodeId node = find_node(r.node_name);
  JobId job = kNone;
  if (r.scheduler_name == scheduler_name_ && !r.pod_group.empty()) {
    auto it = job_ids_.find(Key(r.pod.namespace_, r.pod_group));
    if (it != job_ids_.end()) job = it->second;
  }
  // Not ours to schedule: only its footprint on a node matters. And a pod said to occupy a
  // node the cache does not know (deleted, or not listed yet) occupies nothing.
  if (IsActiveUsed(r.pod.status) && node == kNone) return PodOutcome::kLeftOut;
  if (job == kNone && !IsActiveUsed(r.pod.status)) return PodOutcome::kLeftOut;
  p = r.pod;
  p.node = node;
  for (const auto& [name, v] : r.extended) {
    const int slot = may_intern ? cl.resource_names.Intern(name) : cl.resource_names.Find(name);
    if (slot < 0) {
      error = "spec.containers.resources: too many distinct extended resources";
      return PodOutcome::kError;
    }
    p.request.scalars[slot] = v;
  }
  if (job == kNone) return PodOutcome::kKept;
  p.job = job;
  set_name = r.subgroup.empty() ? "default" : r.subgroup;
  if ((p.status == PodStatus::kPending || p.status == PodStatus::kGated) && node == kNone) {
    // The first request in force (in key order) holds the pod on its node.
    if (auto reqs = requests_by_pod_.find(key); reqs != requests_by_pod_.end()) {
      for (const std::string& br_key : reqs->second) {
        if (stale_keys_.count(br_key)) continue;
        const BindRequestRecord& br = *bind_requests_.at(br_key).record;
        p.status = PodStatus::kBinding;
        p.node = find_node(br.selected_node);
        p.gpu_groups = br.gpu_groups;
        break;
      }
    }
  }
  p.nominated_node = find_node(r.nominated_node_name);
  return PodOutcome::kKept;
}

bool WatchCache::TryPatch() {
  if (full_) return false;
  // DRA claims tie pods, claims and BindRequests together (AssembleDra): with any in the model,
  // every change takes the full assembly.
  if (!model_->resource_claims.empty()) return false;
  auto has_error = [&](Kind kind, const std::string& key) {
    return error_keys_.count(std::string(KindName(kind)) + "/" + key) > 0;
  };
  // Requests to re-evaluate: the changed ones and every request of a changed pod (its uid decides
  // whether they are an earlier pod's).
  std::set<std::string> requests = dirty_bind_requests_;
  for (const std::string& pod_key : dirty_pods_) {
    if (auto it = requests_by_pod_.find(pod_key); it != requests_by_pod_.end()) {
      requests.insert(it->second.begin(), it->second.end());
    }
  }
  for (const std::string& key : requests) {
    if (has_error(Kind::kBindRequest, key)) return false;
    auto it = bind_requests_.find(key);
    if (it != bind_requests_.end() && !it->second.record) return false;
  }
  for (const std::string& key : requests) {
    auto it = bind_requests_.find(key);
    if (it != bind_requests_.end() && IsStale(*it->second.record, *model_)) {
      stale_keys_.insert(key);
    } else {
      stale_keys_.erase(key);
    }
  }
  // Rebuild the changed pods; each must keep its place (or stay out).
  std::vector<std::pair<PodId, Pod>> updates;
  for (const std::string& key : dirty_pods_) {
    auto it = pods_.find(key);
    if (it == pods_.end()) continue;  // a request naming a pod the cache does not hold
    if (!it->second.record || has_error(Kind::kPod, key)) return false;
    if (!it->second.record->claims.empty()) return false;  // see above
    Pod p;
    std::string set_name;
    std::string error;
    const PodOutcome outcome =
        BuildPod(*model_, /*may_intern=*/false, key, *it->second.record, p, set_name, error);
    if (outcome == PodOutcome::kError) return false;
    auto id = pod_ids_.find(key);
    if (outcome == PodOutcome::kLeftOut) {
      if (id != pod_ids_.end()) return false;
      continue;
    }
    if (id == pod_ids_.end()) return false;
    const Pod& old = model_->pods[id->second];
    if (p.job != old.job) return false;
    if (p.job != kNone) {
      const Job& job = model_->jobs[p.job];
      const int32_t set = old.pod_set;
      if (set < 0 || set >= static_cast<int32_t>(job.pod_sets.size()) ||
          job.pod_sets[set].name != set_name) {
        return false;
      }
      p.pod_set = set;
    }
    updates.emplace_back(id->second, std::move(p));
  }
  // PodGroups whose start / stale times changed: their job takes the new times.
  std::vector<std::pair<JobId, const PodGroupRecord*>> job_updates;
  for (const std::string& key : dirty_pod_groups_) {
    auto id = job_ids_.find(key);
    if (id == job_ids_.end()) return false;  // not a job of the model (an error, or new)
    auto it = pod_groups_.find(key);
    if (it == pod_groups_.end() || !it->second.record) return false;
    job_updates.emplace_back(id->second, &*it->second.record);
  }
  // Copy on write: a snapshot still held keeps its cluster.
  if (model_.use_count() > 1) {
    model_ = std::make_shared<Cluster>(*model_);
    ++stats_.patch_copies;
  }
  for (auto& [id, p] : updates) model_->pods[id] = std::move(p);
  for (const auto& [id, r] : job_updates) {
    model_->jobs[id].last_start_ms = r->last_start_ms;
    model_->jobs[id].stale_since_ms = r->stale_since_ms;
  }
  stats_.pods_patched += static_cast<int64_t>(updates.size());
  return true;
}

void WatchCache::Assemble(std::vector<ObjectError>& errors) {
  auto out = std::make_shared<Cluster>();
  Cluster& cl = *out;
  pod_ids_.clear();
  job_ids_.clear();
  stale_keys_.clear();
  auto error = [&](Kind kind, const Object& raw, std::string message) {
    errors.push_back({kind, kube::NamespaceOf(raw), kube::NameOf(raw), std::move(message)});
  };
  auto conversion_errors = [&](Kind kind, const auto& store) {
    for (const auto& [key, e] : store) {
      if (!e.record) error(kind, e.raw, e.error);
    }
  };
  conversion_errors(Kind::kNode, nodes_);
  conversion_errors(Kind::kPod, pods_);
  conversion_errors(Kind::kQueue, queues_);
  conversion_errors(Kind::kPodGroup, pod_groups_);
  conversion_errors(Kind::kBindRequest, bind_requests_);
  conversion_errors(Kind::kPriorityClass, priority_classes_);
  conversion_errors(Kind::kTopology, topologies_);

  // Nodes, in name order; extended resources interned into this cluster's slots.
  for (const auto& [key, e] : nodes_) {
    if (!e.record) continue;
    Node n = e.record->node;
    bool ok = true;
    for (const auto& [name, v] : e.record->extended) {
      const int slot = cl.resource_names.Intern(name);
      if (slot < 0) {
        error(Kind::kNode, e.raw,
              "status.allocatable." + name + ": too many distinct extended resources");
        ok = false;
        break;
      }
      n.allocatable.scalars[slot] = v;
    }
    if (!ok) continue;
    cl.node_index[n.name] = static_cast<NodeId>(cl.nodes.size());
    cl.nodes.push_back(std::move(n));
  }

  // Queues whose ancestry is complete and acyclic.
  std::set<std::string> good_queues;
  for (const auto& [name, e] : queues_) {
    if (!e.record) continue;
    std::set<std::string> seen;
    std::string cur = name;
    std::string problem;
    while (!cur.empty()) {
      if (!seen.insert(cur).second) {
        problem = "spec.parentQueue: the queue hierarchy has a cycle through \"" + cur + "\"";
        break;
      }
      auto it = queues_.find(cur);
      if (it == queues_.end()) {
        problem = "spec.parentQueue: unknown queue \"" + cur + "\"";
        break;
      }
      if (!it->second.record) {
        problem = "spec.parentQueue: queue \"" + cur + "\" is invalid";
        break;
      }
      cur = it->second.record->parent_name;
    }
    if (!problem.empty()) {
      error(Kind::kQueue, e.raw, problem);
      continue;
    }
    good_queues.insert(name);
    cl.queues.push_back(*e.record);
  }
  std::set<std::string> parent_queues;
  for (const Queue& q : cl.queues) {
    if (!q.parent_name.empty()) parent_queues.insert(q.parent_name);
  }

  // Priority classes.
  std::map<std::string, int32_t> priorities;
  int32_t default_priority = 0;
  for (const auto& [name, e] : priority_classes_) {
    if (!e.record) continue;
    priorities[name] = e.record->value;
    if (e.record->global_default) default_priority = e.record->value;
  }

  // Jobs from PodGroups in existing leaf queues.
  std::vector<std::map<std::string, int32_t>> pod_set_by_name;
  for (const auto& [key, e] : pod_groups_) {
    if (!e.record) continue;
    const PodGroupRecord& r = *e.record;
    if (!good_queues.count(r.queue)) {
      error(Kind::kPodGroup, e.raw, "spec.queue: unknown queue \"" + r.queue + "\"");
      continue;
    }
    if (parent_queues.count(r.queue)) {
      error(Kind::kPodGroup, e.raw,
            "spec.queue: \"" + r.queue +
                "\" is a parent queue; jobs must be submitted to a leaf queue");
      continue;
    }
    Job job;
    job.name = r.name;
    job.namespace_ = r.namespace_;
    job.queue_name = r.queue;
    if (r.priority_class.empty()) {
      job.priority = default_priority;
    } else if (auto it = priorities.find(r.priority_class); it != priorities.end()) {
      job.priority = it->second;
    } else {
      job.priority = default_priority;
    }
    job.preemptible =
        r.preemptibility.empty() ? job.priority < 100 : r.preemptibility == "preemptible";
    job.creation_ms = r.creation_ms;
    job.deleting = r.deleting;
    job.last_start_ms = r.last_start_ms;
    job.stale_since_ms = r.stale_since_ms;
    std::map<std::string, int32_t> sets;
    job.groups.push_back(SubGroup{"", kNone, {}, {}, r.topology});
    if (r.sub_groups.empty()) {
      job.groups[0].child_pod_sets.push_back(0);
      PodSet ps;
      ps.name = "default";
      ps.min_available = r.min_member;
      job.pod_sets.push_back(std::move(ps));
      sets["default"] = 0;
    } else {
      // Sub-groups with children are inner groups; the others are pod sets. Parents are created
      // before their children (the tree was validated at conversion).
      std::set<std::string> inner;
      for (const auto& s : r.sub_groups) {
        if (!s.parent.empty()) inner.insert(s.parent);
      }
      std::map<std::string, int32_t> group_index{{"", 0}};
      std::vector<const SubGroupSpec*> pending;
      for (const auto& s : r.sub_groups) pending.push_back(&s);
      while (!pending.empty()) {
        std::vector<const SubGroupSpec*> later;
        for (const SubGroupSpec* s : pending) {
          auto parent = group_index.find(s->parent);
          if (parent == group_index.end()) {
            later.push_back(s);
            continue;
          }
          if (inner.count(s->name)) {
            const int32_t idx = static_cast<int32_t>(job.groups.size());
            job.groups.push_back(SubGroup{s->name, parent->second, {}, {}, s->topology});
            job.groups[parent->second].child_groups.push_back(idx);
            group_index[s->name] = idx;
          } else {
            const int32_t idx = static_cast<int32_t>(job.pod_sets.size());
            PodSet ps;
            ps.name = s->name;
            ps.min_available = s->min_member;
            ps.parent_group = parent->second;
            ps.topology = s->topology;
            job.pod_sets.push_back(std::move(ps));
            job.groups[parent->second].child_pod_sets.push_back(idx);
            sets[s->name] = idx;
          }
        }
        if (later.size() == pending.size()) break;  // unreachable after validation
        pending = std::move(later);
      }
    }
    job_ids_[key] = static_cast<JobId>(cl.jobs.size());
    cl.jobs.push_back(std::move(job));
    pod_set_by_name.push_back(std::move(sets));
  }

  // Node names resolve through cl.node_index from here on (filled above; Finalize refills it).
  // BindRequests no longer in force; the others hold their pods (see BuildPod).
  for (const auto& [key, e] : bind_requests_) {
    if (e.record && IsStale(*e.record, cl)) stale_keys_.insert(key);
  }

  // Pods: members of jobs, or occupants of nodes.
  std::vector<std::pair<JobId, int32_t>> ungrouped_sets;
  for (const auto& [key, e] : pods_) {
    if (!e.record) continue;
    const PodRecord& r = *e.record;
    Pod p;
    std::string set_name;
    std::string problem;
    const PodOutcome outcome = BuildPod(cl, /*may_intern=*/true, key, r, p, set_name, problem);
    if (outcome == PodOutcome::kLeftOut) continue;
    if (outcome == PodOutcome::kError) {
      error(Kind::kPod, e.raw, problem);
      continue;
    }
    const JobId job = p.job;
    if (job != kNone) {
      auto& sets = pod_set_by_name[job];
      auto ps = sets.find(set_name);
      if (ps == sets.end()) {
        if (!r.subgroup.empty()) {
          error(Kind::kPod, e.raw,
                std::string("metadata.labels.") + kSubGroupLabel + ": PodGroup \"" + r.pod_group +
                    "\" has no sub-group \"" + r.subgroup + "\" without children");
          continue;
        }
        // Pods without a sub-group in a PodGroup that has sub-groups form a "default" pod set
        // under the root, all of whose pods are required.
        Job& j = cl.jobs[job];
        const int32_t idx = static_cast<int32_t>(j.pod_sets.size());
        PodSet def;
        def.name = "default";
        def.min_available = 0;  // set once its pods are known
        ungrouped_sets.emplace_back(job, idx);
        j.pod_sets.push_back(std::move(def));
        j.groups[0].child_pod_sets.push_back(idx);
        ps = sets.emplace("default", idx).first;
      }
      p.pod_set = ps->second;
    }
    const PodId id = static_cast<PodId>(cl.pods.size());
    pod_ids_.emplace(key, id);
    if (p.job != kNone) {
      Job& j = cl.jobs[p.job];
      j.pods.push_back(id);
      PodSet& set = j.pod_sets[p.pod_set];
      set.pods.push_back(id);
    }
    cl.pods.push_back(std::move(p));
  }
  // A default pod set made for ungrouped pods requires all of them.
  for (const auto& [j, set] : ungrouped_sets) {
    PodSet& def = cl.jobs[j].pod_sets[set];
    def.min_available = static_cast<int32_t>(def.pods.size());
  }

  for (const auto& [name, e] : topologies_) {
    if (e.record) cl.topologies.push_back(*e.record);
  }
  AssembleDra(cl, errors);
  cl.Finalize();
  model_ = std::move(out);
}

// ---- DRA ----

void WatchCache::AssembleDra(Cluster& cl, std::vector<ObjectError>& errors) const {
  auto error = [&](Kind kind, const Object& raw, std::string message) {
    errors.push_back({kind, kube::NamespaceOf(raw), kube::NameOf(raw), std::move(message)});
  };
  auto conversion_errors = [&](Kind kind, const auto& store) {
    for (const auto& [key, e] : store) {
      if (!e.record) error(kind, e.raw, e.error);
    }
  };
  conversion_errors(Kind::kDeviceClass, device_classes_);
  conversion_errors(Kind::kResourceSlice, resource_slices_);
  conversion_errors(Kind::kResourceClaim, resource_claims_);
  cl.dra_enabled = !not_served_[static_cast<int>(Kind::kDeviceClass)] &&
                   !not_served_[static_cast<int>(Kind::kResourceSlice)] &&
                   !not_served_[static_cast<int>(Kind::kResourceClaim)];

  // Device classes; the class of a driver's devices is the first class (by name) pinning it,
  // else the class named like the driver.
  std::map<std::string, std::string> class_of_driver;
  for (const auto& [name, e] : device_classes_) {
    if (!e.record) continue;
    cl.device_classes.push_back(e.record->name);
    const std::string driver = e.record->driver.empty() ? e.record->name : e.record->driver;
    class_of_driver.emplace(driver, e.record->name);
  }

  // Slices on known nodes (or all nodes); GPU slices on a node add to its GPUs.
  std::map<std::tuple<std::string, std::string, std::string>, DeviceRef> device_index;
  for (const auto& [name, e] : resource_slices_) {
    if (!e.record) continue;
    const ResourceSliceRecord& r = *e.record;
    ResourceSlice rs;
    rs.name = r.name;
    rs.driver = r.driver;
    auto cls = class_of_driver.find(r.driver);
    rs.device_class = cls == class_of_driver.end() ? r.driver : cls->second;
    if (!r.all_nodes) {
      auto n = cl.node_index.find(r.node_name);
      if (n == cl.node_index.end()) continue;  // node gone or not listed yet
      rs.node = n->second;
    }
    rs.device_count = static_cast<int32_t>(r.devices.size());
    rs.pool = r.pool;
    rs.device_names = r.devices;
    const int32_t index = static_cast<int32_t>(cl.resource_slices.size());
    for (int32_t d = 0; d < rs.device_count; ++d) {
      device_index.emplace(std::make_tuple(r.driver, r.pool, r.devices[d]), DeviceRef{index, d});
    }
    if (rs.node != kNone && IsGpuDeviceClass(rs.driver)) {
      Node& n = cl.nodes[rs.node];
      n.dra_gpus += rs.device_count;
      n.allocatable.gpus += rs.device_count;
    }
    cl.resource_slices.push_back(std::move(rs));
  }

  // Nothing more to do without claims (the common case: no per-pod work at all).
  const bool pods_with_claims = std::any_of(pods_.begin(), pods_.end(), [](const auto& kv) {
    return kv.second.record && !kv.second.record->claims.empty();
  });
  if (resource_claims_.empty() && !pods_with_claims) return;

  // Pods by "namespace/name".
  std::unordered_map<std::string, PodId> pod_ids;
  pod_ids.reserve(cl.pods.size());
  for (size_t p = 0; p < cl.pods.size(); ++p) {
    pod_ids.emplace(Key(cl.pods[p].namespace_, cl.pods[p].name), static_cast<PodId>(p));
  }

  // Claims: allocated devices resolved to slices, reservations to pods of the model (others are
  // outside consumers).
  std::map<std::string, int32_t> claim_ids;
  for (const auto& [key, e] : resource_claims_) {
    if (!e.record) continue;
    const ResourceClaimRecord& r = *e.record;
    ResourceClaim rc = r.claim;
    rc.allocated = r.allocated;
    for (const DeviceResult& d : r.results) {
      auto it = device_index.find(std::make_tuple(d.driver, d.pool, d.device));
      if (it != device_index.end()) rc.allocation.push_back(it->second);
    }
    for (const auto& c : r.reserved_for) {
      auto p = c.resource == "pods" ? pod_ids.find(Key(rc.namespace_, c.name)) : pod_ids.end();
      if (p != pod_ids.end() && (c.uid.empty() || cl.pods[p->second].uid == c.uid)) {
        rc.reserved.push_back(p->second);
      } else {
        ++rc.other_consumers;
      }
    }
    claim_ids[key] = static_cast<int32_t>(cl.resource_claims.size());
    cl.resource_claims.push_back(std::move(rc));
  }

  // Pods' claims. A claim that is missing (not created yet, or not generated from its template
  // yet) is stood in for by one that cannot be allocated, so the pod waits; the pod is reported.
  for (auto rec = pods_.begin(); rec != pods_.end(); ++rec) {
    if (!rec->second.record || rec->second.record->claims.empty()) continue;
    auto id = pod_ids.find(rec->first);
    if (id == pod_ids.end()) continue;  // not in the model
    Pod& pod = cl.pods[id->second];
    const auto& refs = rec->second.record->claims;
    for (size_t i = 0; i < refs.size(); ++i) {
      const PodClaimRef& ref = refs[i];
      auto c = ref.claim_name.empty() ? claim_ids.end()
                                      : claim_ids.find(Key(pod.namespace_, ref.claim_name));
      if (c == claim_ids.end()) {
        const std::string field = "spec.resourceClaims[" + std::to_string(i) + "]";
        error(Kind::kPod, rec->second.raw,
              ref.claim_name.empty()
                  ? field + ": no resource claim generated from its template yet"
                  : field + ": resource claim \"" + ref.claim_name + "\" not found");
        ResourceClaim missing;
        missing.name = ref.claim_name.empty() ? ref.name : ref.claim_name;
        missing.namespace_ = pod.namespace_;
        missing.count = 1;
        missing.from_template = ref.from_template;
        c = claim_ids
                .emplace("\n" + Key(pod.namespace_, missing.name),
                         static_cast<int32_t>(cl.resource_claims.size()))
                .first;
        cl.resource_claims.push_back(std::move(missing));
      }
      if (ref.from_template) cl.resource_claims[c->second].from_template = true;
      pod.claims.push_back(c->second);
      pod.claim_names.push_back(ref.name);
      const ResourceClaim& rc = cl.resource_claims[c->second];
      if (rc.IsGpuClaim()) pod.dra_gpus += rc.count;
    }
  }

  // A pod being bound holds the devices its BindRequest names until the binder writes them
  // into the claims (KAI reads them from the request too), so they are not handed out twice.
  for (const auto& [key, e] : bind_requests_) {
    if (!e.record || e.record->claim_allocations.empty()) continue;
    auto p = pod_ids.find(Key(e.record->namespace_, e.record->pod_name));
    if (p == pod_ids.end() || cl.pods[p->second].status != PodStatus::kBinding) continue;
    const PodId pid = p->second;
    auto rec = pods_.find(Key(e.record->namespace_, e.record->pod_name));
    if (rec == pods_.end() || !rec->second.record) continue;
    for (const auto& [claim_ref, devices] : e.record->claim_allocations) {
      for (const PodClaimRef& ref : rec->second.record->claims) {
        if (ref.name != claim_ref || ref.claim_name.empty()) continue;
        auto c = claim_ids.find(Key(e.record->namespace_, ref.claim_name));
        if (c == claim_ids.end()) continue;
        ResourceClaim& rc = cl.resource_claims[c->second];
        if (!rc.allocated) {
          rc.allocation.clear();
          for (const DeviceResult& d : devices) {
            auto it = device_index.find(std::make_tuple(d.driver, d.pool, d.device));
            if (it != device_index.end()) rc.allocation.push_back(it->second);
          }
          rc.allocated = true;
        }
        if (std::find(rc.reserved.begin(), rc.reserved.end(), pid) == rc.reserved.end()) {
          rc.reserved.push_back(pid);
        }
      }
    }
  }
}

}  // namespace gantry::cache
