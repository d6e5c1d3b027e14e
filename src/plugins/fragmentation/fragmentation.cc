#include "plugins/fragmentation/fragmentation.h"

#include <algorithm>
#include <cmath>

namespace gantry::frag {

namespace {
constexpr double kEps = 1e-9;
}

double UnusableGpus(const NodeFree& node, const PodShape& shape) {
  double free_total = 0;
  for (double f : node.gpu_free) free_total += f;
  if (free_total <= kEps) return 0;
  if (shape.cpu_millis > node.cpu_millis + kEps || shape.memory_bytes > node.memory_bytes + kEps) {
    return free_total;  // the shape does not fit at all: every free share is lost to it
  }
  if (shape.whole > 0) {
    int unused = 0;
    double partial = 0;
    for (double f : node.gpu_free) {
      if (f >= 1 - kEps) {
        ++unused;
      } else {
        partial += f;
      }
    }
    return unused >= shape.whole ? partial : free_total;
  }
  if (shape.fraction > 0) {
    double lost = 0;
    bool fits = false;
    for (double f : node.gpu_free) {
      if (f + kEps < shape.fraction) {
        lost += f;
      } else {
        fits = true;
      }
    }
    return fits ? lost : free_total;
  }
  return 0;  // a CPU-only shape that fits loses no GPU
}

double UnfilledGpus(const NodeFree& node, const PodShape& shape) {
  double free_total = 0;
  for (double f : node.gpu_free) free_total += f;
  if (free_total <= kEps) return 0;
  if (shape.whole <= 0 && shape.fraction <= 0) {
    // A CPU-only shape uses no GPU: as in the unusable view, only whether it fits counts.
    const bool fits = shape.cpu_millis <= node.cpu_millis + kEps &&
                      shape.memory_bytes <= node.memory_bytes + kEps;
    return fits ? 0 : free_total;
  }
  // Copies the devices can take, then the copies CPU and memory allow.
  double copies = 0;
  if (shape.whole > 0) {
    int unused = 0;
    for (double f : node.gpu_free) unused += f >= 1 - kEps ? 1 : 0;
    copies = std::floor(static_cast<double>(unused) / shape.whole);
  } else {
    for (double f : node.gpu_free) copies += std::floor((f + kEps) / shape.fraction);
  }
  if (shape.cpu_millis > kEps) {
    copies = std::min(copies, std::floor((node.cpu_millis + kEps) / shape.cpu_millis));
  }
  if (shape.memory_bytes > kEps) {
    copies = std::min(copies, std::floor((node.memory_bytes + kEps) / shape.memory_bytes));
  }
  const double per_copy = shape.whole > 0 ? shape.whole : shape.fraction;
  return std::max(0.0, free_total - std::max(0.0, copies) * per_copy);
}

double Fragmentation(const NodeFree& node, const PodShape& shape, Measure m) {
  switch (m) {
    case Measure::kUnusable:
      return UnusableGpus(node, shape);
    case Measure::kUnfilled:
      return UnfilledGpus(node, shape);
    case Measure::kMean:
      break;
  }
  return 0.5 * (UnusableGpus(node, shape) + UnfilledGpus(node, shape));
}

double ExpectedFragmentation(const NodeFree& node, std::span<const PodShape> shapes, Measure m) {
  double sum = 0;
  for (const PodShape& s : shapes) sum += s.weight * Fragmentation(node, s, m);
  return sum;
}

PerGpu DemandPerGpu(std::span<const PodShape> shapes) {
  double gpus = 0;
  PerGpu sum;
  for (const PodShape& s : shapes) {
    const double g = s.whole > 0 ? s.whole : s.fraction;
    if (g <= 0) continue;
    gpus += s.weight * g;
    sum.cpu_millis += s.weight * s.cpu_millis;
    sum.memory_bytes += s.weight * s.memory_bytes;
  }
  if (gpus <= kEps) return {};
  return {sum.cpu_millis / gpus, sum.memory_bytes / gpus};
}

double StrandedGpus(const NodeFree& node, const PerGpu& per_gpu) {
  double free_total = 0;
  for (double f : node.gpu_free) free_total += f;
  double fed = free_total;
  if (per_gpu.cpu_millis > kEps) {
    fed = std::min(fed, std::max(0.0, node.cpu_millis) / per_gpu.cpu_millis);
  }
  if (per_gpu.memory_bytes > kEps) {
    fed = std::min(fed, std::max(0.0, node.memory_bytes) / per_gpu.memory_bytes);
  }
  return std::max(0.0, free_total - fed);
}

std::vector<double> GapWaste(std::span<const PodShape> shapes, int devices, uint64_t seed) {
  std::vector<double> value(101, 0);
  for (int g = 1; g < 100; ++g) value[static_cast<size_t>(g)] = g / 100.0;
  // Items: GPU demand in hundredths (whole GPUs as 100 per GPU), with cumulative weights.
  std::vector<int> items;
  std::vector<double> cumulative;
  double total_weight = 0;
  for (const PodShape& s : shapes) {
    const int size = s.whole > 0 ? 100 * s.whole : static_cast<int>(std::lround(s.fraction * 100));
    if (size <= 0 || s.weight <= 0) continue;
    items.push_back(size);
    total_weight += s.weight;
    cumulative.push_back(total_weight);
  }
  if (items.empty() || devices <= 0) return value;
  // One device's fragmentation by free share (the two views averaged, GPU demand only).
  std::vector<double> frag(101, 0);
  for (int g = 0; g <= 100; ++g) {
    double v = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const double w = (cumulative[i] - (i ? cumulative[i - 1] : 0)) / total_weight;
      const int size = items[i];
      if (size >= 100) {
        v += g < 100 ? w * g : 0;
      } else {
        const int unusable = g < size ? g : 0;
        const int unfilled = g % size;  // what copies of the shape leave
        v += w * 0.5 * (unusable + unfilled);
      }
    }
    frag[static_cast<size_t>(g)] = v / 100;
  }
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  auto uniform = [&state] {  // splitmix64, 53 bits
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  };
  std::vector<std::vector<int32_t>> by_gap(100);  // partly used devices by free share
  std::vector<std::vector<uint8_t>> visited;      // per opened device, the shares it had
  int unused = devices;
  double demand = 0;
  const double target = 1.3 * 100 * devices;
  while (demand < target) {
    const double u = uniform() * total_weight;
    const size_t i = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                         cumulative.begin());
    const int size = items[std::min(i, items.size() - 1)];
    demand += size;
    if (size >= 100) {
      if (size / 100 <= unused) unused -= size / 100;
      continue;
    }
    int best = -1;
    double best_cost = 0;
    for (int g = size; g <= 100; ++g) {
      if (g < 100 ? by_gap[static_cast<size_t>(g)].empty() : unused == 0) continue;
      const double cost = frag[static_cast<size_t>(g - size)] - frag[static_cast<size_t>(g)];
      if (best < 0 || cost < best_cost - 1e-12) best = g, best_cost = cost;
    }
    if (best < 0) continue;  // dropped
    int32_t d;
    if (best == 100) {
      --unused;
      d = static_cast<int32_t>(visited.size());
      visited.emplace_back();
    } else {
      d = by_gap[static_cast<size_t>(best)].back();
      by_gap[static_cast<size_t>(best)].pop_back();
    }
    const int left = best - size;
    visited[static_cast<size_t>(d)].push_back(static_cast<uint8_t>(left));
    if (left > 0) by_gap[static_cast<size_t>(left)].push_back(d);
  }
  std::vector<double> sum(101, 0);
  std::vector<int64_t> count(101, 0);
  for (const auto& shares : visited) {
    const int final_share = shares.back();
    for (uint8_t g : shares)
      sum[static_cast<size_t>(g)] += final_share, ++count[static_cast<size_t>(g)];
  }
  for (int g = 1; g < 100; ++g) {
    if (count[static_cast<size_t>(g)] > 0)
      value[static_cast<size_t>(g)] =
          sum[static_cast<size_t>(g)] / static_cast<double>(count[static_cast<size_t>(g)]) / 100;
  }
  return value;
}

void ShapeCounter::Add(double cpu_millis, double memory_bytes, int whole, double fraction) {
  const Key k{std::llround(cpu_millis / 100), std::llround(memory_bytes / (256.0 * 1048576)), whole,
              whole > 0 ? 0 : std::llround(fraction * 100)};
  ++counts_[k];
  ++total_;
}

std::vector<PodShape> ShapeCounter::Shapes(size_t max_shapes, bool gpu_only) const {
  std::vector<std::pair<Key, int64_t>> items;
  if (gpu_only) {
    std::unordered_map<Key, int64_t, KeyHash> by_gpu;
    for (const auto& [k, n] : counts_) by_gpu[Key{0, 0, k.whole, k.fraction}] += n;
    items.assign(by_gpu.begin(), by_gpu.end());
  } else {
    items.assign(counts_.begin(), counts_.end());
  }
  // Most frequent first; the key breaks ties so the result does not depend on hash order.
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    const Key& x = a.first;
    const Key& y = b.first;
    if (x.whole != y.whole) return x.whole < y.whole;
    if (x.fraction != y.fraction) return x.fraction < y.fraction;
    if (x.cpu != y.cpu) return x.cpu < y.cpu;
    return x.mem < y.mem;
  });
  if (items.size() > max_shapes) items.resize(max_shapes);
  double kept = 0;
  for (const auto& it : items) kept += static_cast<double>(it.second);
  std::vector<PodShape> out;
  for (const auto& [k, n] : items) {
    PodShape s;
    s.cpu_millis = static_cast<double>(k.cpu) * 100;
    s.memory_bytes = static_cast<double>(k.mem) * 256.0 * 1048576;
    s.whole = static_cast<int>(k.whole);
    s.fraction = static_cast<double>(k.fraction) / 100;
    s.weight = static_cast<double>(n) / kept;
    out.push_back(s);
  }
  return out;
}

}  // namespace gantry::frag
