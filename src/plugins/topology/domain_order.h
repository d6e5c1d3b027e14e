// The bin-packing order of a topology tree's domains (KAI's sortTree): below a domain, children
// fullest first for the job being placed (by the ratio of its request to their free resources,
// RatioToFree), then by id, down to the preferred level (or the required one). The order is a
// function of the keys alone (ties broken by the unique ids), so children already sorted under the
// same keys, position for position, are not sorted again (SchedulerParams::topology_incremental).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/topology/tree.h"

namespace gantry::topology {

// Scratch lists of SortTreeFollowing, kept between calls (no allocation per call).
struct SortScratch {
  std::vector<double> keys;
  std::vector<std::pair<double, int32_t>> keyed;
};

// The reference: sorts the children of `d` and of the domains under it down to `max_depth` (a
// level index; -3: none, nothing is sorted).
void SortTree(const Session& s, Tree& tree, int32_t d, const Resources& asked, int max_depth);

// SortTree when the free sums follow the node journal (free_sums.h): the same keys, order and
// stamps, each key computed once, and a reordered domain's sum marked to be added up again in its
// new order.
void SortTreeFollowing(const Session& s, Tree& tree, int32_t d, const Resources& asked,
                       int max_depth, SortScratch& scratch);

}  // namespace gantry::topology
