// KAI reclaimable: may a job reclaim at all, and is a simulated reclaim acceptable.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>

#include "framework/session.h"
#include "plugins/proportion/plugin.h"
#include "plugins/proportion/reclaim_strategy.h"
#include "plugins/proportion/saturation.h"

namespace gantry::proportion {

namespace {
// StrategyRefuses' refusals, its test mode and the refusals the full checks did not confirm.
std::atomic<uint64_t> reclaimable_strategy_refusals{0};
std::atomic<bool> reclaimable_verify_strategy{false};
std::atomic<uint64_t> reclaimable_strategy_violations{0};
}  // namespace

uint64_t StrategyRefusals() {
  return reclaimable_strategy_refusals.load(std::memory_order_relaxed);
}
void SetVerifyStrategyRefusals(bool on) {
  reclaimable_verify_strategy.store(on, std::memory_order_relaxed);
}
uint64_t StrategyRefusalViolations() {
  return reclaimable_strategy_violations.load(std::memory_order_relaxed);
}

bool ProportionPlugin::CanReclaim(const Session& s, JobId j) const {
  const Cluster& c = s.cluster();
  std::vector<PodId> tasks;
  s.TasksToAllocate(j, tasks, /*real=*/false);
  const Quantities requested = Requested(c, tasks);
  const QueueShare& q = shares_[c.jobs[j].queue];
  Quantities with = q.Allocated();
  with += requested;
  if (!LessEqual(with, q.FairShare())) return false;
  if (c.jobs[j].preemptible) return true;
  Quantities np = Map(q, [](const ResourceShare& rs) { return rs.allocated_non_preemptible; });
  np += requested;
  return LessEqual(np, q.Deserved());
}

std::vector<QueueId> ProportionPlugin::PathFromRoot(const Cluster& c, QueueId q) {
  std::vector<QueueId> path;
  for (; q != kNone; q = c.queues[q].parent) path.insert(path.begin(), q);
  return path;
}

std::pair<QueueId, QueueId> ProportionPlugin::Leveled(const Cluster& c, QueueId reclaimer,
                                                      QueueId reclaimee) {
  const auto a = PathFromRoot(c, reclaimer);
  const auto b = PathFromRoot(c, reclaimee);
  QueueId ra = kNone, rb = kNone;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    ra = a[i];
    rb = b[i];
    if (ra != rb) break;
  }
  return {ra, rb};
}

std::array<bool, 3> ProportionPlugin::Involved(const Quantities& q) {
  return {q[QueueResource::kCpu] > 0, q[QueueResource::kMemory] > 0, q[QueueResource::kGpu] > 0};
}

bool ProportionPlugin::SaturationRejects(const Session& s, const ScenarioInfo& sc) const {
  const Cluster& c = s.cluster();
  const auto& queues = simulation_shares_;
  if (hit_.size() != c.queues.size()) {
    hit_.assign(c.queues.size(), 0);
    taken_sum_.assign(c.queues.size(), {});
  }
  if (pod_hit_.size() != c.pods.size()) pod_hit_.assign(c.pods.size(), 0);
  ++stamp_;
  auto visit = [&](std::span<const PodId> pods) {
    for (PodId p : pods) {
      if (pod_hit_[p] == stamp_ || IsActiveAllocated(s.pod(p).status)) continue;
      pod_hit_[p] = stamp_;
      const Quantities q = s.AcceptedQuantities(p);
      for (QueueId a = c.jobs[c.pods[p].job].queue; a != kNone; a = c.queues[a].parent) {
        if (hit_[a] != stamp_) {
          hit_[a] = stamp_;
          taken_sum_[a] = {};
        }
        taken_sum_[a] += q;
      }
    }
  };
  visit(sc.evicted_recorded);
  visit(sc.evicted_potential);
  const Quantities required = Requested(c, sc.preemptor_tasks);
  const auto reclaimer_involved = Involved(required);
  for (QueueId rq = c.jobs[sc.preemptor].queue; rq != kNone; rq = c.queues[rq].parent) {
    Quantities with = queues[rq].Allocated();
    if (hit_[rq] == stamp_) with -= taken_sum_[rq];
    with += required;
    const Quantities fair = queues[rq].FairShare();
    for (QueueId sib = 0; sib < static_cast<QueueId>(c.queues.size()); ++sib) {
      if (sib == rq || hit_[sib] != stamp_ || c.queues[sib].parent != c.queues[rq].parent) {
        continue;
      }
      Quantities sib_remaining = queues[sib].Allocated();
      sib_remaining -= taken_sum_[sib];
      const Quantities sib_fair = queues[sib].FairShare();
      for (auto res : kQueueResources) {
        if (!reclaimer_involved[static_cast<int>(res)] && !(taken_sum_[sib][res] > 0)) continue;
        if (fair[res] == kUnlimited && sib_fair[res] == kUnlimited) continue;
        const double ratio = Saturation(with[res], fair[res]);
        const double sib_ratio = Saturation(sib_remaining[res], sib_fair[res]);
        if (ratio > 1 && sib_fair[res] > 0 && ratio * reclaimer_multiplier_ >= sib_ratio) {
          return true;
        }
      }
    }
  }
  return false;
}

// Reclaimable's groups are asked, in turn, ReclaimStrategy::Fits of their reclaimee queue eq's
// remaining allocation (its frozen allocation less the entries taken below it so far) before
// each entry, and it refuses at the first that fails. Fits is up-closed (reclaim_strategy.h) and
// the remaining allocation never exceeds the whole one: each entry is a victim's accepted
// quantities, none negative, and taking x >= 0 off a double gives at most what it had, whatever
// the rounding (so no exact sums are needed). (CompareQuantity reads -1 as unlimited; a
// remaining allocation stays far above -1: the frozen allocation sums the accepted quantities of
// every active pod below eq, the victims among them, so only rounding takes it below 0, by a few
// ulps of the sums.) So when Fits already fails for eq's whole allocation, the entry of any
// counted victim below eq is refused if it is reached, and an earlier refusal is the same answer.
// With consolidating reclaim the counted victims are those left evicted, all among those the
// simulation evicted (the others are still active): if one of them sits below such an eq,
// Reclaimable refuses. Per victim leaf queue the answer is kept for the frozen shares, the
// reclaimer's queue and its request (Leveled pairs the leaf with eq, as Reclaimable does).
bool ProportionPlugin::StrategyRefuses(const Session& s, const ScenarioInfo& sc,
                                       const Quantities& required) const {
  const Cluster& c = s.cluster();
  const QueueId reclaimer = c.jobs[sc.preemptor].queue;
  StrategyMemo& memo = strategy_memo_;
  if (memo.shares != shares_frozen_ || memo.reclaimer != reclaimer ||
      !(memo.required == required) || memo.bad_leaf.size() != c.queues.size()) {
    memo.shares = shares_frozen_;
    memo.reclaimer = reclaimer;
    memo.required = required;
    memo.bad_leaf.assign(c.queues.size(), -1);
  }
  const auto& briefs = s.pod_briefs();
  const VictimFacts& facts = VictimFactsOf(c);
  auto refuses = [&](std::span<const PodId> pods) {
    for (PodId p : pods) {
      if (IsActiveAllocated(s.pod(p).status)) continue;
      const QueueId leaf = facts.jobs[briefs[p].job].queue;
      int8_t& bad = memo.bad_leaf[leaf];
      if (bad < 0) {
        const auto [rq, eq] = Leveled(c, reclaimer, leaf);
        const ReclaimStrategy strategy(required, simulation_shares_[rq], simulation_shares_[eq]);
        bad = strategy.Fits(simulation_shares_[eq].Allocated()) ? 0 : 1;
      }
      if (bad != 0) return true;
    }
    return false;
  };
  return refuses(sc.evicted_recorded) || refuses(sc.evicted_potential);
}

bool ProportionPlugin::Reclaimable(const Session& s, const ScenarioInfo& sc) const {
  const Cluster& c = s.cluster();
  const bool consolidating = s.params().allow_consolidating_reclaim;
  // (A shortcut: most rejections are decided from the few victims a simulation evicted.)
  if (s.params().solver_shortcuts && exact_sums_ && consolidating && sc.evicted_known &&
      !simulation_shares_.empty() && SaturationRejects(s, sc)) {
    return false;
  }
  const Quantities required = Requested(c, sc.preemptor_tasks);
  // (A shortcut without exact sums: a victim left evicted below a queue whose whole allocation
  // fails the strategy check; see StrategyRefuses. Verify mode: the full checks must refuse too.)
  if (s.params().solver_shortcuts && s.params().solver_strategy_rules && consolidating &&
      sc.evicted_known && !simulation_shares_.empty() && StrategyRefuses(s, sc, required)) {
    reclaimable_strategy_refusals.fetch_add(1, std::memory_order_relaxed);
    if (!reclaimable_verify_strategy.load(std::memory_order_relaxed)) return false;
    if (ReclaimableChecks(s, sc, required)) {
      reclaimable_strategy_violations.fetch_add(1, std::memory_order_relaxed);
    }
    return false;
  }
  return ReclaimableChecks(s, sc, required);
}

bool ProportionPlugin::ReclaimableChecks(const Session& s, const ScenarioInfo& sc,
                                         const Quantities& required) const {
  const Cluster& c = s.cluster();
  const auto& queues = simulation_shares_.empty() ? shares_ : simulation_shares_;
  const Job& reclaimer = c.jobs[sc.preemptor];
  const bool consolidating = s.params().allow_consolidating_reclaim;

  // Resources the scenario takes from each queue: one entry per elastic pod beyond a pod
  // set's minimum, one for the rest; pods placed again (consolidated) do not count.
  // (Scratch buffers, so a validation allocates nothing per victim.)
  std::vector<std::pair<QueueId, Quantities>>& taken = taken_scratch_;
  taken.clear();
  // (The pods' and jobs' facts from the compact copies: see VictimFacts.)
  const VictimFacts& facts = VictimFactsOf(c);
  auto counted = [&](std::span<const PodId> group, Quantities& q) {
    bool any = false;
    for (PodId p : group) {
      if (consolidating && IsActiveAllocated(s.pod(p).status)) continue;
      // (s.AcceptedQuantities(p).)
      Quantities accepted;
      accepted[QueueResource::kCpu] = facts.pods[p].cpu;
      accepted[QueueResource::kMemory] = facts.pods[p].memory;
      accepted[QueueResource::kGpu] = s.AcceptedGpus(p);
      q += accepted;
      any = true;
    }
    return any;
  };
  for (const auto& [victim_job, pods] : sc.victims) {
    const VictimFacts::Job& vj = facts.jobs[victim_job];
    const auto set_of = [&](PodId p) { return facts.pods[p].pod_set; };
    const auto min_of = [&](int32_t set) {
      return static_cast<size_t>(facts.set_min[vj.sets_at + static_cast<size_t>(set)]);
    };
    // The pods by pod set (ascending), in their order within a set; the first min_available
    // of a set are its core, the others elastic.
    std::span<const PodId> core;
    std::span<const PodId> elastic;
    bool one_set = true;
    for (PodId p : pods) one_set = one_set && set_of(p) == set_of(pods.front());
    if (one_set) {
      // (Usual: no reordering needed.)
      const size_t min = pods.empty() ? 0 : min_of(set_of(pods.front()));
      core = std::span<const PodId>(pods).first(std::min(min, pods.size()));
      elastic = std::span<const PodId>(pods).subspan(core.size());
    } else {
      std::vector<std::pair<int32_t, PodId>>& by_set = by_set_scratch_;
      by_set.clear();
      for (PodId p : pods) by_set.emplace_back(set_of(p), p);
      std::stable_sort(by_set.begin(), by_set.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<PodId>& core_list = core_scratch_;
      std::vector<PodId>& elastic_list = elastic_scratch_;
      core_list.clear();
      elastic_list.clear();
      for (size_t i = 0; i < by_set.size();) {
        const int32_t set = by_set[i].first;
        const size_t min = min_of(set);
        for (size_t k = 0; i < by_set.size() && by_set[i].first == set; ++i, ++k) {
          (k < min ? core_list : elastic_list).push_back(by_set[i].second);
        }
      }
      core = core_list;
      elastic = elastic_list;
    }
    for (const PodId& p : elastic) {
      Quantities q;
      if (counted(std::span<const PodId>(&p, 1), q)) taken.emplace_back(vj.queue, q);
    }
    if (Quantities q; counted(core, q)) taken.emplace_back(vj.queue, q);
  }
  // By queue (ascending), each queue's entries in the order they were taken.
  if (!std::is_sorted(taken.begin(), taken.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; })) {
    std::stable_sort(taken.begin(), taken.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  // Per queue touched: its allocation minus what was taken below it, and the resources
  // involved (flat arrays marked with this call's stamp; `present` lists the queues).
  const size_t num_queues = c.queues.size();
  if (rem_stamp_.size() != num_queues) {
    rem_stamp_.assign(num_queues, 0);
    inv_stamp_.assign(num_queues, 0);
    rem_.resize(num_queues);
    inv_.resize(num_queues);
  }
  const uint64_t stamp = ++validation_stamp_;
  std::vector<QueueId>& present = present_scratch_;
  present.clear();
  auto remaining_of = [&](QueueId q) -> Quantities& {
    if (rem_stamp_[q] != stamp) {
      rem_stamp_[q] = stamp;
      rem_[q] = queues[q].Allocated();
      present.push_back(q);
    }
    return rem_[q];
  };
  auto involved_of = [&](QueueId q) -> std::array<bool, 3>& {
    if (inv_stamp_[q] != stamp) {
      inv_stamp_[q] = stamp;
      inv_[q] = {};
    }
    return inv_[q];
  };
  for (size_t begin = 0; begin < taken.size();) {
    const QueueId reclaimee_leaf = taken[begin].first;
    size_t end = begin;
    while (end < taken.size() && taken[end].first == reclaimee_leaf) ++end;
    const auto [rq, eq] = Leveled(c, reclaimer.queue, reclaimee_leaf);
    std::array<bool, 3> inv{};
    for (size_t e = begin; e < end; ++e) {
      const auto i = Involved(taken[e].second);
      for (int k = 0; k < 3; ++k) inv[k] = inv[k] || i[k];
    }
    involved_of(reclaimee_leaf) = inv;
    // The leaf and its ancestors (eq among them) take the group's resources: their remaining
    // allocations are resolved once per group, and they all become involved in `inv` (only
    // read after every group).
    std::vector<Quantities*>& chain = chain_scratch_;
    chain.clear();
    for (QueueId a = reclaimee_leaf; a != kNone; a = c.queues[a].parent) {
      chain.push_back(&remaining_of(a));
      auto& ia = involved_of(a);
      for (int k = 0; k < 3; ++k) ia[k] = ia[k] || inv[k];
    }
    const Quantities& eq_remaining = remaining_of(eq);
    const ReclaimStrategy strategy(required, queues[rq], queues[eq]);
    for (size_t e = begin; e < end; ++e) {
      if (!strategy.Fits(eq_remaining)) return false;
      const Quantities& q = taken[e].second;
      for (Quantities* r : chain) *r -= q;
    }
    begin = end;
  }
  std::sort(present.begin(), present.end());  // (the queues in ascending order)

  const auto reclaimer_involved = Involved(required);
  for (QueueId rq = reclaimer.queue; rq != kNone; rq = c.queues[rq].parent) {
    Quantities with = rem_stamp_[rq] == stamp ? rem_[rq] : queues[rq].Allocated();
    with += required;
    const Quantities fair = queues[rq].FairShare();
    for (QueueId sib : present) {
      const Quantities& sib_remaining = rem_[sib];
      if (sib == rq || c.queues[sib].parent != c.queues[rq].parent) continue;
      auto inv = involved_of(sib);
      for (int k = 0; k < 3; ++k) inv[k] = inv[k] || reclaimer_involved[k];
      const Quantities sib_fair = queues[sib].FairShare();
      for (auto res : kQueueResources) {
        if (!inv[static_cast<int>(res)]) continue;
        if (fair[res] == kUnlimited && sib_fair[res] == kUnlimited) continue;
        const double ratio = Saturation(with[res], fair[res]);
        const double sib_ratio = Saturation(sib_remaining[res], sib_fair[res]);
        if (ratio > 1 && sib_fair[res] > 0 && ratio * reclaimer_multiplier_ >= sib_ratio) {
          return false;
        }
      }
    }
    if (reclaimer.preemptible) continue;
    Quantities np =
        Map(queues[rq], [](const ResourceShare& rs) { return rs.allocated_non_preemptible; });
    np += required;
    if (!LessEqual(np, queues[rq].Deserved())) return false;
  }
  return true;
}

const ProportionPlugin::VictimFacts& ProportionPlugin::VictimFactsOf(const Cluster& c) const {
  if (!victim_facts_.built) {
    VictimFacts& f = victim_facts_;
    f.pods.resize(c.pods.size());
    for (size_t p = 0; p < c.pods.size(); ++p) {
      const gantry::Pod& pod = c.pods[p];
      f.pods[p] = {pod.request.cpu_millis, pod.request.memory_bytes, pod.pod_set};
    }
    f.jobs.resize(c.jobs.size());
    f.set_min.clear();
    for (size_t j = 0; j < c.jobs.size(); ++j) {
      f.jobs[j] = {c.jobs[j].queue, f.set_min.size()};
      for (const PodSet& set : c.jobs[j].pod_sets) {
        f.set_min.push_back(std::max(0, set.min_available));
      }
    }
    f.built = true;
  }
  return victim_facts_;
}

}  // namespace gantry::proportion
