#include "plugins/topology/free_sums.h"

#include <algorithm>

namespace gantry::topology {

Resources LeafFree(const Session& s, const Domain& dom) {
  Resources free;
  for (NodeId n : dom.nodes) {
    const NodeState& st = s.node(n);
    free += st.idle;
    free += st.releasing;
  }
  free.pods = 0;
  return free;
}

// Sums a leaf's free resources again if one of its nodes changed since the last sum.
void RefreshLeaf(const Session& s, Tree& tree, Domain& dom) {
  LeafCache& leaf = dom.leaf;
  const uint64_t epoch = s.placement_epoch();
  if (leaf.valid && leaf.checked_epoch == epoch) return;
  bool changed = !leaf.valid;
  for (NodeId n : dom.nodes) {
    const uint32_t v = s.node_version(n);
    if (tree.seen_version[n] != v) {
      tree.seen_version[n] = v;
      changed = true;
    }
  }
  leaf.valid = true;
  leaf.checked_epoch = epoch;
  if (!changed) return;
  ++leaf.revision;
  leaf.free = LeafFree(s, dom);
  dom.free_stamp = ++tree.stamps;
}

// The free resources of domain d and of the domains under it (the others stay zero). Inner
// domains add their children's in the children's current order, as the reference does, so
// the sums are the same to the bit with or without the leaf cache.
void ComputeFree(const Session& s, Tree& tree, int32_t d) {
  Domain& dom = tree.domains[d];
  if (dom.children.empty()) {
    if (s.params().topology_incremental) {
      RefreshLeaf(s, tree, dom);
      dom.free = dom.leaf.free;
      return;
    }
    dom.free = LeafFree(s, dom);
    return;
  }
  uint64_t stamp = dom.order_stamp;
  for (int32_t child : dom.children) {
    ComputeFree(s, tree, child);
    dom.free += tree.domains[child].free;
    stamp = std::max(stamp, tree.domains[child].free_stamp);
  }
  dom.free_stamp = stamp;
}

void MarkSumDirty(Tree& tree, int32_t d) {
  if (tree.sum_dirty[static_cast<size_t>(d)]) return;
  tree.sum_dirty[static_cast<size_t>(d)] = 1;
  const int at = tree.domains[static_cast<size_t>(d)].level + 1;  // (the root first)
  tree.dirty_at[static_cast<size_t>(at)].push_back(d);
}

// Follows the node journal since the last call: the leaves of the changed nodes summed again
// (in their node order, as LeafFree), then every domain above them and every domain whose
// children were reordered (SortTree), level by level upwards, each adding its children's sums
// in their current order as ComputeFree does: the same sums to the bit. The first call, and
// the first after the journal started again, sums every domain.
void FollowFreeSums(const Session& s, Tree& tree) {
  const std::vector<NodeId>& journal = s.node_journal();
  const std::vector<int32_t>& leaf_of = tree.node_domain.back();
  if (!tree.sums_valid || tree.journal_generation != s.node_journal_generation()) {
    tree.sum_dirty.assign(tree.domains.size(), 0);
    tree.dirty_at.assign(tree.topology->levels.size() + 1, {});
    for (int32_t d : tree.by_level.back()) MarkSumDirty(tree, d);
    tree.sums_valid = true;
    tree.journal_generation = s.node_journal_generation();
  } else {
    for (size_t i = tree.journal_position; i < journal.size(); ++i) {
      const int32_t leaf = leaf_of[static_cast<size_t>(journal[i])];
      if (leaf >= 0) MarkSumDirty(tree, leaf);
    }
  }
  tree.journal_position = journal.size();
  for (size_t at = tree.dirty_at.size(); at-- > 0;) {
    // (Marking a parent adds to the level above, not to this one.)
    for (int32_t d : tree.dirty_at[at]) {
      Domain& dom = tree.domains[static_cast<size_t>(d)];
      tree.sum_dirty[static_cast<size_t>(d)] = 0;
      if (dom.children.empty()) {
        dom.free = LeafFree(s, dom);
      } else {
        Resources sum;
        for (int32_t child : dom.children) sum += tree.domains[static_cast<size_t>(child)].free;
        dom.free = sum;
      }
      dom.free_stamp = ++tree.stamps;
      if (dom.parent >= 0) MarkSumDirty(tree, dom.parent);
    }
    tree.dirty_at[at].clear();
  }
}

}  // namespace gantry::topology
