// GPU fragmentation under a distribution of typical pods (the measure behind the "gpufragmentation"
// node-order plugin and the simulator's fragmentation chart).
//
// Two views of "the free GPU capacity a pod shape cannot use", averaged:
//  - unusable (the fragmentation of the fragmentation gradient descent paper, Weng et al., USENIX
//    ATC '23): the node cannot host the shape at all (CPU, memory or GPUs short: every free share
//    is lost to it), or it can, but a device's free share is smaller than what the shape needs of
//    one device (whole-GPU shapes cannot use a partly used device; a fraction f cannot use a
//    device with less than f free);
//  - unfilled: what stays free if the node were filled with copies of the shape alone - as many
//    as its CPU, memory and devices allow. It also sees what one copy does not: a device that
//    two copies of 0.47 leave 0.06 of, GPUs stranded because the node runs out of CPU first.
// A node's expected fragmentation is the average over typical shapes, weighted by how often each
// occurs. Placing a pod where it adds the least expected fragmentation keeps the cluster able to
// host the pods that will come. (On the Alibaba openb trace, docs/simulation.md, the average of
// the two views allocates more GPUs than either alone.)
//
// Both views are myopic about CPU and memory: taking 16 cores from a node with plenty left changes
// no shape's fit, so a CPU-heavy GPU pod looks as good on a node short of CPU per GPU as on one
// with CPU to spare, and the former's GPUs end up stranded once its CPU runs out. StrandedGpus is
// the fluid view of that: the free GPUs the node's free CPU and memory cannot feed at the
// workload's average CPU and memory per GPU. Its change under a placement steers CPU-heavy pods to
// CPU-rich nodes and CPU-light ones to CPU-poor nodes, before any shape stops fitting.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace gantry::frag {

// A typical pod: CPU and memory, and either `whole` GPUs (> 0), or a `fraction` of one device
// (0 < fraction < 1), or neither (CPU-only). `weight`: its share of the distribution.
struct PodShape {
  double cpu_millis = 0;
  double memory_bytes = 0;
  int whole = 0;
  double fraction = 0;
  double weight = 0;
};

// What a node has not allocated: CPU, memory, and per device the free share (1 = unused).
struct NodeFree {
  double cpu_millis = 0;
  double memory_bytes = 0;
  std::vector<double> gpu_free;
};

// Which view a fragmentation counts: one of the two, or their mean (the default).
enum class Measure { kUnusable, kUnfilled, kMean };

// Fragmented GPU capacity (in GPUs) of `node` for one shape.
double Fragmentation(const NodeFree& node, const PodShape& shape, Measure m = Measure::kMean);
// The two views alone.
double UnusableGpus(const NodeFree& node, const PodShape& shape);
double UnfilledGpus(const NodeFree& node, const PodShape& shape);
// The weighted mean over `shapes` (weights summing to 1).
double ExpectedFragmentation(const NodeFree& node, std::span<const PodShape> shapes,
                             Measure m = Measure::kMean);

// The workload's CPU and memory per GPU: the shapes' GPU-weighted means (shapes without GPUs left
// out; zeros when no shape has GPUs).
struct PerGpu {
  double cpu_millis = 0;
  double memory_bytes = 0;
};
PerGpu DemandPerGpu(std::span<const PodShape> shapes);
// Free GPUs of `node` beyond what its free CPU and memory can feed at `per_gpu` (0 when per_gpu is
// zero): free GPUs - min(free GPUs, free CPU / CPU per GPU, free memory / memory per GPU).
double StrandedGpus(const NodeFree& node, const PerGpu& per_gpu);

// What a partly used device's free share is worth once the cluster has filled up: for each free
// share in hundredths (index 0..100), the free share the device ends with, on average, when pods
// drawn from `shapes` (their GPU demand only) fill `devices` devices until their demand reaches
// 130% of them, each fraction going to the device where it adds the least expected fragmentation
// of one device (the unusable and unfilled views averaged, GPU demand only) and whole GPUs to
// unused devices. Shares never reached count as lost entirely; 0 and 100 (unused) are worth 0.
// Deterministic for a seed. A fraction's placement can then be judged by how much final waste it
// adds (value[after] - value[before]) rather than by the fragmentation it adds now: a 0.32 on a
// device with 0.53 free leaves 0.21 that hardly anything fills, on an unused one 0.68 that a 0.65
// or two more 0.32 fill.
std::vector<double> GapWaste(std::span<const PodShape> shapes, int devices, uint64_t seed);

// Builds the typical shapes from pod requests: pods with the same GPU demand (whole count, or
// the fraction rounded to hundredths) and CPU / memory (rounded to 1/10 core and 256 MiB) form one
// shape; at most `max_shapes` most frequent shapes are kept and their weights renormalised.
// `gpu_only`: shapes by GPU demand alone (CPU and memory 0, pods differing only in them merged).
class ShapeCounter {
 public:
  void Add(double cpu_millis, double memory_bytes, int whole, double fraction);
  int64_t total() const { return total_; }
  std::vector<PodShape> Shapes(size_t max_shapes, bool gpu_only = false) const;

 private:
  struct Key {
    int64_t cpu, mem, whole, fraction;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t v : {k.cpu, k.mem, k.whole, k.fraction}) {
        h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      }
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<Key, int64_t, KeyHash> counts_;
  int64_t total_ = 0;
};

}  // namespace gantry::frag
