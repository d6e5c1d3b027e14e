#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "framework/session.h"
#include "plugins/proportion/plugin.h"
#include "plugins/proportion/reclaim_strategy.h"
#include "plugins/proportion/saturation.h"

namespace gantry::proportion {

namespace {

// The saturation form of a strategy rule: it holds whenever one GPU of its victims stays
// evicted, whatever is left evicted below the reclaimer's queue (see RejectionRules).
bool StrategyRuleAlwaysRejects(const std::array<double, SaturationBound::kParams>& /*params*/,
                               double x, double /*b*/) {
  return x >= 1;
}

}  // namespace

void ProportionPlugin::RejectionRules(const Session& s, JobId preemptor,
                                      std::span<const PodId> tasks, const EvictedVictims& evicted,
                                      std::vector<RejectionRule>& out) const {
  const Cluster& c = s.cluster();
  if (!s.params().solver_shortcuts || !exact_sums_ || !s.params().allow_consolidating_reclaim ||
      simulation_shares_.empty() || !(reclaimer_multiplier_ >= 0)) {
    return;
  }
  const auto& queues = simulation_shares_;
  if (pod_hit_.size() != c.pods.size()) pod_hit_.assign(c.pods.size(), 0);
  if (base_hit_.size() != c.pods.size()) base_hit_.assign(c.pods.size(), 0);
  if (path_stamp_.size() != c.queues.size()) {
    path_stamp_.assign(c.queues.size(), 0);
    common_of_.assign(c.queues.size(), 0);
    sib_of_.assign(c.queues.size(), kNone);
  }
  // What the call's stable victims give (see EvictedVictims) is kept with its key: the
  // reclaimer's root path, the required GPUs, and the stable victims' part of the sums below.
  RulesBase& base = rules_base_;
  if (evicted.stable_key == 0 || base.key != evicted.stable_key || base.stable != evicted.stable) {
    base.key = evicted.stable_key;
    base.stable = evicted.stable;
    base.required_all = Requested(c, tasks);
    base.required = base.required_all[QueueResource::kGpu];
    base.path = PathFromRoot(c, c.jobs[preemptor].queue);
    // The siblings of the path's queues whose whole allocation fails the strategy check
    // against the path's queue at their depth (the queues Leveled pairs).
    base.strategy_bad.assign(c.queues.size(), 0);
    base.any_bad = false;
    if (s.params().solver_strategy_rules) {
      for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
        for (QueueId rq : base.path) {
          if (q == rq || c.queues[q].parent != c.queues[rq].parent) continue;
          const ReclaimStrategy strategy(base.required_all, queues[rq], queues[q]);
          if (!strategy.Fits(queues[q].Allocated())) {
            base.strategy_bad[q] = 1;
            base.any_bad = true;
          }
        }
      }
    }
    // lo is at most (allocated(rq) + required) / fair(rq): no rule unless that exceeds 1
    // somewhere.
    base.possible = false;
    for (QueueId q : base.path) {
      const double fair = queues[q].FairShare()[QueueResource::kGpu];
      base.possible =
          base.possible ||
          (fair > 0 && (queues[q].Allocated()[QueueResource::kGpu] + base.required) / fair > 1);
    }
    base.path_call = ++path_call_;
    base.hit = ++stamp_;
    base.below.assign(base.path.size(), 0.0);
    base.below_lists.resize(base.path.size());
    for (auto& list : base.below_lists) list.clear();
    base.parted.clear();
    if (base.required > 0 && (base.possible || base.any_bad)) {
      AddEvicted(s, evicted.pods.first(evicted.stable), base, base_hit_, base.hit,
                 /*skip=*/0, base.below, &base.below_lists, base.parted);
      SortEntries(base.parted);
      GroupEntries(s, base.parted, base.groups);
    }
    base.pods.resize(base.parted.size());
    for (size_t k = 0; k < base.parted.size(); ++k) {
      base.pods[k] = static_cast<PodId>(base.parted[k] & 0xffffffffu);
    }
  }
  if (!(base.required > 0) || !(base.possible || base.any_bad)) return;
  const double required = base.required;
  const std::vector<QueueId>& path = base.path;
  // Accepted GPUs of the distinct evicted victims below each queue of the reclaimer's path,
  // and each distinct victim's parting level and sibling queue: the stable victims' part plus
  // the others (those already among the stable ones skipped).
  std::vector<double>& below = below_scratch_;
  below = base.below;
  auto& extra_below = extra_below_scratch_;
  extra_below.resize(path.size());
  for (auto& list : extra_below) list.clear();
  // (Below lists only for rules a simulation follows.)
  std::vector<std::vector<PodId>>* extra_lists = evicted.follow_below ? &extra_below : nullptr;
  const uint64_t call_hit = ++stamp_;
  auto& extra = extra_scratch_;
  extra.clear();
  AddEvicted(s, evicted.pods.subspan(evicted.stable), base, pod_hit_, call_hit,
             /*skip=*/base.hit, below, extra_lists, extra);
  SortEntries(extra);
  GroupEntries(s, extra, extra_groups_scratch_);
  const auto& extra_groups = extra_groups_scratch_;
  // One rule per sibling queue with distinct victims: the stable victims' group and the
  // others' group of that queue (both sorted by queue), merged.
  auto pod_of_entry = [](uint64_t e) { return static_cast<PodId>(e & 0xffffffffu); };
  size_t bi = 0, ei = 0;
  while (bi < base.groups.size() || ei < extra_groups.size()) {
    const EntryGroup* bg = bi < base.groups.size() ? &base.groups[bi] : nullptr;
    const EntryGroup* eg = ei < extra_groups.size() ? &extra_groups[ei] : nullptr;
    if (bg && eg && bg->sib != eg->sib) (bg->sib < eg->sib ? eg : bg) = nullptr;
    if (bg) ++bi;
    if (eg) ++ei;
    const EntryGroup& any = bg ? *bg : *eg;
    const QueueId sib_queue = any.sib;
    const double sib_gpus = (bg ? bg->gpus : 0.0) + (eg ? eg->gpus : 0.0);
    // (The queue where the paths part is at the depth of the sibling.)
    const size_t level = any.level;
    const QueueShare& rq = queues[path[level]];
    const QueueShare& sib = queues[sib_queue];
    const double fair = rq.FairShare()[QueueResource::kGpu];
    const double sib_fair = sib.FairShare()[QueueResource::kGpu];
    const double sib_allocated = sib.Allocated()[QueueResource::kGpu];
    SaturationCheck bound;
    bound.allocated = rq.Allocated()[QueueResource::kGpu];
    bound.required = required;
    bound.fair = fair;
    bound.sib_allocated = sib_allocated;
    bound.sib_fair = sib_fair;
    bound.multiplier = reclaimer_multiplier_;
    auto rejects = [&](double x) { return bound.Rejects(x, below[level]); };
    // The sibling's victims a rule follows: the stable ones held (in base.pods, kept until the
    // key changes), the others listed.
    auto list_victims = [&](RejectionRule& rule) {
      if (bg) {
        rule.held = std::span<const PodId>(base.pods).subspan(bg->begin, bg->end - bg->begin);
      }
      if (eg) {
        rule.pods.resize(eg->end - eg->begin);
        for (size_t k = 0; k < rule.pods.size(); ++k) {
          rule.pods[k] = pod_of_entry(extra[eg->begin + k]);
        }
      }
    };
    // A strategy rule: the sibling's whole allocation fails Reclaimable's strategy check, which
    // the validator asks with the sibling's allocation less what it took below it so far before
    // each victim below it that is counted (ReclaimStrategy: up-closed, and what is left only
    // falls). So one such victim left evicted makes it refuse, whatever else the simulation did
    // (like the saturation rules, it is stated only with exact sums): min_gpus 1 (a GPU victim),
    // and a saturation form that always holds, so that the proofs from the recorded victims'
    // rules take it too. It is the strongest rule a sibling can have (the saturation rule needs
    // at least one GPU left evicted too), so it replaces the saturation rule of the sibling: a
    // victim is followed for one rule only.
    if (base.strategy_bad[sib_queue] != 0 && sib_gpus >= 1) {
      RejectionRule& rule = out.emplace_back();
      rule.min_gpus = 1;
      rule.has_saturation = evicted.follow_below;
      rule.saturation.formula = &StrategyRuleAlwaysRejects;
      rule.sibling = sib_queue;
      rule.level = level;
      list_victims(rule);
      continue;
    }
    // (kUnlimited is negative.) A rule for every sibling queue the check can reject on: its
    // bound falls as victims below the reclaimer's queue there are placed again.
    if (base.possible && fair > 0 && sib_fair > 0 && sib_gpus >= 1 &&
        (evicted.follow_below || rejects(sib_gpus))) {
      double min_gpus = std::numeric_limits<double>::infinity();
      if (rejects(sib_gpus)) {
        double low = 1, high = sib_gpus;  // rejects(high); find the least whole such x
        while (low < high) {
          const double mid = std::floor((low + high) / 2);
          if (rejects(mid)) {
            high = mid;
          } else {
            low = mid + 1;
          }
        }
        min_gpus = high;
      }
      RejectionRule& rule = out.emplace_back();
      rule.min_gpus = min_gpus;
      rule.has_saturation = evicted.follow_below;
      rule.saturation = bound.AsBound();
      rule.below_held = base.below_lists[level];
      rule.below_more = extra_below[level];
      rule.sibling = sib_queue;
      rule.level = level;
      list_victims(rule);
    }
  }
}

void ProportionPlugin::GroupEntries(const Session& s, const std::vector<uint64_t>& entries,
                                    std::vector<EntryGroup>& groups) const {
  groups.clear();
  const auto& briefs = s.pod_briefs();
  const Cluster& c = s.cluster();
  for (size_t begin = 0; begin < entries.size();) {
    EntryGroup g;
    g.sib = static_cast<QueueId>(entries[begin] >> 32);
    g.begin = begin;
    size_t end = begin;
    while (end < entries.size() && static_cast<QueueId>(entries[end] >> 32) == g.sib) {
      g.gpus += s.AcceptedGpus(static_cast<PodId>(entries[end] & 0xffffffffu));
      ++end;
    }
    g.end = end;
    g.level =
        common_of_[c.jobs[briefs[static_cast<PodId>(entries[begin] & 0xffffffffu)].job].queue];
    groups.push_back(g);
    begin = end;
  }
}

void ProportionPlugin::AddEvicted(const Session& s, std::span<const PodId> pods,
                                  const RulesBase& base, std::vector<uint64_t>& hit, uint64_t stamp,
                                  uint64_t skip, std::vector<double>& below,
                                  std::vector<std::vector<PodId>>* below_lists,
                                  std::vector<uint64_t>& parted) const {
  const Cluster& c = s.cluster();
  const auto& briefs = s.pod_briefs();
  const std::vector<QueueId>& path = base.path;
  for (PodId p : pods) {
    if (hit[p] == stamp || (skip != 0 && base_hit_[p] == skip)) continue;
    hit[p] = stamp;
    const double gpus = s.AcceptedGpus(p);
    const QueueId vq = c.jobs[briefs[p].job].queue;
    // Per victim queue (kept while the path is the same): how many queues of the reclaimer's
    // root path are its ancestors or itself (in a tree, the common prefix of the two root
    // paths) and the queue where its path parts from the reclaimer's (kNone: they do not part).
    if (path_stamp_[vq] != base.path_call) {
      path_stamp_[vq] = base.path_call;
      std::vector<QueueId>& victim_path = victim_path_scratch_;  // (root first)
      victim_path.clear();
      for (QueueId a = vq; a != kNone; a = c.queues[a].parent) victim_path.push_back(a);
      std::reverse(victim_path.begin(), victim_path.end());
      size_t i = 0;
      while (i < path.size() && i < victim_path.size() && path[i] == victim_path[i]) ++i;
      common_of_[vq] = i;
      sib_of_[vq] = (i == path.size() || i == victim_path.size()) ? kNone : victim_path[i];
    }
    const size_t common = common_of_[vq];
    for (size_t i = 0; i < common; ++i) below[i] += gpus;
    if (below_lists != nullptr) {
      for (size_t i = 0; i < common; ++i) (*below_lists)[i].push_back(p);
    }
    const QueueId sib = sib_of_[vq];
    if (sib == kNone) continue;  // the paths do not part
    parted.push_back(static_cast<uint64_t>(static_cast<uint32_t>(sib)) << 32 |
                     static_cast<uint32_t>(p));
  }
}

void ProportionPlugin::SortEntries(std::vector<uint64_t>& entries) {
  if (std::is_sorted(entries.begin(), entries.end())) return;
  if (std::is_sorted(entries.begin(), entries.end(), std::greater<>())) {
    std::reverse(entries.begin(), entries.end());
  } else {
    std::sort(entries.begin(), entries.end());
  }
}

}  // namespace gantry::proportion
