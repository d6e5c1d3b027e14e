// Accelerator of the victim search: the capacity pre-check per required topology domain (issue 24).
//
// Why it is sound. A sub-group of the pending job (a group or a pod set) whose placement the
// subset-node functions confine to one domain (Session::RequiredDomains: the topology plugin, for
// a required level) has all of its pending pods placed inside the feasible nodes of a single
// domain of that level, or not at all. The whole-GPU block condition (gpu_blocks.h) is necessary
// for placing pods on a set of nodes; so when it fails in every domain for some such sub-group,
// the pending pods cannot be placed and the simulation ends kFailed, exactly as when the
// cluster-wide pre-check (capacity_blocks.h) fails. The counts are those the cluster-wide
// pre-check uses, split by domain: the free GPUs (idle + releasing) of the feasible nodes once the
// scenario's evictions are done.
//
// How it is counted. Per batch, the blocks of every domain in the prefix's base state (recorded
// victims evicted). Evictions only add free GPUs and feasible nodes, so when some domain already
// fits in the base state the rule cannot apply to the batch; otherwise only a domain holding a
// node the scenario touches can fit, and those few are counted from the base counts corrected on
// the touched nodes. Sums are used only while every count is a whole number (exact in any order);
// otherwise the rule stays out of the way.
//
// During a simulation (FailsNow). Before the pending pods' turn, victims placed again only take
// free GPUs away, so once no domain fits as the session is then, the pending pods' turn fails
// (kFailed). This holds whatever the base state was: FailsNow counts the feasible nodes afresh and
// needs no base counts. So it is also asked when some domain fitted in the base state (the
// pre-checks before evicting then cannot apply), where victims placed again ahead of the pending
// pods took the blocks the evictions freed: on the bench family's topology shape most
// consolidation simulations that end "not placed" end so (issue 24). That extension has a switch
// of its own, SchedulerParams::solver_domain_during_simulation.
//
// FailsNow's counts follow the changes (SchedulerParams::solver_domain_follow_journal, issue 24).
// FailsNow is asked after every victim job placed again ahead of the pending pods, and counting
// every feasible node at each call made it most of the cost of those turns (topology, 1,000
// nodes: about a fifth of the cycle's instructions). The counts are sums of per-node terms (a
// member's free GPUs and its blocks of each size), so between two calls they change only by the
// terms of the nodes that joined or left the feasible list (SearchContext::feasible_changes, in
// order, since the list was last started again) and of the members a pod was added to or removed
// from (the session's node journal, SessionVersions::node_journal, since the position of the last
// call). Those terms are taken out (with the free GPUs the node was counted with) and put in (with
// its free GPUs now); every term is a whole number (a member's free GPUs is checked
// ExactlySummable when it is counted, as the count afresh checks every member), so the sums are
// those of the count afresh to the bit, in any order. A member whose free GPUs did not change adds
// nothing; a changed member whose count is not a whole number makes the answer false, as the count
// afresh would. So the answers, and with them the decisions and every counter, are the count
// afresh's. A new prefix (the profiles change), a list started again or a new journal generation
// count afresh.
//
// Part of SearchAccelerator (accelerator.h, through CapacityBlocks), which exists only with the
// solver shortcuts on; SchedulerParams::solver_domain_precheck switches this rule alone off (the
// differential tests compare the decisions with and without it).
#pragma once

#include <cstdint>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "framework/session.h"

namespace gantry::victim_search {

class DomainPrecheck {
 public:
  // How a list of nodes changed (SearchContext's feasible nodes): `flags` marks its members, and
  // `changes` lists, in order, the nodes added to or removed from it since it was last started
  // again under a new `generation`.
  struct ListChanges {
    const std::vector<char>* flags = nullptr;
    const std::vector<NodeId>* changes = nullptr;
    uint64_t generation = 0;
  };

  // The pending job's confined sub-groups (none, or the rule switched off: the rule does
  // nothing for this search).
  void StartSearch(const Session& ssn, JobId job) {
    confined_.clear();
    now_valid_ = false;
    if (!ssn.params().solver_domain_precheck) return;
    during_enabled_ = ssn.params().solver_domain_during_simulation;
    follow_journal_ = ssn.params().solver_domain_follow_journal;
    const Job& j = ssn.cluster().jobs[job];
    for (size_t g = 0; g < j.groups.size(); ++g) {
      const SubGroupRef ref{job, false, static_cast<int32_t>(g)};
      Add(ssn, ref);
    }
    for (size_t s = 0; s < j.pod_sets.size(); ++s) {
      const SubGroupRef ref{job, true, static_cast<int32_t>(s)};
      Add(ssn, ref);
    }
  }

  // A prefix starts with these pending pods: the GPU profile of those of each sub-group.
  void StartPrefix(const Session& ssn, const std::vector<PodId>& pending) {
    now_valid_ = false;  // (the profiles change: FailsNow counts afresh)
    const Cluster& c = ssn.cluster();
    for (Confined& k : confined_) {
      members_.clear();
      for (PodId p : pending) {
        if (Holds(c, k.ref, p)) members_.push_back(p);
      }
      SortedGpuSizes(ssn, members_, sizes_);
      MakeProfile(sizes_, k.profile);
      k.active = false;
    }
  }

  // The batch's base state (the session holds it): counts each sub-group's domains over the
  // feasible nodes `feasible`. The rule applies to a sub-group only when no domain fits yet.
  void CountBase(const Session& ssn, const std::vector<NodeId>& feasible) {
    counted_feasible_ = feasible.size();
    if (confined_.empty()) return;  // (nothing to count: the rule does nothing for this search)
    const auto free = ssn.non_allocated_gpus();
    bool exact = true;
    for (NodeId n : feasible) exact = exact && ExactlySummable(free[n]);
    for (Confined& k : confined_) {
      k.active = false;
      k.during = false;
      if (!exact || k.profile.always_fits) continue;
      const size_t sizes = k.profile.steps.size() + 1;  // free GPUs, then each step's size
      k.base.assign(static_cast<size_t>(k.domains->count) * sizes, 0.0);
      for (NodeId n : feasible) {
        const int32_t d = k.domains->of_node[n];
        if (d < 0) continue;
        double* counts = &k.base[static_cast<size_t>(d) * sizes];
        counts[0] += NodeBlocks(free[n], 0);
        for (size_t i = 1; i < sizes; ++i)
          counts[i] += NodeBlocks(free[n], k.profile.steps[i - 1].first);
      }
      bool some_fits = false;
      for (int32_t d = 0; d < k.domains->count && !some_fits; ++d) {
        some_fits = FitsCounts(k, &k.base[static_cast<size_t>(d) * sizes]);
      }
      k.active = !some_fits;
      k.during = some_fits && during_enabled_;
    }
  }
  // Whether the base counts still cover the feasible nodes (a rejected scenario keeps the nodes
  // its evictions made feasible, as KAI does; the counts are then made again).
  bool BaseCovers(const std::vector<NodeId>& feasible) const {
    return counted_feasible_ == feasible.size();
  }

  // Whether some confined sub-group fits in no domain once the scenario's evictions are done.
  // `touched`: the nodes the scenario changes (`node`, `base_free`: free GPUs in the base state,
  // `was_feasible`: counted in the base), `after(i)`: the free GPUs of touched[i] after the
  // evictions (whole numbers, or the caller does not ask).
  template <typename Touched, typename After>
  bool Fails(const std::vector<Touched>& touched, const After& after) {
    for (Confined& k : confined_) {
      if (!k.active) continue;
      bool fits = false;
      const size_t sizes = k.profile.steps.size() + 1;
      for (size_t i = 0; i < touched.size() && !fits; ++i) {
        const int32_t d = k.domains->of_node[touched[i].node];
        // (Each domain once: at the first of its touched nodes.)
        bool first = d >= 0;
        for (size_t e = 0; e < i && first; ++e) first = k.domains->of_node[touched[e].node] != d;
        if (!first) continue;
        counts_.assign(
            k.base.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(d) * sizes),
            k.base.begin() + static_cast<std::ptrdiff_t>((static_cast<size_t>(d) + 1) * sizes));
        for (size_t e = i; e < touched.size(); ++e) {
          if (k.domains->of_node[touched[e].node] != d) continue;
          const double f = after(e);
          const double b = touched[e].base_free;
          const bool was = touched[e].was_feasible;
          counts_[0] += NodeBlocks(f, 0) - (was ? NodeBlocks(b, 0) : 0);
          for (size_t s = 1; s < sizes; ++s) {
            const double g = k.profile.steps[s - 1].first;
            counts_[s] += NodeBlocks(f, g) - (was ? NodeBlocks(b, g) : 0);
          }
        }
        fits = FitsCounts(k, counts_.data());
      }
      if (!fits) return true;
    }
    return false;
  }

  // Whether some confined sub-group fits in no domain of `nodes` (the feasible ones) as the
  // session is now. For a simulation before the pending pods' turn, where victims placed again
  // only take free GPUs away (false when a count is not a whole number). Asks the sub-groups the
  // rule applies to (Active) and, with solver_domain_during_simulation, those with a domain that
  // fitted in the base state (ChecksDuringSimulation). `by_during`: set when only the latter
  // fail. `changes`: how `nodes` changed (null: unknown); with solver_domain_follow_journal and
  // the session's node journal on, the counts of the previous call follow those changes and the
  // journal instead of being made afresh (see the file comment).
  bool FailsNow(const Session& ssn, const std::vector<NodeId>& nodes, const ListChanges* changes,
                bool& by_during) {
    by_during = false;
    if (!CountNow(ssn, nodes, changes)) return false;
    for (const Confined& k : confined_) {
      if (!k.active && !k.during) continue;
      const size_t sizes = k.profile.steps.size() + 1;
      bool fits = false;
      for (int32_t d = 0; d < k.domains->count && !fits; ++d) {
        fits = FitsCounts(k, &k.now[static_cast<size_t>(d) * sizes]);
      }
      if (!fits) {
        by_during = !k.active;
        return true;
      }
    }
    return false;
  }
  // Whether FailsNow's counts may follow the session's node journal (the caller enables the
  // journal for it): the switch is on and some sub-group is confined.
  bool FollowsJournal() const { return follow_journal_ && !confined_.empty(); }
  // FailsNow calls whose counts followed the journal so far (for the counters).
  uint64_t followed() const { return followed_; }

  // Whether the rule may decide anything in this batch.
  bool Active() const {
    for (const Confined& k : confined_) {
      if (k.active) return true;
    }
    return false;
  }
  // Whether FailsNow may decide anything in this batch (Active, or a sub-group it asks during a
  // simulation only).
  bool ChecksDuringSimulation() const {
    for (const Confined& k : confined_) {
      if (k.active || k.during) return true;
    }
    return false;
  }

 private:
  struct Confined {
    SubGroupRef ref;
    const NodeDomains* domains = nullptr;
    SizeProfile profile;  // the prefix's pending pods of the sub-group
    // Per domain, its free GPUs then its blocks of each step's size, in the batch's base state.
    std::vector<double> base;
    bool active = false;  // no domain fits in the base state (and the counts are exact)
    bool during = false;  // some domain fits in the base state: FailsNow only (exact counts)
    // Per domain, its free GPUs then its blocks of each step's size, as FailsNow last counted
    // them (CountNow).
    std::vector<double> now;
  };

  // Brings every confined sub-group's `now` counts (per domain of `nodes`: free GPUs, then blocks
  // of each step's size) to the session as it is: from the journal since the last call where
  // that gives the same sums (see the file comment), else afresh. False when a count of `nodes`
  // is not a whole number (the counts are then not kept).
  bool CountNow(const Session& ssn, const std::vector<NodeId>& nodes, const ListChanges* changes) {
    const auto free = ssn.non_allocated_gpus();
    const bool follow = follow_journal_ && changes != nullptr && ssn.NodeJournalEnabled();
    if (follow && now_valid_ && now_list_generation_ == changes->generation &&
        now_generation_ == ssn.node_journal_generation()) {
      // Members added or removed since: their terms in or out.
      const std::vector<NodeId>& listed = *changes->changes;
      const std::vector<char>& member = *changes->flags;
      for (size_t i = now_list_position_; i < listed.size(); ++i) {
        const auto n = static_cast<size_t>(listed[i]);
        const bool counted = now_in_[n] == now_stamp_;
        if (member[n] && !counted) {
          const double f = free[listed[i]];
          if (!ExactlySummable(f)) {
            now_valid_ = false;
            return false;
          }
          for (Confined& k : confined_) AddNodeTerms(k, listed[i], f, 1.0);
          now_in_[n] = now_stamp_;
          now_free_[n] = f;
        } else if (!member[n] && counted) {
          for (Confined& k : confined_) AddNodeTerms(k, listed[i], now_free_[n], -1.0);
          now_in_[n] = 0;
        }
      }
      now_list_position_ = listed.size();
      // Members whose pods changed since.
      const std::vector<NodeId>& journal = ssn.node_journal();
      for (size_t i = now_position_; i < journal.size(); ++i) {
        const NodeId n = journal[i];
        if (now_in_[static_cast<size_t>(n)] != now_stamp_) continue;  // (not in `nodes`)
        const double f = free[n];
        const double was = now_free_[static_cast<size_t>(n)];
        if (f == was) continue;  // (unchanged since counted, or logged again)
        if (!ExactlySummable(f)) {
          now_valid_ = false;
          return false;
        }
        for (Confined& k : confined_) {
          AddNodeTerms(k, n, was, -1.0);
          AddNodeTerms(k, n, f, 1.0);
        }
        now_free_[static_cast<size_t>(n)] = f;
      }
      now_position_ = journal.size();
      ++followed_;
      return true;
    }
    now_valid_ = false;
    for (NodeId n : nodes) {
      if (!ExactlySummable(free[n])) return false;
    }
    for (Confined& k : confined_) {
      const size_t sizes = k.profile.steps.size() + 1;
      k.now.assign(static_cast<size_t>(k.domains->count) * sizes, 0.0);
      for (NodeId n : nodes) {
        const int32_t d = k.domains->of_node[n];
        if (d < 0) continue;
        double* counts = &k.now[static_cast<size_t>(d) * sizes];
        counts[0] += NodeBlocks(free[n], 0);
        for (size_t s = 1; s < sizes; ++s) {
          counts[s] += NodeBlocks(free[n], k.profile.steps[s - 1].first);
        }
      }
    }
    if (!follow) return true;
    // (Remember what the counts were made of, to follow the changes from here.)
    const size_t node_count = ssn.cluster().nodes.size();
    if (now_in_.size() != node_count) {
      now_in_.assign(node_count, 0);
      now_free_.assign(node_count, 0.0);
    }
    ++now_stamp_;
    for (NodeId n : nodes) {
      now_in_[static_cast<size_t>(n)] = now_stamp_;
      now_free_[static_cast<size_t>(n)] = free[n];
    }
    now_valid_ = true;
    now_list_generation_ = changes->generation;
    now_list_position_ = changes->changes->size();
    now_generation_ = ssn.node_journal_generation();
    now_position_ = ssn.node_journal().size();
    return true;
  }

  // Adds `sign` times node n's terms (free GPUs `f`: its free GPUs, then its blocks of each
  // step's size) to its domain's `now` counts of sub-group k (nothing for a node of no domain).
  static void AddNodeTerms(Confined& k, NodeId n, double f, double sign) {
    const int32_t d = k.domains->of_node[n];
    if (d < 0) return;
    const size_t sizes = k.profile.steps.size() + 1;
    double* counts = &k.now[static_cast<size_t>(d) * sizes];
    counts[0] += sign * NodeBlocks(f, 0);
    for (size_t s = 1; s < sizes; ++s) {
      counts[s] += sign * NodeBlocks(f, k.profile.steps[s - 1].first);
    }
  }

  void Add(const Session& ssn, const SubGroupRef& ref) {
    const NodeDomains* domains = ssn.RequiredDomains(ref);
    if (domains == nullptr) return;
    Confined& k = confined_.emplace_back();
    k.ref = ref;
    k.domains = domains;
  }

  // Whether pod `p` is one of the sub-group's.
  static bool Holds(const Cluster& c, const SubGroupRef& ref, PodId p) {
    const Pod& pod = c.pods[p];
    if (ref.pod_set) return pod.pod_set == ref.index;
    const Job& job = c.jobs[ref.job];
    int32_t g = job.pod_sets[static_cast<size_t>(pod.pod_set)].parent_group;
    while (g != kNone && g != ref.index) g = job.groups[static_cast<size_t>(g)].parent;
    return g == ref.index;
  }

  // CouldFitProfile on one domain's counts (free GPUs, then the steps' sizes in order).
  static bool FitsCounts(const Confined& k, const double* counts) {
    if (k.profile.always_fits) return true;
    if (k.profile.total > counts[0]) return false;
    for (size_t s = 0; s < k.profile.steps.size(); ++s) {
      if (k.profile.steps[s].second > counts[s + 1]) return false;
    }
    return true;
  }

  std::vector<Confined> confined_;
  bool during_enabled_ = false;  // SchedulerParams::solver_domain_during_simulation
  bool follow_journal_ = false;  // SchedulerParams::solver_domain_follow_journal
  // What the `now` counts were made of (CountNow): the list's generation and the position in its
  // changes they follow from, the journal's generation and position, and per node whether it is
  // counted as a member (now_in_ equal to now_stamp_) and the free GPUs it was counted with.
  bool now_valid_ = false;
  uint64_t followed_ = 0;
  uint64_t now_list_generation_ = 0;
  size_t now_list_position_ = 0;
  uint64_t now_generation_ = 0;
  size_t now_position_ = 0;
  uint64_t now_stamp_ = 0;
  std::vector<uint64_t> now_in_;
  std::vector<double> now_free_;
  size_t counted_feasible_ = 0;  // feasible nodes counted in the base counts
  std::vector<PodId> members_;   // (scratch lists)
  std::vector<double> sizes_;
  std::vector<double> counts_;
};

}  // namespace gantry::victim_search
