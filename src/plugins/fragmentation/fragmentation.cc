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
