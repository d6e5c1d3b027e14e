// Accelerator of the victim search: a simulation's acting entries in their order, without popping
// the pending jobs ahead of them.
//
// A simulation pops every entry of its job order (simulation_order.h), but only the preemptor and
// the victim jobs act (the acting entries); the pending jobs in between are popped and skipped.
// With the idle leaves left out (idle_queues.h), the pops that remain are mostly the pending jobs
// queued ahead of an acting entry in a leaf that acts. This rule finds the next acting entry
// without them.
//
// Setting (the idle-queue rule's, idle_queues.h): every leaf holding an acting entry has only
// proper ancestors that are each the only queue of their level, so those leaves are siblings
// and the order picks among them directly; the queue order is a function of pod states
// (Session::QueueOrderDependsOnlyOnPodStates) and total on siblings
// (Session::QueueOrderTotalOnSiblings), with job-order keys (Session::JobQueueOrderKeyed) that
// are the whole comparison of the sides (equal keys: sides equal, decided by the queues alone;
// proportion's are, see its SiblingOrderTotal: the first queue order function decides).
// Write (L, e) for leaf L with entry e at its front and K(L, e) for its key. Then "(L, e) before
// (L', e')" is a total preorder on all such pairs: keys first, and on equal keys of distinct
// siblings the queues' own strict order; two pairs of one leaf with equal keys are tied. A leaf's
// entries leave it in the job order (fixed: pending jobs never change, a victim job changes only
// when it is popped and placed).
//
// Lemma (keys fixed): let x be an entry of leaf L and y one of leaf L' != L, and P(x) the
// largest pair (L, z) over the entries z of L from its front up to x. Then x is popped before y
// if and only if P(x) is before P(y). Proof: let w be the entry of L' up to y where P(y) is
// reached. w is popped only when (L', w) is the best front; while x is not popped, L's front is
// some z up to x with (L, z) no later than P(x), before P(y) = (L', w): so x is popped before
// w, hence before y. The converse is the same with L and L' swapped.
//
// Keys are fixed between two acting pops: a key depends on its leaf's pod states only, and
// only acting entries change pod states, each in its own leaf (placing a victim again, or the
// preemptor's pods). So, per leaf L with acting entries left, let the run be its entries after
// its last acting entry popped (from the start: all) up to its next acting entry a, and M(L)
// the largest pair over the run, computed in L's state now. The next acting entry popped is the
// a of the leaf with the earliest M(L): by the lemma, provided the pending entries of the runs
// already popped do not change the maxima. They do not: if an entry w of L' where M(L') is
// reached had been popped (at time t, after L''s last acting pop), then at the first acting pop
// after t, of an entry x of some leaf L, L's front at t (later than (L', w), which was the best
// front at t) would have had to be popped while L''s fronts, the rest of its run up to its
// acting entry (each no later than (L', w)), beat it: L' would have popped its acting entry
// first, so its run would not be the current one. When an acting entry of L is popped and acted
// upon, only M(L) changes; it is computed again from the entries after it. The entries of leaves
// with no acting entry are never looked at: they only ever delay acting pops, never reorder them
// (the lemma's proof does not involve them).
//
// Hence the simulation acts on the same entries in the same order, in the same session states,
// as when it pops every entry; the pending entries it skips were skips. Cost: one key per entry
// of the runs while two leaves or more still act (with one left, its acting entries come in its
// own order: nothing to compare), no heap; the maximum over a leaf's fixed entries is kept per
// leaf state (FixedMax: the preemptor's leaf of a reclaim search is in the same state at the
// start of every simulation, so its first run costs no key after the first). The fixed pending
// jobs (those with no active pod: never victims) are ordered per leaf once per search, when the
// leaf first acts; the others (pending jobs with active pods, the victim jobs, the preemptor)
// per simulation.
//
// The maximum over a range of a leaf's fixed entries, by request (a rule of its own): where the
// first queue order says that its key of a whole job depends on the job only through the bits of
// its request (Session::ViewTasksQuantities; SessionHooks::SetJobQueueKeyByRequest: proportion's
// does), fixed entries of one leaf asking for the same quantities have equal keys in every state.
// The fixed entries are grouped by request (their pods never change within a search, so neither
// do their requests) when the leaf's list is sorted; the maximum over [f, g) is then taken over
// the first entry in [f, g) of each group, in list order, with the same comparison as the scan
// over every entry. The same answer, key and entry: keys compare as a total preorder (the
// lemma's; proportion's fields are finite numbers), the scan keeps the first entry reaching the
// maximum, and an entry with the same key as an earlier one is never taken (the kept maximum is
// no less than that earlier key from its turn on). One key per distinct request instead of one
// per entry: the victim leaves' runs, keyed again in each simulation (their evictions change
// their states), hold hundreds of pending jobs of a few sizes (the scan that remains reads one
// byte per entry, and stops once every group was met). A leaf with more than
// FixedLeaf::kMaxRequests distinct requests is scanned as before (fixed_lists.h). Switch:
// `SchedulerParams::solver_acting_run_requests`; differential test: the acting-runs test below,
// with this rule alone off too.
//
// The fixed entries may come from lists kept between searches (fixed_lists.h: KeptPending, its
// own switch and argument); those hold the preemptor and may hold a first-simulation victim
// with no active pod, which the listing leaves out: such entries are passed over (holes_).
//
// Switch: `SchedulerParams::solver_acting_runs` (with the shortcuts and the idle-queue rule's
// conditions); differential test: tests/unit/solver_acting_runs_test.cc (busy and default
// shapes, rule on, off and the plain search at the smaller sizes, every decision compared).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "actions/victim_search/fixed_lists.h"
#include "actions/victim_search/idle_queues.h"
#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry::victim_search {

class ActingRuns {
 public:
  // Whether the rule holds in this session (see the file comment; the simulation order's base,
  // simulation_order.h, must apply too).
  static bool Applies(const Session& ssn) {
    return ssn.params().solver_shortcuts && ssn.params().solver_acting_runs &&
           ssn.QueueOrderDependsOnlyOnPodStates() && ssn.QueueOrderTotalOnSiblings() &&
           ssn.JobQueueOrderKeyed() && ssn.JobOrderKeyed() && ssn.JobTieBreakersDistinct();
  }

  // Lists per leaf, once, the jobs of `pending_jobs` with no active pod that are not flagged in
  // `is_victim_job` (the first simulation's victims): the same in every simulation of the search
  // (as the simulation order's base, simulation_order.h; each leaf's ordered when first needed).
  // The others are written to `others`. (`by_request_count`: the maxima taken by request.)
  ActingRuns(const Session& ssn, std::span<const JobId> pending_jobs,
             const std::vector<char>& is_victim_job, std::vector<JobId>& others,
             uint64_t& by_request_count)
      : ActingRuns(ssn, by_request_count) {
    const auto& cluster = ssn.cluster();
    own_.resize(cluster.queues.size());
    lists_ = &own_;
    others.clear();
    for (JobId j : pending_jobs) {
      bool active = false;
      for (PodId p : cluster.jobs[j].pods) active = active || IsActiveAllocated(ssn.pod(p).status);
      if (active || is_victim_job[j]) {
        others.push_back(j);
        continue;
      }
      const QueueId q = cluster.jobs[j].queue;
      if (q == kNone || !lone_[q]) continue;  // (never looked at: see Start)
      own_[q].entries.push_back({JobOrderKey{}, j, 0});
    }
  }

  // The same from the lists kept between searches (fixed_lists.h: KeptPending), for the preemptor
  // `preemptor` and the first simulation's victim jobs `victim_jobs`: the pending jobs are those
  // of the session's pending jobs with a pending pod now, but the preemptor.
  ActingRuns(const Session& ssn, JobId preemptor, std::span<const JobId> victim_jobs,
             std::vector<JobId>& others, uint64_t& by_request_count)
      : ActingRuns(ssn, by_request_count) {
    kept_ = &KeptPending::Refreshed(ssn, lone_, by_request_);
    lists_ = &kept_->leaves();
    preemptor_ = preemptor;
    others.clear();
    for (JobId j : kept_->others()) {
      if (j != preemptor) others.push_back(j);
    }
    // (The kept lists hold the preemptor and the first simulation's victims among the fixed
    // entries where they have no active pod: passed over; such victims are among the others.)
    if (kept_->kind(preemptor) == KeptPending::kFixed) holes_.push_back(preemptor);
    for (JobId j : victim_jobs) {
      if (j == preemptor) continue;
      const KeptPending::Kind kind = kept_->kind(j);
      if (kind == KeptPending::kFixed) holes_.push_back(j);
      if (kind == KeptPending::kFixed || kind == KeptPending::kFixedElsewhere) others.push_back(j);
    }
  }

  // The pending jobs but the preemptor, as the listing would give them (kept lists only).
  void PendingJobs(const Session& ssn, std::vector<JobId>& out) const {
    out.clear();
    for (JobId j : ssn.jobs_pending_at_open()) {
      if (j != preemptor_ && kept_->kind(j) != KeptPending::kNotPending) out.push_back(j);
    }
  }

  // A simulation starts: `pending` are its other pending entries (`others`, not victims),
  // `victim_jobs` its victim jobs (placed again when popped), `preemptor` the preemptor's view.
  // False when the rule does not apply to it (an acting entry outside the lone-chain leaves, or
  // in a queue the order does not take): the caller pops its order as usual.
  bool Start(const Session& ssn, std::span<const JobId> pending, std::span<const JobId> victim_jobs,
             const JobView& preemptor) {
    const auto& cluster = ssn.cluster();
    for (size_t i = 0; i < used_; ++i) leaf_of_[leaves_[i].queue] = -1;
    used_ = 0;
    // (Leaves are reused from earlier simulations, their lists' storage kept.)
    auto leaf_for = [&](QueueId q) -> Leaf& {
      if (leaf_of_[q] < 0) {
        leaf_of_[q] = static_cast<int32_t>(used_);
        if (used_ == leaves_.size()) leaves_.emplace_back();
        Leaf& leaf = leaves_[used_++];
        leaf.queue = q;
        leaf.extras.clear();
        leaf.next_fixed = 0;
        leaf.next_extra = 0;
        leaf.acting = 0;
        leaf.dirty = true;
      }
      return leaves_[static_cast<size_t>(leaf_of_[q])];
    };
    // (An entry of a queue the order does not take is never popped: it never acts.)
    auto add_acting = [&](const JobView& v) {
      const QueueId q = cluster.jobs[v.job].queue;
      if (!Accepted(cluster, q)) return true;
      if (!lone_[q]) return false;
      Leaf& leaf = leaf_for(q);
      SortFixed(ssn, q);
      leaf.extras.push_back({ssn.JobOrderKeyOf(v), v, true});
      ++leaf.acting;
      return true;
    };
    bool ok = add_acting(preemptor);
    for (JobId j : victim_jobs) {
      if (ok && j != preemptor.job) ok = add_acting(JobView{j, false, {}});
    }
    if (!ok) return false;
    for (JobId j : pending) {
      const QueueId q = cluster.jobs[j].queue;
      if (q == kNone || leaf_of_[q] < 0) continue;  // (a leaf with no acting entry)
      Leaf& leaf = leaves_[static_cast<size_t>(leaf_of_[q])];
      JobView v{j, false, {}};
      leaf.extras.push_back({ssn.JobOrderKeyOf(v), std::move(v), false});
    }
    for (size_t i = 0; i < used_; ++i) {
      std::sort(leaves_[i].extras.begin(), leaves_[i].extras.end(),
                [](const Extra& a, const Extra& b) { return a.key < b.key; });
    }
    return true;
  }

  // The next acting entry in the simulation's order, its leaf's state taken now (the caller acts
  // on each before asking for the next); false when none is left.
  bool Next(const Session& ssn, JobView& out) {
    // (With one leaf left acting there is nothing to compare: its acting entries come in its
    // own order, and no maximum is needed.)
    Leaf* only = nullptr;
    size_t acting_leaves = 0;
    for (size_t i = 0; i < used_; ++i) {
      if (leaves_[i].acting > 0) {
        only = &leaves_[i];
        ++acting_leaves;
      }
    }
    if (acting_leaves == 0) return false;
    if (acting_leaves == 1) {
      size_t e = only->next_extra;
      while (!only->extras[e].acts) ++e;
      only->next_extra = e + 1;
      --only->acting;
      out = only->extras[e].view;
      return true;
    }
    Leaf* best = nullptr;
    for (size_t i = 0; i < used_; ++i) {
      Leaf& leaf = leaves_[i];
      if (leaf.acting == 0) continue;
      if (leaf.dirty) RunMax(ssn, leaf);
      if (best == nullptr || Before(ssn, leaf, *best)) best = &leaf;
    }
    // Past the run: its fixed entries ahead of the acting one, then the acting one.
    const Extra& acting = best->extras[best->acting_at];
    const auto& list = FixedOf(best->queue);
    while (best->next_fixed < list.size() && list[best->next_fixed].key < acting.key) {
      ++best->next_fixed;
    }
    best->next_extra = best->acting_at + 1;
    --best->acting;
    best->dirty = true;
    out = acting.view;
    return true;
  }

 private:
  ActingRuns(const Session& ssn, uint64_t& by_request_count)
      : lone_(LoneChainLeaves(ssn)),
        by_request_count_(&by_request_count),
        by_request_(ssn.params().solver_acting_run_requests && ssn.JobQueueKeyByRequest()) {
    const size_t queues = ssn.cluster().queues.size();
    memos_.resize(queues);
    next_memo_.assign(queues, 0);
    leaf_of_.assign(queues, -1);
  }

  bool IsHole(JobId j) const {
    return !holes_.empty() && std::find(holes_.begin(), holes_.end(), j) != holes_.end();
  }
  struct Extra {
    JobOrderKey key;
    JobView view;
    bool acts;
  };
  struct Leaf {
    QueueId queue = kNone;
    std::vector<Extra> extras;  // by job order
    size_t next_fixed = 0;      // the run starts here in its fixed entries ...
    size_t next_extra = 0;      // ... and here in extras
    int32_t acting = 0;         // acting entries not popped yet
    bool dirty = true;          // max not computed for the current run and state
    size_t acting_at = 0;       // the run's acting entry in extras
    QueueOrderKey max;          // the largest key of the run, and an entry reaching it
    JobView max_view;
  };

  // Whether the order takes entries of queue q (JobsByQueue: a leaf whose named parent exists).
  static bool Accepted(const Cluster& c, QueueId q) {
    return q != kNone && c.queues[q].IsLeaf() &&
           (c.queues[q].parent_name.empty() || c.queues[q].parent != kNone);
  }

  // Orders the fixed jobs of leaf q, once, when it first holds an acting entry (their keys are
  // the same in every state of the search: their pods never change; kept lists: see
  // fixed_lists.h).
  void SortFixed(const Session& ssn, QueueId q) {
    if (kept_ != nullptr) {
      kept_->Sort(ssn, q);
    } else {
      SortFixedLeaf(ssn, own_[q], by_request_);
    }
  }
  const std::vector<FixedEntry>& FixedOf(QueueId q) const { return (*lists_)[q].entries; }

  // M(L) for the leaf's current run, in its state now: the largest of its fixed entries ahead
  // of the acting one (kept per leaf state, see FixedMax) and of its other entries up to it.
  void RunMax(const Session& ssn, Leaf& leaf) {
    size_t a = leaf.next_extra;
    while (!leaf.extras[a].acts) ++a;
    const auto& list = FixedOf(leaf.queue);
    const auto end = std::lower_bound(
        list.begin() + static_cast<std::ptrdiff_t>(leaf.next_fixed), list.end(), leaf.extras[a].key,
        [](const FixedEntry& f, const JobOrderKey& k) { return f.key < k; });
    const size_t g = static_cast<size_t>(end - list.begin());
    bool any = false;
    auto take = [&](const QueueOrderKey& k, const JobView& v) {
      // (Equal keys in one leaf are tied: the first is kept.)
      if (!any || leaf.max.Compare(k) < 0) {
        leaf.max = k;
        leaf.max_view.job = v.job;
        leaf.max_view.partial = v.partial;
        leaf.max_view.pods.assign(v.pods.begin(), v.pods.end());
        any = true;
      }
    };
    if (leaf.next_fixed < g) {
      const Memo& m = FixedMax(ssn, leaf.queue, leaf.next_fixed, g);
      if (m.job != kNone) take(m.key, JobView{m.job, false, {}});  // (none: all passed over)
    }
    for (size_t e = leaf.next_extra; e <= a; ++e) {
      take(ssn.JobQueueKeyOf(leaf.queue, leaf.extras[e].view), leaf.extras[e].view);
    }
    leaf.acting_at = a;
    leaf.dirty = false;
  }

  // The largest key of the fixed entries [f, g) of leaf q, in its state now, and a job reaching
  // it. Kept per leaf while its queue version is the same (the same states of its pods, so the
  // same keys: Session::QueueOrderDependsOnlyOnPodStates), e.g. the preemptor's leaf, which
  // starts every simulation of a reclaim search in the same state.
  struct Memo {
    uint64_t version = 0;
    size_t f = 0, g = 0;
    QueueOrderKey key;
    JobId job = kNone;
  };
  static constexpr size_t kMemosPerLeaf = 4;
  const Memo& FixedMax(const Session& ssn, QueueId q, size_t f, size_t g) {
    auto& memos = memos_[q];
    const uint64_t version = ssn.queue_version(q);
    for (const Memo& m : memos) {
      if (m.job != kNone && m.version == version && m.f == f && m.g == g) return m;
    }
    const FixedLeaf& fixed = (*lists_)[q];
    const auto& list = fixed.entries;
    Memo m{version, f, g, {}, kNone};
    auto take = [&](size_t i) {
      const QueueOrderKey k = ssn.JobQueueKeyOf(q, JobView{list[i].job, false, {}});
      if (m.job == kNone || m.key.Compare(k) < 0) {
        m.key = k;
        m.job = list[i].job;
      }
    };
    if (by_request_ && fixed.grouped) {
      // (The first entry in [f, g) of each request, in list order: see the file comment.)
      group_seen_.assign(fixed.requests.size(), 0);
      size_t seen = 0;
      for (size_t i = f; i < g && seen < group_seen_.size(); ++i) {
        if (group_seen_[list[i].group] || IsHole(list[i].job)) continue;
        group_seen_[list[i].group] = 1;
        ++seen;
        take(i);
      }
      ++*by_request_count_;
    } else {
      for (size_t i = f; i < g; ++i) {
        if (!IsHole(list[i].job)) take(i);
      }
    }
    if (memos.size() < kMemosPerLeaf) {
      memos.push_back(m);
      return memos.back();
    }
    Memo& slot = memos[next_memo_[q]];
    next_memo_[q] = static_cast<uint8_t>((next_memo_[q] + 1) % kMemosPerLeaf);
    slot = m;
    return slot;
  }

  // Whether leaf a's run maximum comes before leaf b's (distinct sibling leaves).
  static bool Before(const Session& ssn, const Leaf& a, const Leaf& b) {
    const int c = a.max.Compare(b.max);
    if (c != 0) return c < 0;
    return ssn.QueueLess(a.queue, b.queue, &a.max_view, &b.max_view, {}, {});
  }

  std::vector<uint8_t> lone_;                // per queue: a leaf of the lone chain
  uint64_t* by_request_count_;               // (the maxima taken by request: stats)
  bool by_request_ = false;                  // the maxima by request (see the file comment)
  std::vector<FixedLeaf> own_;               // per leaf: its fixed pending jobs (listed here) ...
  std::vector<FixedLeaf>* lists_ = nullptr;  // ... these or the kept ones
  KeptPending* kept_ = nullptr;              // the kept lists, if used
  JobId preemptor_ = kNone;                  // (with the kept lists)
  std::vector<JobId> holes_;                 // fixed entries passed over (with the kept lists)
  std::vector<uint8_t> group_seen_;          // (FixedMax's scratch)
  std::vector<Leaf> leaves_;                 // the simulation's leaves with acting entries ...
  size_t used_ = 0;                          // ... the first used_ of them
  std::vector<int32_t> leaf_of_;             // per queue: its place in leaves_, or -1
  std::vector<std::vector<Memo>> memos_;     // per leaf: FixedMax's kept answers ...
  std::vector<uint8_t> next_memo_;           // ... and the one to replace next
};

}  // namespace gantry::victim_search
