// Node feasibility and ranking: fit checks, classes of equivalent nodes and the ranked node
// heap (Session::RankFittingNodes, NextRankedNode).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/session.h"
#include "framework/session_internal.h"

namespace gantry {

// --- Feasibility ----------------------------------------------------------------------------

bool Session::FootprintFitsInSum(const Pod& pod, const Resources& a, const Resources& b) const {
  const int num_scalars = cluster_.resource_names.size();
  if (pod.dra_gpus > 0) return NodeFootprint(pod).FitsInSum(a, b, num_scalars);
  return pod.request.FitsInSum(a, b, num_scalars);
}

bool Session::FitsIdle(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return SharedFits(p, n, /*with_releasing=*/false);
  if (pod.IsBestEffort()) return true;
  static const Resources none{};
  return FootprintFitsInSum(pod, nodes_[n].idle, none);
}

bool Session::FitsIdleOrReleasing(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.IsSharedGpu()) return SharedFits(p, n, /*with_releasing=*/true);
  return FootprintFitsInSum(pod, nodes_[n].idle, nodes_[n].releasing);
}

namespace {
constexpr std::string_view kNotEnoughGpus = "node(s) didn't have enough resources: GPUs";
constexpr std::string_view kNotEnoughCpu = "node(s) didn't have enough resources: CPU cores";
constexpr std::string_view kNotEnoughMemory = "node(s) didn't have enough resources: memory";
constexpr std::string_view kPodNumberExceeded = "node(s) pod number exceeded";
constexpr std::string_view kNotEnoughGpuMemory = "node(s) didn't have enough resources: GPU memory";
}  // namespace

bool Session::FittingNode(PodId p, NodeId n, bool record) {
  return FittingNode(p, n, record ? &jobs_[cluster_.pods[p].job].task_fit_errors[p] : nullptr);
}

bool Session::FittingNode(PodId p, NodeId n, TaskFitErrors* record, int weight) {
  if (!FitsIdleOrReleasing(p, n)) {
    if (record) {
      const Pod& pod = cluster_.pods[p];
      // Against what is not used at all (capacity - used), as KAI reports it.
      Resources available = cluster_.nodes[n].allocatable - nodes_[n].used;
      const bool shared = pod.IsSharedGpu();
      if (shared) available.gpus -= shared_[n].UsedGroups();
      if (shared || !NodeFootprint(pod).FitsIn(nodes_[n].idle)) {
        bool any = false;
        const double wanted_gpus = shared ? pod.RequestedGpus() : pod.request.gpus + pod.dra_gpus;
        if (wanted_gpus > available.gpus) record->AddNodeReason(kNotEnoughGpus, weight), any = true;
        if (shared && pod.gpu_memory_mib > cluster_.nodes[n].gpu_memory_mib) {
          record->AddNodeReason(kNotEnoughGpuMemory, weight), any = true;
        }
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

size_t NodeRanking::ClassKeyHash::operator()(const NodeRanking::ClassKey& k) const {
  // Mixes the shape and the counters that distinguish nodes in practice (the remaining fields
  // are compared by NodeRanking::ClassKey::operator==).
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
  if (!ranking_.classes_enabled || ranking_.class_dirty[n]) return;
  ranking_.class_dirty[n] = 1;
  ranking_.dirty_nodes.push_back(n);
}

void Session::RefreshClasses() {
  for (NodeId n : ranking_.dirty_nodes) {
    ranking_.class_dirty[n] = 0;
    Reclassify(n);
  }
  ranking_.dirty_nodes.clear();
}

void Session::BuildNodeClasses() {
  ranking_.classes_enabled = true;
  ranking_.class_index.clear();
  ranking_.class_members.Reset(static_cast<int32_t>(nodes_.size()));
  ranking_.node_by_rank.assign(nodes_.size(), kNone);
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) {
    ranking_.node_by_rank[static_cast<size_t>(cluster_.nodes[n].name_rank)] = n;
  }
  ranking_.class_pos.clear();
  ranking_.class_keys.clear();
  ranking_.class_next.clear();
  ranking_.nonempty_classes.clear();
  ranking_.class_reps.clear();
  ranking_.node_class.assign(nodes_.size(), -1);
  ranking_.node_prev_class.assign(nodes_.size(), -1);
  ranking_.class_dirty.assign(nodes_.size(), 0);
  ranking_.dirty_nodes.clear();
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) Reclassify(n);
}

bool NodeRanking::SameResources(const Resources& a, const Resources& b, int num_scalars) {
  if (a.cpu_millis != b.cpu_millis || a.memory_bytes != b.memory_bytes || a.gpus != b.gpus ||
      a.pods != b.pods) {
    return false;
  }
  for (int i = 0; i < num_scalars; ++i) {
    if (a.scalars[i] != b.scalars[i]) return false;
  }
  return true;
}

bool Session::NodeHasClassKey(NodeId n, int32_t c) const {
  if (c < 0) return false;
  return ranking_.class_keys[c]->Matches(cluster_.nodes[n].shape, nodes_[n], shared_[n],
                                         static_cast<int>(cluster_.resource_names.size()));
}

void Session::Reclassify(NodeId n) {
  const int32_t old = ranking_.node_class[n];
  if (NodeHasClassKey(n, old)) return;  // changed and changed back
  int32_t c = -1;
  if (NodeHasClassKey(n, ranking_.node_prev_class[n])) {
    c = ranking_.node_prev_class[n];
  } else if (old >= 0 && NodeHasClassKey(n, ranking_.class_next[old])) {
    c = ranking_.class_next[old];
  } else {
    const NodeRanking::ClassKey key{cluster_.nodes[n].shape, nodes_[n], shared_[n]};
    // (Looked up first: emplace would build a map node even for a class that exists.)
    auto it = ranking_.class_index.find(key);
    if (it == ranking_.class_index.end()) {
      it = ranking_.class_index.emplace(key, ranking_.class_members.Add()).first;
      ranking_.class_pos.push_back(-1);
      ranking_.class_keys.push_back(&it->first);
      ranking_.class_next.push_back(-1);
    }
    c = it->second;
  }
  const int32_t rank = cluster_.nodes[n].name_rank;
  if (old >= 0) {
    ranking_.class_members.Erase(old, rank);
    const int32_t pos = ranking_.class_pos[old];
    if (ranking_.class_members.Size(old) == 0) {
      // Drop the class from the non-empty list (swap with the last entry).
      const int32_t last = ranking_.nonempty_classes.back();
      ranking_.nonempty_classes[pos] = last;
      ranking_.class_reps[pos] = ranking_.class_reps.back();
      ranking_.class_pos[last] = pos;
      ranking_.nonempty_classes.pop_back();
      ranking_.class_reps.pop_back();
      ranking_.class_pos[old] = -1;
    } else if (ranking_.class_reps[pos] == n) {
      ranking_.class_reps[pos] =
          ranking_.node_by_rank[static_cast<size_t>(ranking_.class_members.Min(old))];
    }
    ranking_.class_next[old] = c;
  }
  if (ranking_.class_members.Size(c) == 0) {
    ranking_.class_pos[c] = static_cast<int32_t>(ranking_.nonempty_classes.size());
    ranking_.nonempty_classes.push_back(c);
    ranking_.class_reps.push_back(n);
  } else if (rank < ranking_.class_members.Min(c)) {
    ranking_.class_reps[ranking_.class_pos[c]] = n;
  }
  ranking_.class_members.Insert(c, rank);
  ranking_.node_prev_class[n] = old;
  ranking_.node_class[n] = c;
}

namespace {
// Nothing of the pod makes a node's answer depend on more than its shape and state (apart from
// shared GPUs, which the classes' keys hold).
bool NodeRankingPodSeesOnlyShapeAndState(const Pod& pod) {
  return pod.claims.empty() && pod.dra_extended.empty() && pod.node_selector.empty() &&
         pod.required_node_affinity.empty() && pod.host_ports.empty() && pod.pod_affinity.empty() &&
         pod.pod_anti_affinity.empty() && pod.nominated_node == kNone;
}
}  // namespace

bool Session::PodRankableByClass(PodId p) const {
  return !cluster_.pods[p].IsSharedGpu() && PodRankableByClassAnyGpu(p);
}

bool Session::PodRankableByClassAnyGpu(PodId p) const {
  if (!ranking_.classes_enabled || any_anti_affinity_ || any_preferred_pod_affinity_) return false;
  const Pod& pod = cluster_.pods[p];
  return NodeRankingPodSeesOnlyShapeAndState(pod) && !NodeCallbackAppliesBeyondShape(pod);
}

PerNodeReason Session::WhyPerNode(PodId p, std::span<const NodeId> candidates) const {
  if (!ranking_.classes_enabled || any_anti_affinity_ || any_preferred_pod_affinity_) {
    return PerNodeReason::kNoClasses;
  }
  if (candidates.size() != all_nodes_.size() || candidates.data() != all_nodes_.data()) {
    return PerNodeReason::kCandidates;
  }
  const Pod& pod = cluster_.pods[p];
  if (!NodeRankingPodSeesOnlyShapeAndState(pod)) return PerNodeReason::kPodSpec;
  if (NodeCallbackAppliesBeyondShape(pod)) return PerNodeReason::kFilteredCallback;
  return PerNodeReason::kSharedGpu;
}

static_assert(static_cast<size_t>(PerNodeReason::kSharedGpu) + 1 == kPerNodeReasons,
              "kPerNodeReasons counts every PerNodeReason (the last is kSharedGpu)");

const char* PerNodeReasonName(PerNodeReason r) {
  switch (r) {
    case PerNodeReason::kNoClasses:
      return "no-classes";
    case PerNodeReason::kCandidates:
      return "candidates";
    case PerNodeReason::kPodSpec:
      return "pod-spec";
    case PerNodeReason::kFilteredCallback:
      return "callback";
    case PerNodeReason::kSharedGpu:
      return "shared-gpu";
  }
  return "?";
}

namespace {
// RankPerCandidateClass acts on rankings of at least this many candidates: on fewer, keys repeat
// too little to pay for what they cost (fractional at 200 nodes: 77% of the candidates are
// representatives, the cycle +32%; at 1,000 nodes -20%).
constexpr size_t kSharedRankMinCandidates = 500;
}  // namespace

bool Session::SharedPodRankableByClass(PodId p) const {
  if (params().shared_rank_by_class == SchedulerParams::SharedRankByClass::kOff ||
      !RankingCallbacksSeeOnlySharedFit() || any_anti_affinity_ || any_preferred_pod_affinity_) {
    return false;
  }
  const Pod& pod = cluster_.pods[p];
  return pod.IsSharedGpu() && NodeRankingPodSeesOnlyShapeAndState(pod);
}

int32_t Session::NodeStateId(NodeId n) {
  NodeRanking& r = ranking_;
  if (r.state_id.size() != nodes_.size()) {
    r.state_id.assign(nodes_.size(), -1);
    r.state_id_version.assign(nodes_.size(), 0);
  }
  const auto i = static_cast<size_t>(n);
  if (r.state_id[i] >= 0 && r.state_id_version[i] == node_version_[i]) return r.state_id[i];
  // (Shared devices left out of the key: the ranking adds how many fit the pod.)
  NodeRanking::ClassKey key{cluster_.nodes[n].shape, nodes_[n], NodeSharedGpus{}};
  auto it = r.state_index.find(key);
  if (it == r.state_index.end()) {
    it = r.state_index.emplace(std::move(key), static_cast<int32_t>(r.state_index.size())).first;
  }
  r.state_id[i] = it->second;
  r.state_id_version[i] = node_version_[i];
  return it->second;
}

void Session::RankPerCandidateClass(PodId p, std::span<const NodeId> candidates, bool record) {
  ++stats_.rankings_per_candidate_class;
  NodeRanking& r = ranking_;
  const Pod& pod = cluster_.pods[p];
  const int devices = std::max(1, pod.gpu_devices);
  // The key of a node: its shape and state, and how many of its shared devices take the pod's
  // share (up to the pod's device count). In the broken mode (tests only) the devices are left
  // out.
  const bool broken =
      params().shared_rank_by_class == SchedulerParams::SharedRankByClass::kBrokenForTests;
  auto key_of = [&](NodeId n) -> size_t {
    const auto state = static_cast<size_t>(NodeStateId(n));
    if (broken) return state;
    const auto device_memory = static_cast<int64_t>(cluster_.nodes[n].gpu_memory_mib);
    const int fitting = shared_[n].CountFitting(PodGpuMemoryOn(p, n), device_memory, devices);
    return state * static_cast<size_t>(devices + 1) + static_cast<size_t>(fitting);
  };
  if (++r.candidate_serial == 0) {  // (wrapped: no stale serial may match)
    std::fill(r.candidate_seen.begin(), r.candidate_seen.end(), 0);
    std::fill(r.candidate_fits.begin(), r.candidate_fits.end(), 0);
    r.candidate_serial = 1;
  }
  const uint32_t serial = r.candidate_serial;
  r.candidate_keys.clear();
  r.candidate_reps.clear();
  for (NodeId n : candidates) {
    const size_t k = key_of(n);
    r.candidate_keys.push_back(k);
    if (k >= r.candidate_seen.size()) {
      const size_t size = std::max(k + 1, 2 * r.candidate_seen.size());
      r.candidate_seen.resize(size, 0);
      r.candidate_fits.resize(size, 0);
      r.candidate_score.resize(size, 0.0);
    }
    if (r.candidate_seen[k] == serial) continue;
    r.candidate_seen[k] = serial;
    r.candidate_reps.push_back(n);
  }
  if (r.candidate_reps.size() == candidates.size()) {  // every candidate its own representative
    RankPerNode(p, candidates, record);
    return;
  }
  RankPerNode(p, r.candidate_reps, /*record=*/false);
  for (const auto& [score, n] : r.ranked) {
    const size_t k = key_of(n);
    r.candidate_fits[k] = serial;
    r.candidate_score[k] = score;
  }
  r.ranked.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const size_t k = r.candidate_keys[i];
    if (r.candidate_fits[k] == serial) r.ranked.emplace_back(r.candidate_score[k], candidates[i]);
  }
  if (r.ranked.empty() && record) {
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : candidates) FittingNode(p, n, &errors);
  }
}

void Session::BuildPodBriefs() const {
  pod_briefs_.resize(cluster_.pods.size());
  for (size_t p = 0; p < cluster_.pods.size(); ++p) {
    const Pod& pod = cluster_.pods[p];
    const double g = pod.request.gpus;
    const bool whole = !pod.IsSharedGpu() && pod.dra_gpus == 0 && g >= 0 && g == std::floor(g);
    pod_briefs_[p] = {pod.job, pod.pod_set, whole ? g : std::numeric_limits<double>::quiet_NaN()};
  }
}

bool Session::AllPodsWholeGpuRankableByClass() const {
  if (all_pods_whole_rankable_ < 0) {
    bool all = true;
    for (PodId p = 0; all && p < static_cast<PodId>(cluster_.pods.size()); ++p) {
      const Pod& pod = cluster_.pods[p];
      all = pod.request.gpus > 0 && pod.dra_gpus == 0 && PodRankableByClass(p);
    }
    all_pods_whole_rankable_ = all ? 1 : 0;
  }
  return all_pods_whole_rankable_ != 0;
}

bool Session::CanRankByClass(PodId p, std::span<const NodeId> candidates) const {
  if (candidates.size() != all_nodes_.size() || candidates.data() != all_nodes_.data()) {
    return false;
  }
  // A shared-GPU pod too, with SchedulerParams::shared_class_ranking: the classes' keys hold the
  // shared devices, and every node is a candidate (node_ranking.h).
  return params().shared_class_ranking ? PodRankableByClassAnyGpu(p) : PodRankableByClass(p);
}

void Session::RankFittingNodesCoveringFreeGpus(PodId p, std::span<const NodeId> candidates) {
  const Pod& pod = cluster_.pods[p];
  if (!params().solver_shortcuts || pod.request.gpus <= 0 || !PodRankableByClass(p)) {
    RankFittingNodes(p, candidates, /*record=*/false);
    return;
  }
  ranking_.rank_pod = p;
  ranking_.rank_candidates = all_nodes_;  // a second node, if asked for, comes from every node
  ranking_.rank_returned.clear();
  ranking_.ranked_heap = false;
  ranking_.ranked_by_class = true;
  RankByClass(p, /*record=*/false);
}

void Session::RankPerNode(PodId p, std::span<const NodeId> candidates, bool record) {
  for (const auto& fn : node_pre_order_fns_) fn(*this, p, candidates);
  ScoreFittingNodes(p, candidates);
  if (ranking_.ranked.empty() && record) {
    // Nothing fits: explain why, node by node. Failures are the only readers of these reasons,
    // so they are not collected while ranking.
    const Pod& pod = cluster_.pods[p];
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : candidates) FittingNode(p, n, &errors);
  }
}

void Session::ScoreFittingNodes(PodId p, std::span<const NodeId> candidates) {
  ranking_.ranked.clear();
  const Pod& pod = cluster_.pods[p];
  // (Functions that score 0 for this pod are left out: adding 0 changes no score.)
  ranking_.pod_order_fns.clear();
  for (size_t i = 0; i < node_order_fns_.size(); ++i) {
    if (!node_order_filters_[i] || node_order_filters_[i](cluster_, pod)) {
      ranking_.pod_order_fns.push_back(i);
    }
  }
  // The checks of FittingNode and the scores, each stage for all candidates at once (batch
  // functions where given): a node passes the same checks in the same order, and its score is
  // the same sum, made in the same order. Whole-GPU pods skip nodes without enough unallocated
  // GPUs before anything else.
  const bool shared = pod.IsSharedGpu();
  const double need_gpus = shared ? 0 : pod.request.gpus + pod.dra_gpus;
  // FitsIdleOrReleasing, with what depends only on the pod read once.
  const Resources footprint = pod.dra_gpus > 0 ? NodeFootprint(pod) : pod.request;
  const int num_scalars = cluster_.resource_names.size();
  // A shared-GPU pod cannot fit a node with no whole GPU left (fewer than one neither allocated
  // nor releasing) and no shared device: SharedFits would say no (FitsDevices).
  const bool skip_full = shared && params().shared_fit_skip_full_nodes;
  ranking_.fitting.clear();
  for (NodeId n : candidates) {
    if (non_allocated_gpus_[n] < need_gpus) continue;
    if (skip_full && non_allocated_gpus_[n] < 1 && shared_[n].empty()) continue;
    ++stats_.nodes_checked;
    const NodeState& ns = nodes_[n];
    if (shared ? SharedFits(p, n, /*with_releasing=*/true)
               : footprint.FitsInSum(ns.idle, ns.releasing, num_scalars)) {
      ranking_.fitting.push_back(n);
    }
  }
  for (size_t i = 0; i < predicate_fns_.size() && !ranking_.fitting.empty(); ++i) {
    if (predicate_batch_fns_[i]) {
      predicate_batch_fns_[i](*this, p, ranking_.fitting);
      continue;
    }
    const PredicateFn& fn = predicate_fns_[i];
    std::erase_if(ranking_.fitting, [&](NodeId n) { return fn(*this, p, n).has_value(); });
  }
  for (NodeId n : ranking_.fitting) ranking_.ranked.emplace_back(0.0, n);
  for (size_t i : ranking_.pod_order_fns) {
    if (node_order_batch_fns_[i]) {
      node_order_batch_fns_[i](*this, p, ranking_.ranked);
      continue;
    }
    const NodeOrderFn& fn = node_order_fns_[i];
    for (auto& [score, n] : ranking_.ranked) score += fn(*this, p, n);
  }
}

// --- Rankings from the pod's previous one (SchedulerParams::shared_rank_changed_nodes) --------

namespace {
// The kept rankings hold at most this many candidates in all (then they are dropped and kept
// again from the next rankings): about 20 MB.
constexpr size_t kMaxKeptRankingCandidates = size_t{1} << 20;
// Rankings are kept from this many candidates: on fewer (fractional at 200 nodes, reclaim's
// rankings of about 150 candidates) most candidates change between two rankings of a pod, and
// keeping cost about what it spared.
constexpr size_t kKeptRankingMinCandidates = 192;

// Marks every node of `nodes` in `marks` with a new serial (returned; the marks cleared when the
// serial wraps); 0 when some node is listed twice.
uint32_t MarkKeptRankingNodes(std::span<const NodeId> nodes, std::vector<uint32_t>& marks,
                              uint32_t& serial, size_t num_nodes) {
  if (marks.size() != num_nodes) marks.assign(num_nodes, 0);
  if (++serial == 0) {
    std::fill(marks.begin(), marks.end(), 0);
    serial = 1;
  }
  for (NodeId n : nodes) {
    if (marks[n] == serial) return 0;
    marks[n] = serial;
  }
  return serial;
}
}  // namespace

bool Session::RankingKeptFor(PodId p) const {
  if (!params().shared_rank_changed_nodes || !NodePreOrderStatesGiven() || any_anti_affinity_ ||
      any_preferred_pod_affinity_) {
    return false;
  }
  const Pod& pod = cluster_.pods[p];
  return pod.IsSharedGpu() && pod.gpu_kind == GpuRequestKind::kFraction &&
         NodeRankingPodSeesOnlyShapeAndState(pod) && RankingCallbacksSeeOnlySharedFitFor(pod) &&
         CapacityNode() != kNone;
}

NodeId Session::CapacityNode() const {
  if (!capacity_node_known_) {
    capacity_node_known_ = true;
    capacity_node_ = kNone;
    for (NodeId n = 0; n < static_cast<NodeId>(cluster_.nodes.size()); ++n) {
      const Node& node = cluster_.nodes[n];
      if (node.allocatable.gpus <= 0 && node.gpu_count <= 0) continue;
      if (capacity_node_ == kNone) {
        capacity_node_ = n;
      } else if (node.gpu_memory_mib != cluster_.nodes[capacity_node_].gpu_memory_mib) {
        capacity_node_ = kNone;  // (device memories differ: a share's GPUs may differ by node)
        break;
      }
    }
  }
  return capacity_node_;
}

void Session::KeepRanking(PodId p, std::span<const NodeId> candidates) {
  NodeRanking& r = ranking_;
  auto it = r.kept.find(p);
  // (A list that names a node twice is not kept: its ranking holds the node twice.)
  const uint32_t in_new =
      MarkKeptRankingNodes(candidates, r.kept_marks_new, r.kept_serial_new, nodes_.size());
  if (in_new == 0) {
    if (it != r.kept.end()) {
      r.kept_candidates -= it->second.candidates.size();
      r.kept.erase(it);
    }
    return;
  }
  if (it == r.kept.end()) {
    if (r.kept_candidates + candidates.size() > kMaxKeptRankingCandidates) {
      r.kept.clear();
      r.kept_candidates = 0;
    }
    it = r.kept.try_emplace(p).first;
  }
  NodeRanking::KeptRanking& k = it->second;
  r.kept_candidates += candidates.size() - k.candidates.size();
  k.candidates.assign(candidates.begin(), candidates.end());
  NodePreOrderStates(p, k.pre_order);
  k.capacity_ok = IsTaskAllocationOverCapacity(p, CapacityNode()).schedulable;
  k.changes = node_changes();
  // Each candidate's score (NaN: it does not fit), in the order of the list.
  std::vector<uint32_t>& pos = r.kept_pos;
  if (pos.size() != nodes_.size()) pos.assign(nodes_.size(), 0);
  k.scores.assign(candidates.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < candidates.size(); ++i) pos[candidates[i]] = static_cast<uint32_t>(i);
  for (const auto& [score, n] : r.ranked) k.scores[pos[n]] = score;
}

bool Session::RankFromKept(PodId p, std::span<const NodeId> candidates) {
  NodeRanking& r = ranking_;
  const auto it = r.kept.find(p);
  if (it == r.kept.end()) return false;
  NodeRanking::KeptRanking& k = it->second;
  if (!k.capacity_ok) return false;
  // These candidates (each listed once) marked, and the kept ones with their positions.
  const uint32_t in_new =
      MarkKeptRankingNodes(candidates, r.kept_marks_new, r.kept_serial_new, nodes_.size());
  if (in_new == 0) return false;
  const uint32_t in_old =
      MarkKeptRankingNodes(k.candidates, r.kept_marks_old, r.kept_serial_old, nodes_.size());
  std::vector<uint32_t>& pos = r.kept_pos;
  if (pos.size() != nodes_.size()) pos.assign(nodes_.size(), 0);
  for (size_t i = 0; i < k.candidates.size(); ++i) pos[k.candidates[i]] = static_cast<uint32_t>(i);
  // The pre-order functions first, as in every ranking (the scores read what they keep).
  for (const auto& fn : node_pre_order_fns_) fn(*this, p, candidates);
  NodePreOrderStates(p, r.pre_order_scratch);
  if (r.pre_order_scratch != k.pre_order ||
      !IsTaskAllocationOverCapacity(p, CapacityNode()).schedulable) {
    return false;
  }
  // Each candidate's score: a kept candidate unchanged since as kept; the others checked and
  // scored now.
  std::vector<double>& scores = r.scores_scratch;
  scores.resize(candidates.size());
  std::vector<NodeId>& changed = r.changed_scratch;
  changed.clear();
  const uint64_t since = k.changes;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const NodeId n = candidates[i];
    if (r.kept_marks_old[n] == in_old && node_changed_at(n) <= since) {
      scores[i] = k.scores[pos[n]];
      continue;
    }
    scores[i] = std::numeric_limits<double>::quiet_NaN();
    changed.push_back(n);
  }
  ScoreFittingNodes(p, changed);
  for (size_t i = 0; i < candidates.size(); ++i) pos[candidates[i]] = static_cast<uint32_t>(i);
  for (const auto& [score, n] : r.ranked) scores[pos[n]] = score;
  r.ranked.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!std::isnan(scores[i])) r.ranked.emplace_back(scores[i], candidates[i]);
  }
  r.kept_candidates += candidates.size() - k.candidates.size();
  k.candidates.assign(candidates.begin(), candidates.end());
  k.scores.swap(scores);
  k.changes = node_changes();
  ++stats_.rankings_from_kept;
  stats_.kept_nodes_rescored += static_cast<int64_t>(changed.size());
  return true;
}

void Session::RankFittingNodes(PodId p, std::span<const NodeId> candidates, bool record) {
  ranking_.rank_pod = p;
  ranking_.rank_candidates = candidates;
  ranking_.rank_returned.clear();
  ranking_.ranked_heap = false;
  ranking_.ranked_by_class = CanRankByClass(p, candidates);
  if (!ranking_.ranked_by_class) {
    ++stats_.rankings_per_node;
    const auto why = static_cast<size_t>(WhyPerNode(p, candidates));
    const int64_t checks_before = stats_.nodes_checked;
    // (A ranking kept from the pod's previous one: SchedulerParams::shared_rank_changed_nodes.)
    const bool keep =
        !record && candidates.size() >= kKeptRankingMinCandidates && RankingKeptFor(p);
    if (!keep || !RankFromKept(p, candidates)) {
      if (candidates.size() >= kSharedRankMinCandidates && SharedPodRankableByClass(p)) {
        RankPerCandidateClass(p, candidates, record);
      } else {
        RankPerNode(p, candidates, record);
      }
      if (keep) KeepRanking(p, candidates);
    }
    ++stats_.per_node_rankings[why];
    stats_.per_node_checks[why] += stats_.nodes_checked - checks_before;
    PickBestRanked();
    return;
  }
  RankByClass(p, record);
}

void Session::RankByClass(PodId p, bool record) {
  ++stats_.rankings_by_class;
  RefreshClasses();
  RankPerNode(p, ranking_.class_reps, /*record=*/false);
  if (ranking_.ranked.empty() && record) {
    const Pod& pod = cluster_.pods[p];
    TaskFitErrors& errors = jobs_[pod.job].task_fit_errors[p];
    for (NodeId n : ranking_.class_reps) {
      FittingNode(p, n, &errors, ranking_.class_members.Size(ranking_.node_class[n]));
    }
  }
  PickBestRanked();
}

void Session::PickBestRanked() {
  // Usually only the best node is taken: find it with one linear pass and keep it at the back.
  // The rest is heap-ordered only if a second node is asked for.
  if (ranking_.ranked.empty()) return;
  const RankedLess less{cluster_.nodes};
  size_t best = 0;
  for (size_t i = 1; i < ranking_.ranked.size(); ++i) {
    if (less(ranking_.ranked[best], ranking_.ranked[i])) best = i;
  }
  std::swap(ranking_.ranked[best], ranking_.ranked.back());
}

NodeId Session::NextRankedNode() {
  if (ranking_.ranked.empty()) return kNone;
  if (ranking_.ranked_heap) {
    std::pop_heap(ranking_.ranked.begin(), ranking_.ranked.end(), RankedLess{cluster_.nodes});
  } else if (ranking_.ranked_by_class && !ranking_.rank_returned.empty()) {
    // A second node is wanted: rank every node, minus those already returned.
    RankPerNode(ranking_.rank_pod, ranking_.rank_candidates, /*record=*/false);
    std::erase_if(ranking_.ranked, [&](const auto& entry) {
      return std::find(ranking_.rank_returned.begin(), ranking_.rank_returned.end(),
                       entry.second) != ranking_.rank_returned.end();
    });
    ranking_.ranked_by_class = false;
    if (ranking_.ranked.empty()) return kNone;
    std::make_heap(ranking_.ranked.begin(), ranking_.ranked.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranking_.ranked.begin(), ranking_.ranked.end(), RankedLess{cluster_.nodes});
    ranking_.ranked_heap = true;
  } else if (!ranking_.rank_returned.empty()) {
    std::make_heap(ranking_.ranked.begin(), ranking_.ranked.end(), RankedLess{cluster_.nodes});
    std::pop_heap(ranking_.ranked.begin(), ranking_.ranked.end(), RankedLess{cluster_.nodes});
    ranking_.ranked_heap = true;
  }
  const NodeId n = ranking_.ranked.back().second;
  ranking_.ranked.pop_back();
  ranking_.rank_returned.push_back(n);
  return n;
}

}  // namespace gantry
