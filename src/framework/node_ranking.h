// The state of the session's node ranking (node_ranking.cc): classes of equivalent nodes and the
// ranking in progress; and what Session's fit and ranking methods answer:
// - FittingNode: resource fit on idle + releasing, then every predicate. Records the reason of a
//   failure in the pod's fit errors when asked (`weight`: how many equivalent nodes the check
//   stands for).
// - RankFittingNodes ranks the candidates that fit the pod; NextRankedNode() then returns them
//   best score first (ties by node name), kNone when exhausted. Only the nodes actually taken are
//   ordered (a heap), so the common case - the first node is used - costs one pass.
// - RankFittingNodesCoveringFreeGpus: the same, when the candidates are known to hold every node
//   with unallocated GPUs (the victim search's feasible nodes): a pod that needs whole GPUs can
//   then be ranked over classes of all nodes - no node outside the candidates could fit it, and
//   the order of the scores does not depend on which non-fitting nodes are candidates. Records no
//   fit errors.
// - RankPerCandidateClass (SchedulerParams::shared_rank_by_class): for a shared-GPU pod without
//   node selectors, affinities or a nominated node, when every ranking callback declared
//   kShapeStateAndSharedFit (hooks.h), the per-node ranking of a candidate list computed on one
//   representative per key among the candidates (the first met), every other candidate taking
//   its representative's fit and score. The key: the node's shape and NodeState (NodeStateId)
//   and how many of its shared devices take the pod's share (CountFitting up to the pod's device
//   count) - what SharedFits reads, and all the declared callbacks may read. The candidates are
//   kept as they are (a shared-GPU pod can fit a node without free GPUs, so it is not ranked over
//   all nodes' classes), and the ranked list holds the same nodes with the same scores as
//   RankPerNode's: the best node and the order of the next ones (score, then name) are the same.
//   Node pre-order functions see only the representatives (the minimum and maximum of a state
//   over them are those over the candidates).
// - Rankings from the pod's previous one (SchedulerParams::shared_rank_changed_nodes;
//   RankingKeptFor, KeepRanking, RankFromKept): a fractional pod (a share of a GPU, not GPU
//   memory) without node selectors, affinities or a nominated node, in a cluster where no pod has
//   anti-affinity or preferred (anti-)affinity terms, all of whose ranking callbacks that apply to
//   it declared kShapeStateAndSharedFit (a filtered node-order function that does not apply to it
//   is not called), every pre-order function having given its NodePreOrderStateFn, and every node
//   with GPUs the same device memory (CapacityNode), keeps each ranking of 192 candidates or more
//   made without fit errors: its candidates, each one's answer (not fitting, or its score), what
//   the pre-order functions kept, whether the pod's queue capacity allowed it, and node_changes()
//   then. Its next ranking, over any list of candidates (each listed once), calls the pre-order
//   functions as every ranking does; when they keep the same values and the queue capacity allows
//   the pod now as it did then, a candidate that was kept and has not changed since
//   (node_changed_at) takes its kept answer, and only the others are checked and scored
//   (ScoreFittingNodes); otherwise the ranking is made in full. Why the answers are those of a
//   full ranking: a node's fit and score for the pod depend on the pod's spec (fixed), the node's
//   shape, state and shared devices (the callbacks' declaration, on which RankPerCandidateClass
//   rests too), what the pre-order functions kept (compared) and the session-wide state the
//   callbacks read, which is the queue capacity of the predicates plugin (asked on CapacityNode: a
//   share's GPUs, hence the answer, are the same on every node of one device memory; the plugin
//   itself reads it once per pod and placement); the queue capacity refusing fails every node, and
//   then the ranking is made in full. A node not changed since is in the same state
//   (node_changed_at counts every pod added to or removed from it, and every counter replay that
//   gives it back different from how it was), so its answer is the same. The ranked list then
//   holds the same (score, node) pairs as the full ranking's, and the order NextRankedNode returns
//   them in (score, then name: a strict total order) does not depend on the list's order.
// - PodRankableByClass: no shared GPU, claims, node selector, affinities, host ports (the pods on
//   a node decide those) or nominated node, no pod of the cluster with anti-affinity or preferred
//   (anti-)affinity terms (the podaffinity score reads node labels and the pods on nodes), and
//   classes enabled: then which non-fitting nodes are candidates does not matter.
//   With SchedulerParams::shared_class_ranking, RankFittingNodes ranks a shared-GPU pod by class
//   too when it is otherwise rankable (PodRankableByClassAnyGpu) and every node is a candidate:
//   the classes' keys hold the shared devices, so a class's nodes take its share alike (not over
//   a list covering the free GPUs: a share can fit a node without one).
//   AllPodsWholeGpuRankableByClass: every pod of the cluster asks for whole GPUs (more than zero)
//   and is rankable by class (computed once: both depend only on the pods' specs and settings).
// - pod_briefs (PodBrief below), FitsIdle, FitsIdleOrReleasing (the pod fits the node's idle
//   resources alone / with the releasing ones), FootprintFitsInSum (a pod that shares no GPU fits
//   in a + b with its node footprint: its request plus its DRA GPUs).
//
// Classes of equivalent nodes: same shape and same NodeState (and shared devices). Nodes of a
// class pass the same checks with the same scores for pods without node selectors, affinities or
// a nominated node, as long as every node callback depends only on the node's shape and state
// (NodeDependence, hooks.h), so ranking evaluates one representative (the smallest name) per
// class.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/gpu_sharing.h"
#include "framework/rank_set.h"
#include "framework/session_state.h"
#include "model/cluster.h"

namespace gantry {

// What the victim search reads of each pod in its inner loops, packed (a Pod is several hundred
// bytes): its job, its pod set and its whole-GPU request (NaN when the request is not whole GPUs
// only: shared GPUs, DRA GPUs, a fraction or a negative count). Built on first use
// (Session::pod_briefs); pod specs do not change within a session.
struct PodBrief {
  JobId job = kNone;
  int32_t pod_set = 0;
  double whole_gpus = 0;
};

struct NodeRanking {
  struct ClassKey {
    int32_t shape;
    NodeState state;
    NodeSharedGpus shared;  // device state (empty on nodes without shared GPUs)
    // Equality with a node's shape, state and devices, comparing the first `num_scalars`
    // scalar resources (the cluster's resource names: the others are never set).
    bool Matches(int32_t o_shape, const NodeState& o_state, const NodeSharedGpus& o_shared,
                 int num_scalars = kMaxScalarResources) const {
      return shape == o_shape && SameResources(state.idle, o_state.idle, num_scalars) &&
             SameResources(state.used, o_state.used, num_scalars) &&
             SameResources(state.releasing, o_state.releasing, num_scalars) && shared == o_shared;
    }
    bool operator==(const ClassKey& o) const { return Matches(o.shape, o.state, o.shared); }
  };
  // a == b on the four named resources and the first `num_scalars` scalars. (Comparing whole
  // arrays dominated the cost of re-filing a node.)
  static bool SameResources(const Resources& a, const Resources& b, int num_scalars);
  struct ClassKeyHash {
    size_t operator()(const ClassKey& k) const;
  };

  // Indices of the node order functions scoring the pod being ranked.
  std::vector<size_t> pod_order_fns;
  // Scratch buffers reused across calls (no allocation per candidate node).
  std::vector<std::pair<double, NodeId>> ranked;
  std::vector<NodeId> fitting;  // RankPerNode: candidates passing the checks so far
  bool ranked_heap = false;

  bool classes_enabled = false;
  std::unordered_map<ClassKey, int32_t, ClassKeyHash> class_index;
  // Members of each class by name rank (the smallest is the class's representative).
  RankSets class_members;
  std::vector<NodeId> node_by_rank;  // node of each name rank
  std::vector<int32_t> class_pos;    // per class: index in nonempty_classes, or -1
  std::vector<int32_t> nonempty_classes;
  std::vector<int32_t> node_class;
  // Moves between classes mostly repeat (a placement undone returns a node to its class; the
  // same pod placed on nodes of one class sends them to the same class), so before looking a key
  // up, Reclassify tries the node's previous class and where the last node leaving its class went.
  std::vector<const ClassKey*> class_keys;  // per class: its key (owned by class_index)
  std::vector<int32_t> class_next;          // per class: the class its last leaver went to
  std::vector<int32_t> node_prev_class;     // per node: its class before its last move
  std::vector<char> class_dirty;
  std::vector<NodeId> dirty_nodes;
  // Per entry of nonempty_classes: the class's representative, its smallest-named node (kept
  // by Reclassify as members come and go, so a ranking by class reads them as they are).
  std::vector<NodeId> class_reps;
  // RankPerCandidateClass: per key (a node's state id and fitting shared devices), the serial of
  // the ranking that last met it among its candidates and of the one that found it fitting, with
  // its score; each candidate's key; the representatives.
  uint32_t candidate_serial = 0;
  std::vector<uint32_t> candidate_seen;
  std::vector<uint32_t> candidate_fits;
  std::vector<double> candidate_score;
  std::vector<size_t> candidate_keys;
  std::vector<NodeId> candidate_reps;
  // Session::NodeStateId: ids of the (shape, NodeState) pairs met (shared devices left out), and
  // per node its id and the node version it was taken at.
  std::unordered_map<ClassKey, int32_t, ClassKeyHash> state_index;
  std::vector<int32_t> state_id;
  std::vector<uint32_t> state_id_version;
  // SchedulerParams::shared_rank_changed_nodes: per pod, its last ranking over a list of
  // candidates (the list, what the pre-order functions kept, whether its queue capacity allowed
  // it, node_changes() then, the fitting candidates with their scores), and the candidates held
  // in all; scratch lists.
  struct KeptRanking {
    std::vector<NodeId> candidates;
    std::vector<double> pre_order;
    bool capacity_ok = false;
    uint64_t changes = 0;
    std::vector<double> scores;  // per candidate: its score, NaN where the pod does not fit
  };
  std::unordered_map<PodId, KeptRanking> kept;
  size_t kept_candidates = 0;
  std::vector<double> pre_order_scratch;
  std::vector<NodeId> changed_scratch;
  std::vector<uint32_t> kept_marks_new, kept_marks_old;  // (a ranking's candidates, the kept ones)
  uint32_t kept_serial_new = 0, kept_serial_old = 0;
  std::vector<uint32_t> kept_pos;  // per node: its position in a list of candidates
  std::vector<double> scores_scratch;
  // State of the current ranking, for falling back to per-node order after the first node.
  bool ranked_by_class = false;
  PodId rank_pod = kNone;
  std::span<const NodeId> rank_candidates;
  std::vector<NodeId> rank_returned;
};

}  // namespace gantry
