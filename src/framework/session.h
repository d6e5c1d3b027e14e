// A scheduling session: one cycle's view of the cluster, the plugins' callbacks, and the
// decisions taken so far.
//
// The session copies only the mutable part of the Cluster (pod status and node, node counters,
// pod-set counters) into flat arrays; the Cluster itself is read-only for the whole cycle. Actions
// change the session only through a Statement (statement.h), which records every change so it
// can be rolled back. Plugins register typed callbacks in OnSessionOpen; the session evaluates
// them in configuration order.
//
// This header is the table of contents; each part is documented where it lives:
// | part | header | definitions |
// |---|---|---|
// | hooks: registration, evaluation, extension points | hooks.h | hooks.cc |
// | per-cycle state (pods, nodes, jobs, counters) | session_state.h | session.cc |
// | state versions (for caches) | state_versions.h | state_versions.cc |
// | GPU devices: shared groups, MIG, accepted GPUs | gpu_devices.h | gpu_devices.cc |
// | node ranking: fit checks, node classes | node_ranking.h | node_ranking.cc |
// | order keys: job, task and queue order | order_keys.h | order_keys.cc |
// | decisions and write-back | session_state.h | session.cc |
//
// Threading: a session is used by one thread. Node scoring may fan out internally.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/config.h"
#include "framework/dra.h"
#include "framework/fit_errors.h"
#include "framework/gpu_devices.h"
#include "framework/gpu_sharing.h"
#include "framework/hooks.h"
#include "framework/node_ranking.h"
#include "framework/numa_view.h"
#include "framework/order_keys.h"
#include "framework/session_state.h"
#include "framework/state_versions.h"
#include "model/cluster.h"

namespace gantry {

class Plugin;
class Session;

class Session : public SessionHooks, public SessionVersions, public SessionGpuDevices {
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

  // Historical usage of the queues (time-based fairshare). Set before Open: the usage database's
  // answer for this session, replacing what the cluster's queues carry.
  void SetQueueUsage(std::shared_ptr<const UsageByQueue> usage) { usage_ = std::move(usage); }
  QueueUsage queue_usage(QueueId q) const {
    if (!usage_) return cluster_.queues[q].usage;
    auto it = usage_->find(cluster_.queues[q].name);
    return it == usage_->end() ? QueueUsage{} : it->second;
  }

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
  // DRA claims and devices (changed by the dynamicresources plugin).
  const DraState& dra() const { return dra_; }
  DraState& dra() { return dra_; }
  std::span<const NodeId> all_nodes() const { return all_nodes_; }
  // Whole GPUs not allocated (idle + releasing), per node, as one flat array.
  std::span<const double> non_allocated_gpus() const { return non_allocated_gpus_; }

  // --- GPU devices (gpu_devices.h; shared groups and MIG profiles in SessionGpuDevices) -----
  std::vector<std::string> GroupNames(PodId p) const;
  int32_t NewGroup();  // a fresh group id, unused anywhere in the cluster or this session
  int64_t PodGpuMemoryOn(PodId p, NodeId n) const { return GpuMemoryOn(cluster_.pods[p], n); }
  int64_t GpuMemoryOn(const Pod& pod, NodeId n) const;
  bool RepresentativeFits(const Pod& pod, NodeId n) const;
  std::pair<double, int64_t> IdleGpuSum(NodeId n) const;
  std::pair<double, int64_t> ReleasingGpuSum(NodeId n) const;
  Quantities AcceptedQuantities(PodId p) const {
    return cluster_.pods[p].WithGpus(accepted_gpus_[p]);
  }
  double RequiredInitGpusOn(PodId p, NodeId n) const;
  bool SelectSharedGpus(PodId p, NodeId n, bool pipeline_only, std::vector<int32_t>& groups,
                        bool& needs_releasing);

  // --- State versions (state_versions.h; the accessors in SessionVersions) -----------------
  VersionMark Versions(PodId p) const;
  // After undoing a change of pod p whose versions were `before` and `after` it, with `now` the
  // versions just before the undo: versions still at `after` go back to `before`, any other gets
  // a new number (the states are not those of any earlier moment).
  void RestoreVersions(PodId p, const VersionMark& before, const VersionMark& after,
                       const VersionMark& now);

  // --- Job-level derived facts (KAI's PodGroupInfo helpers) ---------------------------------
  int NumAllocatedLike(JobId j) const;
  int NumActiveAllocated(JobId j) const;
  // The pods a victim search may evict: the active allocated ones, as in KAI. A victim that an
  // earlier solution of the session evicted and placed elsewhere is pipelined there, so active
  // allocated, and KAI takes it as a victim again; its second eviction changes the session's
  // state only, the eviction request was made once (RecordEviction).
  int NumEvictable(JobId j) const { return NumActiveAllocated(j); }
  bool Evictable(PodId p) const { return IsActiveAllocated(pods_[p].status); }
  bool IsReadyForScheduling(JobId j) const;
  bool IsGangSatisfied(JobId j) const;
  bool ShouldPipelineJob(JobId j) const;
  bool HasPendingPods(JobId j) const;
  // The jobs that had pending pods when the session was built, in increasing order. A pod turns
  // pending again only when a statement's undo gives it back a status it had before, so every
  // job with pending pods now is among them.
  const std::vector<JobId>& jobs_pending_at_open() const { return jobs_pending_at_open_; }
  // A job is elastic when some pod set has fewer required pods than pods (from its spec).
  bool IsElastic(JobId j) const { return elastic_[static_cast<size_t>(j)] != 0; }
  // The job's only pod when it has one pod set holding one pod, else kNone (from its spec; a
  // compact array for the victim search's hot loops).
  PodId single_pod(JobId j) const { return single_pod_[static_cast<size_t>(j)]; }
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

  // --- Plugin-kept extras ---------------------------------------------------------------
  // Victim-search scenario generators registered by plugins (sg-nodelocalgreedy,
  // sg-multinodegang), in plugin order. With none, the eviction actions find no victims.
  void AddScenarioGenerator(std::string name) { scenario_generators_.push_back(std::move(name)); }
  const std::vector<std::string>& scenario_generators() const { return scenario_generators_; }
  // The clock the victim search's time budgets read (scenarioSearchBudgets): the steady clock,
  // unless a test set one it advances by hand.
  using SearchClock = std::function<std::chrono::steady_clock::time_point()>;
  void SetSearchClock(SearchClock clock) { search_clock_ = std::move(clock); }
  std::chrono::steady_clock::time_point SearchNow() const {
    return search_clock_ ? search_clock_() : std::chrono::steady_clock::now();
  }
  // NUMA zone accounting, when a plugin keeps it (plugins/numa); null otherwise.
  void SetNumaView(const NumaView* view) { numa_view_ = view; }
  const std::vector<ResourceAmounts>* NumaZonesAvailable(NodeId n) const {
    return numa_view_ != nullptr ? numa_view_->ZonesAvailable(n) : nullptr;
  }
  std::vector<int> NumaZonesOf(PodId p) const {
    return numa_view_ != nullptr ? numa_view_->ZonesOf(p) : std::vector<int>{};
  }

  // --- Order: evaluation and keys (order_keys.h) ---------------------------------------------
  bool JobViewLess(const JobView& l, const JobView& r) const;
  PodSetCounters ViewCounters(const JobView& v, int32_t pod_set) const;  // (whole jobs: counters)
  // Resources of the view's allocated-like pods, as queue quantities (KAI's job Allocated).
  Quantities ViewAllocated(const JobView& v) const;
  // (Inline: the victim search sorts pods by it for every victim job.)
  bool TaskLess(PodId l, PodId r) const {
    const Pod& lp = cluster_.pods[l];
    const Pod& rp = cluster_.pods[r];
    if (lp.job == rp.job && lp.job != kNone && lp.pod_set == rp.pod_set) {
      return TaskRank(l) < TaskRank(r);
    }
    return TaskLessByFunctions(l, r);
  }
  int32_t TaskRank(PodId p) const {
    if (static_cast<size_t>(p) < task_rank_.size() && task_rank_[p] >= 0) return task_rank_[p];
    return RankPodSetOf(p);
  }
  bool PodSetLess(JobId j, int32_t l, int32_t r) const;
  bool PodSetViewLess(const JobView& v, int32_t l, int32_t r) const;
  bool JobOrderKeyed() const {
    return job_order_keyed_ && job_order_own_pods_only_ &&
           job_order_keys_.size() <= JobOrderKey::kMaxFns;
  }
  JobOrderKey JobOrderKeyOf(const JobView& v) const {
    if (!v.partial && !job_key_cache_.empty()) {
      const auto& cached = job_key_cache_[v.job];
      if (cached.first == job_version_[v.job]) return cached.second;
    }
    return ComputeJobOrderKey(v);
  }
  bool JobTieBreakersDistinct() const;
  bool VictimQueueOrderKeyed() const {
    return params().solver_shortcuts && victim_queue_key_ != nullptr;
  }
  QueueOrderKey VictimQueueKeyOf(QueueId q, const VictimList& victims) const {
    return victim_queue_key_(*this, q, victims);
  }
  bool JobQueueOrderKeyed() const { return params().solver_shortcuts && job_queue_key_ != nullptr; }
  QueueOrderKey JobQueueKeyOf(QueueId q, const JobView& job) const {
    return job_queue_key_(*this, q, job);
  }

  // --- Node fit and ranking (node_ranking.h) ------------------------------------------------
  bool FittingNode(PodId p, NodeId n, bool record);
  bool FittingNode(PodId p, NodeId n, TaskFitErrors* record, int weight = 1);
  void RankFittingNodes(PodId p, std::span<const NodeId> candidates, bool record);
  void RankFittingNodesCoveringFreeGpus(PodId p, std::span<const NodeId> candidates);
  NodeId NextRankedNode();
  bool PodRankableByClass(PodId p) const;
  bool AllPodsWholeGpuRankableByClass() const;
  const std::vector<PodBrief>& pod_briefs() const {
    // (Inline: the victim search asks for it for every scenario.)
    if (pod_briefs_.size() != cluster_.pods.size()) BuildPodBriefs();
    return pod_briefs_;
  }
  bool FitsIdle(PodId p, NodeId n) const;
  bool FitsIdleOrReleasing(PodId p, NodeId n) const;
  bool FootprintFitsInSum(const Pod& pod, const Resources& a, const Resources& b) const;

  // --- Decisions of this session (committed statements) ------------------------------------
  const std::vector<BindDecision>& binds() const { return binds_; }
  const std::vector<EvictionDecision>& evictions() const { return evictions_; }
  const std::vector<PipelineDecision>& pipelined() const { return pipelined_; }
  const SessionStats& stats() const { return stats_; }
  // Whether the session keeps classes of equivalent nodes (node_ranking.h), and how many are
  // non-empty as of their last refresh (0 without classes).
  bool NodeClassesEnabled() const { return ranking_.classes_enabled; }
  size_t NodeClassCount() const {
    return ranking_.classes_enabled ? ranking_.nonempty_classes.size() : 0;
  }

  // --- What each action did (metrics) --------------------------------------------------------
  // Starts counting for `action` (Scheduler::RunActions calls it before each action); evictions
  // recorded from now on carry its name.
  void BeginAction(std::string_view action);
  // The counts of the action running now (of an unnamed one before any BeginAction).
  ActionCounts& action_counts() {
    if (action_counts_.empty()) action_counts_.emplace_back();
    return action_counts_.back();
  }
  // Every action's counts, in the order they ran (an action run twice has two entries).
  const std::vector<ActionCounts>& all_action_counts() const { return action_counts_; }
  // Each plugin's OnSessionOpen / OnSessionClose duration, in configuration order.
  const std::vector<PluginTiming>& plugin_timings() const { return plugin_timings_; }
  // Writes the session's pod outcome back into `cluster` as a new observed state (used by
  // simulations: binding pods become running, pipelined / evicted ones pending).
  static void WriteBack(const Session& s, Cluster& cluster);

  // --- Mutation primitives (used by Statement; fire event handlers) -------------------------
  void SetPodStatus(PodId p, PodStatus s);
  void SetPodNode(PodId p, NodeId n) { pods_[p].node = n; }
  void SetVirtual(PodId p, bool v) {
    if (pods_[p].virtual_status != v) BumpVersionsOf(cluster_, p);
    pods_[p].virtual_status = v;
    if (const JobId j = cluster_.pods[p].job; j != kNone) ++job_version_[j];
  }
  void AddPodToNode(PodId p, NodeId n);
  void RemovePodFromNode(PodId p, NodeId n);
  // Statement::Evict of each of `pods` in this order, then the rollback of those evictions,
  // without a statement: first computed on copies of the nodes' counters, and `after_evictions`
  // is shown, per node the evictions touch (`nodes`, without repeats), its whole GPUs not
  // allocated (idle + releasing) right after the evictions (`free`, same order). When it answers
  // true the session is left as the evict + rollback leaves it: the counters they do not give
  // back exactly (a shared-GPU device's idle and releasing GPUs, which follow KAI's rules, see
  // gpu_sharing.h) as the rollback left them, the plugins' pod events replayed in the same order,
  // nodes and jobs marked changed; else nothing changed. False, with nothing called, where that
  // cannot be done this way: a pod listed twice, not active allocated on a node, or with DRA
  // claims, or the NUMA view on (their event handlers read the pod's status).
  bool EvictAndRollBackCounters(
      std::span<const PodId> pods,
      const std::function<bool(std::span<const NodeId> nodes, std::span<const double> free)>&
          after_evictions);
  void RecordBind(PodId p);
  void RecordEviction(PodId p, NodeId from, std::string message);
  void RecordPipelined(PodId p, std::string message);
  void SetTaskFitError(PodId p, std::string message);
  void AddJobFitError(JobId j, JobFitError e) { jobs_[j].fit_errors.push_back(std::move(e)); }

 private:
  void CountPod(PodId p, int sign);
  void BumpVersions(PodId p) { BumpVersionsOf(cluster_, p); }

  const Cluster& cluster_;
  const SchedulerConfig& config_;
  std::shared_ptr<const UsageByQueue> usage_;
  int64_t now_ms_;

  std::vector<PodState> pods_;
  std::vector<NodeState> nodes_;
  std::vector<PodSetCounters> pod_set_counters_;
  std::vector<JobState> jobs_;
  DraState dra_;
  std::vector<NodeId> all_nodes_;
  std::vector<double> non_allocated_gpus_;  // (the first, cheapest filter when ranking nodes)
  std::vector<BindDecision> binds_;
  std::vector<EvictionDecision> evictions_;
  std::vector<PipelineDecision> pipelined_;
  std::vector<Plugin*> plugins_;
  const NumaView* numa_view_ = nullptr;
  std::vector<std::string> scenario_generators_;
  SearchClock search_clock_;
  SessionStats stats_;
  std::vector<ActionCounts> action_counts_;
  std::vector<PluginTiming> plugin_timings_;
  bool any_anti_affinity_ = false;
  // Any pod has preferred inter-pod (anti-)affinity terms: the podaffinity score may then depend
  // on the pods on each node for every pod (theirs may match it), so none is ranked by class.
  bool any_preferred_pod_affinity_ = false;
  std::vector<uint8_t> elastic_;             // per job: IsElastic
  std::vector<PodId> single_pod_;            // per job: single_pod
  std::vector<JobId> jobs_pending_at_open_;  // see jobs_pending_at_open
  // ViewAllocated of whole jobs, with the job version it was summed at (0: none), and whether
  // every job's was summed at once; TasksToAllocateQuantities per job, likewise.
  mutable std::vector<std::pair<uint64_t, Quantities>> job_allocated_cache_;
  mutable bool job_allocated_filled_ = false;
  mutable std::vector<std::pair<uint64_t, Quantities>> job_quantities_cache_;

  // GPU devices (gpu_devices.cc).
  int32_t InternGroup(const std::string& name);
  double AcceptedGpusOn(PodId p, NodeId n) const;
  bool SharedFits(PodId p, NodeId n, bool with_releasing) const;
  // KAI's fit for requests that are not plain whole-GPU ones: `base` (no GPUs) against the node's
  // idle (and releasing) resources, a GPU-memory share of at most one device, then `devices`
  // whole free devices or shared devices with room for `memory` MiB.
  bool FitsDevices(const Pod& pod, const Resources& base, NodeId n, bool with_releasing,
                   int devices, int64_t memory) const;

  // Order keys (order_keys.cc).
  mutable int8_t job_tie_breakers_distinct_ = -1;  // -1: not computed yet (nor the ranks)
  mutable std::vector<int64_t> job_tie_rank_;
  mutable std::vector<std::pair<uint64_t, JobOrderKey>> job_key_cache_;
  mutable std::vector<int32_t> task_rank_;  // per pod: TaskRank, -1 until its set is ranked
  JobOrderKey ComputeJobOrderKey(const JobView& v) const;
  void RankJobTieBreakers() const;
  bool TaskLessByFunctions(PodId l, PodId r) const;
  int32_t RankPodSetOf(PodId p) const;

  // Node ranking (node_ranking.cc).
  void BuildNodeClasses();
  void Reclassify(NodeId n);
  void MarkClassDirty(NodeId n);
  void RefreshClasses();
  bool NodeHasClassKey(NodeId n, int32_t c) const;
  bool CanRankByClass(PodId p, std::span<const NodeId> candidates) const;
  // PodRankableByClass without its exclusion of shared-GPU pods (whose classes hold the shared
  // devices: they may rank by class over all the nodes, not over a list covering free GPUs).
  bool PodRankableByClassAnyGpu(PodId p) const;
  PerNodeReason WhyPerNode(PodId p, std::span<const NodeId> candidates) const;
  void RankByClass(PodId p, bool record);
  void RankPerNode(PodId p, std::span<const NodeId> candidates, bool record);
  // RankPerNode without the pre-order functions (called before for the pod) and fit errors: the
  // candidates that fit the pod, with their scores, into ranking_.ranked.
  void ScoreFittingNodes(PodId p, std::span<const NodeId> candidates);
  // SchedulerParams::shared_rank_changed_nodes (node_ranking.h): whether pod p's rankings are
  // kept; the ranking of p from its kept one (false, the pre-order functions perhaps called, when
  // it does not apply); the ranking just made, kept.
  bool RankingKeptFor(PodId p) const;
  bool RankFromKept(PodId p, std::span<const NodeId> candidates);
  void KeepRanking(PodId p, std::span<const NodeId> candidates);
  // A node with GPUs when every such node has the same device memory (kNone otherwise): where a
  // fractional pod's queue capacity answer is the same on every node (RankingKeptFor).
  NodeId CapacityNode() const;
  // SchedulerParams::shared_rank_by_class: a shared-GPU pod whose ranking may evaluate one node
  // per key, and the same ranking as RankPerNode from one representative per key among the
  // candidates (node_ranking.h); the id of a node's shape and NodeState.
  bool SharedPodRankableByClass(PodId p) const;
  void RankPerCandidateClass(PodId p, std::span<const NodeId> candidates, bool record);
  int32_t NodeStateId(NodeId n);
  void PickBestRanked();
  NodeRanking ranking_;
  mutable NodeId capacity_node_ = kNone;  // CapacityNode's answer, once known
  mutable bool capacity_node_known_ = false;
  mutable int8_t all_pods_whole_rankable_ = -1;  // AllPodsWholeGpuRankableByClass, -1: unknown
  void BuildPodBriefs() const;
  mutable std::vector<PodBrief> pod_briefs_;  // (empty until first asked for)
};

// A hash (FNV-1a) of the session's decisions in order - binds, evictions, pipelined pods, each as
// pod and node - to compare the decisions of two builds without printing them.
uint64_t DecisionsDigest(const Session& ssn);

}  // namespace gantry
