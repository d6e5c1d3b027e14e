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
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "actions/victim_search/eviction_messages.h"
#include "actions/victim_search/search_budget.h"
#include "actions/victim_search/stats.h"
#include "actions/victim_search/victims.h"
#include "framework/jobs_by_queue.h"
#include "framework/session.h"
#include "framework/statement.h"

namespace gantry {

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
  // The action's time budget (search_budget.h); null: the search is not timed.
  const ActionSearchBudget* budget = nullptr;
  // Optional (preempt's and reclaim's repeated failures, actions/preempt/repeated_failures.h,
  // actions/reclaim/repeated_failures.h): the search is known to end unsolved, its generators
  // exhausted, after this many scenarios refused by the scenario filters and
  // `known_failure_simulated` passed and simulated (preempt: none). SolveJob then counts it so,
  // after the same budget checks, without searching.
  std::optional<int64_t> known_filtered_failure;
  int64_t known_failure_simulated = 0;
  // Whether `validator` accepts only simulations that placed again every victim they evicted
  // (consolidation's). With the shortcuts on, the joint profile rule then applies
  // (victim_search/joint_profile.h).
  bool every_victim_placed_again = false;
};

struct SolverResult {
  bool solved = false;
  std::unique_ptr<Statement> statement;  // holds the solution's operations; commit to apply
  std::vector<PodId> victims;
  // How the search ended (kSolved exactly when `solved`), whether it ran on a reduced budget,
  // and whether the action must stop searching for its later jobs (its time ran out).
  SearchEnd end = SearchEnd::kGeneratorsExhausted;
  bool reduced_budget = false;
  bool stops_action = false;
  // What the search added to the action's scenario counters (ActionCounts), and whether its time
  // budget cut it short (then its end proves nothing about a search that had time).
  int64_t scenarios_simulated = 0;
  int64_t scenarios_filtered = 0;
  bool cut_by_budget = false;
};

// Searches victims for `job`. On success the statement holds the evictions and the job's
// pipelined pods; on failure the session is as it was. Finds nothing when no plugin registered
// a scenario generator (Session::scenario_generators), or when the search's time budget
// (spec.budget) runs out first. Counts the search in the action's counts by how it ended.
SolverResult SolveJob(Session& ssn, JobId job, SolverSpec& spec);

}  // namespace gantry
