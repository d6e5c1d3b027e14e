// Accelerator of the victim search: rejection rules and the proofs drawn from them.
//
// Rejection rules. Before a simulation the action's spec may state rules under which its validator
// rejects whatever else happens (`SolverSpec::rejection_rules`, `RejectionRule` in
// `framework/session.h`): "of these evicted victims, those left evicted at the end are at least one
// and hold at least G GPUs". Consolidation: any victim left evicted. Reclaim: proportion's
// `RejectionRules`, one rule per sibling queue where the reclaimer's and the victims' root paths
// part, from bounds on the saturation check (the reclaimer's side at its lowest: every evicted
// victim below it taken; the sibling's side as a function of the GPUs taken from it; exact sums
// make both quotients monotone), or from the strategy check when the sibling's whole allocation
// already fails it (then one GPU of its victims left evicted is enough: min_gpus 1).
// The simulation follows, per rule, the GPUs of victims whose job
// was already given its chance to be placed again and stayed evicted, and of victims not yet
// processed: once the pending pods are placed, at least (unprocessed - free GPUs of the nodes) of
// those stay evicted, since every re-placement takes whole GPUs from those free ones. When a rule
// is then certain the simulation stops as rejected without asking the validator. Used only with
// whole-GPU pending pods and victims and exact node counts. A test mode
// (`SetVerifyRejectionProofs`) runs such simulations to the end and counts validator acceptances as
// violations (`RejectionRulesAreSoundAndUsed` in the shortcuts test).
//
// Saturation bounds. Proportion's check compares the reclaimer's queue at the level where the paths
// part, less what is taken below it, with the sibling queue less what is taken from it; victims
// below the reclaimer's queue that are placed again raise the first side. So besides `min_gpus`
// (the bound with every such victim left evicted) a rule may carry the bound as a function of them
// (`RejectionRule::has_saturation`, `SaturationBound`: increasing in the GPUs taken from the
// sibling, decreasing in those left evicted below) with the list of those victims. A simulation
// follows them like the rule's own victims: at the end at most (left + unprocessed) of them stay
// evicted, so the rule becomes certain once enough of them are placed again. Callers that do not
// follow a simulation ask for none (`EvictedVictims::follow_below`).
//
// Proofs before placing. A rule can often be proven before anything is placed
// (`RejectionCertainBeforePlacing`): a victim job is processed once and places exactly its
// `TasksToAllocate` or nothing, and placements only take free GPUs (every placement of s GPUs takes
// at least floor(s / g) blocks of g free GPUs; nothing is freed during a simulation). So a rule's
// victims outside their job's tasks stay evicted, and so do the tasks of a job that cannot fit
// beside the pending pods in the blocks and free GPUs there are; the others can be placed again
// only into the free GPUs the pending pods leave. Such a simulation would end "not placed" or
// "rejected", never solved. On a scenario's last node (or when every node of the latest victim is
// proven or fails the pre-check) both end the scenario the same way, so it is not simulated. The
// two differ only in which nodes stay feasible (a rejection keeps the nodes it added, as KAI does);
// so the skip needs no added node, or a cluster where that list cannot matter: every pod asks for
// whole GPUs and is ranked over all nodes by class (`Session::AllPodsWholeGpuRankableByClass`). The
// shortcuts test has a variant with jobs asking for no GPU that fails without that condition. The
// same bound is also checked without evicting (from the touched nodes' free GPUs after the
// evictions) and, during a simulation, before the pending pods' turn; a simulation also stops,
// failed, once victims placed again leave no room for the pending pods.
//
// Proofs from the recorded victims' rules. A prefix's scenarios all evict its recorded victims;
// only the potential victims of one node differ. So the rules of the recorded victims alone are
// asked once per prefix (`RecordedRulesOf`: per rule its saturation bound, the GPUs of its victims
// below the reclaimer's queue, those of victims outside their job's tasks, and the others grouped
// by their job's joint requirement with the pending pods), and a scenario is proven from them
// (`ProvenByRecordedRules`) by adding its own victims by queue: those under the rule's sibling
// count as possibly placed again, those below the reclaimer's queue at the rule's level raise its
// `below` bound (`RejectionRule::sibling` and `level` say which). Only when that fails, or a
// recorded victim's job has a pod among the scenario's own victims, is the rules function asked
// with the scenario's whole list. The verify mode checks these proofs like the others
// (`proven_by_recorded` must be above zero on the random clusters).
//
// Part of SearchAccelerator (accelerator.h), which exists only with the solver shortcuts on; used
// when the spec gives rules. SetVerifyRejectionProofs (stats.h) runs proven simulations to the end
// instead.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "actions/victim_search/capacity_blocks.h"
#include "actions/victim_search/scenario.h"
#include "framework/session.h"

namespace gantry::victim_search {

class RejectionProofs : public CapacityBlocks {
 protected:
  using CapacityBlocks::CapacityBlocks;

  // Whether a rejection rule is certain before placing for the scenario's evictions plus
  // `potential`, decided without evicting: the session is in the prefix's base state and
  // TouchNodesOf has just counted the touched nodes' free GPUs after the evictions (exactly).
  // The rules do not depend on the evictions (the validator's shares are frozen for the search
  // and a victim keeps its accepted GPUs); the tasks of a job with a pod in `potential` are not
  // known without evicting, so its victims count as possibly placed again.
  bool ProvenUnsolvableWithoutEvicting(const Scenario& scenario,
                                       const std::vector<PodId>& potential) {
    if (!hypothetical_exact_ || !base_exact_ || !spec_.rejection_rules) {
      return false;
    }
    auto blocks = [&](double g) { return HypotheticalBlocks(g); };
    const double free_after = blocks(0);
    if (ProvenByRecordedRules(scenario, potential, free_after, blocks)) {
      ++stats_->proven_by_recorded;
      return true;
    }
    PrepareRejecting(scenario, potential, &free_after, /*track=*/false);
    if (rules_.empty()) return false;
    const auto& c = ssn_.cluster();
    if (unknown_tasks_.size() != c.jobs.size()) unknown_tasks_.assign(c.jobs.size(), 0);
    ++unknown_stamp_;
    const auto& briefs = ssn_.pod_briefs();
    for (PodId p : potential) unknown_tasks_[briefs[p].job] = unknown_stamp_;
    const bool proven = free_after - pending_profile_.total >= 0 &&
                        RulesCertainBeforePlacing(scenario, free_after, blocks, &unknown_tasks_);
    ClearRejecting();
    return proven;
  }

  // The rules of the prefix's recorded victims alone, summed for ProvenByRecordedRules (kept for
  // the prefix): per rule, its saturation bound, the accepted GPUs of its victims below the
  // reclaimer's queue, those of its victims outside their job's tasks, and those of the others
  // per distinct joint requirement of their job's tasks with the pending pods (a job standing
  // for each in `shapes`).
  struct RecordedRule {
    QueueId sibling = kNone;
    size_t level = 0;
    SaturationBound saturation;
    double below = 0;
    double outside = 0;
    std::vector<std::pair<uint32_t, double>> by_shape;
  };
  struct RecordedRules {
    uint64_t prefix = 0;
    std::vector<RecordedRule> rules;
    std::vector<JobId> shapes;
  };
  const RecordedRules& RecordedRulesOf(const Scenario& scenario) {
    RecordedRules& rr = recorded_rules_;
    if (rr.prefix == prefix_serial_) return rr;
    rr.prefix = prefix_serial_;
    rr.rules.clear();
    last_holding_rule_ = 0;
    rr.shapes.clear();
    const auto& c = ssn_.cluster();
    if (recorded_job_mark_.size() != c.jobs.size()) recorded_job_mark_.assign(c.jobs.size(), 0);
    if (recorded_rule_of_.size() != c.queues.size()) recorded_rule_of_.assign(c.queues.size(), {});
    // (The session is in the prefix's base state; the free count given is not used by rules
    // prepared without tracking.)
    const double unused_free = 0;
    PrepareRejecting(scenario, {}, &unused_free, /*track=*/false, /*saturation=*/true);
    const auto& briefs = ssn_.pod_briefs();
    auto same_fit = [&](const JointFit& a, const JointFit& b) {
      if (a.always != b.always || a.total != b.total || a.end - a.begin != b.end - b.begin) {
        return false;
      }
      return std::equal(joint_steps_.begin() + a.begin, joint_steps_.begin() + a.end,
                        joint_steps_.begin() + b.begin);
    };
    for (const RejectionRule& rule : rules_) {
      if (!rule.has_saturation) continue;
      RecordedRule out;
      out.saturation = rule.saturation;
      out.sibling = rule.sibling;
      out.level = rule.level;
      bool own = false;
      rule.ForEachPod([&](PodId p) {
        const JobId j = briefs[p].job;
        own = own || j == job_;
        if (own) return;
        recorded_job_mark_[j] = prefix_serial_;
        const double gpus = briefs[p].whole_gpus;
        const JointFit& fit = BaseJointFit(j, scenario.pending());
        if (base_task_mark_[p] != prefix_serial_) {
          out.outside += gpus;
          return;
        }
        uint32_t shape = 0;
        while (shape < rr.shapes.size() && !same_fit(joint_fit_[rr.shapes[shape]], fit)) ++shape;
        if (shape == rr.shapes.size()) rr.shapes.push_back(j);
        auto it = std::find_if(out.by_shape.begin(), out.by_shape.end(),
                               [shape](const auto& e) { return e.first == shape; });
        if (it == out.by_shape.end()) {
          out.by_shape.emplace_back(shape, gpus);
        } else {
          it->second += gpus;
        }
      });
      // (A rule holding the preemptor's own pods is not used: their placement is not modelled.)
      if (own) continue;
      for (const std::span<const PodId> list : {rule.below_held, rule.below_more}) {
        for (PodId p : list) out.below += ssn_.AcceptedGpus(p);
      }
      if (out.sibling != kNone && out.level < PreemptorPath().size()) {
        recorded_rule_of_[out.sibling] = {prefix_serial_, static_cast<uint32_t>(rr.rules.size())};
      } else {
        out.sibling = kNone;
      }
      rr.rules.push_back(std::move(out));
    }
    ClearRejecting();
    return rr;
  }

  // The root path (root first) of the preemptor's queue, kept for the search.
  const std::vector<QueueId>& PreemptorPath() {
    if (!path_known_) {
      path_known_ = true;
      const auto& queues = ssn_.cluster().queues;
      for (QueueId q = ssn_.cluster().jobs[job_].queue; q != kNone; q = queues[q].parent) {
        preemptor_path_.push_back(q);
      }
      std::reverse(preemptor_path_.begin(), preemptor_path_.end());
    }
    return preemptor_path_;
  }
  // For a victim's queue: how many queues of the preemptor's root path are its ancestors or
  // itself, and its ancestor (or itself) right below the last of them (kNone when its path does
  // not part from the preemptor's), kept per queue for the search.
  std::pair<size_t, QueueId> PartingOf(QueueId q) {
    const auto& queues = ssn_.cluster().queues;
    if (parting_.size() != queues.size()) parting_.assign(queues.size(), {SIZE_MAX, kNone});
    auto& entry = parting_[static_cast<size_t>(q)];
    if (entry.first != SIZE_MAX) return entry;
    const std::vector<QueueId>& path = PreemptorPath();
    std::vector<QueueId>& own = victim_path_scratch_;
    own.clear();
    for (QueueId a = q; a != kNone; a = queues[a].parent) own.push_back(a);
    std::reverse(own.begin(), own.end());
    size_t i = 0;
    while (i < path.size() && i < own.size() && path[i] == own[i]) ++i;
    entry = {i, (i == path.size() || i == own.size()) ? kNone : own[i]};
    return entry;
  }

  // A cheaper sufficient condition for ProvenUnsolvableWithoutEvicting, from the rules of the
  // recorded victims alone (RecordedRulesOf), as RulesCertainBeforePlacing decides them. The
  // scenario's own victims, on top of those, can only add to a rule's victims left evicted
  // (which strengthens it) or, at most all of their accepted GPUs, to the victims below the
  // reclaimer's queue left evicted (which the rule's saturation bound is given); they do not
  // change what the recorded victims' jobs would place again unless one of those jobs has a pod
  // among them (then this is not decided here).
  template <typename Blocks>
  bool ProvenByRecordedRules(const Scenario& scenario, const std::vector<PodId>& potential,
                             double free_after, const Blocks& blocks) {
    if (scenario.recorded_tasks().empty()) return false;
    const RecordedRules& rr = RecordedRulesOf(scenario);
    if (rr.rules.empty()) return false;
    const double spare = free_after - pending_profile_.total;
    if (spare < 0) return false;
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    // The scenario's own victims: per rule, the whole GPUs of those under its sibling queue
    // (possibly placed again); per level of the preemptor's root path, the accepted GPUs of
    // those below its queue there.
    const size_t depth = PreemptorPath().size();
    below_added_.assign(depth + 1, 0.0);
    sibling_added_.assign(rr.rules.size(), 0.0);
    for (PodId p : potential) {
      const JobId j = briefs[p].job;
      if (recorded_job_mark_[j] == prefix_serial_) return false;
      const auto [common, sibling] = PartingOf(c.jobs[j].queue);
      below_added_[common] += ssn_.AcceptedGpus(p);
      if (sibling == kNone) continue;
      const auto& [stamp, r] = recorded_rule_of_[sibling];
      if (stamp == prefix_serial_ && ssn_.AcceptedGpus(p) == briefs[p].whole_gpus) {
        sibling_added_[r] += briefs[p].whole_gpus;
      }
    }
    // (below_added_[k]: below the path's first k queues; summed from the deepest level up.)
    for (size_t k = depth; k-- > 0;) below_added_[k] += below_added_[k + 1];
    // (Each shape's fit is decided when a rule first needs it: the first rule that holds ends
    // the check.)
    shape_fits_.assign(rr.shapes.size(), -1);
    auto shape_fits = [&](uint32_t shape) {
      int8_t& fits = shape_fits_[shape];
      if (fits < 0) fits = FitsJoint(joint_fit_[rr.shapes[shape]], free_after, blocks) ? 1 : 0;
      return fits != 0;
    };
    auto holds = [&](size_t r) {
      const RecordedRule& rule = rr.rules[r];
      double sure = rule.outside;
      double may_place = sibling_added_[r];
      for (const auto& [shape, gpus] : rule.by_shape)
        (shape_fits(shape) ? may_place : sure) += gpus;
      const double left = sure + std::max(0.0, may_place - spare);
      // (A victim below the path's queue at `level` is below its first level + 1 queues.)
      const double below =
          rule.below + (rule.sibling != kNone ? below_added_[rule.level + 1] : below_added_[0]);
      return left >= 1 && rule.saturation.Rejects(left, below);
    };
    // Any rule that holds proves the scenario: the one that proved the previous scenario of the
    // prefix is tried first (consecutive scenarios differ in a few victims).
    size_t& first = last_holding_rule_;
    if (first < rr.rules.size() && holds(first)) return true;
    for (size_t r = 0; r < rr.rules.size(); ++r) {
      if (r != first && holds(r)) {
        first = r;
        return true;
      }
    }
    return false;
  }

  // The rejection rules of a simulation (SolverSpec::rejection_rules), followed while it runs:
  // per rule, the accepted GPUs of its victims known to stay evicted (their job had its chance
  // to be placed again, so their statuses are final) and of those whose job has not. Once the
  // pending pods are placed, a victim is placed again only onto the feasible nodes' free GPUs,
  // taking its own whole GPUs (equal to its accepted ones): so at least (unprocessed - free now)
  // of the unprocessed ones stay evicted, and a rule whose bound reaches its minimum holds at the
  // end of the simulation whatever happens in between.
  struct RuleState {
    double min_gpus = 0;
    double left = 0;         // GPUs of victims known to stay evicted
    bool any_left = false;   // some victim is known to stay evicted
    double unprocessed = 0;  // GPUs of victims whose job was not processed yet
    // With a saturation bound (RejectionRule::has_saturation): the same for its `below`
    // victims; at the end, b <= below_left + below_unprocessed.
    const SaturationBound* saturation = nullptr;
    double below_left = 0;
    double below_unprocessed = 0;
    // Whether the rule holds at the end when at least `x` GPUs of its victims stay evicted
    // (x >= 1 whole GPUs, from below) whatever happens to the victims not processed yet.
    // (2: only through the saturation bound, lowered by `below` victims placed again.)
    int Holds(double x) const {
      if (!(x >= 1)) return 0;
      if (x >= min_gpus) return 1;
      return saturation != nullptr && saturation->Rejects(x, below_left + below_unprocessed) ? 2
                                                                                             : 0;
    }
  };
  // `free_after`: the free GPUs of the feasible nodes after the scenario's evictions, when the
  // caller knows them without the evictions done (else counted from the session).
  // `track`: the rules are followed while a simulation runs (NoteProcessed, RejectionCertain);
  // otherwise only rules_ is filled (for RulesCertainBeforePlacing).
  // `saturation`: with `track` false, the rules' saturation bounds are wanted all the same.
  void PrepareRejecting(const Scenario& scenario, std::span<const PodId> potential,
                        const double* free_after = nullptr, bool track = true,
                        bool saturation = false) {
    ClearRejecting();
    if (!spec_.rejection_rules || !base_exact_) return;
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    // Every pod placed in the simulation must take whole GPUs (so free counts stay exact).
    auto whole = [&](PodId p) {
      const double g = briefs[p].whole_gpus;
      return !std::isnan(g) && ExactlySummable(g);
    };
    if (whole_job_.size() != c.jobs.size()) whole_job_.assign(c.jobs.size(), -1);
    auto usable_victims = [&](std::span<const PodId> pods) {
      for (PodId p : pods) {
        if (!whole(p) || ssn_.AcceptedGpus(p) != briefs[p].whole_gpus) return false;
        // (What the victim's job may place again: a property of its pods' specs, kept per job.)
        const JobId j = briefs[p].job;
        int8_t& job_whole = whole_job_[j];
        if (job_whole < 0) {
          job_whole = 1;
          for (PodId q : c.jobs[j].pods) job_whole = job_whole && whole(q);
        }
        if (job_whole == 0) return false;
      }
      return true;
    };
    // The recorded victims are the same for the whole prefix, and whole-GPU pods keep their
    // accepted GPUs wherever they are placed: they are copied and checked once per prefix.
    if (recorded_prefix_ != prefix_serial_) {
      recorded_prefix_ = prefix_serial_;
      const auto& recorded = scenario.recorded_tasks();
      evicted_scratch_.assign(recorded.begin(), recorded.end());
      recorded_whole_ = std::all_of(recorded.begin(), recorded.end(), whole);
      recorded_usable_ = usable_victims(recorded);
    }
    evicted_scratch_.resize(scenario.recorded_tasks().size());
    evicted_scratch_.insert(evicted_scratch_.end(), potential.begin(), potential.end());
    for (PodId p : scenario.pending()) {
      if (!whole(p)) return;
    }
    // The recorded victims lead the list: when they all ask for whole GPUs they are offered as
    // the stable part.
    EvictedVictims evicted;
    evicted.pods = evicted_scratch_;
    if (recorded_whole_) {
      evicted.stable = scenario.recorded_tasks().size();
      evicted.stable_key = stable_key_base_ + prefix_serial_;
    }
    evicted.follow_below = track || saturation;
    spec_.rejection_rules(ssn_, job_, scenario.pending(), evicted, rules_);
    if (rules_.empty()) return;
    const bool usable = recorded_usable_ && usable_victims(potential);
    // Free counts exact now, and kept so by whole-GPU placements only.
    double free_now = 0;
    if (!usable || !(free_after != nullptr || ExactFreeAfterEvictions(free_now))) {
      rules_.clear();
      return;
    }
    if (!track) return;
    tracking_ = true;
    rule_of_pod_.resize(c.pods.size(), -1);
    rejecting_job_.resize(c.jobs.size(), 0);
    bool overlap = false;  // a pod listed twice (each pod is followed for one rule only)
    // (The `below` victims of rule r are flagged by bit r: at most 64 rules follow them.)
    below_mask_.resize(c.pods.size(), 0);
    const bool follow_below = rules_.size() <= 64;
    for (size_t r = 0; r < rules_.size(); ++r) {
      RuleState st;
      st.min_gpus = rules_[r].min_gpus;
      rules_[r].ForEachPod([&](PodId p) {
        overlap = overlap || rule_of_pod_[p] >= 0;
        rule_of_pod_[p] = static_cast<int32_t>(r);
        rejecting_job_[briefs[p].job] = 1;
        st.unprocessed += briefs[p].whole_gpus;
      });
      if (rules_[r].has_saturation && follow_below) {
        st.saturation = &rules_[r].saturation;
        for (const std::span<const PodId> list : {rules_[r].below_held, rules_[r].below_more}) {
          for (PodId p : list) {
            const uint64_t bit = uint64_t{1} << r;
            // (A pod listed twice: not followed.)
            overlap = overlap || (below_mask_[p] & bit) != 0 || !whole(p) ||
                      ssn_.AcceptedGpus(p) != briefs[p].whole_gpus;
            below_mask_[p] |= bit;
            rejecting_job_[briefs[p].job] = 1;
            st.below_unprocessed += briefs[p].whole_gpus;
          }
        }
      }
      rule_states_.push_back(st);
    }
    if (overlap) ClearRejecting();
  }

  void ClearRejecting() {
    const auto& briefs = ssn_.pod_briefs();
    if (tracking_) {
      for (const RejectionRule& rule : rules_) {
        rule.ForEachPod([&](PodId p) {
          rule_of_pod_[p] = -1;
          rejecting_job_[briefs[p].job] = 0;
        });
        if (!rule.has_saturation || below_mask_.empty()) continue;
        for (const std::span<const PodId> list : {rule.below_held, rule.below_more}) {
          for (PodId p : list) {
            below_mask_[p] = 0;
            rejecting_job_[briefs[p].job] = 0;
          }
        }
      }
      tracking_ = false;
    }
    rules_.clear();
    rule_states_.clear();
  }

  // Victim job j had its chance to be placed again: its victims' statuses are final.
  void NoteProcessed(JobId j) {
    if (rules_.empty() || !rejecting_job_[j]) return;
    rejecting_job_[j] = 0;  // (a job is processed once)
    const auto& c = ssn_.cluster();
    for (PodId p : c.jobs[j].pods) {
      const bool releasing = ssn_.pod(p).status == PodStatus::kReleasing;
      for (uint64_t mask = below_mask_.empty() ? 0 : below_mask_[p]; mask != 0; mask &= mask - 1) {
        RuleState& st = rule_states_[static_cast<size_t>(std::countr_zero(mask))];
        st.below_unprocessed -= c.pods[p].request.gpus;
        if (releasing) st.below_left += c.pods[p].request.gpus;
      }
      const int32_t r = rule_of_pod_[p];
      if (r < 0) continue;
      RuleState& st = rule_states_[static_cast<size_t>(r)];
      st.unprocessed -= c.pods[p].request.gpus;
      if (releasing) {
        st.left += c.pods[p].request.gpus;
        st.any_left = true;
      }
    }
  }

  // With the pending pods placed: whether some rule certainly holds at the end.
  bool RejectionCertain(const std::vector<NodeId>& nodes) const {
    if (rules_.empty()) return false;
    const double free = FreeBlocks(nodes, 0);
    for (const RuleState& st : rule_states_) {
      const double surely_left = std::max(0.0, st.unprocessed - free);
      if (!(st.any_left || surely_left > 0)) continue;
      if (const int h = st.Holds(st.left + surely_left); h != 0) {
        certain_by_saturation_ = h == 2;
        return true;
      }
    }
    return false;
  }

  // Before the pending pods' turn: whether some rule will be certain once they are placed. Each
  // rule's (left + unprocessed - free GPUs) never decreases while victims are processed (a
  // victim placed again takes its GPUs from the free ones; one left evicted moves from
  // unprocessed to left), and placing the pending pods takes their GPUs from the free ones: so
  // right after, left + max(0, unprocessed - free) is at least what this computes with the
  // pending pods' GPUs taken off the free ones now.
  bool RejectionCertainOncePlaced(const std::vector<NodeId>& nodes) const {
    if (rules_.empty() || pending_profile_.always_fits) return false;
    const double spare = FreeBlocks(nodes, 0) - pending_profile_.total;
    for (const RuleState& st : rule_states_) {
      if (const int h = st.Holds(st.left + std::max(0.0, st.unprocessed - spare)); h != 0) {
        certain_by_saturation_ = h == 2;
        return true;
      }
    }
    return false;
  }

  // Before anything is placed (the scenario's evictions done, rules prepared): whether some rule
  // is certain to hold at the end of any simulation that places the pending pods.
  //
  // A victim job is processed once: it places exactly its TasksToAllocate (as they are now: its
  // pods do not change before) or nothing. So a rule's victims outside those tasks stay evicted,
  // and so do the tasks of a job that cannot be placed together with the pending pods: every
  // whole-GPU placement of s GPUs on a node with f >= s free takes at least floor(s / g) of its
  // blocks of g GPUs (floor(f / g) - floor((f - s) / g) >= floor(s / g)) and nothing frees
  // GPUs during a simulation, so pods placed in one simulation need, for every size g, at most
  // the blocks of g there are now, and at most the free GPUs there are now. The rest of a rule's
  // victims are placed again only into what the pending pods leave free.
  bool RejectionCertainBeforePlacing(const Scenario& scenario) {
    if (rules_.empty()) return false;
    double free_now = 0;
    if (!ExactFreeAfterEvictions(free_now)) return false;
    return RulesCertainBeforePlacing(
        scenario, free_now, [&](double g) { return BlocksAfterEvictions(g); }, nullptr);
  }

  // RejectionCertainBeforePlacing from the free GPUs (`free_now`) and blocks of g free GPUs
  // (`blocks(g)`) of the feasible nodes after the scenario's evictions. The tasks of a job
  // flagged in `unknown_tasks` are not asked for (its pods are not in the state the simulation
  // would start from): its victims count as possibly placed again.
  template <typename Blocks>
  bool RulesCertainBeforePlacing(const Scenario& scenario, double free_now, const Blocks& blocks,
                                 const std::vector<uint64_t>* unknown_tasks) {
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    const double spare = free_now - pending_profile_.total;
    if (spare < 0) return false;  // (the pending pods cannot be placed: the pre-check's case)
    if (task_mark_.size() != c.pods.size()) task_mark_.assign(c.pods.size(), 0);
    if (job_mark_.size() != c.jobs.size()) job_mark_.assign(c.jobs.size(), 0);
    for (const RejectionRule& rule : rules_) {
      if (std::isinf(rule.min_gpus)) continue;  // (a saturation bound only: not before placing)
      ++mark_stamp_;
      double sure = 0;       // GPUs of the rule's victims certain to stay evicted
      double may_place = 0;  // GPUs of those that might be placed again
      for (const std::span<const PodId> list : {rule.held, std::span<const PodId>(rule.pods)}) {
        for (PodId p : list) {
          const JobId j = briefs[p].job;
          if (j == job_) return false;
          const bool unknown = unknown_tasks != nullptr && (*unknown_tasks)[j] == unknown_stamp_;
          if (!unknown && job_mark_[j] != mark_stamp_) {
            job_mark_[j] = mark_stamp_;
            if (unknown_tasks != nullptr) {
              // (Its pods are as in the prefix's base state: what it would place is kept.)
              const JointFit& fit = BaseJointFit(j, scenario.pending());
              job_fits_[j] = FitsJoint(fit, free_now, blocks) ? mark_stamp_ : 0;
            } else {
              ssn_.TasksToAllocate(j, tasks_scratch_, /*real=*/false, /*ordered=*/false);
              const bool fits =
                  FitsWithPending(tasks_scratch_, scenario.pending(), free_now, blocks);
              for (PodId t : tasks_scratch_) task_mark_[t] = fits ? mark_stamp_ : 0;
            }
          }
          const double gpus = briefs[p].whole_gpus;
          const bool may_be_placed =
              unknown || (unknown_tasks != nullptr
                              ? job_fits_[j] == mark_stamp_ && base_task_mark_[p] == prefix_serial_
                              : task_mark_[p] == mark_stamp_);
          if (may_be_placed) {
            may_place += gpus;
          } else {
            sure += gpus;
          }
        }
      }
      const double left = sure + std::max(0.0, may_place - spare);
      if (left >= std::max(1.0, rule.min_gpus)) return true;
    }
    return false;
  }

  // FitsWithPending of a job's tasks in the prefix's base state, as their joint requirement with
  // the pending pods (computed once per job and prefix): not modelled (always true), or their
  // total GPUs and, per distinct size g, the blocks of g they need.
  struct JointFit {
    uint64_t prefix = 0;  // prefix_serial_ it was computed for
    bool always = true;
    double total = 0;
    uint32_t begin = 0, end = 0;  // its steps in joint_steps_
  };
  const JointFit& BaseJointFit(JobId j, const std::vector<PodId>& pending) {
    const auto& c = ssn_.cluster();
    if (joint_fit_.size() != c.jobs.size()) joint_fit_.assign(c.jobs.size(), {});
    if (base_task_mark_.size() != c.pods.size()) base_task_mark_.assign(c.pods.size(), 0);
    if (job_fits_.size() != c.jobs.size()) job_fits_.assign(c.jobs.size(), 0);
    if (joint_prefix_ != prefix_serial_) {
      joint_prefix_ = prefix_serial_;
      joint_steps_.clear();
    }
    JointFit& fit = joint_fit_[j];
    if (fit.prefix == prefix_serial_) return fit;
    ssn_.TasksToAllocate(j, tasks_scratch_, /*real=*/false, /*ordered=*/false);
    for (PodId t : tasks_scratch_) base_task_mark_[t] = prefix_serial_;
    fit = JointFitOf(tasks_scratch_, pending);
    fit.prefix = prefix_serial_;
    return fit;
  }
  // The joint requirement of `tasks` and the whole-GPU `pending` pods, its steps appended to
  // joint_steps_: not modelled (always) when some task is not a whole-GPU pod or none asks for
  // GPUs; otherwise the total and, per distinct size g (ascending), the blocks of g needed.
  JointFit JointFitOf(const std::vector<PodId>& tasks, const std::vector<PodId>& pending) {
    JointFit fit;
    const auto& briefs = ssn_.pod_briefs();
    std::vector<double>& sizes = joint_sizes_;
    sizes.clear();
    for (PodId t : tasks) {
      const double g = briefs[t].whole_gpus;
      if (std::isnan(g) || !ExactlySummable(g)) return fit;
      if (g > 0) sizes.push_back(g);
    }
    if (sizes.empty()) return fit;
    for (PodId t : pending) {
      if (briefs[t].whole_gpus > 0) sizes.push_back(briefs[t].whole_gpus);
    }
    fit.always = false;
    for (double g : sizes) fit.total += g;
    std::sort(sizes.begin(), sizes.end());
    fit.begin = static_cast<uint32_t>(joint_steps_.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i > 0 && sizes[i] == sizes[i - 1]) continue;
      const double g = sizes[i];
      double count = 0;
      for (size_t k = i; k < sizes.size(); ++k) count += FloorOfNonNegative(sizes[k] / g);
      joint_steps_.emplace_back(g, count);
    }
    fit.end = static_cast<uint32_t>(joint_steps_.size());
    return fit;
  }
  template <typename Blocks>
  bool FitsJoint(const JointFit& fit, double free_now, const Blocks& blocks) const {
    if (fit.always) return true;
    if (fit.total > free_now) return false;
    for (uint32_t i = fit.begin; i < fit.end; ++i) {
      if (joint_steps_[i].second > blocks(joint_steps_[i].first)) return false;
    }
    return true;
  }

  // A necessary condition for placing `tasks` and the whole-GPU `pending` pods in one
  // simulation from the current state (see RejectionCertainBeforePlacing): true when some task
  // is not a whole-GPU pod (not modelled).
  template <typename Blocks>
  bool FitsWithPending(const std::vector<PodId>& tasks, const std::vector<PodId>& pending,
                       double free_now, const Blocks& blocks) {
    // (Its steps are appended for the check only.)
    const size_t kept = joint_steps_.size();
    const bool fits = FitsJoint(JointFitOf(tasks, pending), free_now, blocks);
    joint_steps_.resize(kept);
    return fits;
  }

  // The rejection rules of the current simulation (see PrepareRejecting).
  std::vector<RejectionRule> rules_;
  std::vector<RuleState> rule_states_;
  std::vector<PodId> evicted_scratch_;  // the recorded victims of prefix recorded_prefix_,
                                        // then the node's
  // PrepareRejecting's checks of the recorded victims of prefix recorded_prefix_: all ask for
  // whole GPUs (then they are the rules' stable part, see EvictedVictims), and all can be
  // followed by the rules. Stable keys are unique per process.
  uint64_t recorded_prefix_ = 0;
  RecordedRules recorded_rules_;
  std::vector<std::pair<uint64_t, uint32_t>> recorded_rule_of_;  // per sibling queue (prefix)
  std::vector<double> below_added_, sibling_added_;
  bool path_known_ = false;
  std::vector<QueueId> preemptor_path_, victim_path_scratch_;
  std::vector<std::pair<size_t, QueueId>> parting_;
  std::vector<uint64_t>
      recorded_job_mark_;           // jobs with victims in recorded_rules_ (prefix_serial_)
  std::vector<int8_t> shape_fits_;  // per shape: 1 fits, 0 does not, -1 not decided yet
  // The recorded rule that last proved a scenario of the prefix (see ProvenByRecordedRules).
  size_t last_holding_rule_ = 0;
  bool recorded_whole_ = false;
  bool recorded_usable_ = false;
  const uint64_t stable_key_base_ = NextStableKeyBase();
  static uint64_t NextStableKeyBase() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(uint64_t{1} << 32);
  }
  std::vector<int32_t> rule_of_pod_;
  std::vector<char> rejecting_job_;
  // RejectionCertainBeforePlacing's marks (per pod and per job, valid where equal to the
  // stamp) and sizes.
  std::vector<uint64_t> task_mark_, job_mark_;
  // ProvenUnsolvableWithoutEvicting's jobs whose tasks are not known (where equal to the stamp),
  // and whether TouchNodesOf's hypothetical_free_ is exact.
  std::vector<uint64_t> unknown_tasks_;
  uint64_t unknown_stamp_ = 0;
  // Per job (-1: not known yet): every pod asks for whole GPUs (PrepareRejecting's `whole`).
  std::vector<int8_t> whole_job_;
  uint64_t mark_stamp_ = 0;
  // The last rule found certain held only through its saturation bound (see RuleState::Holds).
  mutable bool certain_by_saturation_ = false;
  // Per pod: the rules (bit r for rule r) that count it among their `below` victims.
  std::vector<uint64_t> below_mask_;
  // PrepareRejecting's rules are followed (rule_of_pod_ and rejecting_job_ are set).
  bool tracking_ = false;
  std::vector<double> joint_sizes_;
  std::vector<JointFit> joint_fit_;
  std::vector<std::pair<double, double>> joint_steps_;
  uint64_t joint_prefix_ = 0;
  std::vector<uint64_t> base_task_mark_, job_fits_;
};

}  // namespace gantry::victim_search
