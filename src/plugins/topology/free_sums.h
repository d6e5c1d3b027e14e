// A topology tree's free resources per domain (idle + releasing of its nodes, Domain::free), as
// the topology plugin's SubsetNodes reads them. Two ways to the same sums, to the bit:
// - the reference, ComputeFree: every call resets the sums and adds them up again below the
//   candidates' lowest common domain (a leaf's own sum kept while its nodes' versions do not move,
//   LeafCache, with SchedulerParams::topology_incremental);
// - following the session's node journal, FollowFreeSums
//   (SchedulerParams::topology_follow_changes):
//   the sums are kept between calls, and only the leaves of the nodes the journal names, and the
//   domains above them, are added up again.
// Both add a domain's children in the children's current order (SortTree may reorder them), so the
// floating-point sums agree; tests/unit/topology_incremental_test.cc compares them.
#pragma once

#include <cstdint>

#include "framework/session.h"
#include "plugins/topology/tree.h"

namespace gantry::topology {

// The free resources of a leaf domain's nodes, summed in their node order (pods left out).
Resources LeafFree(const Session& s, const Domain& dom);

// Sums a leaf's free resources again (LeafCache) if one of its nodes changed since the last sum.
void RefreshLeaf(const Session& s, Tree& tree, Domain& dom);

// The reference: the free resources of domain `d` and of the domains under it.
void ComputeFree(const Session& s, Tree& tree, int32_t d);

// Marks domain `d`'s sum to be added up again at the next FollowFreeSums (its level's list).
void MarkSumDirty(Tree& tree, int32_t d);

// Brings every domain's sum up to date with the node journal since the last call.
void FollowFreeSums(const Session& s, Tree& tree);

}  // namespace gantry::topology
