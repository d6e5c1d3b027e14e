// Import of the Alibaba GPU cluster trace v2023 ("openb", the FGD paper's data): node lists and
// pod lists in CSV. Mapping (also in docs/simulation.md):
//  - node: sn -> name, cpu_milli, memory_mib, gpu -> GPU count, model -> label
//    nvidia.com/gpu.product (GPU memory is not in the trace: each device gets 16000 MiB, so a
//    fraction in thousandths is a whole number of MiB);
//  - pod: one single-pod job; creation_time -> submit time (seconds, relative to the earliest),
//    deletion_time - max(creation_time, scheduled_time) -> run duration; num_gpu whole GPUs, or
//    for num_gpu 1 and gpu_milli below 1000 a fraction gpu_milli/1000; gpu_spec (models joined by
//    '|') -> required node affinity on nvidia.com/gpu.product; qos -> priority class: LS
//    inference (125), Guaranteed build (100), Burstable interactive-preemptible (75), BE train
//    (50).
#pragma once

#include <string>
#include <vector>

#include "model/cluster.h"
#include "sim/simulation.h"
#include "util/status.h"

namespace gantry::sim {

inline constexpr double kOpenbGpuMemoryMib = 16000;
inline constexpr const char* kGpuModelLabel = "nvidia.com/gpu.product";

// Appends the nodes of an openb node CSV to `cluster` (GPU-less nodes skipped when
// `gpu_nodes_only`).
Result<bool> ImportOpenbNodes(const std::string& path, bool gpu_nodes_only, Cluster& cluster);

// Reads an openb pod CSV into single-pod jobs of `queue`.
Result<std::vector<JobSpec>> ImportOpenbPods(const std::string& path, const std::string& queue);

}  // namespace gantry::sim
