#include "framework/session.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "framework/plugin.h"

namespace gantry {

namespace {
// The resources a pod holds on a node. Shared-GPU pods hold no whole device here; their device
// accounting is separate.
Resources NodeFootprint(const Pod& pod) {
  Resources r = pod.request;
  if (pod.IsSharedGpu()) r.gpus = 0;
  return r;
}
}  // namespace

Session::Session(const Cluster& cluster, const SchedulerConfig& config, int64_t now_ms)
    : cluster_(cluster), config_(config), now_ms_(now_ms) {
  const auto& pods = cluster.pods;
  pods_.resize(pods.size());
  gpu_groups_.resize(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    pods_[i].status = pods[i].status;
    pods_[i].node = pods[i].node;
    if (!pods[i].gpu_groups.empty()) gpu_groups_[i] = pods[i].gpu_groups;
  }
  nodes_.resize(cluster.nodes.size());
  all_nodes_.resize(cluster.nodes.size());
  std::iota(all_nodes_.begin(), all_nodes_.end(), 0);
  non_allocated_gpus_.resize(cluster.nodes.size());
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    nodes_[n].idle = cluster.nodes[n].allocatable;
    non_allocated_gpus_[n] = nodes_[n].idle.gpus;
  }

  // Occupying pods are added in byte order of their names (shared-device placement depends on it).
  for (PodId p : cluster.pods_by_name()) {
    if (IsActiveUsed(pods_[p].status) && pods_[p].node != kNone) AddPodToNode(p, pods_[p].node);
  }

  pod_set_counters_.resize(static_cast<size_t>(cluster.total_pod_sets()));
  for (PodId p = 0; p < static_cast<PodId>(pods.size()); ++p) CountPod(p, +1);

  for (const Pod& pod : pods)
    any_anti_affinity_ = any_anti_affinity_ || !pod.pod_anti_affinity.empty();
  BuildNodeClasses();

  queue_versions_.assign(cluster.queues.size(), 0);
  jobs_.resize(cluster.jobs.size());
  job_version_.assign(cluster.jobs.size(), 1);
  job_quantities_cache_.assign(cluster.jobs.size(), {0, Quantities{}});
  for (size_t j = 0; j < cluster.jobs.size(); ++j) {
    jobs_[j].last_start_ms = cluster.jobs[j].last_start_ms;
    jobs_[j].stale_since_ms = cluster.jobs[j].stale_since_ms;
  }
}

Session::~Session() = default;

void Session::Open(std::span<Plugin* const> plugins, std::span<const PluginConfig> configs) {
  plugins_.assign(plugins.begin(), plugins.end());
  for (Plugin* plugin : plugins_) {
    classes_enabled_ = classes_enabled_ && plugin->NodeChecksDependOnlyOnShapeAndState();
  }
  for (size_t i = 0; i < plugins_.size(); ++i) {
    opening_ = i < configs.size() ? &configs[i] : nullptr;
    plugins_[i]->OnSessionOpen(*this);
  }
  opening_ = nullptr;
}

bool Session::Disabled(std::string_view name) const {
  if (!opening_) return false;
  for (const auto& d : opening_->disabled_functions) {
    if (d == name) return true;
  }
  return false;
}

void Session::Close() {
  for (Plugin* plugin : plugins_) plugin->OnSessionClose(*this);
}

// --- State ----------------------------------------------------------------------------------

void Session::CountPod(PodId p, int sign) {
  const Pod& pod = cluster_.pods[p];
  if (pod.job == kNone) return;
  auto& c = pod_set_counters_[cluster_.jobs[pod.job].pod_set_base + pod.pod_set];
  const PodStatus s = pods_[p].status;
  if (IsActiveAllocated(s)) c.active_allocated += sign;
  if (IsActiveUsed(s)) c.active_used += sign;
  if (IsAlive(s)) c.alive += sign;
  if (s == PodStatus::kGated) c.gated += sign;
  if (s == PodStatus::kPending) c.pending += sign;
}

Session::VersionMark Session::Versions(PodId p) const {
  VersionMark m;
  m.session = state_version_;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return m;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone && level < m.queues.size();
       q = cluster_.queues[q].parent) {
    m.queues[level++] = queue_versions_[q];
  }
  return m;
}

void Session::RestoreVersions(PodId p, const VersionMark& before, const VersionMark& after,
                              const VersionMark& now) {
  const uint64_t fresh = ++last_version_;
  state_version_ = now.session == after.session ? before.session : fresh;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone; q = cluster_.queues[q].parent, ++level) {
    // (Queues deeper than a mark holds always get a new number.)
    const bool same = level < now.queues.size() && now.queues[level] == after.queues[level];
    queue_versions_[q] = same ? before.queues[level] : fresh;
  }
}

void Session::SetPodStatus(PodId p, PodStatus s) {
  if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  if (pods_[p].status != s) BumpVersions(p);
  CountPod(p, -1);
  pods_[p].status = s;
  CountPod(p, +1);
}

void Session::AddPodToNode(PodId p, NodeId n) {
  ++placement_epoch_;
  const Resources r = NodeFootprint(cluster_.pods[p]);
  NodeState& ns = nodes_[n];
  ns.used += r;
  switch (pods_[p].status) {
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
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  if (node_log_ != nullptr) node_log_->push_back(n);
}

void Session::RemovePodFromNode(PodId p, NodeId n) {
  ++placement_epoch_;
  const Resources r = NodeFootprint(cluster_.pods[p]);
  NodeState& ns = nodes_[n];
  ns.used -= r;
  switch (pods_[p].status) {
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
  non_allocated_gpus_[n] = ns.idle.gpus + ns.releasing.gpus;
  MarkClassDirty(n);
  if (node_log_ != nullptr) node_log_->push_back(n);
}

void Session::FireAllocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_allocate) h.on_allocate(*this, p);
  }
}

void Session::FireDeallocate(PodId p) {
  for (auto& h : event_handlers_) {
    if (h.on_deallocate) h.on_deallocate(*this, p);
  }
}

void Session::RecordBind(PodId p) {
  SetPodStatus(p, PodStatus::kBinding);
  binds_.push_back({p, pods_[p].node, gpu_groups_[p]});
}

void Session::RecordEviction(PodId p, NodeId from, std::string message) {
  evictions_.push_back({p, from, std::move(message)});
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
  for (size_t s = 0; s < job.pod_sets.size(); ++s) {
    const auto& c = counters(j, static_cast<int32_t>(s));
    if (c.alive - c.gated < job.pod_sets[s].min_available) return false;
  }
  return true;
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
  Quantities q;
  auto add = [&](PodId p) {
    if (!IsAllocatedLike(pods_[p].status)) return;
    q += cluster_.pods[p].QueueQuantities(cluster_.min_node_gpu_memory_mib);
  };
  if (v.partial) {
    for (PodId p : v.pods) add(p);
  } else {
    for (PodId p : cluster_.jobs[v.job].pods) add(p);
  }
  return q;
}

bool Session::JobViewLess(const JobView& lv, const JobView& rv) const {
  for (const auto& fn : job_order_fns_) {
    if (int c = fn(*this, lv, rv); c != 0) return c < 0;
  }
  const Job& lj = cluster_.jobs[lv.job];
  const Job& rj = cluster_.jobs[rv.job];
  if (lj.creation_ms != rj.creation_ms) return lj.creation_ms < rj.creation_ms;
  return lj.name < rj.name;
}

bool Session::TaskLess(PodId l, PodId r) const {
  for (const auto& fn : task_order_fns_) {
    if (int c = fn(*this, l, r); c != 0) return c < 0;
  }
  return cluster_.pods[l].name < cluster_.pods[r].name;
}

bool Session::PodSetLess(JobId j, int32_t l, int32_t r) const {
  return PodSetViewLess(JobView{j, false, {}}, l, r);
}

bool Session::PodSetViewLess(const JobView& v, int32_t l, int32_t r) const {
  for (const auto& fn : pod_set_order_fns_) {
    if (int c = fn(*this, v, l, r); c != 0) return c < 0;
  }
  const Job& job = cluster_.jobs[v.job];
  return job.pod_sets[l].name < job.pod_sets[r].name;
}

bool Session::QueueLess(QueueId l, QueueId r, const JobView* l_job, const JobView* r_job,
                        const VictimList& l_victims, const VictimList& r_victims) const {
  for (const auto& fn : queue_order_fns_) {
    if (int c = fn(*this, l, r, l_job, r_job, l_victims, r_victims); c != 0) return c < 0;
  }
  const Queue& lq = cluster_.queues[l];
  const Queue& rq = cluster_.queues[r];
  if (lq.creation_ms != rq.creation_ms) return lq.creation_ms < rq.creation_ms;
  return lq.name < rq.name;
}

// --- Feasibility ----------------------------------------------------------------------------

bool Session::FitsIdle(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return false;  // shared-GPU placement is not supported yet
  if (pod.IsBestEffort()) return true;
  static const Resources kZero{};
  return pod.request.FitsInSum(nodes_[n].idle, kZero, cluster_.resource_names.size());
}

bool Session::FitsIdleOrReleasing(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return false;
  return pod.request.FitsInSum(nodes_[n].idle, nodes_[n].releasing, cluster_.resource_names.size());
}

namespace {
constexpr std::string_view kNotEnoughGpus = "node(s) didn't have enough resources: GPUs";
constexpr std::string_view kNotEnoughCpu = "node(s) didn't have enough resources: CPU cores";
constexpr std::string_view kNotEnoughMemory = "node(s) didn't have enough resources: memory";
constexpr std::string_view kPodNumberExceeded = "node(s) pod number exceeded";
constexpr std::string_view kSharedGpuUnsupported =
    "node(s) didn't have enough resources: GPU sharing is not supported yet";
}  // namespace

bool Session::FittingNode(PodId p, NodeId n, bool record) {
  return FittingNode(p, n, record ? &jobs_[cluster_.pods[p].job].task_fit_errors[p] : nullptr);
}

bool Session::FittingNode(PodId p, NodeId n, TaskFitErrors* record, int weight) {
  if (!FitsIdleOrReleasing(p, n)) {
    if (record) {
      const Pod& pod = cluster_.pods[p];
      if (pod.IsSharedGpu()) {
        record->AddNodeReason(kSharedGpuUnsupported, weight);
        return false;
      }
      // Against what is not used at all (capacity - used), as KAI reports it.
      const Resources available = cluster_.nodes[n].allocatable - nodes_[n].used;
      if (!pod.request.FitsIn(nodes_[n].idle)) {
        bool any = false;
        if (pod.request.gpus > available.gpus)
          record->AddNodeReason(kNotEnoughGpus, weight), any = true;
        if (static_cast<int64_t>(pod.request.cpu_millis) >
            static_cast<int64_t>(available.cpu_millis)) {
          record->AddNodeReason(kNotEnoughCpu, weight), any = true;
        }
        if (pod.request.memory_bytes > available.memory_bytes) {
          record->AddNodeReason(kNotEnoughMemory, weight), any = true;
        }
        for (int s = 0; s < cluster_.resource_names.size(); ++s) {
          if (pod.request.scalars[s] > available.scalars[s]) {
            record->AddNodeReason(
                "node(s) didn't have enough resources: " + cluster_.resource_names.Name(s), weight);
            any = true;
          }
        }
        if (!any && pod.request.pods > available.pods)
          record->AddNodeReason(kPodNumberExceeded, weight);
      }
    }
    return false;
  }
  for (const auto& fn : predicate_fns_) {
    if (auto reason = fn(*this, p, n)) {
      if (record) record->AddNodeReason(*reason, weight);
      return false;
    }
  }
  return true;
}

std::optional<std::string> Session::PrePredicate(PodId p) {
  for (const auto& fn : pre_predicate_fns_) {
    if (auto err = fn(*this, p)) return err;
  }
  return std::nullopt;
}

namespace {
// Heap order: the "largest" element is the best node (higher score, then lower name rank).
struct RankedLess {
  const std::vector<Node>& nodes;
  bool operator()(const std::pair<double, NodeId>& a, const std::pair<double, NodeId>& b) const {
    if (a.first != b.first) return a.first < b.first;
    return nodes[a.second].name_rank > nodes[b.second].name_rank;
  }
};
}  // namespace

size_t Session::ClassKeyHash::operator()(const ClassKey& k) const {
  // Mixes the shape and the counters that distinguish nodes in practice (the remaining fields
  // are compared by ClassKey::operator==).
  uint64_t h = static_cast<uint64_t>(k.shape) * 0x9E3779B97F4A7C15ULL;
  auto mix = [&h](double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
  };
  for (const Resources* r : {&k.state.idle, &k.state.used, &k.state.releasing}) {
    mix(r->gpus);
    mix(r->cpu_millis);
    mix(r->memory_bytes);
    mix(r->pods);
  }
  return static_cast<size_t>(h);
}

void Session::MarkClassDirty(NodeId n) {
  if (!classes_enabled_ || class_dirty_[n]) return;
  class_dirty_[n] = 1;
  dirty_nodes_.push_back(n);
}

void Session::RefreshClasses() {
  for (NodeId n : dirty_nodes_) {
    class_dirty_[n] = 0;
    Reclassify(n);
  }
  dirty_nodes_.clear();
}

void Session::BuildNodeClasses() {
  classes_enabled_ = true;
  class_index_.clear();
  class_members_.clear();
  class_pos_.clear();
  nonempty_classes_.clear();
  node_class_.assign(nodes_.size(), -1);
  class_dirty_.assign(nodes_.size(), 0);
  dirty_nodes_.clear();
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) Reclassify(n);
}

void Session::Reclassify(NodeId n) {
  const int32_t old = node_class_[n];
  const std::pair<int32_t, NodeId> me{cluster_.nodes[n].name_rank, n};
  if (old >= 0) {
    auto& members = class_members_[old];
    members.erase(me);
    if (members.empty()) {
      // Drop the class from the non-empty list (swap with the last entry).
      const int32_t pos = class_pos_[old];
      const int32_t last = nonempty_classes_.back();
      nonempty_classes_[pos] = last;
      class_pos_[last] = pos;
      nonempty_classes_.pop_back();
      class_pos_[old] = -1;
    }
  }
  const ClassKey key{cluster_.nodes[n].shape, nodes_[n]};
  auto [it, inserted] = class_index_.emplace(key, static_cast<int32_t>(class_members_.size()));
  if (inserted) {
    class_members_.emplace_back();
    class_pos_.push_back(-1);
  }
  const int32_t c = it->second;
  auto& members = class_members_[c];
  if (members.empty()) {
    class_pos_[c] = static_cast<int32_t>(nonempty_classes_.size());
    nonempty_classes_.push_back(c);
  }
  members.insert(me);
  node_class_[n] = c;
}

bool Session::PodRankableByClass(PodId p) const {
  if (!classes_enabled_ || any_anti_affinity_) return false;
  const Pod& pod = cluster_.pods[p];
  return !pod.IsSharedGpu() && pod.node_selector.empty() && pod.required_node_affinity.empty() &&
         pod.pod_affinity.empty() && pod.pod_anti_affinity.empty() && pod.nominated_node == kNone;
}

bool Session::CanRankByClass(PodId p, std::span<const NodeId> candidates) const {
  return candidates.size() == all_nodes_.size() && candidates.data() == all_nodes_.data() &&
         PodRankableByClass(p);
}

void Session::RankFittingNodesCoveringFreeGpus(PodId p, std::span<const NodeId> candidates) {
  const Pod& pod = cluster_.pods[p];
  if (!params().solver_shortcuts || pod.request.gpus <= 0 || !PodRankableByClass(p)) {
    RankFittingNodes(p, candidates, /*record=*/false);
    return;
  }
  rank_pod_ = p;
  rank_candidates_ = all_nodes_;  // a second node, if asked for, comes from every node
  rank_returned_.clear();
  ranked_heap_ = false;
  ranked_by_class_ = true;
  RankByClass(p, /*record=*/false);
}

void Session::RankPerNode(PodId p, std::span<const NodeId> candidates, bool record) {
  for (const auto& fn : node_pre_order_fns_) fn(*this, p, candidates);
  ranked_.clear();
  const Pod& pod = cluster_.pods[p];
  // Whole-GPU pods skip nodes without enough unallocated GPUs before anything else.
  const double need_gpus = pod.IsSharedGpu() ? 0 : pod.request.gpus;
  for (NodeId n : candidates) {
    if (non_allocated_gpus_[n] < need_gpus) continue;
    ++stats_.nodes_checked;
    if (!FittingNode(p, n, nullptr)) continue;
    double score = 0;
    for (const auto& fn : node_order_fns_) score += fn(*this, p, n);
    ranked_.emplace_back(score, n);
  }
  if (ranked_.empty() && record) {
    // Nothing fits: explain why, node by node. Failures are the only readers of these reasons,
    // so they are not collected while ranking.
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : candidates) FittingNode(p, n, &errors);
  }
}

void Session::RankFittingNodes(PodId p, std::span<const NodeId> candidates, bool record) {
  rank_pod_ = p;
  rank_candidates_ = candidates;
  rank_returned_.clear();
  ranked_heap_ = false;
  ranked_by_class_ = CanRankByClass(p, candidates);
  if (!ranked_by_class_) {
    ++stats_.rankings_per_node;
    RankPerNode(p, candidates, record);
    PickBestRanked();
    return;
  }
  RankByClass(p, record);
}

void Session::RankByClass(PodId p, bool record) {
  ++stats_.rankings_by_class;
  RefreshClasses();
  // One representative per non-empty class: its smallest-named node.
  class_reps_.clear();
  for (int32_t c : nonempty_classes_) class_reps_.push_back(class_members_[c].begin()->second);
  RankPerNode(p, class_reps_, /*record=*/false);
  if (ranked_.empty() && record) {
    const Pod& pod = cluster_.pods[p];
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : class_reps_) {
      FittingNode(p, n, &errors, static_cast<int>(class_members_[node_class_[n]].size()));
    }
  }
  PickBestRanked();
}

void Session::PickBestRanked() {
  // Usually only the best node is taken: find it with one linear pass and keep it at the back.
  // The rest is heap-ordered only if a second node is asked for.
  if (ranked_.empty()) return;
  const RankedLess less{cluster_.nodes};
  size_t best = 0;
  for (size_t i = 1; i < ranked_.size(); ++i) {
    if (less(ranked_[best], ranked_[i])) best = i;
  }
  std::swap(ranked_[best], ranked_.back());
}

NodeId Session::NextRankedNode() {
  if (ranked_.empty()) return kNone;
  if (ranked_heap_) {
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
  } else if (ranked_by_class_ && !rank_returned_.empty()) {
    // A second node is wanted: rank every node, minus those already returned.
    RankPerNode(rank_pod_, rank_candidates_, /*record=*/false);
    std::erase_if(ranked_, [&](const auto& entry) {
      return std::find(rank_returned_.begin(), rank_returned_.end(), entry.second) !=
             rank_returned_.end();
    });
    ranked_by_class_ = false;
    if (ranked_.empty()) return kNone;
    std::make_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    ranked_heap_ = true;
  } else if (!rank_returned_.empty()) {
    std::make_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranked_.begin(), ranked_.end(), RankedLess{cluster_.nodes});
    ranked_heap_ = true;
  }
  const NodeId n = ranked_.back().second;
  ranked_.pop_back();
  rank_returned_.push_back(n);
  return n;
}

SchedulableResult Session::IsJobOverQueueCapacity(JobId j, std::span<const PodId> pods) const {
  if (job_capacity_fns_.empty()) return {};
  return job_capacity_fns_.front()(*this, j, pods);
}

SchedulableResult Session::IsTaskAllocationOverCapacity(PodId p, NodeId n) const {
  if (task_capacity_fns_.empty()) return {};
  return task_capacity_fns_.front()(*this, p, n);
}

std::optional<Quantities> Session::QueueFairShare(QueueId q) const {
  if (!queue_fair_share_fn_) return std::nullopt;
  return queue_fair_share_fn_(*this, q);
}

std::optional<Quantities> Session::QueueDeserved(QueueId q) const {
  if (!queue_deserved_fn_) return std::nullopt;
  return queue_deserved_fn_(*this, q);
}

bool Session::CanReclaimResources(JobId reclaimer) const {
  return !can_reclaim_fns_.empty() && can_reclaim_fns_.front()(*this, reclaimer);
}

bool Session::IsNonPreemptibleJobWithinQuota(JobId j, std::span<const PodId> pods) const {
  return non_preemptible_quota_fns_.empty() ||
         non_preemptible_quota_fns_.front()(*this, j, pods).schedulable;
}

bool Session::ReclaimVictimFilter(JobId reclaimer, JobId victim) const {
  for (const auto& fn : reclaim_victim_filter_fns_) {
    if (!fn(*this, reclaimer, victim)) return false;
  }
  return true;
}

bool Session::PreemptVictimFilter(JobId preemptor, JobId victim) const {
  for (const auto& fn : preempt_victim_filter_fns_) {
    if (!fn(*this, preemptor, victim)) return false;
  }
  return true;
}

bool Session::ReclaimScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : reclaim_validator_fns_) {
    if (!fn(*this, scenario)) return false;
  }
  return true;
}

bool Session::PreemptScenarioValid(const ScenarioInfo& scenario) const {
  for (const auto& fn : preempt_validator_fns_) {
    if (!fn(*this, scenario)) return false;
  }
  return true;
}

void Session::OnJobSolutionStart() const {
  for (const auto& fn : on_job_solution_start_fns_) fn(*this);
}

bool Session::IsElastic(JobId j) const {
  for (const PodSet& ps : cluster_.jobs[j].pod_sets) {
    if (ps.min_available < static_cast<int32_t>(ps.pods.size())) return true;
  }
  return false;
}

std::optional<Quantities> Session::QueueAllocated(QueueId q) const {
  if (!queue_allocated_fn_) return std::nullopt;
  return queue_allocated_fn_(*this, q);
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
    q += cluster_.pods[p].QueueQuantities(cluster_.min_node_gpu_memory_mib);
  }
  return q;
}

void Session::TasksToAllocate(JobId j, std::vector<PodId>& out, bool real, bool ordered) const {
  out.clear();
  const Job& job = cluster_.jobs[j];
  const int32_t num_sets = static_cast<int32_t>(job.pod_sets.size());
  int max_sets = 0;
  for (int32_t s = 0; s < num_sets; ++s) {
    if (counters(j, s).active_allocated < job.pod_sets[s].min_available) ++max_sets;
  }
  if (max_sets == 0) max_sets = 1;

  std::vector<int32_t> order(static_cast<size_t>(num_sets));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return PodSetLess(j, a, b); });

  std::vector<PodId> pending;
  int taken = 0;
  for (int32_t s : order) {
    if (taken >= max_sets) break;
    pending.clear();
    for (PodId p : job.pod_sets[s].pods) {
      const PodStatus st = pods_[p].status;
      if (st == PodStatus::kPending ||
          (!real && st == PodStatus::kReleasing && pods_[p].virtual_status)) {
        pending.push_back(p);
      }
    }
    if (pending.empty()) continue;
    const auto& c = counters(j, s);
    const int min = job.pod_sets[s].min_available;
    const size_t want =
        c.active_allocated >= min ? 1 : static_cast<size_t>(min - c.active_allocated);
    if (ordered || want < pending.size()) {
      std::sort(pending.begin(), pending.end(), [&](PodId a, PodId b) { return TaskLess(a, b); });
    }
    for (size_t i = 0; i < pending.size() && i < want; ++i) out.push_back(pending[i]);
    ++taken;
  }
}

Quantities Session::TasksToAllocateQuantities(JobId j) const {
  auto& cached = job_quantities_cache_[j];
  if (cached.first == job_version_[j]) return cached.second;
  std::vector<PodId> tasks;
  TasksToAllocate(j, tasks, /*real=*/false);
  Quantities q;
  for (PodId p : tasks) {
    q += cluster_.pods[p].QueueQuantities(cluster_.min_node_gpu_memory_mib);
  }
  cached = {job_version_[j], q};
  return q;
}

// --- Write back -----------------------------------------------------------------------------

void Session::WriteBack(const Session& s, Cluster& cluster) {
  for (PodId p = 0; p < static_cast<PodId>(cluster.pods.size()); ++p) {
    Pod& pod = cluster.pods[p];
    const PodState& st = s.pods_[p];
    const bool deleting = pod.job != kNone && cluster.jobs[pod.job].deleting;
    switch (st.status) {
      case PodStatus::kReleasing:
        if (deleting) {
          pod.status = PodStatus::kReleasing;
          pod.node = st.node;
          pod.gpu_groups = s.gpu_groups_[p];
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
        pod.gpu_groups = s.gpu_groups_[p];
        break;
      default:
        pod.status = st.status;
        pod.node = st.node;
        pod.gpu_groups = s.gpu_groups_[p];
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
