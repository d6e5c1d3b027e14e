// What the victim search's reference path (solver.cc) owns for one search and shares with its
// accelerators (accelerator.h): the pending job, the action's spec and the feasible nodes of the
// current prefix; and how a simulation or a prefix ended.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "actions/victim_search/scenario.h"
#include "actions/victim_search/solver.h"
#include "framework/session.h"

namespace gantry::victim_search {

// What the reference path owns for one search.
struct SearchContext {
  SearchContext(Session& s, JobId j, SolverSpec& sp) : ssn(s), job(j), spec(sp) {}

  void AddFeasible(NodeId n) {
    if (feasible[n]) return;
    feasible[n] = 1;
    feasible_list.push_back(n);
    feasible_changes.push_back(n);
    ++feasible_version;
  }
  // A prefix's (or probe's) starting feasible nodes: the spec's and those of `recorded`.
  void ResetFeasible(std::span<const PodId> recorded) {
    feasible.assign(ssn.cluster().nodes.size(), 0);
    feasible_list.clear();
    feasible_changes.clear();
    ++feasible_generation;
    ++feasible_version;
    for (NodeId n : spec.feasible_nodes) AddFeasible(n);
    for (PodId p : recorded) {
      if (ssn.pod(p).node != kNone) AddFeasible(ssn.pod(p).node);
    }
  }
  // Adds the nodes of `pods` that are not feasible yet, appending them to `added`.
  void AddNodesOf(std::span<const PodId> pods, std::vector<NodeId>& added) {
    for (PodId p : pods) {
      const NodeId n = ssn.pod(p).node;
      if (n != kNone && !feasible[n]) {
        AddFeasible(n);
        added.push_back(n);
      }
    }
  }
  // Removes `added`, the nodes added last (AddNodesOf).
  void RemoveAdded(const std::vector<NodeId>& added) {
    for (NodeId n : added) {
      feasible[n] = 0;
      feasible_changes.push_back(n);
    }
    feasible_list.resize(feasible_list.size() - added.size());
    ++feasible_version;
  }

  Session& ssn;
  JobId job;
  SolverSpec& spec;
  // Nodes the pending job may use, as flags and as a list (the list is what simulations rank).
  std::vector<char> feasible;
  std::vector<NodeId> feasible_list;
  uint64_t feasible_version = 0;  // bumped on every change of the list
  // The nodes added to or removed from the list since ResetFeasible last started it again (under
  // a new generation), in order: a consumer keeping sums over the list follows them
  // (domain_precheck.h).
  std::vector<NodeId> feasible_changes;
  uint64_t feasible_generation = 0;
};

// How a simulation ended. kUnsolvable: decided before placing anything that the outcome is
// kFailed or kRejected (not which); only with the caller's leave (Simulate's `may_skip`).
enum class Outcome { kFailed, kRejected, kSolved, kUnsolvable };

// One prefix's result (see the solver).
struct PartialResult {
  bool solved = false;
  std::unique_ptr<Statement> statement;
  std::vector<PodId> victim_tasks;
  VictimGroups victim_groups;
  // With the kept eviction base: the statement is the base statement; `evicted` are the pods it
  // evicted before the simulation, which ended at `evict_end`.
  std::vector<PodId> evicted;
  Statement::Checkpoint evict_end = 0;
};

}  // namespace gantry::victim_search
