// A scheduling session: one cycle's view of the cluster, the plugins' callbacks, and the
// decisions taken so far.
//
// The session copies only the mutable part of the Cluster (pod status and node, node counters,
// pod-set counters) into flat arrays; the Cluster itself is read-only for the whole cycle. Actions
// change the session only through a Statement (statement.h), which records every change so it
// can be rolled back. Plugins register typed callbacks in OnSessionOpen; the session evaluates
// them in configuration order.
//
// Threading: a session is used by one thread. Node scoring may fan out internally.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework/config.h"
#include "framework/dra.h"
#include "framework/fit_errors.h"
#include "framework/gpu_sharing.h"
#include "framework/rank_set.h"
#include "model/cluster.h"

namespace gantry {

class Plugin;
class Session;

// Mutable per-pod state inside a session.
struct PodState {
  PodStatus status = PodStatus::kPending;
  NodeId node = kNone;
  bool virtual_status = false;  // changed by an uncommitted statement operation
};

// Mutable per-node counters inside a session (KAI's NodeInfo Idle / Used / Releasing).
struct NodeState {
  Resources idle;
  Resources used;
  Resources releasing;
  Resources NonAllocated() const { return idle + releasing; }
};

// Per pod set counts, kept current as pod statuses change.
struct PodSetCounters {
  int32_t active_allocated = 0;
  int32_t active_used = 0;
  int32_t alive = 0;
  int32_t gated = 0;
  int32_t pending = 0;
};

// A job, or a subset of its pods standing for it (KAI's job clones: the part of a victim job
// still to be considered). An empty `pods` with `partial` false means the whole job.
struct JobView {
  JobId job = kNone;
  bool partial = false;
  std::vector<PodId> pods;
};

// Per job session state.
struct JobState {
  std::optional<int64_t> last_start_ms;
  std::optional<int64_t> stale_since_ms;
  std::vector<JobFitError> fit_errors;
  std::unordered_map<PodId, TaskFitErrors> task_fit_errors;
};

// Result of a queue capacity check.
struct SchedulableResult {
  bool schedulable = true;
  std::string reason;
  std::string message;
};

// A committed placement: becomes a BindRequest in the live mode.
struct BindDecision {
  PodId pod;
  NodeId node;
  std::vector<std::string> gpu_groups;
};
struct EvictionDecision {
  PodId pod;
  NodeId node;
  std::string message;
};
struct PipelineDecision {
  PodId pod;
  NodeId node;
  std::string message;
};

// Counters of the work a session did (for tests and benchmarks).
struct SessionStats {
  int64_t rankings_by_class = 0;  // pods ranked over classes of equivalent nodes
  int64_t rankings_per_node = 0;  // pods ranked node by node
  int64_t nodes_checked = 0;      // node feasibility checks while ranking
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
// The job order as a key (see Session::JobOrderKeyOf): views compare as their keys compare,
// lexicographically.
struct JobOrderKey {
  static constexpr size_t kMaxFns = 3;  // key functions a key can hold
  // The key functions' values in order, then the job's tie-breaker rank; unused slots are 0.
  std::array<int64_t, kMaxFns + 1> k{};
  bool operator<(const JobOrderKey& o) const {
    for (size_t i = 0; i < k.size(); ++i) {
      if (k[i] != o.k[i]) return k[i] < o.k[i];
    }
    return false;
  }
};
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
// A queue order in victim order (no jobs, both victim lists non-empty) as a key of each side, so
// that a caller comparing many queues computes one key per queue instead of calling the
// comparator per pair. For the QueueOrderFn `fn` it is given with, and any two queues l, r:
// key(l) < key(r) implies fn(l, r) < 0 (l goes first), key(l) > key(r) implies fn(l, r) > 0,
// and equal keys say nothing (the caller must ask the full comparison). Keys compare field by
// field: the first field where one side is < or > the other decides (so fields that are equal
// or unordered, such as NaNs, are skipped, as a comparator testing `<` then `>` does).
struct QueueOrderKey {
  static constexpr size_t kFields = 6;
  std::array<double, kFields> k{};
  // <0: this side goes first, >0: `o` goes first, 0: equal keys (no answer).
  int Compare(const QueueOrderKey& o) const {
    for (size_t i = 0; i < kFields; ++i) {
      if (k[i] < o.k[i]) return -1;
      if (k[i] > o.k[i]) return 1;
    }
    return 0;
  }
};
// The key of queue q represented by `victims` (see QueueOrderKey).
using QueueOrderKeyFn = std::function<QueueOrderKey(const Session&, QueueId, const VictimList&)>;
// The same for a queue order in job order (no victims): the key of queue q represented by the
// job it would allocate next; for two queues l, r with jobs lj, rj, key(l, lj) < key(r, rj)
// implies fn(l, r, lj, rj) < 0 and > implies > 0, equal keys say nothing.
using JobQueueOrderKeyFn = std::function<QueueOrderKey(const Session&, QueueId, const JobView&)>;
// Called once per pod before its nodes are scored, with the candidate node set.
using NodePreOrderFn = std::function<void(Session&, PodId, std::span<const NodeId>)>;
using NodeOrderFn = std::function<double(const Session&, PodId, NodeId)>;
// A node order function for many nodes at once: adds its score of each entry's node (second) to
// the entry's score (first). Given with a NodeOrderFn, it must add exactly what that returns.
using NodeOrderBatchFn =
    std::function<void(const Session&, PodId, std::span<std::pair<double, NodeId>>)>;
// Whether a node-order function can score anything but 0 for a pod, by the pod's spec alone.
using NodeOrderPodFilter = bool (*)(const Pod&);
// Returns an error message when the pod cannot be scheduled anywhere.
using PrePredicateFn = std::function<std::optional<std::string>(Session&, PodId)>;
// Returns a short reason when the pod cannot go on the node.
using PredicateFn = std::function<std::optional<std::string>(Session&, PodId, NodeId)>;
// A predicate for many nodes at once, where no reason is wanted: removes from the list the nodes
// the pod cannot go on, keeping the others in order. Given with a PredicateFn, it must remove
// exactly the nodes that gives a reason for.
using PredicateBatchFn = std::function<void(Session&, PodId, std::vector<NodeId>&)>;
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
// A bound of the saturation form (proportion's reclaim check on GPUs): with x the GPUs of a
// rule's victims left evicted and b those of its `below` victims left evicted, the validator
// rejects when x >= 1 and Rejects(x, b). With whole-number sums it is increasing in x and
// decreasing in b, so bounds on x from below and on b from above decide it.
struct SaturationBound {
  double allocated = 0;      // of the reclaimer's queue at the level where the paths part
  double required = 0;       // GPUs the pending pods ask for
  double fair = 0;           // fair share of the reclaimer's queue there (> 0)
  double sib_allocated = 0;  // of the sibling queue the rule's victims are under
  double sib_fair = 0;       // its fair share (> 0)
  double multiplier = 1;     // reclaimerUtilizationMultiplier
  bool Rejects(double x, double b) const {
    const double ratio = (allocated - b + required) / fair;
    return ratio > 1 && ratio * multiplier >= (sib_allocated - x) / sib_fair;
  }
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
using PreJobAllocationFn = std::function<void(Session&, JobId)>;

struct EventHandler {
  PodEventFn on_allocate;    // a pod started to occupy resources (allocated or pipelined)
  PodEventFn on_deallocate;  // a pod stopped occupying them (rolled back or evicted)
};

class Session {
 public:
  // Builds the session state from `cluster` at time `now_ms`. The cluster must outlive the
  // session and must not change while it is open.
  Session(const Cluster& cluster, const SchedulerConfig& config, int64_t now_ms);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Calls OnSessionOpen of each plugin, in order. The plugins must outlive the session.
  // `configs[i]` (if given) is plugin i's configuration: callbacks named in its
  // disabled_functions (job_order, task_order, queue_order, predicate, node_order, ...) are not
  // registered.
  void Open(std::span<Plugin* const> plugins, std::span<const PluginConfig> configs = {});
  // Calls OnSessionClose in configuration order.
  void Close();

  const Cluster& cluster() const { return cluster_; }
  const SchedulerConfig& config() const { return config_; }
  const SchedulerParams& params() const { return config_.params; }
  int64_t now_ms() const { return now_ms_; }

  // --- State -----------------------------------------------------------------------------
  const PodState& pod(PodId p) const { return pods_[p]; }
  const NodeState& node(NodeId n) const { return nodes_[n]; }
  const std::vector<NodeState>& nodes() const { return nodes_; }
  const std::vector<PodState>& pods() const { return pods_; }
  const PodSetCounters& counters(JobId j, int32_t pod_set) const {
    return pod_set_counters_[cluster_.jobs[j].pod_set_base + pod_set];
  }
  JobState& job_state(JobId j) { return jobs_[j]; }
  const JobState& job_state(JobId j) const { return jobs_[j]; }
  // Shared-GPU groups a pod occupies (interned ids; GroupName turns one into its id string).
  const std::vector<int32_t>& pod_groups(PodId p) const { return pod_groups_[p]; }
  std::vector<std::string> GroupNames(PodId p) const;
  const std::string& GroupName(int32_t group) const { return group_names_[group]; }
  // A fresh group id, unused anywhere in the cluster or this session.
  int32_t NewGroup();
  // Sets the groups of a pod (Statement records the previous ones).
  void SetPodGroups(PodId p, std::vector<int32_t> groups) { pod_groups_[p] = std::move(groups); }
  // DRA claims and devices (changed by the dynamicresources plugin).
  const DraState& dra() const { return dra_; }
  DraState& dra() { return dra_; }
  // The shared devices of a node.
  const NodeSharedGpus& shared_gpus(NodeId n) const { return shared_[n]; }
  // GPU memory (MiB) a shared-GPU pod takes on each of its devices on node n.
  int64_t PodGpuMemoryOn(PodId p, NodeId n) const { return GpuMemoryOn(cluster_.pods[p], n); }
  int64_t GpuMemoryOn(const Pod& pod, NodeId n) const;
  // Whether a synthetic request (the topology plugin's representative pods: k copies of a job's
  // largest pod) fits node n's idle and releasing resources, as KAI checks such a pod: resources
  // other than GPUs and MIG instances, then whole free devices plus shared devices with room.
  bool RepresentativeFits(const Pod& pod, NodeId n) const;
  // KAI's GetSumOfIdleGPUs / GetSumOfReleasingGPUs: a node's idle (releasing) GPUs counting
  // whole devices, the free (releasing) part of shared devices and MIG instances as
  // GPU-equivalents; second, the same as GPU memory in MiB.
  std::pair<double, int64_t> IdleGpuSum(NodeId n) const;
  std::pair<double, int64_t> ReleasingGpuSum(NodeId n) const;
  struct MigProfile {
    int slot;    // extended-resource slot
    int gpus;    // g of nvidia.com/mig-<g>g.<m>gb
    int mem_gb;  // m
  };
  const std::vector<MigProfile>& mig_profiles() const { return mig_profiles_; }
  // GPUs the pod was granted when it was last placed (KAI's AcceptedResource), as its queue
  // charge; 0 for a pod never placed.
  double AcceptedGpus(PodId p) const { return accepted_gpus_[p]; }
  Quantities AcceptedQuantities(PodId p) const {
    return cluster_.pods[p].WithGpus(accepted_gpus_[p]);
  }
  // GPUs the queue capacity check charges for placing the pod on node n (KAI's
  // GetRequiredInitQuota: the device share on that node; a whole-GPU pod counts one device).
  double RequiredInitGpusOn(PodId p, NodeId n) const;
  // Chooses the devices of node n for a shared-GPU pod (KAI's FittingGPUs and
  // GetNodePreferableGpuForSharing): fitting shared devices and free whole devices, best GPU-order
  // score first. Fills `groups` (new groups for whole devices) and sets `needs_releasing` when
  // some chosen device has room only once releasing pods are gone. False if too few devices.
  bool SelectSharedGpus(PodId p, NodeId n, bool pipeline_only, std::vector<int32_t>& groups,
                        bool& needs_releasing);
  std::span<const NodeId> all_nodes() const { return all_nodes_; }
  // Whole GPUs not allocated (idle + releasing), per node, as one flat array.
  std::span<const double> non_allocated_gpus() const { return non_allocated_gpus_; }
  // Changes whenever a pod is added to or removed from a node (for plugin caches).
  uint64_t placement_epoch() const { return placement_epoch_; }
  // Changes whenever a pod is added to or removed from node n (for per-node plugin caches).
  uint32_t node_version(NodeId n) const { return node_version_[n]; }
  // While set, every node a pod is added to or removed from is appended to `log` (a consumer
  // keeping per-node sums follows the changes instead of counting again). Null: no log.
  void SetNodeChangeLog(std::vector<NodeId>* log) { node_log_ = log; }
  // Versions of the pods' states (statuses and virtual flags), for caches: every change gets a
  // new number, for the whole session and for each queue whose subtree holds the pod's job. A
  // statement's rollback gives a change's numbers back only where nothing changed since (else
  // new ones). So two moments with the same version have the same states (of the queue's pods).
  uint64_t state_version() const { return state_version_; }
  // Distinct for every session of the process (versions of two sessions may coincide).
  uint64_t serial() const { return serial_; }
  uint64_t queue_version(QueueId q) const { return queue_versions_[q]; }
  // The versions a change of pod p touches: the session's and its queues' (innermost first).
  struct VersionMark {
    uint64_t session = 0;
    std::array<uint64_t, 4> queues{};
    bool operator==(const VersionMark&) const = default;
  };
  VersionMark Versions(PodId p) const;
  // After undoing a change of pod p whose versions were `before` and `after` it, with `now` the
  // versions just before the undo: versions still at `after` go back to `before`, any other gets
  // a new number (the states are not those of any earlier moment).
  void RestoreVersions(PodId p, const VersionMark& before, const VersionMark& after,
                       const VersionMark& now);

  // Job-level derived facts (KAI's PodGroupInfo helpers).
  int NumAllocatedLike(JobId j) const;
  int NumActiveAllocated(JobId j) const;
  bool IsReadyForScheduling(JobId j) const;
  bool IsGangSatisfied(JobId j) const;
  bool ShouldPipelineJob(JobId j) const;
  bool HasPendingPods(JobId j) const;
  // The jobs that had pending pods when the session was built, in increasing order. A pod turns
  // pending again only when a statement's undo gives it back a status it had before, so every
  // job with pending pods now is among them.
  const std::vector<JobId>& jobs_pending_at_open() const { return jobs_pending_at_open_; }

  // --- Decisions of this session (committed statements) ------------------------------------
  const std::vector<BindDecision>& binds() const { return binds_; }
  const std::vector<EvictionDecision>& evictions() const { return evictions_; }
  const std::vector<PipelineDecision>& pipelined() const { return pipelined_; }
  const SessionStats& stats() const { return stats_; }

  // --- Plugin registration ------------------------------------------------------------------
  // `own_pods_only`: the function's answer for two job views depends only on the jobs' fixed
  // fields and the statuses of the views' own pods (so an entry's rank in a job order holds
  // while its own pods do not change).
  void AddJobOrderFn(JobOrderFn fn, bool own_pods_only = false) {
    if (Disabled("job_order")) return;
    job_order_fns_.push_back(std::move(fn));
    job_order_own_pods_only_ = job_order_own_pods_only_ && own_pods_only;
    job_order_keyed_ = false;
  }
  // The same as AddJobOrderFn with the comparator sign(key(l) - key(r)); while every job order
  // function is given this way (at most JobOrderKey::kMaxFns) and depends only on the views'
  // own pods, the order can be evaluated as keys (JobOrderKeyed).
  void AddJobOrderKeyFn(JobOrderKeyFn key, bool own_pods_only = false);
  bool JobOrderDependsOnlyOnOwnPods() const { return job_order_own_pods_only_; }
  // Whether the job order can be evaluated as keys: then for any two views l and r,
  // JobViewLess(l, r) == (JobOrderKeyOf(l) < JobOrderKeyOf(r)), and a view's key changes only
  // when the status or virtual flag of one of its job's pods changes, i.e. not while
  // job_version(view.job) is the same.
  bool JobOrderKeyed() const {
    return job_order_keyed_ && job_order_own_pods_only_ &&
           job_order_keys_.size() <= JobOrderKey::kMaxFns;
  }
  // The key of a view (JobOrderKeyed must hold). Whole-job keys are kept per job while its
  // version is the same.
  JobOrderKey JobOrderKeyOf(const JobView& v) const {
    if (!v.partial && !job_key_cache_.empty()) {
      const auto& cached = job_key_cache_[v.job];
      if (cached.first == job_version_[v.job]) return cached.second;
    }
    return ComputeJobOrderKey(v);
  }
  // Changes whenever the status or virtual flag of one of the job's pods is set (never goes back).
  uint64_t job_version(JobId j) const { return job_version_[j]; }
  // Whether no two jobs of the cluster share their creation time and name, the job order's last
  // tie-breakers: then views of two distinct jobs are never equivalent in the job order.
  // Computed on first use.
  bool JobTieBreakersDistinct() const;
  void AddTaskOrderFn(TaskOrderFn fn) {
    if (!Disabled("task_order")) task_order_fns_.push_back(std::move(fn));
  }
  void AddPodSetOrderFn(PodSetOrderFn fn) { pod_set_order_fns_.push_back(std::move(fn)); }
  // `pod_states_only`: the function's answer depends only on the two queues, the jobs or victim
  // lists given, and the statuses and virtual flags of the pods of the jobs in the two queues'
  // subtrees (so a job order may keep its answers while none of these changed).
  // `victim_key` (optional): the same order in victim mode as a key (see QueueOrderKey);
  // `job_key` (optional): in job order (see JobQueueOrderKeyFn).
  void AddQueueOrderFn(QueueOrderFn fn, bool pod_states_only = false,
                       QueueOrderKeyFn victim_key = nullptr, JobQueueOrderKeyFn job_key = nullptr) {
    if (Disabled("queue_order")) return;
    if (queue_order_fns_.empty()) {
      victim_queue_key_ = std::move(victim_key);
      job_queue_key_ = std::move(job_key);
    }
    queue_order_fns_.push_back(std::move(fn));
    queue_order_pod_states_only_ = queue_order_pod_states_only_ && pod_states_only;
  }
  bool QueueOrderDependsOnlyOnPodStates() const { return queue_order_pod_states_only_; }
  // Whether victim-mode queue order has keys (the solver shortcuts on, and the first queue order
  // function was given with a key): then for queues l, r with non-empty victim lists,
  // VictimQueueKeyOf(l) < VictimQueueKeyOf(r) implies QueueLess(l, r, ...) and > implies
  // !QueueLess(l, r, ...); on equal keys QueueLess must be asked. (QueueLess takes the first
  // non-zero answer of the functions in order, so the first function's key is what decides;
  // the later functions only matter when its keys are equal, and QueueLess asks them then.)
  bool VictimQueueOrderKeyed() const {
    return params().solver_shortcuts && victim_queue_key_ != nullptr;
  }
  // The victim-mode key of queue q represented by `victims` (non-empty; VictimQueueOrderKeyed
  // must hold).
  QueueOrderKey VictimQueueKeyOf(QueueId q, const VictimList& victims) const {
    return victim_queue_key_(*this, q, victims);
  }
  // Whether job-order queue order has keys (the solver shortcuts on, and the first queue order
  // function was given with a job key): then for queues l, r with jobs lj, rj,
  // JobQueueKeyOf(l, lj) < JobQueueKeyOf(r, rj) implies QueueLess(l, r, &lj, &rj, {}, {}) and >
  // implies !QueueLess(l, r, &lj, &rj, {}, {}); on equal keys QueueLess must be asked.
  bool JobQueueOrderKeyed() const { return params().solver_shortcuts && job_queue_key_ != nullptr; }
  // The job-order key of queue q represented by `job` (JobQueueOrderKeyed must hold).
  QueueOrderKey JobQueueKeyOf(QueueId q, const JobView& job) const {
    return job_queue_key_(*this, q, job);
  }
  void AddNodePreOrderFn(NodePreOrderFn fn) { node_pre_order_fns_.push_back(std::move(fn)); }
  // With `scores_pod`, fn is only called for pods it says yes to (it scores 0 for the others).
  // With `batch`, rankings score their fitting nodes with it (one call instead of one per node).
  void AddNodeOrderFn(NodeOrderFn fn, NodeOrderPodFilter scores_pod = nullptr,
                      NodeOrderBatchFn batch = nullptr) {
    if (Disabled("node_order")) return;
    node_order_fns_.push_back(std::move(fn));
    node_order_filters_.push_back(scores_pod);
    node_order_batch_fns_.push_back(std::move(batch));
  }
  void AddPrePredicateFn(PrePredicateFn fn) { pre_predicate_fns_.push_back(std::move(fn)); }
  // With `batch`, rankings filter their candidates with it (one call instead of one per node).
  void AddPredicateFn(PredicateFn fn, PredicateBatchFn batch = nullptr) {
    if (Disabled("predicate")) return;
    predicate_fns_.push_back(std::move(fn));
    predicate_batch_fns_.push_back(std::move(batch));
  }
  void AddJobCapacityFn(JobCapacityFn fn) { job_capacity_fns_.push_back(std::move(fn)); }
  void AddTaskCapacityFn(TaskCapacityFn fn) { task_capacity_fns_.push_back(std::move(fn)); }
  void AddEventHandler(EventHandler h) { event_handlers_.push_back(std::move(h)); }
  void AddCanReclaimFn(CanReclaimFn fn) { can_reclaim_fns_.push_back(std::move(fn)); }
  void AddNonPreemptibleQuotaFn(JobCapacityFn fn) {
    non_preemptible_quota_fns_.push_back(std::move(fn));
  }
  void AddReclaimVictimFilterFn(VictimFilterFn fn) {
    if (!Disabled("reclaimable")) reclaim_victim_filter_fns_.push_back(std::move(fn));
  }
  // Whether any reclaim victim filter is registered (without one, ReclaimVictimFilter accepts
  // every pair).
  bool HasReclaimVictimFilters() const { return !reclaim_victim_filter_fns_.empty(); }
  void AddPreemptVictimFilterFn(VictimFilterFn fn) {
    if (!Disabled("preemptable")) preempt_victim_filter_fns_.push_back(std::move(fn));
  }
  void AddReclaimScenarioValidatorFn(ScenarioValidatorFn fn) {
    if (!Disabled("reclaimable")) reclaim_validator_fns_.push_back(std::move(fn));
  }
  void AddReclaimRejectionRulesFn(RejectionRulesFn fn) {
    if (!Disabled("reclaimable")) reclaim_rejection_rules_fns_.push_back(std::move(fn));
  }
  void AddPreemptScenarioValidatorFn(ScenarioValidatorFn fn) {
    if (!Disabled("preemptable")) preempt_validator_fns_.push_back(std::move(fn));
  }
  void AddOnJobSolutionStartFn(OnJobSolutionStartFn fn) {
    on_job_solution_start_fns_.push_back(std::move(fn));
  }
  void AddGpuOrderFn(GpuOrderFn fn) { gpu_order_fns_.push_back(std::move(fn)); }
  void AddSubsetNodesFn(SubsetNodesFn fn) { subset_nodes_fns_.push_back(std::move(fn)); }
  void AddPreJobAllocationFn(PreJobAllocationFn fn) {
    pre_job_allocation_fns_.push_back(std::move(fn));
  }
  void SetQueueDeservedFn(QueueQuantitiesFn fn) { queue_deserved_fn_ = std::move(fn); }
  void SetQueueFairShareFn(QueueQuantitiesFn fn) { queue_fair_share_fn_ = std::move(fn); }
  void SetQueueAllocatedFn(QueueQuantitiesFn fn) { queue_allocated_fn_ = std::move(fn); }

  // --- Evaluation (in configuration order, with KAI's fallbacks) ----------------------------
  bool JobViewLess(const JobView& l, const JobView& r) const;
  // Pod-set counters of a view (the session's counters for whole jobs).
  PodSetCounters ViewCounters(const JobView& v, int32_t pod_set) const;
  // Resources of the view's allocated-like pods, as queue quantities (KAI's job Allocated).
  Quantities ViewAllocated(const JobView& v) const;
  // (Inline: the victim search sorts pods by it for every victim job.) Two pods of one pod set
  // compare by their ranks there: the order is total on a job's pods (see TaskRank), so the
  // ranks answer as the task-order functions would, without calling them again.
  bool TaskLess(PodId l, PodId r) const {
    const Pod& lp = cluster_.pods[l];
    const Pod& rp = cluster_.pods[r];
    if (lp.job == rp.job && lp.job != kNone && lp.pod_set == rp.pod_set) {
      return TaskRank(l) < TaskRank(r);
    }
    return TaskLessByFunctions(l, r);
  }
  // The place of pod p among the pods of its pod set in TaskLess order (0 first), ranked once per
  // pod set and session.
  int32_t TaskRank(PodId p) const {
    if (static_cast<size_t>(p) < task_rank_.size() && task_rank_[p] >= 0) return task_rank_[p];
    return RankPodSetOf(p);
  }
  bool PodSetLess(JobId j, int32_t l, int32_t r) const;
  bool PodSetViewLess(const JobView& v, int32_t l, int32_t r) const;
  bool QueueLess(QueueId l, QueueId r, const JobView* l_job, const JobView* r_job,
                 const VictimList& l_victims, const VictimList& r_victims) const;
  std::optional<std::string> PrePredicate(PodId p);
  // Resource fit on idle + releasing, then every predicate. Records the reason of a failure in
  // the pod's fit errors when `record` is set.
  bool FittingNode(PodId p, NodeId n, bool record);
  // `weight`: how many equivalent nodes this check stands for, when recording.
  bool FittingNode(PodId p, NodeId n, TaskFitErrors* record, int weight = 1);
  // Ranks the nodes of `candidates` that fit the pod; NextRankedNode() then returns them best
  // score first (ties by node name), kNone when exhausted. Only the nodes actually taken are
  // ordered (a heap), so the common case - the first node is used - costs one pass.
  void RankFittingNodes(PodId p, std::span<const NodeId> candidates, bool record);
  // Same, when `candidates` is known to hold every node with unallocated GPUs (the victim
  // search's feasible nodes): a pod that needs whole GPUs can then be ranked over classes of all
  // nodes - no node outside the candidates could fit it, and the order of the scores does not
  // depend on which non-fitting nodes are candidates. Records no fit errors.
  void RankFittingNodesCoveringFreeGpus(PodId p, std::span<const NodeId> candidates);
  // Whether a pod may be ranked over node classes (no shared GPU, claims, node selector,
  // affinities or nominated node; classes enabled): then which non-fitting nodes are candidates
  // does not matter.
  bool PodRankableByClass(PodId p) const;
  // What the victim search reads of each pod in its inner loops, packed (a Pod is several
  // hundred bytes): its job, its pod set and its whole-GPU request (NaN when the request is not
  // whole GPUs only: shared GPUs, DRA GPUs, a fraction or a negative count). Built on first use;
  // pod specs do not change within a session.
  struct PodBrief {
    JobId job = kNone;
    int32_t pod_set = 0;
    double whole_gpus = 0;
  };
  const std::vector<PodBrief>& pod_briefs() const {
    // (Inline: the victim search asks for it for every scenario.)
    if (pod_briefs_.size() != cluster_.pods.size()) BuildPodBriefs();
    return pod_briefs_;
  }
  // Every pod of the cluster asks for whole GPUs (more than zero) and is rankable by class
  // (computed once: both depend only on the pods' specs and the session's settings).
  bool AllPodsWholeGpuRankableByClass() const;
  NodeId NextRankedNode();
  SchedulableResult IsJobOverQueueCapacity(JobId j, std::span<const PodId> pods) const;
  SchedulableResult IsTaskAllocationOverCapacity(PodId p, NodeId n) const;
  std::optional<Quantities> QueueFairShare(QueueId q) const;
  std::optional<Quantities> QueueDeserved(QueueId q) const;
  // Reclaim / preempt hooks (KAI: CanReclaimResources uses the first registered function only;
  // filters and validators must all agree).
  bool CanReclaimResources(JobId reclaimer) const;
  // False when a non-preemptible job's `pods` would take its queue over its deserved quota.
  bool IsNonPreemptibleJobWithinQuota(JobId j, std::span<const PodId> pods) const;
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
  void PreJobAllocation(JobId j);
  // A job is elastic when some pod set has fewer required pods than pods (a property of the
  // job's spec, computed when the session is built).
  bool IsElastic(JobId j) const { return elastic_[static_cast<size_t>(j)] != 0; }
  // The job's only pod when it has one pod set holding one pod, else kNone (from its spec; a
  // compact array for the victim search's hot loops).
  PodId single_pod(JobId j) const { return single_pod_[static_cast<size_t>(j)]; }
  std::optional<Quantities> QueueAllocated(QueueId q) const;

  // Whether the pod fits the node's idle resources alone (no waiting for releasing pods).
  bool FitsIdle(PodId p, NodeId n) const;
  bool FitsIdleOrReleasing(PodId p, NodeId n) const;
  // Whether a pod that shares no GPU fits in a + b with its node footprint (its request plus
  // its DRA GPUs, NodeFootprint).
  bool FootprintFitsInSum(const Pod& pod, const Resources& a, const Resources& b) const;

  // The pods one allocation attempt of `j` takes (KAI's GetTasksToAllocate), in order. With
  // `real` false, pods this session evicted count as pending (simulations re-place them).
  // With `ordered` false the pods are the same but, where a pod set gives all its pending pods,
  // not sorted (for callers that only look at the set of pods).
  void TasksToAllocate(JobId j, std::vector<PodId>& out, bool real = true,
                       bool ordered = true) const;
  // Queue quantities of what a view would allocate: TasksToAllocateQuantities for whole jobs,
  // the view's pending pods for partial ones.
  Quantities ViewTasksQuantities(const JobView& v) const;
  // Sum of the requests of TasksToAllocate (counting pods evicted in this session as pending) as
  // queue quantities (KAI's GetTasksToAllocateInitResource as queue order uses it).
  Quantities TasksToAllocateQuantities(JobId j) const;

  // --- Mutation primitives (used by Statement; fire event handlers) -------------------------
  void SetPodStatus(PodId p, PodStatus s);
  void SetPodNode(PodId p, NodeId n) { pods_[p].node = n; }
  void SetVirtual(PodId p, bool v) {
    if (pods_[p].virtual_status != v) BumpVersions(p);
    pods_[p].virtual_status = v;
    if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  }
  void AddPodToNode(PodId p, NodeId n);
  void RemovePodFromNode(PodId p, NodeId n);
  void FireAllocate(PodId p);
  void FireDeallocate(PodId p);
  void RecordBind(PodId p);
  void RecordEviction(PodId p, NodeId from, std::string message);
  void RecordPipelined(PodId p, std::string message);

  // Fit error bookkeeping.
  void SetTaskFitError(PodId p, std::string message);
  void AddJobFitError(JobId j, JobFitError e) { jobs_[j].fit_errors.push_back(std::move(e)); }

  // Whether the plugin being opened has switched off the callback `name`.
  bool Disabled(std::string_view name) const;

  // Writes the session's pod outcome back into `cluster` as a new observed state (used by
  // simulations: binding pods become running, pipelined / evicted ones pending).
  static void WriteBack(const Session& s, Cluster& cluster);

 private:
  void CountPod(PodId p, int sign);
  // A change of pod p's state: new versions for the session and the queues above its job.
  void BumpVersions(PodId p) {
    const uint64_t v = ++last_version_;
    state_version_ = v;
    const JobId j = cluster_.pods[p].job;
    if (j == kNone) return;
    for (QueueId q = cluster_.jobs[j].queue; q != kNone; q = cluster_.queues[q].parent) {
      queue_versions_[q] = v;
    }
  }

  const Cluster& cluster_;
  const SchedulerConfig& config_;
  int64_t now_ms_;

  std::vector<PodState> pods_;
  std::vector<NodeState> nodes_;
  std::vector<PodSetCounters> pod_set_counters_;
  std::vector<JobState> jobs_;
  std::vector<std::vector<int32_t>> pod_groups_;
  std::vector<std::string> group_names_;
  std::unordered_map<std::string, int32_t> group_ids_;
  uint64_t group_seq_ = 0;
  int32_t InternGroup(const std::string& name);
  std::vector<NodeSharedGpus> shared_;
  DraState dra_;
  std::vector<MigProfile> mig_profiles_;
  std::vector<double> accepted_gpus_;
  double AcceptedGpusOn(PodId p, NodeId n) const;
  bool SharedFits(PodId p, NodeId n, bool with_releasing) const;
  // KAI's fit for requests that are not plain whole-GPU ones: `base` (no GPUs) against the node's
  // idle (and releasing) resources, a GPU-memory share of at most one device, then `devices`
  // whole free devices or shared devices with room for `memory` MiB.
  bool FitsDevices(const Pod& pod, const Resources& base, NodeId n, bool with_releasing,
                   int devices, int64_t memory) const;
  struct GpuCandidate {
    double score;
    int32_t group;  // -1: a free whole device
  };
  std::vector<GpuCandidate> gpu_candidates_;
  std::vector<GpuOrderFn> gpu_order_fns_;
  std::vector<SubsetNodesFn> subset_nodes_fns_;
  std::vector<PreJobAllocationFn> pre_job_allocation_fns_;
  std::vector<NodeId> all_nodes_;
  uint64_t placement_epoch_ = 0;
  std::vector<uint32_t> node_version_;
  std::vector<NodeId>* node_log_ = nullptr;
  uint64_t last_version_ = 0;
  uint64_t state_version_ = 0;
  std::vector<uint64_t> queue_versions_;
  // Whole GPUs not allocated (idle + releasing) per node, kept in a flat array: the first,
  // cheapest filter when ranking nodes for a pod.
  std::vector<double> non_allocated_gpus_;

  std::vector<BindDecision> binds_;
  std::vector<EvictionDecision> evictions_;
  std::vector<PipelineDecision> pipelined_;

  std::vector<Plugin*> plugins_;
  const PluginConfig* opening_ = nullptr;  // configuration of the plugin being opened
  std::vector<JobOrderFn> job_order_fns_;
  std::vector<TaskOrderFn> task_order_fns_;
  std::vector<PodSetOrderFn> pod_set_order_fns_;
  std::vector<QueueOrderFn> queue_order_fns_;
  bool queue_order_pod_states_only_ = true;
  QueueOrderKeyFn victim_queue_key_;  // the first queue order function's key, if given
  JobQueueOrderKeyFn job_queue_key_;  // its job-order key, if given
  bool job_order_own_pods_only_ = true;
  mutable int8_t job_tie_breakers_distinct_ = -1;  // -1: not computed yet (nor the ranks)
  // Job order keys (JobOrderKeyed): the key functions, each job's rank by the last tie-breakers
  // (creation time, then name; equal pairs share a rank; computed on first use) and the kept
  // whole-job keys with the job version they were computed at (0: none).
  bool job_order_keyed_ = true;
  std::vector<JobOrderKeyFn> job_order_keys_;
  mutable std::vector<int64_t> job_tie_rank_;
  mutable std::vector<std::pair<uint64_t, JobOrderKey>> job_key_cache_;
  // JobOrderKeyOf without a kept key (keeps whole-job keys).
  JobOrderKey ComputeJobOrderKey(const JobView& v) const;
  // Computes job_tie_rank_ and job_tie_breakers_distinct_ (one sort of the jobs).
  void RankJobTieBreakers() const;
  // TaskLess by the task-order functions and the pods' names (what TaskRank ranks by).
  bool TaskLessByFunctions(PodId l, PodId r) const;
  // Ranks the pod set of pod p (TaskRank) and returns p's rank.
  int32_t RankPodSetOf(PodId p) const;
  std::vector<NodePreOrderFn> node_pre_order_fns_;
  std::vector<NodeOrderFn> node_order_fns_;
  std::vector<NodeOrderPodFilter> node_order_filters_;  // per node_order_fns_ entry, or null
  std::vector<NodeOrderBatchFn> node_order_batch_fns_;  // per node_order_fns_ entry, or null
  std::vector<size_t> pod_order_fns_;  // indices of those scoring the pod being ranked
  std::vector<PrePredicateFn> pre_predicate_fns_;
  std::vector<PredicateFn> predicate_fns_;
  std::vector<PredicateBatchFn> predicate_batch_fns_;  // per predicate_fns_ entry, or null
  std::vector<JobCapacityFn> job_capacity_fns_;
  std::vector<TaskCapacityFn> task_capacity_fns_;
  std::vector<EventHandler> event_handlers_;
  QueueQuantitiesFn queue_fair_share_fn_;
  QueueQuantitiesFn queue_deserved_fn_;
  std::vector<CanReclaimFn> can_reclaim_fns_;
  std::vector<JobCapacityFn> non_preemptible_quota_fns_;
  std::vector<VictimFilterFn> reclaim_victim_filter_fns_;
  std::vector<VictimFilterFn> preempt_victim_filter_fns_;
  std::vector<ScenarioValidatorFn> reclaim_validator_fns_;
  std::vector<RejectionRulesFn> reclaim_rejection_rules_fns_;
  std::vector<ScenarioValidatorFn> preempt_validator_fns_;
  std::vector<OnJobSolutionStartFn> on_job_solution_start_fns_;
  QueueQuantitiesFn queue_allocated_fn_;

  // Scratch buffers reused across calls (no allocation per candidate node).
  std::vector<std::pair<double, NodeId>> ranked_;
  std::vector<NodeId> fitting_;  // RankPerNode: candidates passing the checks so far
  bool ranked_heap_ = false;

  // Classes of equivalent nodes: same shape and same NodeState. Nodes of a class pass the same
  // checks with the same scores for label-independent pods, so ranking evaluates one
  // representative (the smallest name) per class. See Plugin::NodeChecksDependOnlyOnShapeAndState.
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
  void BuildNodeClasses();
  void Reclassify(NodeId n);
  // Classes are refreshed lazily: a changed node is only marked, and re-filed when a ranking by
  // class needs it.
  void MarkClassDirty(NodeId n);
  void RefreshClasses();
  bool CanRankByClass(PodId p, std::span<const NodeId> candidates) const;
  void RankByClass(PodId p, bool record);
  void RankPerNode(PodId p, std::span<const NodeId> candidates, bool record);
  void PickBestRanked();

  SessionStats stats_;
  bool classes_enabled_ = false;
  std::unordered_map<ClassKey, int32_t, ClassKeyHash> class_index_;
  // Members of each class by name rank (the smallest is the class's representative).
  RankSets class_members_;
  std::vector<NodeId> node_by_rank_;  // node of each name rank
  std::vector<int32_t> class_pos_;    // per class: index in nonempty_classes_, or -1
  std::vector<int32_t> nonempty_classes_;
  std::vector<int32_t> node_class_;
  // Moves between classes mostly repeat (a placement undone returns a node to its class; the
  // same pod placed on nodes of one class sends them to the same class), so before looking a key
  // up, Reclassify tries the node's previous class and where the last node leaving its class went.
  std::vector<const ClassKey*> class_keys_;  // per class: its key (owned by class_index_)
  std::vector<int32_t> class_next_;          // per class: the class its last leaver went to
  std::vector<int32_t> node_prev_class_;     // per node: its class before its last move
  bool NodeHasClassKey(NodeId n, int32_t c) const;
  std::vector<char> class_dirty_;
  std::vector<NodeId> dirty_nodes_;
  // Per entry of nonempty_classes_: the class's representative, its smallest-named node (kept
  // by Reclassify as members come and go, so a ranking by class reads them as they are).
  std::vector<NodeId> class_reps_;
  bool any_anti_affinity_ = false;
  // State of the current ranking, for falling back to per-node order after the first node.
  bool ranked_by_class_ = false;
  PodId rank_pod_ = kNone;
  std::span<const NodeId> rank_candidates_;
  std::vector<NodeId> rank_returned_;
  // Cache of TasksToAllocateQuantities per job, valid while the job's version is unchanged.
  std::vector<uint64_t> job_version_;
  std::vector<uint8_t> elastic_;             // per job: IsElastic
  std::vector<PodId> single_pod_;            // per job: single_pod
  std::vector<JobId> jobs_pending_at_open_;  // see jobs_pending_at_open
  uint64_t serial_ = 0;
  // ViewAllocated of whole jobs, with the job version it was summed at (0: none).
  mutable std::vector<std::pair<uint64_t, Quantities>> job_allocated_cache_;
  // Whether every job's ViewAllocated was summed at once (see ViewAllocated).
  mutable bool job_allocated_filled_ = false;
  mutable std::vector<std::pair<uint64_t, Quantities>> job_quantities_cache_;
  mutable int8_t all_pods_whole_rankable_ = -1;  // AllPodsWholeGpuRankableByClass, -1: unknown
  void BuildPodBriefs() const;
  mutable std::vector<PodBrief> pod_briefs_;     // (empty until first asked for)
  mutable std::vector<int32_t> task_rank_;       // per pod: TaskRank, -1 until its set is ranked
};

// A hash (FNV-1a) of the session's decisions in order - binds, evictions, pipelined pods, each as
// pod and node - to compare the decisions of two builds without printing them.
uint64_t DecisionsDigest(const Session& ssn);

}  // namespace gantry
