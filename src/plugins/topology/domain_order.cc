#include "plugins/topology/domain_order.h"

#include <algorithm>
#include <cmath>

#include "plugins/topology/free_sums.h"

namespace gantry::topology {

// Bin packing: children fullest first (by the job's ratio to their free resources), then by id.
// The order is a function of the keys alone (ties broken by the unique ids), so children already
// sorted under the same keys, position for position, are not sorted again.
void SortTree(const Session& s, Tree& tree, int32_t d, const Resources& asked, int max_depth) {
  if (max_depth == -3) return;
  Domain& dom = tree.domains[d];
  const bool incremental = s.params().topology_incremental;
  bool same_keys = incremental && dom.sort_keys.size() == dom.children.size();
  uint64_t children_stamp = 0;
  for (int32_t child : dom.children) {
    children_stamp = std::max(children_stamp, tree.domains[child].free_stamp);
  }
  // The keys are a function of the request and the children's free resources: when neither
  // changed since they were computed, they are the same (and so is the order).
  const bool keys_known =
      same_keys && dom.keys_asked == tree.asked_serial && dom.keys_stamp == children_stamp;
  for (size_t i = 0; same_keys && !keys_known && i < dom.children.size(); ++i) {
    // (NaN keys compare unequal: sorted again.)
    same_keys = RatioToFree(s, asked, tree.domains[dom.children[i]].free) == dom.sort_keys[i];
  }
  if (incremental) {
    dom.keys_asked = tree.asked_serial;
    dom.keys_stamp = children_stamp;
  }
  if (same_keys) {
    if (dom.level == max_depth) return;
    for (size_t i = 0; i < dom.children.size(); ++i) {
      SortTree(s, tree, tree.domains[d].children[i], asked, max_depth);
    }
    return;
  }
  std::vector<std::pair<double, int32_t>> keyed;
  keyed.reserve(dom.children.size());
  for (int32_t child : dom.children) {
    keyed.emplace_back(RatioToFree(s, asked, tree.domains[child].free), child);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return tree.domains[a.second].id < tree.domains[b.second].id;
  });
  bool reordered = false;
  for (size_t i = 0; i < keyed.size(); ++i) {
    reordered = reordered || tree.domains[d].children[i] != keyed[i].second;
    tree.domains[d].children[i] = keyed[i].second;
  }
  if (incremental) {
    if (reordered) dom.order_stamp = ++tree.stamps;
    dom.sort_keys.resize(keyed.size());
    for (size_t i = 0; i < keyed.size(); ++i) dom.sort_keys[i] = keyed[i].first;
  }
  if (tree.domains[d].level == max_depth) return;
  const std::vector<int32_t> children = tree.domains[d].children;
  for (int32_t child : children) SortTree(s, tree, child, asked, max_depth);
}

// SortTree when following the changes: the same keys, order and stamps, each key computed once
// (SortTree computes them again to sort after the first differs), the children walked in place
// and scratch vectors kept between calls. The same stable sort on the same input: the same
// order.
void SortTreeFollowing(const Session& s, Tree& tree, int32_t d, const Resources& asked,
                       int max_depth, SortScratch& scratch) {
  Domain& dom = tree.domains[static_cast<size_t>(d)];
  const size_t n = dom.children.size();
  if (n == 0) return;
  uint64_t children_stamp = 0;
  for (int32_t child : dom.children) {
    children_stamp = std::max(children_stamp, tree.domains[static_cast<size_t>(child)].free_stamp);
  }
  const bool keys_known = dom.sort_keys.size() == n && dom.keys_asked == tree.asked_serial &&
                          dom.keys_stamp == children_stamp;
  dom.keys_asked = tree.asked_serial;
  dom.keys_stamp = children_stamp;
  if (!keys_known) {
    std::vector<double>& keys = scratch.keys;
    keys.resize(n);
    bool same_keys = dom.sort_keys.size() == n;
    for (size_t i = 0; i < n; ++i) {
      keys[i] = RatioToFree(s, asked, tree.domains[static_cast<size_t>(dom.children[i])].free);
      // (NaN keys compare unequal: sorted again.)
      same_keys = same_keys && keys[i] == dom.sort_keys[i];
    }
    if (!same_keys) {
      std::vector<std::pair<double, int32_t>>& keyed = scratch.keyed;
      keyed.clear();
      for (size_t i = 0; i < n; ++i) keyed.emplace_back(keys[i], dom.children[i]);
      auto fuller_first = [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return tree.domains[static_cast<size_t>(a.second)].id <
               tree.domains[static_cast<size_t>(b.second)].id;
      };
      // (SchedulerParams::topology_sort_skip_sorted: children already in the order of their new
      // keys are left as they are, which is what the stable sort would leave. Without a NaN key
      // the comparison is a strict weak order - keys descending, then ids ascending - and a
      // stable sort leaves a sequence sorted under a strict weak order unchanged; consecutive
      // pairs in order make the whole sequence sorted. A NaN key compares equal to every key,
      // which is no strict weak order: then the sort runs. A request asking for another number
      // of the same pods, as consecutive victim gangs placed again do, mostly keeps the order.)
      const bool sorted = s.params().topology_sort_skip_sorted &&
                          std::none_of(keyed.begin(), keyed.end(),
                                       [](const auto& k) { return std::isnan(k.first); }) &&
                          std::is_sorted(keyed.begin(), keyed.end(), fuller_first);
      if (!sorted) std::stable_sort(keyed.begin(), keyed.end(), fuller_first);
      bool reordered = false;
      for (size_t i = 0; i < n; ++i) {
        reordered = reordered || dom.children[i] != keyed[i].second;
        dom.children[i] = keyed[i].second;
      }
      if (reordered) {
        dom.order_stamp = ++tree.stamps;
        MarkSumDirty(tree, d);  // its sum is added again in the new order at the next call
      }
      dom.sort_keys.resize(n);
      for (size_t i = 0; i < n; ++i) dom.sort_keys[i] = keyed[i].first;
    }
  }
  if (dom.level == max_depth) return;
  for (size_t i = 0; i < n; ++i) {
    SortTreeFollowing(s, tree, tree.domains[static_cast<size_t>(d)].children[i], asked, max_depth,
                      scratch);
  }
}

}  // namespace gantry::topology
