// The session's extension points: what a plugin registers in OnSessionOpen, how the session
// evaluates it and which action asks for it. Every list is evaluated in configuration order.
// "Off by" is the name that switches a plugin's callback off in its `disabled_functions`
// (a callback without one cannot be switched off).
//
// clang-format off
// Hook (Add... / Set...)       Off by       How results combine; asked by (Session method)
// ------------------------------------------------------------------------------------------------
// JobOrderFn, JobOrderKeyFn    job_order    first non-zero answer; then creation, name
//                                             JobsByQueue (JobViewLess, JobOrderKeyOf)
// TaskOrderFn                  task_order   first non-zero answer; then pod name
//                                             tasks to allocate, victim search (TaskLess)
// PodSetOrderFn                -            first non-zero answer; then pod-set name
//                                             allocate, victim search (PodSetLess)
// QueueOrderFn (+ keys)        queue_order  first non-zero answer; then creation, name
//                                             JobsByQueue (QueueLess, *QueueKeyOf)
// PrePredicateFn               -            the first error fails the pod
//                                             allocate (PrePredicate)
// PredicateFn (+ batch)        predicate    all must pass; the first reason is recorded
//                                             allocate, victim search (FittingNode)
// NodePreOrderFn               -            all called, once per pod
//                                             node ranking
// NodeOrderFn (+ batch)        node_order   scores add up; best first, ties by name
//                                             node ranking (RankFittingNodes)
// GpuOrderFn                   -            scores add up; nullopt leaves a device out
//                                             allocate (SelectSharedGpus)
// SubsetNodesFn                -            each splits the sets the previous one made
//                                             allocate (SubsetNodes)
// RequiredDomainsFn            -            the first non-null answer
//                                             victim search, shortcuts on (RequiredDomains)
// PreJobAllocationFn           -            all called
//                                             allocate (PreJobAllocation)
// JobCapacityFn                -            the first one only
//                                             allocate (IsJobOverQueueCapacity)
// TaskCapacityFn               -            the first one only
//                                             predicates (IsTaskAllocationOverCapacity)
// NonPreemptibleQuotaFn        -            the first one only
//                                             preempt (IsNonPreemptibleJobWithinQuota)
// CanReclaimFn                 -            the first one only; none: no reclaim
//                                             reclaim (CanReclaimResources)
// ReclaimVictimFilterFn        reclaimable  all must accept
//                                             reclaim (ReclaimVictimFilter)
// PreemptVictimFilterFn        preemptable  all must accept
//                                             preempt (PreemptVictimFilter)
// ReclaimScenarioValidatorFn   reclaimable  all must accept
//                                             reclaim (ReclaimScenarioValid)
// ReclaimRejectionRulesFn      reclaimable  the rules of all, appended
//                                             victim search, shortcuts on
// PreemptScenarioValidatorFn   preemptable  all must accept
//                                             preempt (PreemptScenarioValid)
// OnJobSolutionStartFn         -            all called
//                                             reclaim (OnJobSolutionStart)
// SessionOpenedFn              -            all called, once every plugin is open
//                                             Session::Open (SessionOpened)
// EventHandler                 -            all called on every (de)allocation
//                                             Statement (FireAllocate, ...)
// Set*Fn (deserved, fair share, allocated)
//                              -            the last one set
//                                             victim search, CLI (QueueFairShare, ...)
// clang-format on
//
// Node callbacks (predicates, node order and pre-order, GPU order, subset nodes) say what they
// depend on (NodeDependence). The session ranks nodes by classes of equivalent nodes only when
// every registered node callback depends only on the node's shape and state; the default is
// "anything", so a callback that does not say so (a copied template scoring a node label, say)
// is evaluated on every node and ranks right.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/config.h"
#include "framework/gpu_sharing.h"
#include "framework/order_keys.h"
#include "model/cluster.h"

namespace gantry {

class Session;

// A job, or a subset of its pods standing for it (KAI's job clones: the part of a victim job
// still to be considered). An empty `pods` with `partial` false means the whole job.
struct JobView {
  JobId job = kNone;
  bool partial = false;
  std::vector<PodId> pods;
};

// Result of a queue capacity check.
struct SchedulableResult {
  bool schedulable = true;
  std::string reason;
  std::string message;
};

// A simulated eviction scenario handed to validators: the job that wants resources and, per
// victim job, the victim's tasks considered in the scenario (in the order they were added).
struct ScenarioInfo {
  JobId preemptor = kNone;
  std::vector<PodId> preemptor_tasks;  // the preemptor's pods being placed in this scenario
  std::vector<std::pair<JobId, std::vector<PodId>>> victims;
  // When `evicted_known`: the victims the simulation evicted (the recorded ones and those of
  // the node tried; both lists may repeat pods). Every other victim was left untouched, so it is
  // still active on its node.
  bool evicted_known = false;
  std::span<const PodId> evicted_recorded;
  std::span<const PodId> evicted_potential;
};

// Callback types. Comparators return <0 when the left side goes first, >0 for the right side,
// 0 for "no opinion" (the next comparator decides).
using JobOrderFn = std::function<int(const Session&, const JobView&, const JobView&)>;
// A job order given as a key of each view: the smaller key goes first, equal keys have no
// opinion (the comparator it stands for is the sign of key(l) - key(r)).
using JobOrderKeyFn = std::function<int64_t(const Session&, const JobView&)>;
// Compares two pods of one job. Must depend only on the pods' specs (labels, names): the
// session ranks each pod set's pods by it once and reuses the ranks (Session::TasksToAllocate).
using TaskOrderFn = std::function<int(const Session&, PodId, PodId)>;
using PodSetOrderFn = std::function<int(const Session&, const JobView&, int32_t, int32_t)>;
// The victims that stand for a queue when ordering victims: the jobs taken from it so far, then
// its next candidate. `list` names an append-only list (0: none): two VictimLists with the same
// `list` agree on their first `stable` views, and the views' pods had the same statuses whenever
// the session's state version was the same, so a plugin may keep sums over them.
struct VictimList {
  std::span<const JobView* const> views;
  uint64_t list = 0;
  size_t stable = 0;
  bool empty() const { return views.empty(); }
};

// Queue order: l / r queues represented by their best pending job (allocation order) or, when
// ordering victims, by their victim jobs so far (the job ids are then kNone).
using QueueOrderFn = std::function<int(const Session&, QueueId, QueueId, const JobView*,
                                       const JobView*, const VictimList&, const VictimList&)>;
// The key of queue q represented by `victims` (see QueueOrderKey).
using QueueOrderKeyFn = std::function<QueueOrderKey(const Session&, QueueId, const VictimList&)>;
// The same for a queue order in job order (no victims): the key of queue q represented by the
// job it would allocate next; for two queues l, r with jobs lj, rj, key(l, lj) < key(r, rj)
// implies fn(l, r, lj, rj) < 0 and > implies > 0, equal keys say nothing.
using JobQueueOrderKeyFn = std::function<QueueOrderKey(const Session&, QueueId, const JobView&)>;
// Called once per pod before its nodes are scored, with the candidate node set.
using NodePreOrderFn = std::function<void(Session&, PodId, std::span<const NodeId>)>;
// What a node pre-order function kept for pod p's scores, right after it was called for p
// (appended to the list): two rankings of p after which it kept the same values score every node
// in the same state alike (Session's rankings from the previous one, node_ranking.h).
using NodePreOrderStateFn = std::function<void(const Session&, PodId, std::vector<double>&)>;
using NodeOrderFn = std::function<double(const Session&, PodId, NodeId)>;
// A node order function for many nodes at once: adds its score of each entry's node (second) to
// the entry's score (first). Given with a NodeOrderFn, it must add exactly what that returns.
using NodeOrderBatchFn =
    std::function<void(const Session&, PodId, std::span<std::pair<double, NodeId>>)>;
// Whether a callback applies to a pod at all (a node-order function can score anything but 0 for
// it, a subset-node function can split its candidates), by the specs alone: the pod's, its job's
// and sub-groups' (fixed for the session).
using PodSpecFilter = bool (*)(const Cluster&, const Pod&);
// Returns an error message when the pod cannot be scheduled anywhere.
using PrePredicateFn = std::function<std::optional<std::string>(Session&, PodId)>;
// Returns a short reason when the pod cannot go on the node.
using PredicateFn = std::function<std::optional<std::string>(Session&, PodId, NodeId)>;
// A predicate for many nodes at once, where no reason is wanted: removes from the list the nodes
// the pod cannot go on, keeping the others in order. Given with a PredicateFn, it must remove
// exactly the nodes that gives a reason for.
using PredicateBatchFn = std::function<void(Session&, PodId, std::vector<NodeId>&)>;
// What a node callback's answer depends on, besides the pod.
enum class NodeDependence {
  // Anything: the node's name, labels, the pods on it... (the safe default).
  kAnything,
  // Only the node's shape (Node::shape) and its session state (NodeState, shared devices), for
  // pods without node selectors, affinities or a nominated node: nodes of one class of
  // equivalent nodes get the same answer, so ranking may evaluate one node per class.
  kShapeAndStateOnly,
  // As kShapeAndStateOnly, and for a shared-GPU pod (fraction or GPU memory) the node's shared
  // devices count only through how many of them can take the pod's share (Session::SharedFits,
  // FitsIdle and FitsIdleOrReleasing; NodeSharedGpus::FitsOnGroup / CountFitting up to the pod's
  // device count), not through which devices or what else they hold: a ranking may then
  // evaluate one node per shape, NodeState and that count (Session::RankPerCandidateClass).
  kShapeStateAndSharedFit,
};
struct PredicateOptions {
  // Rankings filter their candidates with it (one call instead of one per node).
  PredicateBatchFn batch = nullptr;
  NodeDependence depends_on = NodeDependence::kAnything;
};
struct NodeOrderOptions {
  // The function is only called for pods this says yes to (it scores 0 for the others). A
  // function that depends on more than the node's shape and state (kAnything) but has this
  // filter keeps node classes only from the pods it scores
  // (SchedulerParams::class_ranking_per_pod).
  PodSpecFilter scores_pod = nullptr;
  // Rankings score their fitting nodes with it (one call instead of one per node).
  NodeOrderBatchFn batch = nullptr;
  NodeDependence depends_on = NodeDependence::kAnything;
};
using JobCapacityFn =
    std::function<SchedulableResult(const Session&, JobId, std::span<const PodId>)>;
using TaskCapacityFn = std::function<SchedulableResult(const Session&, PodId, NodeId)>;
using PodEventFn = std::function<void(Session&, PodId)>;
using QueueQuantitiesFn = std::function<Quantities(const Session&, QueueId)>;
// May `reclaimer` take resources from other queues at all?
using CanReclaimFn = std::function<bool(const Session&, JobId reclaimer)>;
// May `victim` be evicted for `preemptor`?
using VictimFilterFn = std::function<bool(const Session&, JobId preemptor, JobId victim)>;
// Is a simulated scenario an acceptable solution?
using ScenarioValidatorFn = std::function<bool(const Session&, const ScenarioInfo&)>;
// A proven bound on a validator, asked before a simulation: the validator rejects the outcome
// when, of `pods` (victims the simulation evicts, each active before and listed once), those
// still evicted (kReleasing) at the end are at least one and their accepted GPUs add up to at
// least `min_gpus`, whatever else the simulation did.
// A bound of the saturation form, whose formula is the validator's (proportion's reclaim check
// on GPUs: plugins/proportion/saturation.h): with x the GPUs of a rule's victims left evicted and
// b those of its `below` victims left evicted, the validator rejects when x >= 1 and
// Rejects(x, b). It must be increasing in x and decreasing in b, so that bounds on x from below
// and on b from above decide it.
struct SaturationBound {
  static constexpr size_t kParams = 6;
  using Formula = bool (*)(const std::array<double, kParams>& params, double x, double b);
  Formula formula = nullptr;
  std::array<double, kParams> params{};
  bool Rejects(double x, double b) const { return formula(params, x, b); }
};
struct RejectionRule {
  std::vector<PodId> pods;
  // More victims of the rule (none listed in `pods`), held by the rules function: valid until
  // its next call.
  std::span<const PodId> held;
  double min_gpus = 0;  // may be infinite (see `saturation`)
  // Optional: the rule also holds when its victims left evicted hold x >= 1 GPUs with
  // saturation.Rejects(x, b), b the GPUs left evicted of the victims `below_held` and
  // `below_more` (held like `held`; none of them in this rule's own victims). min_gpus is that
  // bound with every `below` victim left evicted.
  bool has_saturation = false;
  SaturationBound saturation;
  std::span<const PodId> below_held, below_more;
  // With a saturation bound: the rule's victims are the evicted victims of the queue `sibling`
  // and below it, and its `below` victims those below the `level`-th queue of the preemptor's
  // queue's root path (root first), the queue `sibling` is compared with.
  QueueId sibling = kNone;
  size_t level = 0;
  size_t size() const { return held.size() + pods.size(); }
  template <typename F>
  void ForEachPod(F&& f) const {
    for (PodId p : held) f(p);
    for (PodId p : pods) f(p);
  }
};
// The victims a simulation evicts (a pod may be listed twice). With a nonzero `stable_key`, the
// first `stable` of them are the same pods, in the same order and with the same accepted GPUs, in
// every call with that key (the victim search's recorded victims of one pod prefix): a rules
// function may keep what it derived from them.
struct EvictedVictims {
  std::span<const PodId> pods;
  size_t stable = 0;
  uint64_t stable_key = 0;
  // False: only rules whose min_gpus is finite are wanted (the caller does not follow a
  // simulation, so saturation bounds that victims placed again would lower cannot be used).
  bool follow_below = true;
};
// Appends rules for a reclaim simulation of `preemptor_tasks` that evicts `evicted`. May append
// none; must never state a rule an accepted scenario breaks. Asked only with the solver
// shortcuts on.
using RejectionRulesFn =
    std::function<void(const Session&, JobId preemptor, std::span<const PodId> preemptor_tasks,
                       const EvictedVictims& evicted, std::vector<RejectionRule>& out)>;
using OnJobSolutionStartFn = std::function<void(const Session&)>;
// Scores a device of `node` for a shared-GPU pod (higher first): `device` is a shared device
// already in use, or null for a free whole device. nullopt leaves the device out.
using GpuOrderFn =
    std::function<std::optional<double>(const Session&, PodId, NodeId, const SharedGpu* device)>;

// A node of a job's sub-group tree: a group (pod_set false; index 0 is the root) or a pod set.
struct SubGroupRef {
  JobId job = kNone;
  bool pod_set = false;
  int32_t index = 0;
};
// Splits the candidate `nodes` for the `tasks` of a sub-group into node sets to try in order
// (KAI's SubsetNodesFn; e.g. one per topology domain). Returns false for "no change" (the nodes
// as they are); an empty `out` with true means no node set at all. `record`: the attempt is real
// (not a simulation) and may record job fit errors.
using SubsetNodesFn = std::function<bool(Session&, const SubGroupRef&, std::span<const PodId> tasks,
                                         std::span<const NodeId> nodes, bool record,
                                         std::vector<std::vector<NodeId>>& out)>;
// A partition of the nodes into the domains a sub-group's pods must share: every node set a
// subset-node function makes for the sub-group's tasks lies inside one domain, so the pods
// placed through SubsetNodes all land in one domain. `of_node`: per node, its domain (0 to
// count - 1), or -1 for a node no set of the sub-group holds.
struct NodeDomains {
  std::vector<int32_t> of_node;
  int32_t count = 0;
};
// The partition of a sub-group whose placement is confined so (null: none is promised; e.g. the
// topology plugin's required level). The answer stays valid for the whole session.
using RequiredDomainsFn = std::function<const NodeDomains*(const Session&, const SubGroupRef&)>;
using PreJobAllocationFn = std::function<void(Session&, JobId)>;
// Called once the session is fully open (every plugin's callbacks registered), before the first
// action: for plugins that read the session as the actions will see it (reflectjoborder).
using SessionOpenedFn = std::function<void(Session&)>;

struct EventHandler {
  PodEventFn on_allocate;    // a pod started to occupy resources (allocated or pipelined)
  PodEventFn on_deallocate;  // a pod stopped occupying them (rolled back or evicted)
};

// The registration lists and their evaluation: the part of Session (which derives from it) that
// plugins extend. Registration is valid only while plugins are being opened (Session::Open).
class SessionHooks {
 public:
  // --- Registration ----------------------------------------------------------------------------
  // `own_pods_only`: the function's answer for two job views depends only on the jobs' fixed
  // fields and the statuses of the views' own pods (so an entry's rank in a job order holds
  // while its own pods do not change).
  void AddJobOrderFn(JobOrderFn fn, bool own_pods_only = false);
  // The same as AddJobOrderFn with the comparator sign(key(l) - key(r)); while every job order
  // function is given this way (at most JobOrderKey::kMaxFns) and depends only on the views'
  // own pods, the order can be evaluated as keys (Session::JobOrderKeyed).
  void AddJobOrderKeyFn(JobOrderKeyFn key, bool own_pods_only = false);
  void AddTaskOrderFn(TaskOrderFn fn);
  void AddPodSetOrderFn(PodSetOrderFn fn);
  // `pod_states_only`: the function's answer depends only on the two queues, the jobs or victim
  // lists given, and the statuses and virtual flags of the pods of the jobs in the two queues'
  // subtrees (so a job order may keep its answers while none of these changed).
  // `victim_key` (optional): the same order in victim mode as a key (see QueueOrderKey);
  // `job_key` (optional): in job order (see JobQueueOrderKeyFn).
  void AddQueueOrderFn(QueueOrderFn fn, bool pod_states_only = false,
                       QueueOrderKeyFn victim_key = nullptr, JobQueueOrderKeyFn job_key = nullptr);
  // Called right after AddQueueOrderFn by a plugin whose function never answers 0 and, for two
  // sibling queues (children of one queue, or two roots) whose sides are otherwise equal, decides
  // by a strict total order of the queues alone: then the function orders sibling queues with
  // their jobs (or victims) totally, so the best of a set of siblings is the best of any subset
  // holding it (QueueOrderTotalOnSiblings). Only the first queue order function counts.
  void SetQueueOrderTotalOnSiblings(bool total);
  // Called right after AddQueueOrderFn (with a job-order key) by a plugin whose key of a whole
  // job view (not a partial one) in queue q depends on the job only through the bits of
  // Session::ViewTasksQuantities of the view, given q and the pod states: two jobs asking for
  // the same quantities have the same key in any state (JobQueueKeyByRequest). Only the first
  // queue order function counts.
  void SetJobQueueKeyByRequest(bool by_request);
  // `state` (optional): what the function keeps for the scores (NodePreOrderStateFn).
  void AddNodePreOrderFn(NodePreOrderFn fn, NodeDependence depends_on = NodeDependence::kAnything,
                         NodePreOrderStateFn state = nullptr);
  void AddNodeOrderFn(NodeOrderFn fn, NodeOrderOptions options = {});
  void AddPrePredicateFn(PrePredicateFn fn);
  void AddPredicateFn(PredicateFn fn, PredicateOptions options = {});
  void AddGpuOrderFn(GpuOrderFn fn, NodeDependence depends_on = NodeDependence::kAnything);
  // `subsets_pod` (optional): the pods whose candidates the function may split, those of the
  // sub-groups it may answer for and of every sub-group below them (null: any pod).
  void AddSubsetNodesFn(SubsetNodesFn fn, NodeDependence depends_on = NodeDependence::kAnything,
                        PodSpecFilter subsets_pod = nullptr);
  void AddRequiredDomainsFn(RequiredDomainsFn fn);
  void AddPreJobAllocationFn(PreJobAllocationFn fn);
  void AddJobCapacityFn(JobCapacityFn fn);
  void AddTaskCapacityFn(TaskCapacityFn fn);
  void AddNonPreemptibleQuotaFn(JobCapacityFn fn);
  void AddEventHandler(EventHandler h);
  void AddCanReclaimFn(CanReclaimFn fn);
  void AddReclaimVictimFilterFn(VictimFilterFn fn);
  void AddPreemptVictimFilterFn(VictimFilterFn fn);
  void AddReclaimScenarioValidatorFn(ScenarioValidatorFn fn);
  void AddReclaimRejectionRulesFn(RejectionRulesFn fn);
  void AddPreemptScenarioValidatorFn(ScenarioValidatorFn fn);
  void AddOnJobSolutionStartFn(OnJobSolutionStartFn fn);
  void AddSessionOpenedFn(SessionOpenedFn fn);
  void SetQueueDeservedFn(QueueQuantitiesFn fn) { queue_deserved_fn_ = std::move(fn); }
  void SetQueueFairShareFn(QueueQuantitiesFn fn) { queue_fair_share_fn_ = std::move(fn); }
  void SetQueueAllocatedFn(QueueQuantitiesFn fn) { queue_allocated_fn_ = std::move(fn); }
  // Whether the plugin being opened has switched off the callback `name`.
  bool Disabled(std::string_view name) const;

  // --- What the registrations promise -------------------------------------------------------
  bool JobOrderDependsOnlyOnOwnPods() const { return job_order_own_pods_only_; }
  bool QueueOrderDependsOnlyOnPodStates() const { return queue_order_pod_states_only_; }
  // See SetQueueOrderTotalOnSiblings (false unless the first queue order function said so).
  bool QueueOrderTotalOnSiblings() const { return queue_order_total_on_siblings_; }
  // See SetJobQueueKeyByRequest (false unless the first queue order function said so).
  bool JobQueueKeyByRequest() const { return job_queue_key_by_request_; }
  // Whether every node callback registered depends only on the node's shape and state.
  bool NodeCallbacksDependOnlyOnShapeAndState() const { return node_fns_shape_and_state_only_; }
  // The same for every callback but those with a pod filter (a node-order function's scores_pod,
  // a subset-node function's subsets_pod): those that depend on more apply only to the pods
  // their filters say yes to (NodeCallbackAppliesBeyondShape).
  bool NodeCallbacksDependOnlyOnShapeAndStateUnlessFiltered() const {
    return node_fns_shape_and_state_only_unless_filtered_;
  }
  // Whether some node callback that depends on more than the node's shape and state applies to
  // the pod (by a filter of NodeCallbacksDependOnlyOnShapeAndStateUnlessFiltered's).
  bool NodeCallbackAppliesBeyondShape(const Pod& pod) const;
  // Whether every predicate, node pre-order and node order function registered declared
  // kShapeStateAndSharedFit (what a ranking calls; GPU order and subset functions do not decide
  // a node's fit or score).
  bool RankingCallbacksSeeOnlySharedFit() const { return ranking_fns_shared_fit_only_; }
  // The same for the ranking callbacks that apply to the pod: every one declared
  // kShapeStateAndSharedFit but those with a pod filter (a node-order function's scores_pod),
  // whose filters all say no to the pod.
  bool RankingCallbacksSeeOnlySharedFitFor(const Pod& pod) const;
  // Whether every node pre-order function registered gave its NodePreOrderStateFn; then
  // NodePreOrderStates appends what they all keep for pod p (right after they were called for p).
  bool NodePreOrderStatesGiven() const { return pre_order_states_given_; }
  void NodePreOrderStates(PodId p, std::vector<double>& out) const;
  // Whether any reclaim victim filter is registered (without one, ReclaimVictimFilter accepts
  // every pair).
  bool HasReclaimVictimFilters() const { return !reclaim_victim_filter_fns_.empty(); }

  // --- Evaluation (see the table above) -----------------------------------------------------
  bool QueueLess(QueueId l, QueueId r, const JobView* l_job, const JobView* r_job,
                 const VictimList& l_victims, const VictimList& r_victims) const;
  std::optional<std::string> PrePredicate(PodId p);
  SchedulableResult IsJobOverQueueCapacity(JobId j, std::span<const PodId> pods) const;
  SchedulableResult IsTaskAllocationOverCapacity(PodId p, NodeId n) const;
  // False when a non-preemptible job's `pods` would take its queue over its deserved quota.
  bool IsNonPreemptibleJobWithinQuota(JobId j, std::span<const PodId> pods) const;
  std::optional<Quantities> QueueFairShare(QueueId q) const;
  std::optional<Quantities> QueueDeserved(QueueId q) const;
  std::optional<Quantities> QueueAllocated(QueueId q) const;
  // KAI: CanReclaimResources uses the first registered function only; filters and validators
  // must all agree.
  bool CanReclaimResources(JobId reclaimer) const;
  bool ReclaimVictimFilter(JobId reclaimer, JobId victim) const;
  bool PreemptVictimFilter(JobId preemptor, JobId victim) const;
  bool ReclaimScenarioValid(const ScenarioInfo& scenario) const;
  bool PreemptScenarioValid(const ScenarioInfo& scenario) const;
  // Rules under which some reclaim validator rejects a simulation's outcome (those of every
  // RejectionRulesFn: each validator must accept).
  void ReclaimRejectionRules(JobId preemptor, std::span<const PodId> preemptor_tasks,
                             const EvictedVictims& evicted, std::vector<RejectionRule>& out) const;
  void OnJobSolutionStart() const;
  // Runs the subset-node functions in order, each on every node set the previous one produced.
  // False: no function changed anything (use `nodes` as they are); otherwise `out` holds the sets.
  bool SubsetNodes(const SubGroupRef& ref, std::span<const PodId> tasks,
                   std::span<const NodeId> nodes, bool record,
                   std::vector<std::vector<NodeId>>& out);
  // The domains the sub-group's pods placed through SubsetNodes must share (see
  // RequiredDomainsFn), or null.
  const NodeDomains* RequiredDomains(const SubGroupRef& ref) const;
  void PreJobAllocation(JobId j);
  void SessionOpened();
  void FireAllocate(PodId p);
  void FireDeallocate(PodId p);

 protected:
  SessionHooks() = default;
  ~SessionHooks() = default;
  // (The session this is part of.)
  const Session& session() const;
  Session& session();
  // A callback that depends on no more than the node's shape and state (kShapeStateAndSharedFit
  // included: the classes' keys hold the shared devices) keeps node classes; another keeps them
  // only for the pods its filter says no to (`applies_to`), or for none without a filter.
  void NoteNodeCallback(NodeDependence depends_on, PodSpecFilter applies_to = nullptr) {
    const bool shape_only = depends_on != NodeDependence::kAnything;
    node_fns_shape_and_state_only_ = node_fns_shape_and_state_only_ && shape_only;
    if (shape_only) return;
    if (applies_to == nullptr) {
      node_fns_shape_and_state_only_unless_filtered_ = false;
    } else {
      beyond_shape_filters_.push_back(applies_to);
    }
  }
  void NoteRankingCallback(NodeDependence depends_on, PodSpecFilter applies_to = nullptr) {
    NoteNodeCallback(depends_on, applies_to);
    const bool shared_fit = depends_on == NodeDependence::kShapeStateAndSharedFit;
    ranking_fns_shared_fit_only_ = ranking_fns_shared_fit_only_ && shared_fit;
    if (shared_fit) return;
    if (applies_to == nullptr) {
      ranking_fns_shared_fit_only_unless_filtered_ = false;
    } else {
      beyond_shared_fit_filters_.push_back(applies_to);
    }
  }

  const PluginConfig* opening_ = nullptr;  // configuration of the plugin being opened
  std::vector<JobOrderFn> job_order_fns_;
  bool job_order_own_pods_only_ = true;
  // Job order keys (Session::JobOrderKeyed): whether every job order function came with a key,
  // and the key functions.
  bool job_order_keyed_ = true;
  std::vector<JobOrderKeyFn> job_order_keys_;
  std::vector<TaskOrderFn> task_order_fns_;
  std::vector<PodSetOrderFn> pod_set_order_fns_;
  std::vector<QueueOrderFn> queue_order_fns_;
  bool queue_order_pod_states_only_ = true;
  bool queue_order_total_on_siblings_ = false;
  bool job_queue_key_by_request_ = false;
  bool last_queue_order_first_ = false;  // the last AddQueueOrderFn added the first function
  QueueOrderKeyFn victim_queue_key_;     // the first queue order function's key, if given
  JobQueueOrderKeyFn job_queue_key_;     // its job-order key, if given
  bool node_fns_shape_and_state_only_ = true;
  bool node_fns_shape_and_state_only_unless_filtered_ = true;
  // The filters of the callbacks that depend on more than shape and state and have one.
  std::vector<PodSpecFilter> beyond_shape_filters_;
  bool ranking_fns_shared_fit_only_ = true;
  // The same but for callbacks with a pod filter, and those callbacks' filters.
  bool ranking_fns_shared_fit_only_unless_filtered_ = true;
  std::vector<PodSpecFilter> beyond_shared_fit_filters_;
  std::vector<NodePreOrderFn> node_pre_order_fns_;
  std::vector<NodePreOrderStateFn> node_pre_order_state_fns_;  // per node_pre_order_fns_ entry
  bool pre_order_states_given_ = true;
  std::vector<NodeOrderFn> node_order_fns_;
  std::vector<PodSpecFilter> node_order_filters_;       // per node_order_fns_ entry, or null
  std::vector<NodeOrderBatchFn> node_order_batch_fns_;  // per node_order_fns_ entry, or null
  std::vector<PrePredicateFn> pre_predicate_fns_;
  std::vector<PredicateFn> predicate_fns_;
  std::vector<PredicateBatchFn> predicate_batch_fns_;  // per predicate_fns_ entry, or null
  std::vector<GpuOrderFn> gpu_order_fns_;
  std::vector<SubsetNodesFn> subset_nodes_fns_;
  std::vector<RequiredDomainsFn> required_domains_fns_;
  std::vector<PreJobAllocationFn> pre_job_allocation_fns_;
  std::vector<JobCapacityFn> job_capacity_fns_;
  std::vector<TaskCapacityFn> task_capacity_fns_;
  std::vector<JobCapacityFn> non_preemptible_quota_fns_;
  std::vector<EventHandler> event_handlers_;
  std::vector<CanReclaimFn> can_reclaim_fns_;
  std::vector<VictimFilterFn> reclaim_victim_filter_fns_;
  std::vector<VictimFilterFn> preempt_victim_filter_fns_;
  std::vector<ScenarioValidatorFn> reclaim_validator_fns_;
  std::vector<RejectionRulesFn> reclaim_rejection_rules_fns_;
  std::vector<ScenarioValidatorFn> preempt_validator_fns_;
  std::vector<OnJobSolutionStartFn> on_job_solution_start_fns_;
  std::vector<SessionOpenedFn> session_opened_fns_;
  QueueQuantitiesFn queue_fair_share_fn_;
  QueueQuantitiesFn queue_deserved_fn_;
  QueueQuantitiesFn queue_allocated_fn_;
};

}  // namespace gantry
