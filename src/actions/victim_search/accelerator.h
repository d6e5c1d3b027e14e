// The victim search's accelerators, as the reference path (solver.cc) sees them: one object per
// search, present only with the solver shortcuts on (`SchedulerParams::solver_shortcuts`), which
// the reference path consults at the named points below and otherwise ignores. Without it the
// search is KAI's, step for step. Every point either changes nothing the search decides or
// answers, ahead of time, what the reference steps it skips would have found; the differential
// tests (shortcuts on/off, and the verify mode that runs proven simulations to the end) hold them
// to that. What each accelerator proves, and why it is safe, is in its own header:
//
// - capacity pre-check by blocks of free GPUs (capacity_blocks.h, gpu_blocks.h):
//   SkipNodeBeforeListing, SkipScenarioBeforeEvicting, SkipNodeByCounterReplay, BeforeSimulation,
//   StopAfterPreemptor, VictimTurn;
// - rejection rules and proofs (rejection_proofs.h): AllNodesProvenUnsolvable, SkipNodeProven,
//   BeforeSimulation, AfterSimulation, VictimTurn;
// - victims-queue pops replayed across prefixes (pop_replay.h): StartPops, PopsEmpty, NextPop;
// - recorded victims kept evicted (kept_base.h): KeepPrefix, KeptStatement, MakeClean, OnAccepted;
// - the simulations' job order from a base (simulation_order.h): SimulationOrder, NotePopped,
//   OnlyPendingJobsLeft; without its idle leaf queues (idle_queues.h): SimulationOrder; its
//   acting entries without popping the pending ones (acting_runs.h): StartActingRuns, NextActing;
// - a node's simulation repeating a failed one of the same scenario (repeated_nodes.h):
//   StartNodes, RepeatsFailedNode, NodeFailed;
// - scenarios whose nodes reach no node that frees a block the pending pods lack
//   (reach_bound.h): ScenarioOutOfReach;
// - the pending pods and every evicted victim together against the free GPUs, where every victim
//   must be placed again (joint_profile.h): BeforeSimulation, StopAfterPreemptor;
// - counters (stats.h): every point.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "actions/allocate/allocate.h"
#include "actions/victim_search/acting_runs.h"
#include "actions/victim_search/idle_queues.h"
#include "actions/victim_search/joint_profile.h"
#include "actions/victim_search/kept_base.h"
#include "actions/victim_search/pop_replay.h"
#include "actions/victim_search/reach_bound.h"
#include "actions/victim_search/rejection_proofs.h"
#include "actions/victim_search/repeated_nodes.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/search_state.h"
#include "actions/victim_search/simulation_order.h"
#include "actions/victim_search/stats.h"

namespace gantry::victim_search {

// What the accelerated path does with a victim job's turn in a simulation.
enum class VictimStep { kNext, kStop, kFail };

class SearchAccelerator final : public RejectionProofs {
 public:
  // Pops recorded ahead at once with the kept base (see PopReplay).
  static constexpr size_t kPopsPerExtension = 64;

  SearchAccelerator(SearchContext& ctx, KeptEvictionBase::StatementFactory new_statement)
      : RejectionProofs(ctx), verify_(VerifyingRejectionProofs()) {
    stats_ = &MutableSolverStats(spec_.action);
    // The session reports the nodes it changes while this search runs (see FreeBlocks).
    // (Shared by the searches of the thread: an entry is read only for a node written since the
    // counts were last synced in this search, see FreeBlocks.)
    if (blocks_free_.size() != ssn_.cluster().nodes.size()) {
      blocks_free_.assign(ssn_.cluster().nodes.size(), 0.0);
    }
    ssn_.SetNodeChangeLog(&node_log_);
    if (KeptEvictionBase::Applies(ssn_)) {
      kept_base_ = std::make_unique<KeptEvictionBase>(std::move(new_statement));
    }
    domain_.StartSearch(ssn_, job_);
    // (The per-domain counts during a simulation follow the node journal: domain_precheck.h.)
    if (domain_.FollowsJournal()) ssn_.EnableNodeJournal();
    repeated_.StartSearch(ssn_);
    joint_.StartSearch(ssn_, spec_.every_victim_placed_again);
  }
  ~SearchAccelerator() { ssn_.SetNodeChangeLog(nullptr); }
  SearchAccelerator(const SearchAccelerator&) = delete;
  SearchAccelerator& operator=(const SearchAccelerator&) = delete;

  // --- Prefixes

  // A prefix was searched; `r` is its result. True when the kept base took care of its statement
  // (kept as the next prefix's base, or released as the solution when `complete`).
  bool KeepPrefix(PartialResult& r, bool complete) {
    ++stats_->prefixes;
    if (!r.solved || !kept_base_) return false;
    if (!complete) {
      kept_base_->KeepPrefix(r.evict_end, std::move(r.evicted));
    } else {
      r.statement = kept_base_->Release();
    }
    return true;
  }
  // Undoes the kept base (the session as the search found it).
  void MakeClean() {
    if (kept_base_) kept_base_->Discard();
  }
  // A prefix starts with these pending pods.
  void StartPrefix(const std::vector<PodId>& pending) {
    ++prefix_serial_;
    ResetFrees();
    SortedGpuSizes(ssn_, pending, sizes_scratch_);
    MakeProfile(sizes_scratch_, pending_profile_);
    pending_sizes_.assign(sizes_scratch_.begin(), sizes_scratch_.end());
    joint_.StartPrefix();
    domain_.StartPrefix(ssn_, pending);
    reach_.StartPrefix();
    reach_.SetSinglePodJobs(ssn_.params().solver_reach_single_pod_jobs);
  }

  // --- Victims-queue pops (replayed instead of popping a copy per prefix)

  void StartPops(const JobsByQueue& base_queue) {
    if (!replay_) {
      replay_ = std::make_unique<PopReplay>(ssn_, base_queue, kept_base_.get(),
                                            kept_base_ ? kPopsPerExtension : 1);
    }
    replay_->StartPrefix();
  }
  bool PopsEmpty() const { return replay_->Empty(); }
  bool NextPop(const Scenario& scenario, PopStep& step, const JobView*& view,
               std::span<const PodId>& victims) {
    return replay_->Next(scenario, step, view, victims);
  }

  // --- Batches and scenarios

  // The statement with exactly `recorded` evicted, kept between batches; null without the kept
  // base (the caller evicts them in a statement of its own).
  Statement* KeptStatement(const std::vector<PodId>& recorded) {
    return kept_base_ ? &kept_base_->Acquire(recorded) : nullptr;
  }
  // A batch's recorded victims are evicted.
  void StartBatch() {
    CountBaseBlocks();
    domain_.CountBase(ssn_, feasible_list_);
    touched_.clear();
    touched_epoch_ = ssn_.placement_epoch();
  }
  // A scenario starts, in the batch's base state.
  void OnScenario() {
    ++stats_->scenarios;
    // (A rejected scenario keeps the nodes its evictions made feasible: counted again.)
    if (!domain_.BaseCovers(feasible_list_)) domain_.CountBase(ssn_, feasible_list_);
  }

  // Whether every node of `nodes` (the scenario's latest victim job's) fails the capacity
  // pre-check, decided from the sums kept over the prefix's accumulated victims (reach_bound.h):
  // then the scenario is unsolved without trying its nodes. The session is in the batch's base
  // state.
  bool ScenarioOutOfReach(const Scenario& scenario, std::span<const NodeId> nodes) {
    if (!ssn_.params().solver_reach_bound) return false;
    CatchUpFrees(scenario);
    auto slot = [this](size_t i, NodeId& node, bool& counted, double& gpus) {
      const PodFree& pf = frees_[i];
      node = pf.node;
      counted = pf.counted;
      gpus = pf.gpus;
    };
    if (!reach_.OutOfReach(
            ssn_, scenario, pending_profile_, feasible_, base_exact_,
            [this](double g) { return BaseBlocks(g); }, nodes, slot)) {
      return false;
    }
    ++stats_->out_of_reach;
    return true;
  }

  // A scenario's loop over the nodes of its latest victim job starts.
  void StartNodes() { repeated_.StartScenario(); }
  // Whether `node`'s simulation would end as an earlier failed node's of the scenario (kFailed):
  // then it is skipped without evicting (see repeated_nodes.h).
  bool RepeatsFailedNode(const Scenario& scenario, NodeId node) {
    if (!repeated_.Repeats(scenario, node)) return false;
    ++stats_->repeated_nodes;
    return true;
  }
  // `node`'s simulation ended kFailed, or was skipped as such before evicting.
  void NodeFailed(const Scenario& scenario, NodeId node) { repeated_.NoteFailed(scenario, node); }

  // Whether every node of `nodes` (the latest victim job's) is unsolvable without simulating
  // (see rejection_proofs.h). `evict(node, potential, added)` and `undo(cp, added)` are the
  // reference path's node evictions. Leaves the statement and feasible nodes as found.
  template <typename Evict, typename Undo>
  bool AllNodesProvenUnsolvable(const Scenario& scenario, Statement& stmt,
                                const std::vector<NodeId>& nodes, std::vector<PodId>& potential,
                                std::vector<NodeId>& added, Evict&& evict, Undo&& undo) {
    if (verify_) return false;
    if (UnionFailsPrecheck(scenario, nodes)) {
      stats_->precheck += nodes.size();
      return true;
    }
    for (NodeId node : nodes) {
      const auto cp = stmt.checkpoint();
      if (!evict(node, potential, added)) continue;
      bool proven =
          !CouldFitProfile(pending_profile_, [&](double g) { return ScenarioBlocks(g); }) ||
          DomainFailsAfterEvictions();
      if (!proven && (added.empty() || FeasibleListInsensitive())) {
        PrepareRejecting(scenario, potential, nullptr, /*track=*/false);
        proven = RejectionCertainBeforePlacing(scenario);
        ClearRejecting();
      }
      undo(cp, added);
      if (!proven) return false;
      ++stats_->proven_before;
    }
    return true;
  }

  // A node's simulation, before its victims are listed: true when the pre-check it would start
  // with fails without evicting (kFailed).
  bool SkipNodeBeforeListing(const Scenario& scenario, NodeId node) {
    verify_proven_ = false;
    TouchNodesOfNode(scenario, node);
    if (FailsPrecheckAfterEvicting()) {
      ++stats_->precheck;
      return true;
    }
    return false;
  }
  // With the node's victims listed (`potential`), on a node where kFailed and kRejected end the
  // scenario alike: true when a rejection rule is proven without evicting and the feasible nodes
  // the evictions would add cannot matter.
  bool SkipNodeProven(const Scenario& scenario, const std::vector<PodId>& potential) {
    if (!(FeasibleListInsensitive() ||
          std::all_of(touched_.begin(), touched_.end(),
                      [](const TouchedNode& t) { return t.was_feasible; })) ||
        !ProvenUnsolvableWithoutEvicting(scenario, potential)) {
      return false;
    }
    ++stats_->proven_before;
    ++stats_->proven_without_evicting;
    // (Verify mode: simulated to the end, and the outcome checked; see AfterSimulation.)
    if (!verify_) return true;
    verify_proven_ = true;
    return false;
  }
  // After SkipNodeProven, with the node's victims listed (`potential`): true when the pre-check
  // the node's simulation starts with fails once they are evicted, decided on the counters of
  // their eviction and rollback replayed without a statement (kFailed; the session is then left
  // as that evict + rollback leaves it, see CapacityBlocks::FailsPrecheckByCounterReplay).
  bool SkipNodeByCounterReplay(const Scenario& scenario, const std::vector<PodId>& potential) {
    if (!FailsPrecheckByCounterReplay(scenario, potential)) return false;
    ++stats_->precheck;
    return true;
  }
  // KAI v0.16+'s model (SolveByPod), in a batch of its own with the recorded victims evicted:
  // true when the pre-check for the scenario's potential victims `potential` fails without
  // evicting them (the scenario is unsolved, as a failed or rejected one).
  bool SkipScenarioBeforeEvicting(const std::vector<PodId>& potential) {
    verify_proven_ = false;
    TouchNodesOf(potential);
    if (FailsPrecheckAfterEvicting()) {
      ++stats_->precheck;
      return true;
    }
    return false;
  }
  // The node's victims are evicted.
  void AfterEvicting() { touched_epoch_ = ssn_.placement_epoch(); }
  // On the scenario's last node: whether its simulation may be skipped when proven hopeless
  // (kFailed and kRejected differ only in the feasible nodes `added`, see rejection_proofs.h).
  bool MaySkip(const std::vector<NodeId>& added) const {
    return added.empty() || FeasibleListInsensitive();
  }

  // --- One simulation

  // Before placing: an outcome when decided without simulating.
  std::optional<Outcome> BeforeSimulation(const Scenario& scenario,
                                          std::span<const PodId> potential, bool may_skip) {
    if (!CouldFitProfile(pending_profile_, [&](double g) { return ScenarioBlocks(g); }) ||
        DomainFailsAfterEvictions()) {
      ++stats_->precheck;
      return Outcome::kFailed;
    }
    PrepareRejecting(scenario, potential);
    // (Verify mode: proven before evicting counts as proven before placing.)
    const bool proven_without_evicting = std::exchange(verify_proven_, false);
    proven_before_ = (may_skip || verify_) &&
                     (proven_without_evicting || RejectionCertainBeforePlacing(scenario));
    if (proven_before_) {
      ++stats_->proven_before;
      if (!verify_) {
        ClearRejecting();
        return Outcome::kUnsolvable;
      }
    }
    // (joint_profile.h: unsolvable; skipped where both unsolved ends are alike, else stopped
    // once the pending pods are placed.)
    joint_failed_ = JointProfileFails(scenario, potential);
    if (joint_failed_ && may_skip && !verify_) {
      ++stats_->joint_skipped;
      ClearRejecting();
      return Outcome::kUnsolvable;
    }
    ++stats_->simulations;
    certain_by_saturation_ = false;
    proven_ = false;
    unsolvable_ = false;
    victims_need_gpus_ = true;
    return std::nullopt;
  }
  // Every victim of the simulation, before placing.
  void NoteVictim(const Pod& pod) {
    victims_need_gpus_ = victims_need_gpus_ && !pod.IsSharedGpu() && pod.request.gpus > 0;
  }
  // The simulation's job order holding every pending job and victim job (`victim_jobs`, flagged
  // in `is_victim_job`) but the preemptor, copied from a base; null where no base applies (the
  // caller orders them in a fresh one).
  JobsByQueue* SimulationOrder(const JobsOrderOptions& options,
                               const std::vector<JobId>& pending_jobs,
                               const std::vector<JobId>& victim_jobs,
                               const std::vector<char>& is_victim_job) {
    // The entries that do something: the preemptor and the victim jobs. Once all are popped the
    // rest of the order only skips pending jobs. (An entry the order did not take is never
    // popped, so the count then never reaches zero.)
    to_act_ = 1;
    for (JobId j : victim_jobs) to_act_ += j != job_;
    if (!order_base_decided_) {
      order_base_decided_ = true;
      if (SimulationOrderBase::Applies(ssn_)) {
        order_base_ = std::make_unique<SimulationOrderBase>(ssn_, options, pending_jobs,
                                                            is_victim_job, to_order_);
        if (IdleQueues::Applies(ssn_)) idle_ = std::make_unique<IdleQueues>(ssn_);
      }
    }
    if (!order_base_) return nullptr;
    JobsByQueue& order = order_base_->NextOrder();
    // (Sized up front and written by index: this runs for every simulation.)
    // (The pending jobs the base does not hold, listed once: the same ones every simulation.)
    if (!outside_base_known_) {
      outside_base_known_ = true;
      for (JobId j : pending_jobs) {
        if (!order_base_->Holds(j)) outside_base_.push_back(j);
      }
    }
    to_order_.resize(outside_base_.size() + victim_jobs.size());
    size_t n = 0;
    for (JobId j : outside_base_) {
      if (!is_victim_job[j]) to_order_[n++] = j;
    }
    for (JobId j : victim_jobs) {
      if (j != job_ && !order_base_->Holds(j)) to_order_[n++] = j;
    }
    to_order_.resize(n);
    order.PushMany(to_order_);
    if (idle_) stats_->idle_queues += idle_->Start(ssn_, order, job_, victim_jobs);
    return &order;
  }
  // Instead of SimulationOrder: true when the simulation's acting entries (the preemptor's view
  // `preemptor`, the victim jobs) come from NextActing, in the order's sequence, without an
  // order (acting_runs.h); false where the rule does not apply (the caller builds the order).
  bool StartActingRuns(const std::vector<JobId>& pending_jobs,
                       const std::vector<JobId>& victim_jobs,
                       const std::vector<char>& is_victim_job, const JobView& preemptor) {
    if (!runs_decided_) {
      runs_decided_ = true;
      if (ActingRunsApply()) {
        stats_->kept_pending += ssn_.params().solver_acting_runs_kept ? 1 : 0;
        runs_ = ssn_.params().solver_acting_runs_kept
                    ? std::make_unique<ActingRuns>(ssn_, job_, victim_jobs, runs_others_,
                                                   stats_->run_maxima_by_request)
                    : std::make_unique<ActingRuns>(ssn_, pending_jobs, is_victim_job, runs_others_,
                                                   stats_->run_maxima_by_request);
      }
    }
    if (!runs_) return false;
    to_order_.clear();
    for (JobId j : runs_others_) {
      if (!is_victim_job[j]) to_order_.push_back(j);
    }
    if (!runs_->Start(ssn_, to_order_, victim_jobs, preemptor)) return false;
    ++stats_->acting_runs;
    return true;
  }
  // Whether StartActingRuns keeps the pending jobs between searches (fixed_lists.h): then it
  // needs no list of them, and KeptPendingJobs gives it once it has started.
  bool ActingRunsKeepPendingJobs() const {
    return ssn_.params().solver_acting_runs_kept && ActingRunsApply();
  }
  // The pending jobs but the preemptor, from the kept lists (after StartActingRuns has started
  // them, i.e. where ActingRunsKeepPendingJobs is true).
  void KeptPendingJobs(std::vector<JobId>& out) const { runs_->PendingJobs(ssn_, out); }
  // The next acting entry (StartActingRuns), the previous one acted upon; false when none is left.
  bool NextActing(JobView& out) { return runs_->Next(ssn_, out); }
  // An entry of job j was popped from the order (`acts`: the preemptor or a victim job).
  void NotePopped(JobId j, bool acts) {
    if (acts && idle_ && idle_->Popped(ssn_, j)) ++stats_->idle_queues;
    if (acts && to_act_ > 0) --to_act_;
  }
  // Whether the rest of the order only skips pending jobs.
  bool OnlyPendingJobsLeft() const { return to_act_ == 0; }
  // The preemptor's pods were placed: whether the rest of the order can be skipped (a rule is
  // certain, or victims that all need GPUs find none free).
  bool StopAfterPreemptor(const std::vector<NodeId>& nodes) {
    if (joint_failed_) {
      // (joint_profile.h: some evicted victim cannot be placed again beside the pending pods.)
      proven_ = true;
      ++stats_->joint_stopped;
      if (!verify_) return true;
    }
    if (RejectionCertain(nodes)) {
      proven_ = true;
      if (!verify_) return true;
    }
    return victims_need_gpus_ && FreeBlocks(nodes, 0) <= 0;
  }
  // A victim job's turn: placed again from its task list asked once, unless its pods' sizes
  // cannot fit (failures change nothing). kStop: the simulation stops, proven rejected; kFail:
  // it stops with the pending pods not placed (unsolvable_ when proven so).
  VictimStep VictimTurn(Statement& stmt, const std::vector<NodeId>& nodes, JobId j, bool placed,
                        bool may_skip) {
    ssn_.TasksToAllocate(j, tasks_scratch_, /*real=*/false, /*ordered=*/true);
    if (!CouldFit(tasks_scratch_, nodes)) {
      NoteProcessed(j);
      if (placed && RejectionCertain(nodes)) {
        proven_ = true;
        if (!verify_) return VictimStep::kStop;
      }
      return VictimStep::kNext;
    }
    const bool victim_placed = AllocateJobTaskList(ssn_, stmt, nodes, j, tasks_scratch_,
                                                   /*pipeline_only=*/true,
                                                   /*nodes_cover_free_gpus=*/true);
    NoteProcessed(j);
    // Before the pending pods' turn, a victim placed again only takes free GPUs away: once the
    // necessary condition for placing them fails, their turn will fail (kFailed).
    if (!placed && victim_placed &&
        !CouldFitProfile(pending_profile_, [&](double g) { return FreeBlocks(nodes, g); })) {
      return VictimStep::kFail;
    }
    // (The same per required topology domain, see domain_precheck.h.)
    // (Also where some domain fitted in the base state: solver_domain_during_simulation.)
    bool by_during = false;
    const uint64_t followed = domain_.followed();
    const DomainPrecheck::ListChanges changes{&feasible_, &feasible_changes_, feasible_generation_};
    const bool domain_fails =
        !placed && victim_placed && domain_.ChecksDuringSimulation() &&
        domain_.FailsNow(ssn_, nodes, &nodes == &feasible_list_ ? &changes : nullptr, by_during);
    stats_->domain_followed += domain_.followed() - followed;
    if (domain_fails) {
      ++stats_->precheck_domain;
      if (by_during) ++stats_->domain_during;
      return VictimStep::kFail;
    }
    if (!placed && may_skip && !verify_ && RejectionCertainOncePlaced(nodes)) {
      unsolvable_ = true;
      return VictimStep::kFail;
    }
    if (placed && RejectionCertain(nodes)) {
      proven_ = true;
      if (!verify_) return VictimStep::kStop;
    }
    return VictimStep::kNext;
  }
  // After placing (`placed`: the pending pods were): an outcome when decided without the
  // validator.
  std::optional<Outcome> AfterSimulation(bool placed) {
    ClearRejecting();
    if (unsolvable_) {
      ++stats_->proven_before;
      return Outcome::kUnsolvable;
    }
    // (Verify mode: checked against the validator.)
    if (proven_before_ && placed) proven_ = true;
    if (!placed) {
      ++stats_->not_placed;
      return Outcome::kFailed;
    }
    if (proven_ && certain_by_saturation_) ++stats_->proven_by_saturation;
    if (proven_ && !verify_) {
      ++stats_->rejected;
      ++stats_->proven;
      return Outcome::kRejected;
    }
    return std::nullopt;
  }
  void OnRejected() {
    ++stats_->rejected;
    if (proven_) ++stats_->proven;
  }
  // The validator accepted the simulation, whose evictions ended at `evict_end`.
  void OnAccepted(const Scenario& scenario, std::span<const PodId> potential,
                  Statement::Checkpoint evict_end, PartialResult& out) {
    if (proven_) NoteRejectionProofViolation();
    ++stats_->accepted;
    if (kept_base_) {
      out.evict_end = evict_end;
      out.evicted = scenario.recorded_tasks();
      out.evicted.insert(out.evicted.end(), potential.begin(), potential.end());
    }
  }

 private:
  const bool verify_;  // SetVerifyRejectionProofs: proven simulations run to the end
  std::unique_ptr<PopReplay> replay_;
  std::unique_ptr<KeptEvictionBase> kept_base_;  // absent where undo is not exact
  bool order_base_decided_ = false;
  std::unique_ptr<SimulationOrderBase> order_base_;
  std::unique_ptr<IdleQueues> idle_;  // with the base, where the idle-queue rule applies
  bool outside_base_known_ = false;
  std::vector<JobId> outside_base_;  // the pending jobs the base does not hold
  std::vector<JobId> to_order_;      // (SimulationOrder's scratch)
  size_t to_act_ = 0;                // the order's entries left that act (SimulationOrder)
  bool runs_decided_ = false;
  std::unique_ptr<ActingRuns> runs_;  // where the acting-runs rule applies (StartActingRuns)
  bool ActingRunsApply() const {
    return ActingRuns::Applies(ssn_) && SimulationOrderBase::Applies(ssn_);
  }
  std::vector<JobId> runs_others_;  // the pending jobs runs_ does not hold (active pods)
  // The current simulation: proven hopeless before placing / before evicting (verify mode), a
  // rule certain, stopped before the pending pods' turn, every victim asks for whole GPUs.
  bool proven_before_ = false;
  // The joint profile (joint_profile.h): the rule, the pending pods' whole-GPU sizes (largest
  // first) and whether the current simulation failed it.
  JointProfile joint_;
  std::vector<double> pending_sizes_;
  bool joint_failed_ = false;
  bool JointProfileFails(const Scenario& scenario, std::span<const PodId> potential) {
    if (!joint_.Applies()) return false;
    double free_now = 0;
    if (!ExactFreeAfterEvictions(free_now)) return false;
    return joint_.Fails(ssn_, scenario, potential, pending_sizes_, free_now,
                        [&](double g) { return BlocksAfterEvictions(g); });
  }
  bool verify_proven_ = false;
  bool proven_ = false;
  bool unsolvable_ = false;
  bool victims_need_gpus_ = true;
  RepeatedNodes repeated_;  // the scenario's failed nodes (repeated_nodes.h)
  ReachBound reach_;        // the prefix's nodes that reach a block (reach_bound.h)
};

}  // namespace gantry::victim_search
