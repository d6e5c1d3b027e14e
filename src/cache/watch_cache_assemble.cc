// How the watch cache builds a Cluster from its records: the full assembly, the patch of the
// previous Cluster for pod and BindRequest changes, and the DRA part. See watch_cache.h.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "cache/object_keys.h"
#include "cache/watch_cache.h"

namespace gantry::cache {

namespace {

// KAI's priority of a job without a priority class when no PriorityClass is the global default.
constexpr int32_t kDefaultPodGroupPriority = 50;

}  // namespace

bool WatchCache::IsStale(const BindRequestRecord& r, const Cluster& cl) const {
  auto pod = pods_.find(Key(r.namespace_, r.pod_name));
  const bool earlier_pod = !r.pod_uid.empty() && pod != pods_.end() && pod->second.record &&
                           pod->second.record->pod.uid != r.pod_uid;
  // A request for a node the cluster does not hold is stale when it is this pool's (the node
  // was deleted); another shard's request (its node is in that shard) is left alone.
  const bool node_gone = cl.FindNode(r.selected_node) == kNone && pool_.Contains(r.labels);
  return r.GaveUp() || r.selected_node.empty() || node_gone || earlier_pod;
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
    // A pending pod naming a PodGroup that does not exist would wait unseen: say so (an event
    // on the pod). A PodGroup that exists but is not a job has an error of its own.
    if (job == kNone &&
        (r.pod.status == PodStatus::kPending || r.pod.status == PodStatus::kGated) &&
        !pod_groups_.count(Key(r.pod.namespace_, r.pod_group))) {
      error = "metadata.annotations.pod-group-name: PodGroup \"" + r.pod_group +
              "\" not found in namespace \"" + r.pod.namespace_ + "\"";
      return PodOutcome::kError;
    }
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
        if (find_node(br.selected_node) == kNone) continue;  // to another shard's node
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
    return error_keys_.count(std::string(InfoOf(kind).name) + "/" + key) > 0;
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
    // KEP-5004: device classes decide what the pod's extended requests are (AssembleDra).
    if (!it->second.record->extended_requests.empty() && !device_classes_.empty()) return false;
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
  const bool config_maps = config_maps_changed_;
  // Nothing the model shows changed (a ConfigMap's contents, say): it stays as it is.
  if (updates.empty() && job_updates.empty() && !config_maps) return true;
  // Copy on write: a snapshot still held keeps its cluster.
  if (model_.use_count() > 1) {
    model_ = std::make_shared<Cluster>(*model_);
    ++stats_.patch_copies;
  }
  if (config_maps) model_->config_maps = ConfigMapSet();
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
  auto error = [&](Kind kind, const std::string& key, std::string message) {
    errors.push_back(ErrorAt(kind, key, std::move(message)));
  };
  ConversionErrors(errors);

  // Nodes, in name order; extended resources interned into this cluster's slots.
  for (const auto& [key, e] : nodes_) {
    if (!e.record || !pool_.Contains(e.record->node.labels)) continue;  // another shard's
    Node n = e.record->node;
    bool ok = true;
    for (const auto& [name, v] : e.record->extended) {
      const int slot = cl.resource_names.Intern(name);
      if (slot < 0) {
        error(Kind::kNode, key,
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

  cl.config_maps = ConfigMapSet();

  // NUMA layouts (NodeResourceTopology objects are named like their node).
  for (const auto& [name, e] : node_topologies_) {
    if (!e.record || !e.record->numa) continue;
    if (auto it = cl.node_index.find(e.record->node_name); it != cl.node_index.end()) {
      cl.nodes[it->second].numa = e.record->numa;
    }
  }

  // Queues whose ancestry is complete and acyclic.
  std::set<std::string> good_queues;
  for (const auto& [name, e] : queues_) {
    if (!e.record || !InPool(e.raw)) continue;  // another shard's (node_pool.h)
    std::set<std::string> seen;
    std::string cur = name;
    std::string problem;
    while (!cur.empty()) {
      if (!seen.insert(cur).second) {
        problem = "spec.parentQueue: the queue hierarchy has a cycle through \"" + cur + "\"";
        break;
      }
      auto it = queues_.find(cur);
      if (it == queues_.end() || !InPool(it->second.raw)) {
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
      error(Kind::kQueue, name, problem);
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
  int32_t default_priority = kDefaultPodGroupPriority;  // KAI: 50 without a global default
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
    // Another shard's (node_pool.h), or tried once for its node pool already
    // (spec.schedulingBackoff): not this scheduler's now. Its pods are left out silently.
    if (!InPool(e.raw) || r.BackedOff(pool_.label_key)) continue;
    if (!good_queues.count(r.queue)) {
      error(Kind::kPodGroup, key, "spec.queue: unknown queue \"" + r.queue + "\"");
      continue;
    }
    if (parent_queues.count(r.queue)) {
      error(Kind::kPodGroup, key,
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
    job.preemption_delay_seconds = r.preemption_delay_seconds;
    job.staleness_grace_period_seconds = r.staleness_grace_period_seconds;
    std::map<std::string, int32_t> sets;
    job.groups.push_back(SubGroup{"",
                                  kNone,
                                  {},
                                  {},
                                  r.topology.ToOptional(),
                                  r.sub_groups.empty() ? std::nullopt : r.min_sub_group});
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
      pending.reserve(r.sub_groups.size());
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
            job.groups.push_back(
                SubGroup{s->name, parent->second, {}, {}, s->topology, s->min_sub_group});
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
      error(Kind::kPod, key, problem);
      continue;
    }
    const JobId job = p.job;
    if (job != kNone) {
      auto& sets = pod_set_by_name[job];
      auto ps = sets.find(set_name);
      if (ps == sets.end()) {
        if (!r.subgroup.empty()) {
          error(Kind::kPod, key,
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
  // KAI's numa plugin asks each pod's QoS class; the model keeps it per job: Guaranteed when every
  // pod of the job is (a job of mixed classes is not NUMA-constrained).
  std::vector<bool> all_guaranteed(cl.jobs.size(), true);
  for (const auto& [key, id] : pod_ids_) {
    const JobId j = cl.pods[id].job;
    if (j != kNone && !pods_.at(key).record->qos_guaranteed) all_guaranteed[j] = false;
  }
  for (JobId j = 0; j < static_cast<JobId>(cl.jobs.size()); ++j) {
    if (all_guaranteed[j] && !cl.jobs[j].pods.empty()) cl.jobs[j].qos_class = "Guaranteed";
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
  auto error = [&](Kind kind, const std::string& key, std::string message) {
    errors.push_back(ErrorAt(kind, key, std::move(message)));
  };
  // DRA is on while every resource.k8s.io kind is served.
  cl.dra_enabled = true;
  for (int k = 0; k < kNumKinds; ++k) {
    if (InfoOf(static_cast<Kind>(k)).dra && not_served_[k]) cl.dra_enabled = false;
  }

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

  AssembleDraExtended(cl, device_index);

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
        error(Kind::kPod, rec->first,
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

void WatchCache::AssembleDraExtended(
    Cluster& cl,
    const std::map<std::tuple<std::string, std::string, std::string>, DeviceRef>& device_index)
    const {
  // Extended resource name -> device class: every class by its implicit name, and by
  // spec.extendedResourceName, where the newest class (then the first by name) wins a name
  // several classes set.
  std::map<std::string, std::string, std::less<>> class_of;
  std::map<std::string, int64_t> created;
  for (const auto& [name, e] : device_classes_) {
    if (!e.record) continue;
    const DeviceClassRecord& r = *e.record;
    class_of[std::string(kDeviceClassResourcePrefix) + r.name] = r.name;
    if (r.extended_resource_name.empty()) continue;
    auto it = created.find(r.extended_resource_name);
    if (it == created.end() || it->second < r.creation_ms) {
      class_of[r.extended_resource_name] = r.name;
      created[r.extended_resource_name] = r.creation_ms;
    }
  }
  if (class_of.empty()) return;
  std::unordered_map<std::string, PodId> pod_ids;
  auto pod_id = [&](const std::string& ns, const std::string& name) -> PodId {
    if (pod_ids.empty()) {
      for (size_t p = 0; p < cl.pods.size(); ++p) {
        pod_ids.emplace(Key(cl.pods[p].namespace_, cl.pods[p].name), static_cast<PodId>(p));
      }
    }
    auto it = pod_ids.find(Key(ns, name));
    return it == pod_ids.end() ? kNone : it->second;
  };
  for (const auto& [key, rec] : pods_) {
    if (!rec.record || rec.record->extended_requests.empty()) continue;
    auto resources = DraExtendedResources(rec.record->extended_requests.items(), class_of);
    if (resources.empty()) continue;
    const PodId p = pod_id(rec.record->pod.namespace_, rec.record->pod.name);
    if (p == kNone) continue;
    cl.pods[p].dra_extended = std::move(resources);
  }
  // A pod placed through its BindRequest holds the devices of the request's extended-resource
  // claim: a stand-in claim keeps them taken until the binder has made the real claim, and while
  // the cache may see the pod bound before the claim's status (two watches; a device held twice
  // is no harm). Not once the binder gave up (it deleted the claim) or the pod is done.
  for (const auto& [key, e] : bind_requests_) {
    if (!e.record || e.record->extended_allocation.empty() || e.record->GaveUp()) continue;
    const PodId p = pod_id(e.record->namespace_, e.record->pod_name);
    if (p == kNone || !IsActiveUsed(cl.pods[p].status)) continue;
    if (!e.record->pod_uid.empty() && e.record->pod_uid != cl.pods[p].uid) continue;
    ResourceClaim held;
    held.name = "<extended-resources>";
    held.namespace_ = e.record->namespace_;
    for (const DeviceResult& d : e.record->extended_allocation) {
      auto it = device_index.find(std::make_tuple(d.driver, d.pool, d.device));
      if (it == device_index.end()) continue;
      held.allocation.push_back(it->second);
      held.device_requests.push_back(d.request);
    }
    held.count = static_cast<int32_t>(held.allocation.size());
    held.allocated = true;
    held.reserved.push_back(p);
    if (held.count > 0) cl.resource_claims.push_back(std::move(held));
  }
}

}  // namespace gantry::cache
