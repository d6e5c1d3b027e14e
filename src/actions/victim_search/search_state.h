// The base of the victim search's accelerator layers (capacity_blocks.h, rejection_proofs.h,
// accelerator.h): the reference path's SearchContext (search_context.h) through references under
// the names the layers use, plus their own per-search state (the pending pods' GPU profile,
// counters, scratch lists).
#pragma once

#include <cstdint>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/search_context.h"
#include "actions/victim_search/solver.h"
#include "actions/victim_search/stats.h"
#include "framework/session.h"

namespace gantry::victim_search {

class SearchState {
 protected:
  explicit SearchState(SearchContext& ctx)
      : ssn_(ctx.ssn),
        job_(ctx.job),
        spec_(ctx.spec),
        feasible_(ctx.feasible),
        feasible_list_(ctx.feasible_list),
        feasible_version_(ctx.feasible_version),
        feasible_changes_(ctx.feasible_changes),
        feasible_generation_(ctx.feasible_generation) {}

  Session& ssn_;
  const JobId job_;
  SolverSpec& spec_;
  // (The context's, see SearchContext.)
  std::vector<char>& feasible_;
  std::vector<NodeId>& feasible_list_;
  uint64_t& feasible_version_;
  const std::vector<NodeId>& feasible_changes_;
  const uint64_t& feasible_generation_;
  SolverActionStats* stats_ = nullptr;  // this action's counters
  SizeProfile pending_profile_;         // the current prefix's GPU requests
  uint64_t prefix_serial_ = 0;          // prefixes searched so far (SolvePartial calls)
  std::vector<PodId> tasks_scratch_;
  mutable std::vector<double> sizes_scratch_;
  mutable SizeProfile profile_scratch_;
  std::vector<PodId> potential_scratch_;
};

}  // namespace gantry::victim_search
