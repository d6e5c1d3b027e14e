// Whole-GPU block arithmetic of the victim search's accelerators (the capacity check before placing
// a victim job again, capacity pre-checks, rejection proofs).
//
// A necessary condition for placing whole-GPU pods on a set of nodes: for every request size g,
// the pods asking for at least g GPUs must fit in the nodes' free GPUs counted in blocks of g
// (every placement of s GPUs on a node takes at least floor(s / g) of its blocks of g). Sums of
// block counts are used only while every count is a whole number (exact in any order).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "framework/session.h"

namespace gantry::victim_search {

// The whole-GPU requests of a set of pods, as CouldFitProfile checks them: their total and, per
// distinct request size g (largest first), how many pods ask for at least g GPUs.
struct SizeProfile {
  bool always_fits = true;  // no GPU request, or one not modelled (shared GPUs, MIG)
  double total = 0;
  std::vector<std::pair<double, double>> steps;  // (g, pods asking >= g)
};

// The whole-GPU requests of `pods`, largest first. Shared-GPU, MIG and DRA requests are left
// out: they can only make placing the whole-GPU pods harder, so the check stays a necessary
// condition.
inline void SortedGpuSizes(const Session& ssn, const std::vector<PodId>& pods,
                           std::vector<double>& sizes) {
  sizes.clear();
  for (PodId p : pods) {
    const Pod& pod = ssn.cluster().pods[p];
    if (pod.IsSharedGpu()) continue;
    if (pod.request.gpus > 0) sizes.push_back(pod.request.gpus);
  }
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
}

inline void MakeProfile(const std::vector<double>& sizes, SizeProfile& out) {
  out.steps.clear();
  out.total = 0;
  out.always_fits = sizes.empty() || sizes.front() < 0;
  if (out.always_fits) return;
  for (double g : sizes) out.total += g;
  size_t i = 0;
  while (i < sizes.size()) {
    const double g = sizes[i];
    while (i < sizes.size() && sizes[i] == g) ++i;  // i = number of pods asking >= g
    out.steps.emplace_back(g, static_cast<double>(i));
  }
}

// `blocks(g)`: free GPUs (g = 0) or blocks of g free GPUs of the candidate nodes.
template <typename Blocks>
bool CouldFitProfile(const SizeProfile& profile, const Blocks& blocks) {
  if (profile.always_fits) return true;
  if (profile.total > blocks(0)) return false;
  for (const auto& [g, count] : profile.steps) {
    if (count > blocks(g)) return false;
  }
  return true;
}

// std::floor for a quotient known to be at least 0 (or NaN): truncation, without the library
// call the generic x86-64 target makes for std::floor (the counts here are in the hot loop).
inline double FloorOfNonNegative(double q) {
  return q < 9e15 ? static_cast<double>(static_cast<int64_t>(q)) : std::floor(q);
}
// Free GPUs (g = 0) or blocks of g free GPUs of one node, as FreeBlocks counts them.
// (Always inlined: the free-block counts call it per changed node and size, tens of millions of
// times in a large cycle, and GCC had stopped inlining it on its own.)
[[gnu::always_inline]] inline double NodeBlocks(double free, double g) {
  const double f = std::max(0.0, free);
  return g == 0 ? f : FloorOfNonNegative(f / g);
}
// Sums of NodeBlocks are exact (so independent of the order of the terms) while every free
// count is a whole number well inside the range of consecutive integers of a double.
inline bool ExactlySummable(double free) {
  return std::abs(free) < 1e12 && free == static_cast<double>(static_cast<int64_t>(free));
}

}  // namespace gantry::victim_search
