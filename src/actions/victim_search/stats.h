// The victim search's counters (stats accelerator: diagnostics only, no decision reads them).
// SolveJob adds to the thread's counters of its action; the cycle benchmark prints them.
#pragma once

#include <chrono>
#include <cstdint>

#include "actions/victim_search/eviction_messages.h"
#include "model/cluster.h"

namespace gantry {

// Counters of the victim search, per action, for diagnosing where a cycle's time goes (the cycle
// benchmark prints them). They count work done, not decisions: the solver shortcuts change them
// (a scenario decided by the capacity pre-check is not simulated). Kept per thread; reset by
// ResetSolverStats.
struct SolverActionStats {
  uint64_t jobs = 0;             // SolveJob calls
  uint64_t solved = 0;           // of which solved
  uint64_t prefixes = 0;         // pod prefixes searched (probes, in KAI v0.16+'s model)
  uint64_t scenarios = 0;        // scenarios that passed the scenario filters (simulated or not)
  uint64_t precheck = 0;         // simulations skipped by the capacity pre-check (per node or not)
  uint64_t precheck_domain = 0;  // of which by the pre-check per topology domain (before
                                 // evicting or once evicted; domain_precheck.h)
  uint64_t domain_during = 0;    // of precheck_domain: simulations stopped before the pending
                                 // pods' turn when some domain fitted in the base state
                                 // (DomainPrecheck::FailsNow, solver_domain_during_simulation)
  uint64_t domain_followed = 0;  // DomainPrecheck::FailsNow calls whose per-domain counts
                                 // followed the node journal instead of being made afresh
                                 // (solver_domain_follow_journal)
  uint64_t repeated_nodes = 0;   // node simulations skipped as the repeat of an earlier failed
                                 // node's of the same scenario (repeated_nodes.h)
  uint64_t precheck_replay = 0;  // of precheck: decided with the node's shared-GPU counters
                                 // replayed instead of evicting
                                 // (CapacityBlocks::FailsPrecheckByCounterReplay)
  uint64_t out_of_reach = 0;     // scenarios none of whose nodes reaches a node that frees a
                                 // block the pending pods lack, left unsolved without trying
                                 // their nodes (reach_bound.h)
  uint64_t joint_skipped = 0;    // simulations not run: the pending pods and every evicted victim
                                 // cannot all fit, and both unsolved ends are alike
                                 // (joint_profile.h; not in proven_before)
  uint64_t joint_stopped = 0;    // of simulations: stopped, rejected, once the pending pods were
                                 // placed, for the same reason (joint_profile.h)
  uint64_t simulations = 0;      // placements simulated (AllocatePreemptorAndVictims)
  uint64_t idle_queues = 0;      // leaf queues left out of the simulations' job orders, idle
                                 // from the start or from the pop of their last acting entry
                                 // (idle_queues.h)
  uint64_t acting_runs = 0;      // of simulations: their acting entries taken by the maxima of
                                 // the runs ahead of them, no pending entry popped
                                 // (acting_runs.h)
  uint64_t not_placed = 0;       // of which the pending pods did not fit
  uint64_t rejected = 0;         // of which the validator rejected the outcome
  uint64_t proven = 0;           // of which rejected by a proven bound, stopped early
                                 // (SolverSpec::rejection_rules: the validator was not asked)
  uint64_t accepted = 0;         // of which the validator accepted the outcome
  uint64_t proven_before = 0;    // node simulations a rejection rule proved hopeless before the
                                 // pending pods' turn: skipped before placing anything (not in
                                 // `simulations`) or stopped ahead of that turn (counted there
                                 // too); with proofs verified, they are run to the end
  uint64_t proven_without_evicting = 0;  // of proven_before: proven before evicting anything
  uint64_t proven_by_recorded = 0;       // of proven_without_evicting: from the rules of the
                                         // recorded victims alone (kept per prefix), the scenario's
                                         // own victims added by queue
  uint64_t proven_by_saturation = 0;   // of proven: through a saturation bound that victims placed
                                       // again lowered (RejectionRule::has_saturation)
  uint64_t run_maxima_by_request = 0;  // the acting runs' maxima over fixed entries taken once per
                                       // distinct request, not per entry (acting_runs.h)
  // Of jobs: searches counted without running them, known to fail as an earlier one of the same
  // state did (preempt's repeated failures, actions/preempt/repeated_failures.h).
  uint64_t known_failures = 0;
  uint64_t kept_pending = 0;    // searches whose acting runs took the pending jobs from the lists
                                // kept between searches (fixed_lists.h)
  uint64_t victims_popped = 0;  // victims-queue entries the prefixes popped (replayed or not),
                                // with those whose victims were recorded or empty
  uint64_t kept_leaf_updates = 0;  // reclaim's leaf queues brought up to date from kept heaps
                                   // by their changed jobs (SchedulerParams::reclaim_kept_leaves)
  double ms = 0;                   // wall-clock time in SolveJob
  // The job whose search took longest, its time, whether it was solved and its simulations.
  JobId slowest_job = kNone;
  double slowest_ms = 0;
  bool slowest_solved = false;
  uint64_t slowest_simulations = 0;
};
struct SolverStats {
  SolverActionStats by_action[3];  // indexed by EvictionAction
};
const SolverStats& GetSolverStats();
void ResetSolverStats();
// The thread's counters of one action (for the victim search).
SolverActionStats& MutableSolverStats(EvictionAction action);

// Times one search (SolveJob) and counts it in its action's jobs, solved, ms and slowest.
class SearchRecord {
 public:
  SearchRecord(EvictionAction action, JobId job);
  void Finish(bool solved);

 private:
  SolverActionStats& st_;
  JobId job_;
  uint64_t simulations_before_;
  std::chrono::steady_clock::time_point start_;
};

// For tests (per thread): simulations that a rejection rule would stop early run to the end
// instead, and the validator is asked; the outcomes it accepts count as proof violations.
void SetVerifyRejectionProofs(bool verify);
uint64_t RejectionProofViolations();
// (For the accelerators: whether the verify mode is on, and one violation seen.)
bool VerifyingRejectionProofs();
void NoteRejectionProofViolation();

}  // namespace gantry
