// Accelerator of the victim search: the pending pods and every evicted victim together against the
// free GPUs after a scenario's evictions (issue 24, consolidation's "not placed" simulations).
//
// Consolidation's validator accepts a simulation only when every victim it evicted is placed
// again (SolverSpec::every_victim_placed_again); the pending pods must be placed too. So an
// accepted simulation ends with the pending pods and every evicted victim placed on the feasible
// nodes at once. The capacity pre-check (capacity_blocks.h) asks the necessary block condition of
// the pending pods alone; this asks it of the pending pods and the evicted victims together.
//
// Why it is sound. Right after the evictions, let f_n be node n's free whole GPUs (idle +
// releasing, at least 0) on the feasible nodes. During a simulation nothing frees GPUs: pods are
// only placed (pipelined), and each whole-GPU placement of s GPUs needs s free GPUs on its node
// and takes them, while a shared-GPU placement takes none or a whole device (the premise of the
// pre-check, of VictimTurn's stop and of RejectionCertainBeforePlacing, rejection_proofs.h). So the
// whole-GPU pods placed on node n by the end add up to at most f_n, and for every size g those
// asking at least g GPUs are at most floor(f_n / g) there: the pods of an accepted simulation fit
// CouldFitProfile (gpu_blocks.h) against the blocks counted now. Shared-GPU, MIG and DRA requests
// are left out of the profile (SortedGpuSizes): leaving pods out keeps the condition necessary.
// When it fails, the simulation ends "not placed" or "rejected", never solved:
// - where the caller treats both alike (`may_skip`: the scenario's last node, and no node added to
//   the feasible ones or a cluster where that list cannot matter, accelerator.h MaySkip), it is
//   not simulated (kUnsolvable), as the proofs before placing do;
// - otherwise it is simulated up to the pending pods' turn (which decides between the two), and
//   once they are placed it stops, rejected, without placing the victims after them (as the
//   rejection rules' stop does).
// Like the pre-check and VictimTurn's stop, it leaves out placements only (the scenario's
// evictions are made and rolled back as before), never an eviction.
//
// Counts are taken from the capacity pre-check's exact counts after the evictions
// (ExactFreeAfterEvictions, BlocksAfterEvictions); where they are not exact the rule does nothing.
// The victims' sizes are the recorded victims' (kept for the prefix) and the node's potential
// victims', sorted once per simulation.
//
// Part of SearchAccelerator (accelerator.h), which exists only with the solver shortcuts on;
// SchedulerParams::solver_joint_profile switches this rule alone off (differential test:
// tests/unit/joint_profile_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/scenario.h"
#include "framework/session.h"

namespace gantry::victim_search {

class JointProfile {
 public:
  // Whether the rule applies to this search: the switch on and the action's validator requiring
  // every evicted victim placed again.
  void StartSearch(const Session& ssn, bool every_victim_placed_again) {
    applies_ = ssn.params().solver_joint_profile && every_victim_placed_again;
  }
  bool Applies() const { return applies_; }
  // A prefix starts: the recorded victims' sizes are listed again.
  void StartPrefix() { recorded_known_ = false; }

  // Whether the pending pods (whole-GPU sizes `pending_sizes`, largest first) and the evicted
  // victims (the scenario's recorded ones and those of `potential` not recorded) cannot all fit
  // the free GPUs `free_now` and the blocks `blocks(g)` of the feasible nodes now.
  template <typename Blocks>
  bool Fails(const Session& ssn, const Scenario& scenario, std::span<const PodId> potential,
             const std::vector<double>& pending_sizes, double free_now, const Blocks& blocks) {
    if (!recorded_known_) {
      recorded_sizes_.clear();
      AppendWholeSizes(ssn, scenario.recorded_tasks(), recorded_sizes_);
      recorded_known_ = true;
    }
    sizes_.assign(pending_sizes.begin(), pending_sizes.end());
    if (!sizes_.empty() && sizes_.front() < 0) return false;  // (not modelled: no profile)
    sizes_.insert(sizes_.end(), recorded_sizes_.begin(), recorded_sizes_.end());
    for (PodId p : potential) {
      if (scenario.IsRecorded(p)) continue;
      const double g = ssn.pod_briefs()[p].whole_gpus;
      if (g >= 1) sizes_.push_back(g);
    }
    std::sort(sizes_.begin(), sizes_.end(), std::greater<>());
    MakeProfile(sizes_, profile_);
    if (profile_.always_fits) return false;
    return !CouldFitProfile(profile_, [&](double g) { return g == 0 ? free_now : blocks(g); });
  }

 private:
  // The whole-GPU requests (at least one GPU) of `pods`.
  static void AppendWholeSizes(const Session& ssn, std::span<const PodId> pods,
                               std::vector<double>& out) {
    for (PodId p : pods) {
      const double g = ssn.pod_briefs()[p].whole_gpus;
      if (g >= 1) out.push_back(g);
    }
  }

  bool applies_ = false;
  bool recorded_known_ = false;
  std::vector<double> recorded_sizes_;
  std::vector<double> sizes_;
  SizeProfile profile_;
};

}  // namespace gantry::victim_search
