// Accelerator of the victim search: the capacity pre-check by blocks of free GPUs.
//
// Capacity pre-check. A necessary condition on whole-GPU blocks (for every request size g, the pods
// asking at least g GPUs fit the free GPUs counted in blocks of g). Its counts are kept for the
// batch's base state (recorded victims evicted) and corrected only on the nodes a scenario touches;
// for a by-node scenario it is decided before evicting (an eviction adds the pod's whole GPUs to
// its node's free count), so hopeless nodes cost no evictions. Sums are used only while every count
// is a whole number (exact in any order).
//
// Pre-checks without listing the pods. A scenario node's pre-check reads what the scenario noted of
// each potential victim in the prefix's base state (`PodFree`: node,
// whole GPUs, whether it counts) and counts the touched nodes' free GPUs after the evictions in one
// pass (`TouchNodesOfNode`); the pod list is built only when the pre-check passes. When the latest
// victim spans several nodes, the pre-check is first asked for the potential victims of all of them
// together (`UnionFailsPrecheck`): a node's simulation evicts a part of those, and evicting fewer
// never frees more, so when that fails every node fails.
//
// Nodes that join the feasible ones within a batch. The base counts are made once per batch
// (CountBaseBlocks), while a rejected simulation keeps the nodes its evictions added to the
// feasible ones (as KAI does): a later scenario of the batch corrects the counts on such a node as
// a feasible one (TouchedNode::was_feasible, subtracting its base blocks the counts never held),
// and leaves it out when untouched. Both are exact, because such a node has no free GPU in the
// base state, so no block of any size: it joined through an eviction on it, so it was neither one
// of the job's feasible nodes (FeasibleNodesForJob: every node with idle or releasing GPUs in the
// state the search starts from) nor a recorded victim's node (SearchContext::ResetFeasible), and
// only an eviction on a node gives it free GPUs (the rejected simulation's are rolled back; the
// rollback of a shared-GPU eviction can leave a node fewer free GPUs, not more: see
// shared_gpu_evict_undo_test.cc). That drift on a feasible node leaves the batch's counts too
// high, which only lets more pre-checks pass. capacity_blocks_base_test.cc checks that the nodes
// outside a job's feasible ones hold no free GPU on the benchmark family's clusters.
//
// Part of SearchAccelerator (accelerator.h), which exists only with the solver shortcuts on.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "actions/victim_search/domain_precheck.h"
#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/search_state.h"
#include "actions/victim_search/stats.h"
#include "framework/session.h"

namespace gantry::victim_search {

class CapacityBlocks : public SearchState {
 protected:
  using SearchState::SearchState;

  // Lists the nodes of `potential` into touched_ with their free GPUs now (see TouchedNode)
  // and, in the prefix's base state, counts their free GPUs once `potential` is evicted on top
  // of it into hypothetical_free_: evicting an active pod adds its whole GPUs to its node's idle
  // + releasing, so this is known without evicting. hypothetical_exact_ tells whether the count
  // is exact: not when a pod is listed twice, is not active or on no node, or does not ask for
  // whole GPUs (a shared-GPU victim may free a whole device when it is the device's last user
  // and a DRA victim frees its claim's GPUs), nor when a sum is not exact.
  void TouchNodesOf(const std::vector<PodId>& potential) {
    const auto& c = ssn_.cluster();
    BeginTouch();
    if (pod_seen_.size() != c.pods.size()) pod_seen_.assign(c.pods.size(), 0);
    ++pod_seen_stamp_;
    const auto& briefs = ssn_.pod_briefs();
    bool exact = !potential.empty();
    for (PodId p : potential) {
      const PodState& st = ssn_.pod(p);
      if (st.node == kNone) {
        exact = false;
        continue;
      }
      const uint32_t at = Touch(st.node);
      if (!exact) continue;
      const double gpus = briefs[p].whole_gpus;
      uint64_t& seen = pod_seen_[static_cast<size_t>(p)];
      if (seen == pod_seen_stamp_ || !IsActiveAllocated(st.status) || std::isnan(gpus)) {
        exact = false;
        continue;
      }
      seen = pod_seen_stamp_;
      hypothetical_free_[at] += gpus;
    }
    EndTouch(exact);
  }

  // TouchNodesOf for the potential victims VictimTasksFromNode(node) lists, read from what was
  // noted of them in the prefix's base state (PodFree) instead of from the pods.
  // (A pod listed twice would be counted twice: the counts would only be higher, which makes the
  // pre-check pass and the proofs fail, never the other way.)
  void TouchNodesOfNode(const Scenario& scenario, NodeId node) {
    CatchUpFrees(scenario);
    BeginTouch();
    bool exact = true;
    bool any = false;
    if (node != kNone) {
      scenario.ForEachSlotFromNode(node, [&](size_t slot) {
        const PodFree& pf = frees_[slot];
        any = true;
        if (pf.node == kNone) {
          exact = false;
          return;
        }
        const uint32_t at = Touch(pf.node);
        exact = exact && pf.counted;
        hypothetical_free_[at] += pf.gpus;
      });
    }
    EndTouch(exact && any);
  }

  // What evicting a scenario's pod in the prefix's base state frees, per slot of
  // Scenario::group_pods: its node and, when `counted` (it is active there and asks for whole
  // GPUs), its GPUs. The recorded victims (the first slots) are evicted in that state: never
  // counted. Noted for the slots added since the last call; the session must be in the prefix's
  // base state, as it is whenever a node's simulation starts. A new prefix starts over
  // (ResetFrees).
  struct PodFree {
    NodeId node;
    bool counted;
    double gpus;
  };
  void ResetFrees() { frees_.clear(); }
  void CatchUpFrees(const Scenario& scenario) {
    const std::span<const PodId> pods = scenario.group_pods();
    const size_t recorded = scenario.recorded_tasks().size();
    const auto& briefs = ssn_.pod_briefs();
    for (size_t i = frees_.size(); i < pods.size(); ++i) {
      const PodState& st = ssn_.pod(pods[i]);
      const double gpus = briefs[pods[i]].whole_gpus;
      const bool counted =
          i >= recorded && st.node != kNone && IsActiveAllocated(st.status) && !std::isnan(gpus);
      frees_.push_back({st.node, counted, counted ? gpus : 0.0});
    }
  }

  // TouchNodesOf's steps: start a new list; list a node (once) and return its place; finish
  // (the counts are exact when `exact` holds, the base state's counts are and every sum is).
  void BeginTouch() {
    touched_.clear();
    hypothetical_free_.clear();
    hypothetical_blocks_.clear();
    touched_stamp_ = NextTouchStamp();
    const size_t nodes = ssn_.cluster().nodes.size();
    if (touched_at_.size() != nodes) touched_at_.assign(nodes, {0, 0});
  }
  uint32_t Touch(NodeId n) {
    auto& [stamp, at] = touched_at_[static_cast<size_t>(n)];
    if (stamp != touched_stamp_) {
      stamp = touched_stamp_;
      at = static_cast<uint32_t>(touched_.size());
      const double free = ssn_.non_allocated_gpus()[n];
      touched_.push_back({n, free, feasible_[n] != 0});
      hypothetical_free_.push_back(free);
    }
    return at;
  }
  void EndTouch(bool exact) {
    exact = exact && base_exact_;
    // (With `exact`, only whole GPUs were added to each base count: a whole base count stays
    // whole, so ExactlySummable of the sum is its magnitude check.)
    for (size_t i = 0; exact && i < touched_.size(); ++i) {
      exact = ExactlySummable(touched_[i].base_free) && std::abs(hypothetical_free_[i]) < 1e12;
    }
    hypothetical_exact_ = exact;
  }

  // Whether the pre-check fails for every node of `nodes` without evicting (see
  // AllNodesProvenUnsolvable): it fails for the potential victims of all of them at once. A
  // node's simulation evicts a part of those; evicting fewer never gives more free GPUs or blocks
  // of free GPUs (nor more feasible nodes), so its pre-check fails too.
  bool UnionFailsPrecheck(const Scenario& scenario, const std::vector<NodeId>& nodes) {
    std::vector<PodId>& potential = potential_scratch_;
    potential.clear();
    if (union_job_stamp_.size() != ssn_.cluster().jobs.size()) {
      union_job_stamp_.assign(ssn_.cluster().jobs.size(), 0);
    }
    ++union_stamp_;
    for (NodeId n : nodes) {
      if (n != kNone) scenario.VictimTasksFromNode(n, potential, &union_job_stamp_, union_stamp_);
    }
    TouchNodesOf(potential);
    return FailsPrecheckAfterEvicting();
  }
  // Blocks of g free GPUs (g = 0: free GPUs) of the feasible nodes in the prefix's base state
  // (the session must be in it): the batch's count, or counted now and kept.
  double BaseBlocks(double g) {
    for (const auto& [size, value] : base_blocks_) {
      if (size == g) return value;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = 0;
    for (NodeId n : feasible_list_) value += NodeBlocks(free[n], g);
    base_blocks_.emplace_back(g, value);
    return value;
  }

  // Whether Simulate's pre-check would fail once the potential victims TouchNodesOf counted are
  // evicted on top of the current state (the prefix's base state). False whenever the count is
  // not exact (then the caller simulates as usual).
  bool FailsPrecheckAfterEvicting() {
    if (!hypothetical_exact_) return false;
    if (!CouldFitProfile(pending_profile_, [&](double g) { return HypotheticalBlocks(g); })) {
      return true;
    }
    // (hypothetical_exact_: every count is a whole number.)
    if (domain_.Active() &&
        domain_.Fails(touched_, [&](size_t i) { return hypothetical_free_[i]; })) {
      ++stats_->precheck_domain;
      return true;
    }
    return false;
  }

  // Pre-check by replayed counters (issue 24). A node's victims that hold shared GPUs make the
  // count before evicting inexact (evicting a share frees its device only as KAI's per-device
  // rules say, gpu_sharing.h), so the reference path evicts them, pre-checks (BeforeSimulation:
  // ScenarioBlocks, DomainFailsAfterEvictions) and, when that fails (kFailed), rolls back. The
  // rollback need not give the counters back (an evict + rollback can leave a node fewer idle +
  // releasing GPUs, as in KAI), so skipping the evictions would change what later scenarios see.
  // Session::EvictAndRollBackCounters runs the same evictions and rollback on copies of the
  // touched nodes' counters, with the same node-level code as the statement; its counts right
  // after the evictions are those BeforeSimulation would read. When they fail the same pre-check
  // (the same sums: the base counts corrected on touched_, which lists every node the evictions
  // change; exact sums only), the session is left as the evict + rollback leaves it (the drifted
  // counters, the plugins' pod events in the same order) and the node ends kFailed without a
  // statement; otherwise nothing is changed and the node is evicted as usual. `potential` are the
  // node's victims as EvictNodeVictims lists them (those of the recorded ones are already
  // evicted); TouchNodesOfNode counted this node just before, and its count was not exact.
  bool FailsPrecheckByCounterReplay(const Scenario& scenario, std::span<const PodId> potential) {
    if (hypothetical_exact_ || !base_exact_ || !ssn_.params().solver_counter_replay) return false;
    std::vector<PodId>& pods = replay_pods_;
    pods.clear();
    for (PodId p : potential) {
      if (!scenario.IsRecorded(p)) pods.push_back(p);
    }
    const bool fails = ssn_.EvictAndRollBackCounters(pods, [this](std::span<const NodeId> nodes,
                                                                  std::span<const double> free) {
      for (size_t i = 0; i < touched_.size(); ++i) {
        hypothetical_free_[i] = touched_[i].base_free;
      }
      for (size_t k = 0; k < nodes.size(); ++k) {
        const auto& [stamp, at] = touched_at_[static_cast<size_t>(nodes[k])];
        if (stamp != touched_stamp_) return false;  // (a node the base counts miss)
        hypothetical_free_[at] = free[k];
      }
      bool exact = true;
      for (size_t i = 0; exact && i < touched_.size(); ++i) {
        exact = ExactlySummable(touched_[i].base_free) && ExactlySummable(hypothetical_free_[i]);
      }
      if (!exact) return false;
      hypothetical_exact_ = true;
      hypothetical_blocks_.clear();
      const bool fails_now = FailsPrecheckAfterEvicting();
      hypothetical_exact_ = false;
      hypothetical_blocks_.clear();
      return fails_now;
    });
    if (fails) ++stats_->precheck_replay;
    return fails;
  }

  // Whether the pre-check per topology domain (domain_precheck.h) fails right after the
  // scenario's evictions (touched_ lists the nodes they changed). False when not exact.
  bool DomainFailsAfterEvictions() {
    if (!domain_.Active() || touched_epoch_ != ssn_.placement_epoch()) return false;
    const auto free = ssn_.non_allocated_gpus();
    for (const TouchedNode& t : touched_) {
      if (!ExactlySummable(free[t.node])) return false;
    }
    if (!domain_.Fails(touched_, [&](size_t i) { return free[touched_[i].node]; })) return false;
    ++stats_->precheck_domain;
    return true;
  }

  // Blocks of g free GPUs (g = 0: free GPUs) of the feasible nodes once the scenario's
  // evictions are done, from the base counts and TouchNodesOf's exact counts of
  // the touched nodes (the session must be in the prefix's base state); each size is counted
  // once per scenario.
  double HypotheticalBlocks(double g) {
    for (const auto& [size, value] : hypothetical_blocks_) {
      if (size == g) return value;
    }
    double value = BaseBlocks(g);
    for (size_t i = 0; i < touched_.size(); ++i) {
      value += NodeBlocks(hypothetical_free_[i], g) -
               (touched_[i].was_feasible ? NodeBlocks(touched_[i].base_free, g) : 0);
    }
    hypothetical_blocks_.emplace_back(g, value);
    return value;
  }

  // Whether the feasible-node list can change no simulation of this search beyond the nodes
  // with free GPUs it holds: every pod of the cluster asks for whole GPUs and is ranked over all
  // nodes by class when placed in a simulation (Session::RankFittingNodesCoveringFreeGpus), and
  // a node added to the list and left there has no free GPU in the states simulations start
  // from.
  bool FeasibleListInsensitive() const { return ssn_.AllPodsWholeGpuRankableByClass(); }

  // Free GPUs of the feasible nodes in the scenario's state right after its evictions (before
  // anything is placed), when that count is exact (ScenarioBlocks's correction of the base count).
  bool ExactFreeAfterEvictions(double& out) const {
    if (!base_exact_ || base_blocks_.empty() || base_blocks_.front().first != 0 ||
        touched_epoch_ != ssn_.placement_epoch()) {
      return false;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = base_blocks_.front().second;
    for (const TouchedNode& t : touched_) {
      if (!ExactlySummable(free[t.node])) return false;
      value += NodeBlocks(free[t.node], 0) - (t.was_feasible ? NodeBlocks(t.base_free, 0) : 0);
    }
    out = value;
    return true;
  }

  // A necessary condition for placing whole-GPU `pods` on `nodes` (pipelining onto idle and
  // releasing GPUs): for every request size g, the pods asking for at least g GPUs must fit in
  // the nodes' free GPUs counted in blocks of g. Cheap, and it skips hopeless simulations.
  bool CouldFit(const std::vector<PodId>& pods, const std::vector<NodeId>& nodes) const {
    SortedGpuSizes(ssn_, pods, sizes_scratch_);
    MakeProfile(sizes_scratch_, profile_scratch_);
    return CouldFitProfile(profile_scratch_, [&](double g) { return FreeBlocks(nodes, g); });
  }

  // The prefix's base state: the recorded victims evicted, nothing else. Counts the blocks of
  // the feasible nodes once, for every size the pending pods ask for.
  void CountBaseBlocks() {
    base_blocks_.clear();
    base_exact_ = !pending_profile_.always_fits;
    if (!base_exact_) return;
    const auto free = ssn_.non_allocated_gpus();
    for (NodeId n : feasible_list_) base_exact_ = base_exact_ && ExactlySummable(free[n]);
    if (!base_exact_) return;
    base_blocks_.emplace_back(0.0, 0.0);
    for (const auto& step : pending_profile_.steps) base_blocks_.emplace_back(step.first, 0.0);
    for (NodeId n : feasible_list_) {
      for (auto& [g, value] : base_blocks_) value += NodeBlocks(free[n], g);
    }
  }

  // Blocks of g free GPUs of the feasible nodes in a scenario's state: the base state plus the
  // evictions on the nodes of `touched_` (some of them newly feasible). With exact sums this is
  // the base count corrected on those nodes; otherwise the nodes are counted again.
  double ScenarioBlocks(double g) const {
    if (base_exact_ && touched_epoch_ == ssn_.placement_epoch()) {
      const auto free = ssn_.non_allocated_gpus();
      for (const auto& [size, base_value] : base_blocks_) {
        if (size != g) continue;
        double value = base_value;
        bool exact = true;
        for (const TouchedNode& t : touched_) {
          exact = exact && ExactlySummable(free[t.node]);
          value += NodeBlocks(free[t.node], g) - (t.was_feasible ? NodeBlocks(t.base_free, g) : 0);
        }
        if (exact) return value;
        break;
      }
    }
    return FreeBlocks(feasible_list_, g);
  }

  // ScenarioBlocks for any size, right after the scenario's evictions: a size the base counts
  // lack is counted once over the feasible nodes (less the scenario's changes) and kept for the
  // rest of the batch.
  double BlocksAfterEvictions(double g) {
    if (base_exact_ && touched_epoch_ == ssn_.placement_epoch() &&
        std::none_of(base_blocks_.begin(), base_blocks_.end(),
                     [g](const auto& entry) { return entry.first == g; })) {
      const auto free = ssn_.non_allocated_gpus();
      double base = 0;
      bool exact = true;
      for (NodeId n : feasible_list_) {
        exact = exact && ExactlySummable(free[n]);
        base += NodeBlocks(free[n], g);
      }
      for (const TouchedNode& t : touched_) {
        base -= NodeBlocks(free[t.node], g) - (t.was_feasible ? NodeBlocks(t.base_free, g) : 0);
      }
      if (exact) base_blocks_.emplace_back(g, base);
    }
    return ScenarioBlocks(g);
  }

  // Free GPUs of `nodes` (g = 0) or the number of blocks of g free GPUs, cached until something
  // is placed or removed (the node list is fixed within a simulation).
  // With the solver shortcuts on and whole-number counts, the cached counts of the feasible
  // nodes follow the session's node-change log instead (same sums: exact in any order).
  double FreeBlocks(const std::vector<NodeId>& nodes, double g) const {
    const uint64_t epoch = ssn_.placement_epoch();
    const bool same_nodes = nodes.data() == blocks_nodes_ && nodes.size() == blocks_count_ &&
                            feasible_version_ == blocks_version_;
    if (!same_nodes || epoch != blocks_epoch_) {
      if (!(same_nodes && &nodes == &feasible_list_ && CatchUpBlocks())) {
        blocks_cache_.clear();
        blocks_synced_ = false;
        node_log_.clear();
      }
      blocks_epoch_ = epoch;
      blocks_nodes_ = nodes.data();
      blocks_count_ = nodes.size();
      blocks_version_ = feasible_version_;
    }
    for (const auto& [size, value] : blocks_cache_) {
      if (size == g) return value;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = 0;
    for (NodeId n : nodes) {
      const double f = std::max(0.0, free[n]);
      value += g == 0 ? f : FloorOfNonNegative(f / g);
    }
    blocks_cache_.emplace_back(g, value);
    if (!blocks_synced_ && &nodes == &feasible_list_) {
      // Remember what the counts were made of, to follow later changes.
      blocks_synced_ = true;
      for (NodeId n : nodes) {
        blocks_free_[n] = free[n];
        blocks_synced_ = blocks_synced_ && ExactlySummable(free[n]);
      }
      node_log_.clear();
    }
    return value;
  }

  // Brings the cached counts up to date with the nodes changed since they were made. False
  // (the caller counts again) when that is not exact.
  bool CatchUpBlocks() const {
    if (!blocks_synced_ || node_log_.size() > (1u << 20)) return false;
    const auto free = ssn_.non_allocated_gpus();
    for (NodeId n : node_log_) {
      if (!feasible_[n]) continue;
      const double f = free[n];
      if (!ExactlySummable(f)) return false;
      // (Unchanged since counted, e.g. a node logged again after an earlier entry brought it up
      // to date: every count would move by exactly 0.)
      if (f == blocks_free_[n]) continue;
      for (auto& [size, value] : blocks_cache_) {
        value += NodeBlocks(f, size) - NodeBlocks(blocks_free_[n], size);
      }
      blocks_free_[n] = f;
    }
    node_log_.clear();
    return true;
  }

  // Blocks of free GPUs of the feasible nodes in the prefix's base state, per size (0 = GPUs),
  // when they are exact sums; and the nodes a scenario changed, with their base free GPUs.
  struct TouchedNode {
    NodeId node;
    double base_free;
    bool was_feasible;
  };
  std::vector<std::pair<double, double>> base_blocks_;
  bool base_exact_ = false;
  std::vector<TouchedNode> touched_;
  // Per node: where it is in touched_ (valid where the stamp is touched_stamp_); per pod: seen
  // in the current potential list (where equal to pod_seen_stamp_).
  // (touched_at_ is shared by the searches of the thread, which do not nest, and sized once
  // instead of filled for every search: the stamps are unique per thread, so an entry a previous
  // search left never matches.)
  std::vector<std::pair<uint64_t, uint32_t>>& touched_at_ = SharedTouchedAt();
  uint64_t touched_stamp_ = 0;
  static std::vector<std::pair<uint64_t, uint32_t>>& SharedTouchedAt() {
    thread_local std::vector<std::pair<uint64_t, uint32_t>> at;
    return at;
  }
  static uint64_t NextTouchStamp() {
    thread_local uint64_t next = 0;
    return ++next;
  }
  std::vector<uint64_t> pod_seen_;
  uint64_t pod_seen_stamp_ = 0;
  std::vector<double> hypothetical_free_;
  uint64_t touched_epoch_ = 0;  // placement epoch right after the scenario's evictions
  mutable std::vector<std::pair<double, double>> blocks_cache_;
  // Free GPUs of each feasible node when the cached counts were last brought up to date, and
  // whether they are (then the node-change log is followed).
  std::vector<double>& blocks_free_ = SharedBlocksFree();  // (per thread, see Solve)
  static std::vector<double>& SharedBlocksFree() {
    thread_local std::vector<double> free;
    return free;
  }
  mutable bool blocks_synced_ = false;
  mutable std::vector<NodeId> node_log_;
  mutable uint64_t blocks_epoch_ = ~0ULL;
  mutable const NodeId* blocks_nodes_ = nullptr;
  mutable size_t blocks_count_ = 0;
  mutable uint64_t blocks_version_ = 0;
  std::vector<std::pair<double, double>> hypothetical_blocks_;  // (size, blocks), one scenario
  bool hypothetical_exact_ = false;
  DomainPrecheck domain_;       // the pre-check per required topology domain
  std::vector<PodFree> frees_;  // per slot of the prefix's Scenario::group_pods (CatchUpFrees)
  std::vector<uint64_t> union_job_stamp_;  // UnionFailsPrecheck's jobs taken (union_stamp_)
  std::vector<PodId> replay_pods_;         // (FailsPrecheckByCounterReplay's scratch)
  uint64_t union_stamp_ = 0;
};

}  // namespace gantry::victim_search
