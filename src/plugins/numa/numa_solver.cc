#include "plugins/numa/numa_solver.h"

#include <algorithm>
#include <functional>
#include <set>

namespace gantry::numa {

ZoneLedger ZoneLedger::From(const NumaTopology& topo) {
  ZoneLedger l;
  l.policy = topo.policy;
  l.scope = topo.scope;
  std::set<std::string> names;
  for (const NumaZone& z : topo.zones) {
    for (const auto& [name, amount] : z.allocatable) names.insert(name);
    for (const auto& [name, amount] : z.available) names.insert(name);
  }
  l.resources.assign(names.begin(), names.end());
  auto row = [&](const ResourceAmounts& amounts) {
    std::vector<double> v(l.resources.size(), 0);
    for (size_t r = 0; r < l.resources.size(); ++r) {
      if (auto it = amounts.find(l.resources[r]); it != amounts.end()) v[r] = it->second;
    }
    return v;
  };
  for (const NumaZone& z : topo.zones) {
    l.zone_ids.push_back(z.id);
    l.allocatable.push_back(row(z.allocatable));
    l.available.push_back(row(z.available));
  }
  l.allocatable_prefix.resize(l.resources.size());
  for (size_t r = 0; r < l.resources.size(); ++r) {
    std::vector<double> vals;
    for (const auto& zone : l.allocatable) vals.push_back(zone[r]);
    std::sort(vals.rbegin(), vals.rend());
    double acc = 0;
    for (double& v : vals) v = acc += v;
    l.allocatable_prefix[r] = std::move(vals);
  }
  return l;
}

int ZoneLedger::ResourceIndex(const std::string& name) const {
  auto it = std::lower_bound(resources.begin(), resources.end(), name);
  return it != resources.end() && *it == name ? static_cast<int>(it - resources.begin()) : -1;
}

int ZoneLedger::ZoneIndex(const std::string& id) const {
  for (size_t z = 0; z < zone_ids.size(); ++z) {
    if (zone_ids[z] == id) return static_cast<int>(z);
  }
  return -1;
}

namespace {

bool FitsZone(const ZoneLedger& l, const std::vector<bool>& aligned, const std::vector<double>& req,
              size_t z) {
  for (size_t r = 0; r < req.size(); ++r) {
    if (aligned[r] && req[r] > 0 && l.available[z][r] < req[r]) return false;
  }
  return true;
}

bool MaskHolds(const ZoneLedger& l, const std::vector<bool>& aligned,
               const std::vector<double>& req, const std::vector<int>& mask) {
  for (size_t r = 0; r < req.size(); ++r) {
    if (!aligned[r] || req[r] <= 0) continue;
    double sum = 0;
    for (int z : mask) sum += l.available[static_cast<size_t>(z)][r];
    if (sum < req[r]) return false;
  }
  return true;
}

// The zones to draw from, or false.
bool FeasibleMask(const ZoneLedger& l, const std::vector<bool>& aligned,
                  const std::vector<double>& req, std::vector<int>& mask) {
  mask.clear();
  const size_t zones = l.available.size();
  if (l.policy == NumaPolicy::kSingleNumaNode) {
    for (size_t z = 0; z < zones; ++z) {
      if (FitsZone(l, aligned, req, z)) {
        mask.push_back(static_cast<int>(z));
        return true;
      }
    }
    return false;
  }
  if (l.policy == NumaPolicy::kBestEffort) {
    std::vector<double> remaining(req.size(), 0);
    for (size_t r = 0; r < req.size(); ++r) remaining[r] = aligned[r] ? req[r] : 0;
    auto all_met = [&] {
      return std::all_of(remaining.begin(), remaining.end(), [](double v) { return v <= 0; });
    };
    std::vector<bool> used(zones, false);
    while (mask.size() < zones) {
      if (all_met()) return true;
      int best = -1;
      double best_cover = 0;
      for (size_t z = 0; z < zones; ++z) {
        if (used[z]) continue;
        double cover = 0;
        for (size_t r = 0; r < req.size(); ++r) {
          if (remaining[r] > 0) cover += std::min(remaining[r], l.available[z][r]);
        }
        if (cover > best_cover) best = static_cast<int>(z), best_cover = cover;
      }
      if (best < 0) break;
      used[static_cast<size_t>(best)] = true;
      mask.push_back(best);
      for (size_t r = 0; r < req.size(); ++r) {
        remaining[r] -= l.available[static_cast<size_t>(best)][r];
      }
    }
    return all_met();
  }
  // restricted (and anything else modelled): the narrowest width that the zones' allocatable
  // amounts allow, the same for every requested resource.
  int width = -1;
  for (size_t r = 0; r < req.size(); ++r) {
    if (!aligned[r] || req[r] <= 0) continue;
    const auto& prefix = l.allocatable_prefix[r];
    if (prefix.empty() || prefix.back() < req[r]) return false;
    int k = 0;
    while (prefix[static_cast<size_t>(k)] < req[r]) ++k;
    if (width == -1) {
      width = k + 1;
    } else if (width != k + 1) {
      return false;
    }
  }
  if (width <= 0) return true;  // nothing NUMA-aware requested: trivially aligned
  if (width > static_cast<int>(zones)) return false;
  std::vector<int> idx(static_cast<size_t>(width));
  for (int i = 0; i < width; ++i) idx[static_cast<size_t>(i)] = i;
  const int n = static_cast<int>(zones);
  while (true) {
    if (MaskHolds(l, aligned, req, idx)) {
      mask = idx;
      return true;
    }
    int i = width - 1;
    while (i >= 0 && idx[static_cast<size_t>(i)] == n - width + i) --i;
    if (i < 0) return false;
    ++idx[static_cast<size_t>(i)];
    for (int j = i + 1; j < width; ++j)
      idx[static_cast<size_t>(j)] = idx[static_cast<size_t>(j - 1)] + 1;
  }
}

}  // namespace

bool Solve(const ZoneLedger& l, const std::vector<bool>& aligned,
           const std::vector<double>& request, ZoneAllocation* alloc) {
  std::vector<int> mask;
  if (!FeasibleMask(l, aligned, request, mask)) return false;
  if (alloc == nullptr) return true;
  // Draw each resource from the chosen zones in order.
  for (size_t r = 0; r < request.size(); ++r) {
    if (!aligned[r] || request[r] <= 0) continue;
    double remaining = request[r];
    for (int z : mask) {
      if (remaining <= 0) break;
      const double take = std::min(remaining, l.available[static_cast<size_t>(z)][r]);
      if (take <= 0) continue;
      auto& amounts = (*alloc)[z];
      amounts.resize(request.size(), 0);
      amounts[r] += take;
      remaining -= take;
    }
  }
  return true;
}

}  // namespace gantry::numa
