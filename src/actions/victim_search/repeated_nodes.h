// Accelerator of the victim search: a scenario's node whose simulation would repeat the one of an
// earlier node of the same scenario that failed (issue 24).
//
// Why it is sound. A scenario is simulated once per node of its latest victim job, each time with
// the tasks of the scenario's jobs that have potential victims on that node evicted
// (Scenario::VictimTasksFromNode: every task of those jobs, in the order of the node's job list,
// Scenario::JobsOnNode). A victim gang spread over several nodes that share no other potential
// victim job of the scenario gives all of them the same list. Between two nodes the reference path
// rolls the statement back to the same checkpoint and takes the feasible nodes the evictions added
// off the end of the list, so every node starts from the same feasible list and, where undo gives
// back exactly the state before (KeptEvictionBase::Applies: queue and node sums of whole numbers,
// no devices allocated through claims), from the same session. A node whose job list is an earlier
// node's then evicts the same pods in the same order and places the same jobs the same way: its
// simulation ends as that node's did. An earlier node the loop went on from ended kFailed (the
// pending pods not placed, or the pre-check failing before evicting; kRejected and kSolved end the
// scenario); so does this one, and it is skipped without evicting. On the scenario's last node the
// other answers of a hopeless simulation (kUnsolvable, kRejected when the caller may skip) end the
// scenario as kFailed does, so skipping there is the same too.
//
// What a skipped simulation leaves out outlives no rollback: the fit error a failing pre-predicate
// sets on a pending pod is the text the earlier node's simulation set on it already.
//
// Part of SearchAccelerator (accelerator.h), which exists only with the solver shortcuts on;
// SchedulerParams::solver_repeated_nodes switches this rule alone off (its differential test:
// tests/unit/cycle_accelerators_test.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "actions/victim_search/kept_base.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/stats.h"
#include "framework/session.h"

namespace gantry::victim_search {

class RepeatedNodes {
 public:
  // Whether the rule applies to this search (the switch on, undo exact).
  void StartSearch(const Session& ssn) {
    applies_ = ssn.params().solver_repeated_nodes && KeptEvictionBase::Applies(ssn);
  }
  // A scenario's node loop starts: no node has failed yet.
  void StartScenario() { failed_.clear(); }
  // Whether `node`'s simulation would repeat an earlier failed node's of this scenario.
  bool Repeats(const Scenario& scenario, NodeId node) const {
    if (!applies_ || failed_.empty()) return false;
    const std::span<const JobId> jobs = scenario.JobsOnNode(node);
    if (jobs.empty()) return false;  // (no potential victim there: not the case this rule is for)
    return std::any_of(failed_.begin(), failed_.end(), [&](NodeId f) {
      const std::span<const JobId> other = scenario.JobsOnNode(f);
      return std::equal(jobs.begin(), jobs.end(), other.begin(), other.end());
    });
  }
  // `node`'s simulation ended kFailed (the loop goes on to the next node).
  void NoteFailed(const Scenario& scenario, NodeId node) {
    if (!applies_ || scenario.JobsOnNode(node).empty()) return;
    // (One node per distinct list is enough to compare with.)
    if (!Repeats(scenario, node)) failed_.push_back(node);
  }

 private:
  bool applies_ = false;
  std::vector<NodeId> failed_;  // this scenario's failed nodes, one per distinct job list
};

}  // namespace gantry::victim_search
