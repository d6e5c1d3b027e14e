#include "framework/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/plugin.h"
#include "framework/session_internal.h"
#include "framework/subgroup_tree.h"

namespace gantry {

Session::Session(const Cluster& cluster, const SchedulerConfig& config, int64_t now_ms)
    : cluster_(cluster), config_(config), now_ms_(now_ms), dra_(cluster) {
  const auto& pods = cluster.pods;
  pods_.resize(pods.size());
  pod_groups_.resize(pods.size());
  accepted_gpus_.assign(pods.size(), 0);
  for (size_t i = 0; i < pods.size(); ++i) {
    pods_[i].status = pods[i].status;
    pods_[i].node = pods[i].node;
    for (const std::string& g : pods[i].gpu_groups) pod_groups_[i].push_back(InternGroup(g));
  }
  nodes_.resize(cluster.nodes.size());
  node_version_.assign(cluster.nodes.size(), 0);
  node_changed_at_.assign(cluster.nodes.size(), 0);
  shared_.resize(cluster.nodes.size());
  for (int slot = 0; slot < cluster.resource_names.size(); ++slot) {
    int g = 0, m = 0;
    if (ParseMigProfile(cluster.resource_names.Name(slot), g, m)) {
      mig_profiles_.push_back({slot, g, m});
    }
  }
  all_nodes_.resize(cluster.nodes.size());
  std::iota(all_nodes_.begin(), all_nodes_.end(), 0);
  non_allocated_gpus_.resize(cluster.nodes.size());
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    nodes_[n].idle = cluster.nodes[n].allocatable;
    non_allocated_gpus_[n] = nodes_[n].idle.gpus;
  }

  static std::atomic<uint64_t> next_serial{0};
  serial_ = ++next_serial;
  // (Versions start at 1 before any pod is placed: placing one bumps its job's.)
  job_version_.assign(cluster.jobs.size(), 1);
  elastic_.assign(cluster.jobs.size(), 0);
  single_pod_.assign(cluster.jobs.size(), kNone);
  for (JobId j = 0; j < static_cast<JobId>(cluster.jobs.size()); ++j) {
    const Job& job = cluster.jobs[j];
    for (const PodSet& ps : job.pod_sets) {
      if (ps.min_available < static_cast<int32_t>(ps.pods.size())) elastic_[j] = 1;
    }
    if (job.pod_sets.size() == 1 && job.pods.size() == 1 &&
        cluster.pods[job.pods.front()].pod_set == 0) {
      single_pod_[j] = job.pods.front();
    }
  }
  // Occupying pods are added in byte order of their names (shared-device placement depends on it).
  for (PodId p : cluster.pods_by_name()) {
    if (IsActiveUsed(pods_[p].status) && pods_[p].node != kNone) AddPodToNode(p, pods_[p].node);
  }

  pod_set_counters_.resize(static_cast<size_t>(cluster.total_pod_sets()));
  for (PodId p = 0; p < static_cast<PodId>(pods.size()); ++p) CountPod(p, +1);
  for (JobId j = 0; j < static_cast<JobId>(cluster.jobs.size()); ++j) {
    if (HasPendingPods(j)) jobs_pending_at_open_.push_back(j);
  }

  for (const Pod& pod : pods) {
    any_anti_affinity_ = any_anti_affinity_ || !pod.pod_anti_affinity.empty();
    any_preferred_pod_affinity_ = any_preferred_pod_affinity_ || pod.HasPreferredPodAffinity();
  }
  BuildNodeClasses();

  queue_versions_.assign(cluster.queues.size(), 0);
  jobs_.resize(cluster.jobs.size());
  job_quantities_cache_.assign(cluster.jobs.size(), {0, Quantities{}});
  job_allocated_cache_.assign(cluster.jobs.size(), {0, Quantities{}});
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    jobs_[j].last_start_ms = cluster.jobs[j].last_start_ms;
    jobs_[j].stale_since_ms = cluster.jobs[j].stale_since_ms;
  }
}

Session::~Session() = default;

void Session::Open(std::span<Plugin* const> plugins, std::span<const PluginConfig> configs) {
  plugins_.assign(plugins.begin(), plugins.end());
  plugin_timings_.assign(plugins_.size(), PluginTiming{});
  for (size_t i = 0; i < plugins_.size(); ++i) {
    opening_ = i < configs.size() ? &configs[i] : nullptr;
    const auto start = std::chrono::steady_clock::now();
    plugins_[i]->OnSessionOpen(*this);
    plugin_timings_[i].plugin = std::string(plugins_[i]->name());
    plugin_timings_[i].open_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  opening_ = nullptr;
  ranking_.classes_enabled =
      ranking_.classes_enabled &&
      (params().class_ranking_per_pod ? NodeCallbacksDependOnlyOnShapeAndStateUnlessFiltered()
                                      : NodeCallbacksDependOnlyOnShapeAndState());
  SessionOpened();
}

void Session::Close() {
  for (size_t i = 0; i < plugins_.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    plugins_[i]->OnSessionClose(*this);
    plugin_timings_[i].close_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
}

void Session::BeginAction(std::string_view action) {
  action_counts_.emplace_back();
  action_counts_.back().action = std::string(action);
}

// --- State ----------------------------------------------------------------------------------

namespace {
// Adds `sign` to the counters a pod of status s counts in.
void CountStatus(PodSetCounters& c, PodStatus s, int sign) {
  if (IsActiveAllocated(s)) c.active_allocated += sign;
  if (IsActiveUsed(s)) c.active_used += sign;
  if (IsAlive(s)) c.alive += sign;
  if (s == PodStatus::kGated) c.gated += sign;
  if (s == PodStatus::kPending) c.pending += sign;
}
// What adding the pod charges to node `node`: its footprint without the extended resources the
// node has none of (KAI #1943: such a request is met elsewhere, e.g. by a DRA device backing an
// extended resource, and must not drive the node's counters negative).
Resources ChargedOn(const Pod& pod, const Node& node) {
  Resources r = NodeFootprint(pod);
  for (size_t s = 0; s < r.scalars.size(); ++s) {
    if (node.allocatable.scalars[s] == 0) r.scalars[s] = 0;
  }
  return r;
}
}  // namespace

void Session::CountPod(PodId p, int sign) {
  const Pod& pod = cluster_.pods[p];
  if (pod.job == kNone) return;
  CountStatus(pod_set_counters_[cluster_.jobs[pod.job].pod_set_base + pod.pod_set], pods_[p].status,
              sign);
}

void Session::SetPodStatus(PodId p, PodStatus s) {
  const Pod& pod = cluster_.pods[p];
  const PodStatus old = pods_[p].status;
  if (pod.job != kNone) ++job_version_[pod.job];
  if (old == s) return;  // (counters unchanged)
  BumpVersions(p);
  pods_[p].status = s;
  if (pod.job == kNone) return;
  // The pod-set counters move from the old status to the new one.
  auto& c = pod_set_counters_[cluster_.jobs[pod.job].pod_set_base + pod.pod_set];
  CountStatus(c, old, -1);
  CountStatus(c, s, +1);
}

namespace {
// The node part of Session::AddPodToNode / RemovePodFromNode for `pod` in `status`, `r` being
// ChargedOn(pod, node) (`memory`: its GPU memory per device on the node, read only for a
// shared-GPU pod): its charge on the node's counters and, for a shared-GPU pod, on its devices
// `groups`. (Shared with EvictAndRollBackCounters, which runs them on copies; always inlined, as
// they were written inside AddPodToNode / RemovePodFromNode before.)
[[gnu::always_inline]] inline void SessionChargeNode(const Pod& pod, const Node& node,
                                                     const Resources& r, PodStatus status,
                                                     int64_t memory,
                                                     const std::vector<int32_t>& groups,
                                                     NodeState& ns, NodeSharedGpus& shared) {
  ns.used += r;
  switch (status) {
    case PodStatus::kReleasing:
      ns.releasing += r;
      ns.idle -= r;
      break;
    case PodStatus::kPipelined:
      ns.releasing -= r;
      break;
    default:
      ns.idle -= r;
  }
  if (pod.IsSharedGpu()) {
    for (int32_t g : groups) {
      shared.Add(g, memory, status, node.gpu_count, ns.used.gpus, ns.idle.gpus, ns.releasing.gpus);
    }
  }
}
[[gnu::always_inline]] inline void SessionDischargeNode(const Pod& pod, const Node& node,
                                                        const Resources& r, PodStatus status,
                                                        int64_t memory,
                                                        const std::vector<int32_t>& groups,
                                                        NodeState& ns, NodeSharedGpus& shared) {
  ns.used -= r;
  switch (status) {
    case PodStatus::kReleasing:
      ns.releasing -= r;
      ns.idle += r;
      break;
    case PodStatus::kPipelined:
      ns.releasing += r;
      break;
    default:
      ns.idle += r;
  }
  if (pod.IsSharedGpu()) {
    for (int32_t g : groups) {
      shared.Remove(g, memory, status, node.gpu_count, ns.used.gpus, ns.idle.gpus,
                    ns.releasing.gpus);
    }
  }
}
}  // namespace

void Session::AddPodToNode(PodId p, NodeId n) {
  ++placement_epoch_;
  // (The accepted GPUs change with it: caches by job version must see a new version.)
  if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  ++node_version_[n];
  const Pod& pod = cluster_.pods[p];
  accepted_gpus_[p] = AcceptedGpusOn(p, n);
  NodeState& ns = nodes_[n];
  const Node& node = cluster_.nodes[n];
  SessionChargeNode(pod, node, ChargedOn(pod, node), pods_[p].status,
                    pod.IsSharedGpu() ? PodGpuMemoryOn(p, n) : 0, pod_groups_[p], ns, shared_[n]);
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  LogNodeChange(n);
}

void Session::RemovePodFromNode(PodId p, NodeId n) {
  ++placement_epoch_;
  ++node_version_[n];
  const Pod& pod = cluster_.pods[p];
  NodeState& ns = nodes_[n];
  const Node& node = cluster_.nodes[n];
  SessionDischargeNode(pod, node, ChargedOn(pod, node), pods_[p].status,
                       pod.IsSharedGpu() ? PodGpuMemoryOn(p, n) : 0, pod_groups_[p], ns,
                       shared_[n]);
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  LogNodeChange(n);
}

bool Session::EvictAndRollBackCounters(
    std::span<const PodId> pods,
    const std::function<bool(std::span<const NodeId>, std::span<const double>)>& after_evictions) {
  // (Event handlers that read the pod's status: the NUMA view's, and DRA's for pods with claims;
  // proportion's reads only the pod's accepted quantities and job.)
  if (pods.empty() || numa_view_ != nullptr) return false;
  // Per pod: its node's place in `nodes`, what it charges there, its GPU memory per device; per
  // touched node: copies of its counters and devices, in the order the pods first touch them.
  struct Scratch {
    std::vector<NodeId> nodes;
    std::vector<NodeState> states;
    std::vector<NodeSharedGpus> shared;
    std::vector<double> free;
    std::vector<uint32_t> slot;
    std::vector<Resources> charged;
    std::vector<int64_t> memory;
    std::vector<uint64_t> pod_seen;  // per pod of the cluster: the call that listed it
    uint64_t stamp = 0;
  };
  thread_local Scratch s;
  if (s.pod_seen.size() != cluster_.pods.size()) s.pod_seen.assign(cluster_.pods.size(), 0);
  ++s.stamp;
  s.nodes.clear();
  s.slot.clear();
  s.charged.clear();
  s.memory.clear();
  for (PodId p : pods) {
    const Pod& pod = cluster_.pods[p];
    const NodeId n = pods_[p].node;
    uint64_t& seen = s.pod_seen[static_cast<size_t>(p)];
    if (n == kNone || !IsActiveAllocated(pods_[p].status) || !pod.claims.empty() ||
        !pod.dra_extended.empty() || seen == s.stamp) {
      return false;
    }
    seen = s.stamp;
    uint32_t at = 0;
    while (at < s.nodes.size() && s.nodes[at] != n) ++at;
    if (at == s.nodes.size()) {
      s.nodes.push_back(n);
      if (s.states.size() < s.nodes.size()) {
        s.states.emplace_back();
        s.shared.emplace_back();
      }
      s.states[at] = nodes_[n];
      s.shared[at] = shared_[n];
    }
    s.slot.push_back(at);
    s.charged.push_back(ChargedOn(pod, cluster_.nodes[n]));
    s.memory.push_back(pod.IsSharedGpu() ? PodGpuMemoryOn(p, n) : 0);
  }
  // The evictions (Statement::ApplyEvict: off the node as it was, back on it releasing).
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodId p = pods[i];
    const Pod& pod = cluster_.pods[p];
    const Node& node = cluster_.nodes[pods_[p].node];
    const uint32_t at = s.slot[i];
    SessionDischargeNode(pod, node, s.charged[i], pods_[p].status, s.memory[i], pod_groups_[p],
                         s.states[at], s.shared[at]);
    SessionChargeNode(pod, node, s.charged[i], PodStatus::kReleasing, s.memory[i], pod_groups_[p],
                      s.states[at], s.shared[at]);
  }
  s.free.clear();
  for (size_t at = 0; at < s.nodes.size(); ++at) {
    s.free.push_back(s.states[at].idle.gpus + s.states[at].releasing.gpus);
  }
  if (!after_evictions(s.nodes, s.free)) return false;
  // The rollback, last eviction first (Statement::Undo: off the node releasing, back on it as it
  // was).
  for (size_t i = pods.size(); i-- > 0;) {
    const PodId p = pods[i];
    const Pod& pod = cluster_.pods[p];
    const Node& node = cluster_.nodes[pods_[p].node];
    const uint32_t at = s.slot[i];
    SessionDischargeNode(pod, node, s.charged[i], PodStatus::kReleasing, s.memory[i],
                         pod_groups_[p], s.states[at], s.shared[at]);
    SessionChargeNode(pod, node, s.charged[i], pods_[p].status, s.memory[i], pod_groups_[p],
                      s.states[at], s.shared[at]);
  }
  const int num_scalars = cluster_.resource_names.size();
  for (size_t at = 0; at < s.nodes.size(); ++at) {
    const NodeId n = s.nodes[at];
    // (Mostly the replay gives the node back as it found it: node_changed_at keeps its count.)
    const NodeState& st = s.states[at];
    const bool same = NodeRanking::SameResources(nodes_[n].idle, st.idle, num_scalars) &&
                      NodeRanking::SameResources(nodes_[n].used, st.used, num_scalars) &&
                      NodeRanking::SameResources(nodes_[n].releasing, st.releasing, num_scalars) &&
                      shared_[n] == s.shared[at];
    nodes_[n] = s.states[at];
    shared_[n] = s.shared[at];
    non_allocated_gpus_[n] = nodes_[n].idle.gpus + nodes_[n].releasing.gpus;
    ++placement_epoch_;
    ++node_version_[n];
    MarkClassDirty(n);
    LogNodeChange(n, /*state_changed=*/!same);
  }
  for (PodId p : pods) {
    accepted_gpus_[p] = AcceptedGpusOn(p, pods_[p].node);
    if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  }
  // The pod events in the statement's order: each eviction's, then each undo's.
  for (PodId p : pods) FireDeallocate(p);
  for (size_t i = pods.size(); i-- > 0;) FireAllocate(pods[i]);
  return true;
}

void Session::RecordBind(PodId p) {
  SetPodStatus(p, PodStatus::kBinding);
  binds_.push_back({p, pods_[p].node, GroupNames(p)});
}

void Session::RecordEviction(PodId p, NodeId from, std::string message) {
  const JobId j = cluster_.pods[p].job;
  if (j != kNone) jobs_[j].last_eviction_ms = now_ms_;
  // One request per pod: the pod was asked to leave its node already (an earlier solution
  // evicted it and placed it elsewhere, where this one evicts it again, as KAI does).
  if (pods_[p].eviction_requested) return;
  evictions_.push_back(
      {p, from, std::move(message), action_counts_.empty() ? "" : action_counts_.back().action});
  pods_[p].eviction_requested = true;
}

void Session::RecordPipelined(PodId p, std::string message) {
  pipelined_.push_back({p, pods_[p].node, std::move(message)});
}

void Session::SetTaskFitError(PodId p, std::string message) {
  jobs_[cluster_.pods[p].job].task_fit_errors[p].SetError(std::move(message));
}

// --- Job facts ------------------------------------------------------------------------------

int Session::NumAllocatedLike(JobId j) const {
  int n = 0;
  for (PodId p : cluster_.jobs[j].pods) n += IsAllocatedLike(pods_[p].status) ? 1 : 0;
  return n;
}

int Session::NumActiveAllocated(JobId j) const {
  int n = 0;
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    n += counters(j, static_cast<int32_t>(s)).active_allocated;
  }
  return n;
}

bool Session::IsReadyForScheduling(JobId j) const {
  const Job& job = cluster_.jobs[j];
  if (job.groups.empty()) return true;
  // A group is ready when its threshold of direct members are (SubGroupTree::Ready).
  return SubGroupTree(*this, j, false).Ready({true, 0});
}

bool Session::IsGangSatisfied(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    if (counters(j, static_cast<int32_t>(s)).active_used < job.pod_sets[s].min_available) {
      return false;
    }
  }
  return true;
}

bool Session::ShouldPipelineJob(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (const PodSet& ps : job.pod_sets) {
    bool has_pipelined = false;
    int active_allocated = 0;
    for (PodId p : ps.pods) {
      if (pods_[p].status == PodStatus::kPipelined) {
        has_pipelined = true;
      } else if (IsActiveAllocated(pods_[p].status)) {
        ++active_allocated;
      }
    }
    if (has_pipelined && active_allocated < ps.min_available) return true;
  }
  return false;
}

bool Session::HasPendingPods(JobId j) const {
  const Job& job = cluster_.jobs[j];
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    if (counters(j, static_cast<int32_t>(s)).pending > 0) return true;
  }
  return false;
}

// --- Ordering -------------------------------------------------------------------------------

PodSetCounters Session::ViewCounters(const JobView& v, int32_t pod_set) const {
  if (!v.partial) return counters(v.job, pod_set);
  PodSetCounters c;
  for (PodId p : v.pods) {
    if (cluster_.pods[p].pod_set != pod_set) continue;
    const PodStatus st = pods_[p].status;
    c.active_allocated += IsActiveAllocated(st);
    c.active_used += IsActiveUsed(st);
    c.alive += IsAlive(st);
    c.gated += st == PodStatus::kGated;
    c.pending += st == PodStatus::kPending;
  }
  return c;
}

Quantities Session::ViewAllocated(const JobView& v) const {
  auto sum = [&](std::span<const PodId> pods) {
    Quantities q;
    for (PodId p : pods) {
      if (IsAllocatedLike(pods_[p].status)) q += AcceptedQuantities(p);
    }
    return q;
  };
  if (v.partial) return sum(v.pods);
  // A whole job's sum is kept while its version holds (a pod's status, and so its placement and
  // accepted GPUs, change only with a new version): the victims queue asks for it again and
  // again while comparing queues.
  auto& cached = job_allocated_cache_[v.job];
  if (cached.first == job_version_[v.job]) return cached.second;
  if (cached.first == 0 && !job_allocated_filled_) {
    // The first sum asked for: the victim searches go on to ask for almost every running job's,
    // in an order that jumps across the jobs and pods (a few cache misses per job). Summing every
    // job now, in id order, reads them in the order they are stored, at a fraction of the cost.
    // (The same sums: the jobs' versions are kept with them.)
    job_allocated_filled_ = true;
    for (JobId j = 0; j < static_cast<JobId>(cluster_.jobs.size()); ++j) {
      auto& memo = job_allocated_cache_[j];
      if (memo.first == 0) memo = {job_version_[j], sum(cluster_.jobs[j].pods)};
    }
    return cached.second;
  }
  cached = {job_version_[v.job], sum(cluster_.jobs[v.job].pods)};
  return cached.second;
}

// --- Tasks to allocate ----------------------------------------------------------------------

Quantities Session::ViewTasksQuantities(const JobView& v) const {
  if (!v.partial) return TasksToAllocateQuantities(v.job);
  Quantities q;
  for (PodId p : v.pods) {
    const PodStatus st = pods_[p].status;
    if (st != PodStatus::kPending && !(st == PodStatus::kReleasing && pods_[p].virtual_status)) {
      continue;
    }
    q += cluster_.pods[p].InitQuantities(cluster_.min_node_gpu_memory_mib);
  }
  return q;
}

void Session::TasksToAllocate(JobId j, std::vector<PodId>& out, bool real, bool ordered) const {
  out.clear();
  const Job& job = cluster_.jobs[j];
  // (A scratch list reused between calls that do not nest: the victim search asks this for
  // every victim job of every scenario.)
  thread_local std::vector<PodId> scratch;
  thread_local int depth = 0;
  std::vector<PodId> nested;
  std::vector<PodId>& pending = depth == 0 ? scratch : nested;
  ++depth;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth};
  auto gather = [&](int32_t s) {
    pending.clear();
    for (PodId p : job.pod_sets[s].pods) {
      const PodStatus st = pods_[p].status;
      if (st == PodStatus::kPending ||
          (!real && st == PodStatus::kReleasing && pods_[p].virtual_status)) {
        pending.push_back(p);
      }
    }
  };
  auto take = [&](int32_t s, int32_t n) {
    gather(s);
    const size_t want = static_cast<size_t>(n);
    if (ordered || want < pending.size()) {
      // Only the first `want` in task order are taken (and given in order). The task order is
      // total on a job's pods (its last tie-break is the pod's name, unique in a namespace),
      // so they are the same as after sorting the whole list, and the pods' ranks in their set
      // (TaskRank) order them as TaskLess does.
      const size_t k = std::min(want, pending.size());
      TaskRank(pending.front());  // ranks the whole set
      const int32_t* rank = task_rank_.data();
      std::partial_sort(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(k),
                        pending.end(), [rank](PodId a, PodId b) { return rank[a] < rank[b]; });
    }
    for (size_t i = 0; i < pending.size() && i < want; ++i) out.push_back(pending[i]);
  };
  if (job.pod_sets.size() == 1 && job.groups.size() == 1) {
    // (The common case: one pod set under the root, no tree to walk.)
    gather(0);
    if (pending.empty()) return;
    const int32_t allocated = counters(j, 0).active_allocated;
    const int32_t min = job.pod_sets[0].min_available;
    take(0, allocated >= min ? 1 : min - allocated);
    return;
  }
  // The sub-group tree decides which pod sets give pods (SubGroupTree::Collect).
  const SubGroupTree tree(*this, j, !pod_set_order_fns_.empty());
  tree.Collect(
      [&](int32_t s) {
        gather(s);
        return static_cast<int32_t>(pending.size());
      },
      take);
}

Quantities Session::TasksToAllocateQuantities(JobId j) const {
  auto& cached = job_quantities_cache_[j];
  if (cached.first == job_version_[j]) return cached.second;
  std::vector<PodId> tasks;
  // The same pods in any order add up to the same bits when every term is a whole number well
  // inside a double's exact range; otherwise they are added in task order.
  auto sum = [&] {
    Quantities q;
    bool exact = true;
    for (PodId p : tasks) {
      const Quantities v = cluster_.pods[p].InitQuantities(cluster_.min_node_gpu_memory_mib);
      for (auto res : kQueueResources) {
        exact = exact && v[res] == std::floor(v[res]) && std::abs(v[res]) < 1e15;
      }
      q += v;
    }
    return std::pair{q, exact};
  };
  TasksToAllocate(j, tasks, /*real=*/false, /*ordered=*/false);
  auto [q, exact] = sum();
  if (!exact) {
    TasksToAllocate(j, tasks, /*real=*/false);
    q = sum().first;
  }
  cached = {job_version_[j], q};
  return q;
}

// --- Write back -----------------------------------------------------------------------------

void Session::WriteBack(const Session& s, Cluster& cluster) {
  // Claims keep what they got (allocations and reservations) for the next cycle.
  cluster.resource_claims = s.dra_.claims();
  for (PodId p = 0; p < static_cast<PodId>(cluster.pods.size()); ++p) {
    Pod& pod = cluster.pods[p];
    const PodState& st = s.pods_[p];
    const bool deleting = pod.job != kNone && cluster.jobs[pod.job].deleting;
    switch (st.status) {
      case PodStatus::kReleasing:
        if (deleting) {
          pod.status = PodStatus::kReleasing;
          pod.node = st.node;
          pod.gpu_groups = s.GroupNames(p);
        } else {
          pod.status = PodStatus::kPending;
          pod.node = kNone;
        }
        break;
      case PodStatus::kPipelined:
        pod.status = PodStatus::kPending;
        pod.node = kNone;
        break;
      case PodStatus::kBinding:
        pod.status = PodStatus::kRunning;
        pod.node = st.node;
        pod.gpu_groups = s.GroupNames(p);
        break;
      default:
        pod.status = st.status;
        pod.node = st.node;
        pod.gpu_groups = s.GroupNames(p);
    }
  }
}

uint64_t DecisionsDigest(const Session& ssn) {
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  for (const auto& b : ssn.binds()) mix(1), mix(b.pod), mix(b.node);
  for (const auto& e : ssn.evictions()) mix(2), mix(e.pod), mix(e.node);
  for (const auto& p : ssn.pipelined()) mix(3), mix(p.pod), mix(p.node);
  return h;
}

}  // namespace gantry
