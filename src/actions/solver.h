// The victim search shared by reclaim, preempt and consolidation (KAI's JobSolver).
//
// For a pending job the solver grows the set of its pods to place one pod at a time. For each
// prefix it builds scenarios: the victims recorded for the previous prefix, plus potential victims
// taken job by job from a victims queue (worst-ranked first; elastic jobs give up pods beyond
// their minimum one at a time, gangs all at once). A scenario is simulated inside a statement:
// evict the recorded victims and, node by node, the potential victims on that node; then place the
// pending pods and let victims that still fit be pipelined back; a validator (the action's rule,
// e.g. fair-share reclaim) accepts or rejects the outcome. Nothing leaves the statement unless
// the whole job is placed and the action commits it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"
#include "framework/statement.h"

namespace gantry {

// Which action runs the solver (decides eviction messages).
enum class EvictionAction { kReclaim, kPreempt, kConsolidation };

struct SolverSpec {
  EvictionAction action = EvictionAction::kReclaim;
  // Nodes the pending job may use (victims' nodes are added as they are considered).
  std::vector<NodeId> feasible_nodes;
  // Accepts or rejects a simulated scenario.
  std::function<bool(const Session&, const ScenarioInfo&)> validator;
  // Builds a fresh victims queue (called once per attempted pod prefix).
  std::function<std::unique_ptr<JobsByQueue>()> victims_queue;
  // Optional, asked before a simulation with the solver shortcuts on: rules under which
  // `validator` rejects the outcome (see RejectionRule in framework/session.h) for the victims
  // `evicted` (those the simulation evicts). Once the pending pods are placed, the simulation
  // stops, rejected, as soon as a rule is certain to hold at its end.
  std::function<void(const Session&, JobId preemptor, std::span<const PodId> preemptor_tasks,
                     const EvictedVictims& evicted, std::vector<RejectionRule>& out)>
      rejection_rules;
};

struct SolverResult {
  bool solved = false;
  std::unique_ptr<Statement> statement;  // holds the solution's operations; commit to apply
  std::vector<PodId> victims;
};

// Counters of the victim search, per action, for diagnosing where a cycle's time goes (the cycle
// benchmark prints them). They count work done, not decisions: the solver shortcuts change them
// (a scenario decided by the capacity pre-check is not simulated). Kept per thread; reset by
// ResetSolverStats.
struct SolverActionStats {
  uint64_t jobs = 0;           // SolveJob calls
  uint64_t solved = 0;         // of which solved
  uint64_t prefixes = 0;       // pod prefixes searched
  uint64_t scenarios = 0;      // scenarios that passed the scenario filters (simulated or not)
  uint64_t precheck = 0;       // simulations skipped by the capacity pre-check (per node or not)
  uint64_t simulations = 0;    // placements simulated (AllocatePreemptorAndVictims)
  uint64_t not_placed = 0;     // of which the pending pods did not fit
  uint64_t rejected = 0;       // of which the validator rejected the outcome
  uint64_t proven = 0;         // of which rejected by a proven bound, stopped early
                               // (SolverSpec::rejection_rules: the validator was not asked)
  uint64_t accepted = 0;       // of which the validator accepted the outcome
  uint64_t proven_before = 0;  // node simulations a rejection rule proved hopeless before the
                               // pending pods' turn: skipped before placing anything (not in
                               // `simulations`) or stopped ahead of that turn (counted there
                               // too); with proofs verified, they are run to the end
  uint64_t proven_without_evicting = 0;  // of proven_before: proven before evicting anything
  uint64_t proven_by_recorded = 0;       // of proven_without_evicting: from the rules of the
                                         // recorded victims alone (kept per prefix), the scenario's
                                         // own victims added by queue
  uint64_t proven_by_saturation = 0;  // of proven: through a saturation bound that victims placed
                                      // again lowered (RejectionRule::has_saturation)
  double ms = 0;                      // wall-clock time in SolveJob
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

// For tests (per thread): simulations that a rejection rule would stop early run to the end
// instead, and the validator is asked; the outcomes it accepts count as proof violations.
void SetVerifyRejectionProofs(bool verify);
uint64_t RejectionProofViolations();

// Searches victims for `job`. On success the statement holds the evictions and the job's
// pipelined pods; on failure the session is as it was.
SolverResult SolveJob(Session& ssn, JobId job, SolverSpec& spec);

// The nodes a job may use: every node if some pod needs no GPU, otherwise nodes with idle or
// releasing GPUs.
std::vector<NodeId> FeasibleNodesForJob(const Session& ssn, JobId job);

// The pods of an entry that would be evicted next (KAI's GetTasksToEvict) and whether the entry
// has active pods left after them.
std::vector<PodId> TasksToEvict(const Session& ssn, const JobView& view, bool& has_more);
// TasksToEvict appending the pods to `out`.
void AppendTasksToEvict(const Session& ssn, const JobView& view, bool& has_more,
                        std::vector<PodId>& out);

// KAI's eviction message for a victim pod.
std::string EvictionMessage(const Session& ssn, EvictionAction action, PodId victim,
                            JobId preemptor);

}  // namespace gantry
