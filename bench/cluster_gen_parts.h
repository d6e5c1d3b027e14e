// The parts the benchmark's cluster generators share (cluster_gen.cc: the default cluster and
// its variants, the busy shared cluster; cluster_gen_mixed.cc: the mixed one): the node shape,
// a random source that depends on the engine's raw output only, and the scenario file's pieces.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cluster_gen.h"

namespace gantry::bench::gen {

using Json = nlohmann::ordered_json;

// Per-GPU share of a node's CPU and memory, so that GPUs are always the binding resource:
// 8 GPUs x 8 cores = 64 of the node's 128 cores; 8 x 64 GB = 512 GB of its 1 TB.
constexpr int64_t kNodeCpuMillis = 128'000;
constexpr int64_t kNodeMemoryBytes = 1'000'000'000'000;
constexpr int64_t kCpuMillisPerGpu = 8'000;
constexpr int64_t kMemoryBytesPerGpu = 64'000'000'000;
constexpr int kMaxPods = 110;
constexpr int kGpuMemoryMib = 100;  // every corpus node uses 100
constexpr int kNodesPerRack = 8;
constexpr int kRacksPerBlock = 4;
constexpr int kBlocksPerZone = 4;

// Random helpers over the raw engine output only: std::uniform_*_distribution are
// implementation-defined, and the file must not depend on the standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n).
  int Below(int n) { return static_cast<int>(engine_() % static_cast<uint64_t>(n)); }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Index drawn with the given (not necessarily normalised) weights.
  template <size_t N>
  int Weighted(const std::array<double, N>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = Unit() * total;
    for (size_t i = 0; i < N; ++i) {
      if (x < weights[i]) return static_cast<int>(i);
      x -= weights[i];
    }
    return static_cast<int>(N - 1);
  }

 private:
  std::mt19937_64 engine_;
};

// `prefix` followed by `value` padded with zeros to `width` digits.
std::string Padded(const char* prefix, int value, int width);
// Digits of the largest index below `count` (at least 4): names sort in index order.
int DigitsFor(int count);
// A queue's resources: `gpu_quota` GPUs deserved (over-quota weight as given), CPU and memory
// unlimited.
Json QueueResources(double gpu_quota, double gpu_over_quota_weight = 1);
// The scenario's config: single session, allocate, the default plugin list (with or without
// "predicates").
Json Config(bool with_predicates);
// GPUs per pod of a pending gang: 1, 2, 4 or 8.
int DrawGpusPerPod(Rng& rng);
// Adds `n` nodes of `g` GPUs to `doc` (with the zone / block / rack labels when `topology`);
// returns their names.
std::vector<std::string> AddNodes(Json& doc, int n, int g, bool topology);
// Writes `doc` to `path` (false with `error` set when it cannot).
bool WriteJson(const Json& doc, const std::string& path, std::string& error);

bool WriteBusyShared(const ClusterGenOptions& options, const std::string& path,
                     ClusterGenSummary& summary, std::string& error);
bool WriteMixed(const ClusterGenOptions& options, const std::string& path,
                ClusterGenSummary& summary, std::string& error);

}  // namespace gantry::bench::gen
