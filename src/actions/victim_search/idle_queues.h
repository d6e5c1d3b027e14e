// Accelerator of the victim search: the simulations' job order without its idle leaf queues.
//
// A simulation (KAI's TryToVirtuallyAllocatePreemptorAndGetVictims) pops every job of its order
// in turn, but only two kinds of entries act: the preemptor (its pending pods are placed) and
// the victim jobs (their evicted pods may be placed again). Every other entry is a pending job
// that is popped and skipped; a skip changes nothing in the session. On a busy cluster most
// entries are such jobs (ten per node on the benchmark's busy shape), and most simulation time
// went into popping them.
//
// The rule: a leaf queue none of whose entries acts (no preemptor, no victim job: an idle leaf)
// is left out of the order (JobsByQueue::Mute), from the start of the simulation or from the pop
// of its last acting entry on (what is left of it is then idle). Why the acting entries then come
// in the same order, so that the simulation places the same pods on the same nodes:
//
// - An idle leaf's pops skip: they change neither the session nor any other queue's entries.
//   What they could change is which queue wins a later comparison. At each level the order
//   takes the best of the sibling queues that hold entries, each sibling represented by its
//   best entry (for a leaf, its own front; for an inner queue, the front of its best leaf).
// - Suppose every proper ancestor of the idle leaf is the only queue of its level (the only
//   child of its parent, or the only root): then no comparison involves an ancestor, and the
//   idle leaf's entries only ever compete, as themselves, with its siblings. Take any pop of an
//   acting entry e in the full order: e's queue won over all siblings holding entries, idle
//   ones included. If the queue order is a strict total order on siblings with their entries
//   (Session::QueueOrderTotalOnSiblings: proportion's rules (1)-(6) are numbers compared in
//   turn, and rules (7)-(8) order its sibling queues totally), the best of a set is the best of
//   every subset holding it: e's queue wins over the non-idle siblings too. The non-idle
//   siblings' fronts are the same in both orders (pops of idle leaves do not touch them), and
//   every queue's inputs (the states of its subtree's pods, Session::
//   QueueOrderDependsOnlyOnPodStates) are the same, because only acting entries change states.
//   By induction on the acting pops, the order without the idle leaves pops the same acting
//   entries in the same sequence, with the same session state at each; the idle pops it leaves
//   out were skips. (A leaf that becomes idle when its last acting entry is popped is the same
//   case from that pop on.)
//
// The rule applies with the solver shortcuts and `SchedulerParams::solver_idle_queues` on, to the
// simulations whose order is copied from a base (simulation_order.h: an order whose entries do
// not change rank while queued), when the queue order is pod-state only and total on siblings.
// Differential test: tests/unit/solver_idle_queues_test.cc (the busy shape and others, rule on,
// off and the plain search, every decision compared).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry::victim_search {

// Per queue: whether it is a leaf whose proper ancestors are each the only queue of their level
// (the only child of its parent, or the only root). Such leaves are all siblings: chains of lone
// ancestors cannot part, so the leaves share their parent (or are all roots).
inline std::vector<uint8_t> LoneChainLeaves(const Session& ssn) {
  const auto& queues = ssn.cluster().queues;
  size_t roots = 0;
  for (const Queue& q : queues) roots += q.parent == kNone;
  auto alone = [&](QueueId a) {
    const QueueId up = queues[a].parent;
    return up == kNone ? roots == 1 : queues[up].children.size() == 1;
  };
  std::vector<uint8_t> lone(queues.size(), 0);
  for (QueueId q = 0; q < static_cast<QueueId>(queues.size()); ++q) {
    if (!queues[q].IsLeaf()) continue;
    bool ok = true;
    for (QueueId a = queues[q].parent; a != kNone && ok; a = queues[a].parent) ok = alone(a);
    lone[q] = ok ? 1 : 0;
  }
  return lone;
}

class IdleQueues {
 public:
  // Whether the rule holds in this session (see the file comment).
  static bool Applies(const Session& ssn) {
    return ssn.params().solver_shortcuts && ssn.params().solver_idle_queues &&
           ssn.QueueOrderDependsOnlyOnPodStates() && ssn.QueueOrderTotalOnSiblings();
  }

  // The leaves the rule may leave out: those whose proper ancestors are each the only queue of
  // their level (LoneChainLeaves).
  explicit IdleQueues(const Session& ssn) : candidate_(LoneChainLeaves(ssn)) {
    acting_.assign(candidate_.size(), 0);
    for (QueueId q = 0; q < static_cast<QueueId>(candidate_.size()); ++q) {
      if (candidate_[q]) candidates_.push_back(q);
    }
  }

  // A simulation's order holds its entries: mutes the candidate leaves holding neither the
  // preemptor nor a victim job, and follows `order` until the next Start. Returns how many.
  size_t Start(const Session& ssn, JobsByQueue& order, JobId preemptor,
               std::span<const JobId> victim_jobs) {
    const auto& jobs = ssn.cluster().jobs;
    for (QueueId q : started_) acting_[q] = 0;
    started_.clear();
    order_ = &order;
    auto count = [&](JobId j) {
      const QueueId q = jobs[j].queue;
      if (q == kNone) return;
      if (acting_[q]++ == 0) started_.push_back(q);
    };
    count(preemptor);
    for (JobId j : victim_jobs) {
      if (j != preemptor) count(j);
    }
    size_t muted = 0;
    for (QueueId q : candidates_) {
      if (acting_[q] == 0) {
        order.Mute(q);
        ++muted;
      }
    }
    return muted;
  }
  // An acting entry of job j (the preemptor or a victim job) was popped: once its leaf holds no
  // acting entry any more, the rest of the leaf is idle too, and muted if a candidate (then
  // true).
  bool Popped(const Session& ssn, JobId j) {
    const QueueId q = ssn.cluster().jobs[j].queue;
    if (q == kNone || acting_[q] == 0) return false;
    if (--acting_[q] != 0 || !candidate_[q]) return false;
    order_->Mute(q);
    return true;
  }

 private:
  std::vector<QueueId> candidates_;
  std::vector<uint8_t> candidate_;  // per queue: in candidates_
  std::vector<int32_t> acting_;     // per queue: acting entries not popped yet in order_
  std::vector<QueueId> started_;    // the queues whose acting_ Start set
  JobsByQueue* order_ = nullptr;    // the current simulation's order
};

}  // namespace gantry::victim_search
