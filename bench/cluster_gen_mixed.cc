// The mixed cluster (ClusterGenOptions::mixed, bench/README.md "The shapes"): written job by job,
// so that 100,000 nodes take seconds.
#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "cluster_gen.h"
#include "cluster_gen_parts.h"

namespace gantry::bench::gen {

namespace {

// A task of the mixed cluster: explicit CPU and memory; `gpus` whole GPUs, or `fraction` of one
// (a running one on the shared device `group`).
Json MixedTask(const std::string& name, const std::string* node, int64_t cpu_millis,
               int64_t memory_bytes, int gpus, double fraction, const std::string& group) {
  Json t;
  t["name"] = name;
  t["state"] = node ? "running" : "pending";
  if (node) t["node"] = *node;
  t["cpu_millis"] = cpu_millis;
  t["memory_bytes"] = memory_bytes;
  if (fraction > 0) {
    t["gpu_fraction"] = fraction;
    if (node) t["gpu_groups"] = Json::array({group});
  } else if (gpus > 0) {
    t["gpus"] = gpus;
  }
  return t;
}

}  // namespace

// The mixed cluster (ClusterGenOptions::mixed).
bool WriteMixed(const ClusterGenOptions& options, const std::string& path,
                ClusterGenSummary& summary, std::string& error) {
  constexpr int kDepartments = 10;
  constexpr int kLeavesPerDepartment = 10;
  // Free GPUs per node, 0-8 (mean about 0.9).
  constexpr std::array<double, 9> kFreeWeights = {0.55, 0.20, 0.10, 0.05, 0.03,
                                                  0.02, 0.02, 0.01, 0.02};
  // Running whole-GPU pods: 1, 2, 4 or 8 GPUs (halved until they fit the node's used GPUs).
  constexpr std::array<double, 4> kPodGpuWeights = {0.35, 0.20, 0.15, 0.30};
  constexpr std::array<int, 4> kPodGpus = {1, 2, 4, 8};
  constexpr double kSharedDeviceShare = 0.3;  // nodes with a device shared by fractional pods
  constexpr int kCpuPodsMin = 4;              // CPU-only running pods per node: 4-8
  constexpr int kCpuPodsSpread = 5;
  constexpr int64_t kCpuPodMillis = 4'000;
  constexpr int64_t kCpuPodMemory = 16'000'000'000;
  constexpr int64_t kFractionPodMillis = 2'000;
  constexpr int64_t kFractionPodMemory = 8'000'000'000;
  constexpr double kPendingPodsPerNode = 0.5;

  Rng rng(options.seed);
  summary = ClusterGenSummary{};
  const int n = options.nodes;
  const int g = options.gpus_per_node;
  summary.nodes = n;
  summary.total_gpus = static_cast<int64_t>(n) * g;
  const auto total = static_cast<double>(summary.total_gpus);

  Json doc;
  doc["format_version"] = 1;
  doc["name"] = "gantry-bench mixed cluster: " + std::to_string(n) + " nodes x " +
                std::to_string(g) + " GPUs";
  doc["config"] = Config(options.with_predicates);
  const std::vector<std::string> node_names = AddNodes(doc, n, g, /*topology=*/true);

  // Queues: departments with GPU quotas of varied shares (adding up to the cluster) and weights
  // 1-4; under each, leaves sharing its quota unevenly (one in ten with none) with weights 1-5.
  // Each leaf gets a popularity (its share times 0.3-2.5), by which running jobs pick it, so some
  // leaves run far over their quota and others under it.
  Json queues = Json::array();
  std::vector<std::string> leaves;
  std::vector<double> popularity;  // cumulative, per leaf
  std::array<double, kDepartments> dept_share{};
  double dept_total = 0;
  for (double& w : dept_share) dept_total += (w = 0.5 + rng.Unit());
  int offset = 0;
  double cumulative = 0;
  for (int d = 0; d < kDepartments; ++d) {
    const std::string dept = Padded("dept-", d, 2);
    const double dept_quota = std::floor(total * dept_share[static_cast<size_t>(d)] / dept_total);
    queues.push_back(Json{{"name", dept},
                          {"creation_offset_minutes", offset++},
                          {"resources", QueueResources(dept_quota, 1 + rng.Below(4))}});
    std::array<double, kLeavesPerDepartment> leaf_share{};
    double leaf_total = 0;
    for (double& w : leaf_share) {
      w = rng.Below(10) == 0 ? 0 : 0.2 + rng.Unit();
      leaf_total += w;
    }
    for (int l = 0; l < kLeavesPerDepartment; ++l) {
      leaves.push_back(dept + Padded("-queue-", l, 2));
      const double share = leaf_share[static_cast<size_t>(l)] / leaf_total;
      queues.push_back(
          Json{{"name", leaves.back()},
               {"parent", dept},
               {"creation_offset_minutes", offset++},
               {"resources", QueueResources(std::floor(dept_quota * share), 1 + rng.Below(5))}});
      cumulative += (share + 0.01) * dept_share[static_cast<size_t>(d)] * (0.3 + 2.2 * rng.Unit());
      popularity.push_back(cumulative);
    }
  }
  summary.queues = static_cast<int>(queues.size());
  doc["queues"] = std::move(queues);
  auto popular_leaf = [&] {
    const double x = rng.Unit() * popularity.back();
    const auto it = std::upper_bound(popularity.begin(), popularity.end(), x);
    return static_cast<int>(std::min<ptrdiff_t>(it - popularity.begin(),
                                                static_cast<ptrdiff_t>(popularity.size()) - 1));
  };

  // Running pods per node, by kind: whole-node (8-GPU) pods, smaller whole-GPU pods, fractional
  // pods on the node's shared device, CPU-only pods. Each kind's pods are then cut, in node
  // order, into jobs (so a multi-pod job sits on neighbouring nodes).
  enum RunKind { kWholeNode, kGpu, kFraction, kCpu, kRunKinds };
  struct RunPod {
    int32_t node = 0;
    int32_t gpus = 0;
    double fraction = 0;
  };
  std::array<std::vector<RunPod>, kRunKinds> run_pods;
  for (auto& v : run_pods) v.reserve(static_cast<size_t>(n) * 3);
  for (int i = 0; i < n; ++i) {
    const int free = std::min(rng.Weighted(kFreeWeights), g);
    summary.free_gpus += free;
    if (free == 0) ++summary.full_nodes;
    if (free == g) ++summary.empty_nodes;
    const int used = g - free;
    const bool shared = used > 0 && rng.Unit() < kSharedDeviceShare;
    for (int whole = used - (shared ? 1 : 0); whole > 0;) {
      int gpus = kPodGpus[static_cast<size_t>(rng.Weighted(kPodGpuWeights))];
      while (gpus > whole) gpus /= 2;
      run_pods[gpus == g ? kWholeNode : kGpu].push_back({i, gpus, 0});
      whole -= gpus;
    }
    if (shared) {
      // 0.5 + 0.25 or 0.5, or 0.25 + 0.25 + 0.25 or 0.5.
      const int pods = 2 + rng.Below(2);
      for (int k = 0; k < pods; ++k) {
        const double fraction =
            k + 1 < pods ? (pods == 2 ? 0.5 : 0.25) : (rng.Below(2) ? 0.5 : 0.25);
        run_pods[kFraction].push_back({i, 0, fraction});
      }
    }
    for (int k = kCpuPodsMin + rng.Below(kCpuPodsSpread); k > 0; --k) {
      run_pods[kCpu].push_back({i, 0, 0});
    }
  }

  // Jobs: a kind, a range of its pods (running) or a pending gang.
  struct MixedJob {
    int kind = 0;  // RunKind, or kRunKinds for a pending gang
    size_t first = 0;
    int pods = 0;
    int queue = 0;
    int priority = 50;
    int gpus_per_pod = 0;  // pending gangs
    double fraction = 0;   // pending gangs
    int constraint = 0;    // pending gangs: 0 none, 1 block, 2 zone
  };
  std::vector<MixedJob> jobs;
  jobs.reserve(static_cast<size_t>(n) * 5);
  auto draw_priority = [&](const std::array<double, 3>& weights) {
    constexpr std::array<int, 3> kPriorities = {50, 75, 100};
    return kPriorities[static_cast<size_t>(rng.Weighted(weights))];
  };
  for (int kind = 0; kind < kRunKinds; ++kind) {
    const std::vector<RunPod>& pods = run_pods[static_cast<size_t>(kind)];
    for (size_t first = 0; first < pods.size();) {
      MixedJob job;
      job.kind = kind;
      job.first = first;
      switch (kind) {
        case kWholeNode:  // distributed training: 1-16 pods
          job.pods = static_cast<int>(std::floor(std::exp2(rng.Unit() * 4.0)));
          job.priority = draw_priority({0.8, 0.2, 0});
          break;
        case kGpu:
          job.pods = std::array<int, 3>{
              1, 2, 4}[static_cast<size_t>(rng.Weighted(std::array<double, 3>{0.7, 0.2, 0.1}))];
          job.priority = draw_priority({0.6, 0.2, 0.2});
          break;
        case kFraction:  // notebooks and inference: one pod
          job.pods = 1;
          job.priority = draw_priority({0.5, 0, 0.5});
          break;
        default:  // CPU-only: 1-4 pods
          job.pods = 1 + rng.Below(4);
          job.priority = draw_priority({0.7, 0, 0.3});
          break;
      }
      job.pods = std::min(job.pods, static_cast<int>(pods.size() - first));
      job.queue = popular_leaf();
      first += static_cast<size_t>(job.pods);
      summary.running_pods += job.pods;
      if (kind == kFraction) summary.fractional_pods += job.pods;
      if (kind == kCpu) summary.cpu_only_pods += job.pods;
      jobs.push_back(job);
    }
  }
  // Pending gangs in every leaf: 1-16 pods of 1-8 GPUs; some fractional (1-4 pods), some
  // CPU-only, some (of several pods) requiring their block or zone and preferring their rack.
  const auto pending_target = static_cast<int64_t>(kPendingPodsPerNode * n);
  while (summary.pending_pods < pending_target) {
    MixedJob job;
    job.kind = kRunKinds;
    job.queue = rng.Below(static_cast<int>(leaves.size()));
    job.priority = draw_priority({0.6, 0.25, 0.15});
    const double kind = rng.Unit();
    if (kind < 0.15) {
      job.pods = 1 + rng.Below(4);
      job.fraction = rng.Below(2) ? 0.5 : 0.25;
      summary.fractional_pods += job.pods;
    } else if (kind < 0.25) {
      job.pods = 1 + rng.Below(4);
    } else {
      job.pods = static_cast<int>(std::floor(std::exp2(rng.Unit() * 4.0)));
      job.gpus_per_pod = DrawGpusPerPod(rng);
      if (job.pods > 1 && rng.Unit() < 0.3) {
        job.constraint = 1 + rng.Below(2);
        ++summary.constrained_jobs;
      }
    }
    summary.pending_pods += job.pods;
    summary.pending_gpus += static_cast<int64_t>(job.pods) * job.gpus_per_pod;
    if (job.fraction == 0 && job.gpus_per_pod == 0) summary.cpu_only_pods += job.pods;
    ++summary.pending_jobs;
    jobs.push_back(job);
  }
  summary.jobs = static_cast<int>(jobs.size());
  summary.pods = summary.running_pods + summary.pending_pods;

  // The file: everything but the jobs as one document, then the jobs written one at a time.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot open for writing";
    return false;
  }
  std::string head = doc.dump();
  head.pop_back();  // the closing brace
  out << head << ",\"jobs\":[";
  constexpr std::array<const char*, kRunKinds + 1> kPrefix = {"dist-", "gpu-", "frac-", "cpu-",
                                                              "gang-"};
  const int job_digits = DigitsFor(summary.jobs);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const MixedJob& mj = jobs[k];
    const std::string name =
        Padded(kPrefix[static_cast<size_t>(mj.kind)], static_cast<int>(k), job_digits);
    if (mj.priority >= 100) ++summary.non_preemptible_jobs;
    Json job;
    job["name"] = name;
    job["namespace"] = "bench";
    job["queue"] = leaves[static_cast<size_t>(mj.queue)];
    job["priority"] = mj.priority;
    job["preemptibility"] = mj.priority >= 100 ? "non-preemptible" : "preemptible";
    job["age_minutes"] = summary.jobs - static_cast<int>(k);
    if (mj.constraint == 0) {
      job["min_available"] = mj.pods;
    } else {
      job["subgroup_tree"] =
          Json{{"name", ""},
               {"topology_constraint",
                Json{{"topology", "bench"},
                     {"required_level", mj.constraint == 1 ? "bench/block" : "bench/zone"},
                     {"preferred_level", "bench/rack"}}},
               {"children", Json::array({Json{{"name", "default"}, {"min_available", mj.pods}}})}};
    }
    Json tasks = Json::array();
    for (int p = 0; p < mj.pods; ++p) {
      const std::string task = name + "-" + std::to_string(p);
      if (mj.kind == kRunKinds) {
        const int gpus = mj.gpus_per_pod;
        const bool cpu_only = gpus == 0 && mj.fraction == 0;
        tasks.push_back(MixedTask(task, nullptr,
                                  cpu_only   ? kCpuPodMillis
                                  : gpus > 0 ? kCpuMillisPerGpu * gpus
                                             : kFractionPodMillis,
                                  cpu_only   ? kCpuPodMemory
                                  : gpus > 0 ? kMemoryBytesPerGpu * gpus
                                             : kFractionPodMemory,
                                  gpus, mj.fraction, ""));
        continue;
      }
      const RunPod& rp = run_pods[static_cast<size_t>(mj.kind)][mj.first + static_cast<size_t>(p)];
      const std::string& node = node_names[static_cast<size_t>(rp.node)];
      if (mj.kind == kFraction) {
        tasks.push_back(MixedTask(task, &node, kFractionPodMillis, kFractionPodMemory, 0,
                                  rp.fraction, node + "-shared-gpu"));
      } else if (mj.kind == kCpu) {
        tasks.push_back(MixedTask(task, &node, kCpuPodMillis, kCpuPodMemory, 0, 0, ""));
      } else {
        tasks.push_back(MixedTask(task, &node, kCpuMillisPerGpu * rp.gpus,
                                  kMemoryBytesPerGpu * rp.gpus, rp.gpus, 0, ""));
      }
    }
    job["tasks"] = std::move(tasks);
    if (k > 0) out << ',';
    out << job.dump();
  }
  out << "]}\n";
  out.close();
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

}  // namespace gantry::bench::gen
