#include "cluster_gen.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "cluster_gen_parts.h"

namespace gantry::bench {

namespace gen {

std::string Padded(const char* prefix, int value, int width) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%0*d", prefix, width, value);
  return buf;
}

int DigitsFor(int count) {
  int digits = 1;
  for (int v = std::max(count - 1, 0); v >= 10; v /= 10) ++digits;
  return std::max(digits, 4);
}

Json QueueResource(double quota, double limit, double weight) {
  Json r;
  r["quota"] = quota;
  r["limit"] = limit;
  r["over_quota_weight"] = weight;
  return r;
}

Json QueueResources(double gpu_quota, double gpu_over_quota_weight) {
  Json r;
  r["gpu"] = QueueResource(gpu_quota, -1, gpu_over_quota_weight);
  r["cpu"] = QueueResource(-1, -1, 1);
  r["memory"] = QueueResource(-1, -1, 1);
  return r;
}

Json Config(bool with_predicates) {
  Json c;
  c["mode"] = "single_session";
  c["actions"] = Json::array({"allocate"});
  Json plugins = Json::array();
  auto add = [&](const char* name) { plugins.push_back(Json{{"name", name}}); };
  if (with_predicates) add("predicates");
  for (const char* name : {"proportion", "priority", "elastic", "kubeflow", "ray",
                           "nodeavailability", "gpusharingorder", "gpupack", "resourcetype",
                           "subgrouporder", "taskorder", "nominatednode", "dynamicresources"}) {
    add(name);
  }
  plugins.push_back(
      Json{{"name", "nodeplacement"}, {"arguments", Json{{"cpu", "binpack"}, {"gpu", "binpack"}}}});
  // KAI v0.17's default list ends with the victim search's scenario generators.
  for (const char* name :
       {"minruntime", "topology", "snapshot", "sg-nodelocalgreedy", "sg-multinodegang"}) {
    add(name);
  }
  c["plugins"] = std::move(plugins);
  c["session"] = Json{{"max_consolidation_preemptees", -1},
                      {"allow_consolidating_reclaim", true},
                      {"queue_label_key", "kai.scheduler/queue"},
                      {"scheduler_name", "kai-scheduler"},
                      {"min_node_gpu_memory_mib", 100}};
  return c;
}

// Free GPUs per node: a skewed draw (many full or nearly full nodes, a few empty ones), then
// nudged one GPU at a time until the total is exactly `target_free`.
std::vector<int> DrawFreeGpus(Rng& rng, int nodes, int gpus_per_node, int64_t target_free) {
  // Weights for 0, 1, ..., 8 free GPUs (mean about 2.2 of 8).
  constexpr std::array<double, 9> kFreeWeights = {0.30, 0.20, 0.15, 0.10, 0.08,
                                                  0.06, 0.05, 0.03, 0.03};
  std::vector<int> free(static_cast<size_t>(nodes));
  int64_t total = 0;
  for (int& f : free) {
    f = std::min(rng.Weighted(kFreeWeights) * gpus_per_node / 8, gpus_per_node);
    total += f;
  }
  while (total != target_free) {
    int& f = free[static_cast<size_t>(rng.Below(nodes))];
    if (total > target_free && f > 0) {
      --f;
      --total;
    } else if (total < target_free && f < gpus_per_node) {
      ++f;
      ++total;
    }
  }
  return free;
}

// Pods of a pending gang: log-uniform in 1..32 (many small gangs, a few large ones).
int DrawGangPods(Rng& rng) {
  const int pods = static_cast<int>(std::floor(std::exp2(rng.Unit() * 5.0 + 1e-9)));
  return std::clamp(pods, 1, 32);
}

// GPUs per pod of a pending gang: 1, 2, 4 or 8.
int DrawGpusPerPod(Rng& rng) {
  constexpr std::array<double, 4> kWeights = {0.4, 0.2, 0.2, 0.2};
  constexpr std::array<int, 4> kGpus = {1, 2, 4, 8};
  return kGpus[static_cast<size_t>(rng.Weighted(kWeights))];
}

Json Task(const std::string& name, const char* state, const std::string* node, int gpus,
          double fraction = 0) {
  Json t;
  t["name"] = name;
  t["state"] = state;
  if (node) t["node"] = *node;
  t["cpu_millis"] = kCpuMillisPerGpu * gpus;
  t["memory_bytes"] = kMemoryBytesPerGpu * gpus;
  if (fraction > 0) {
    t["gpu_fraction"] = fraction;
    // A running fraction holds a device of its own.
    if (node) t["gpu_groups"] = Json::array({name + "-gpu"});
  } else {
    t["gpus"] = gpus;
  }
  return t;
}

double DrawFraction(Rng& rng) {
  constexpr std::array<double, 3> kFractions = {0.25, 0.5, 0.75};
  return kFractions[static_cast<size_t>(rng.Below(3))];
}

// Writes `n` nodes of `g` GPUs into doc["nodes"] (and the topology, if asked); returns their
// names.
std::vector<std::string> AddNodes(Json& doc, int n, int g, bool topology) {
  const int node_digits = DigitsFor(n);
  std::vector<std::string> node_names;
  node_names.reserve(static_cast<size_t>(n));
  Json nodes = Json::array();
  for (int i = 0; i < n; ++i) {
    node_names.push_back(Padded("node-", i, node_digits));
    const std::string& name = node_names.back();
    Json node;
    node["name"] = name;
    node["gpus"] = g;
    node["allocatable_gpus"] = g;
    node["cpu_millis"] = kNodeCpuMillis;
    node["memory_bytes"] = kNodeMemoryBytes;
    node["gpu_memory_mib"] = kGpuMemoryMib;
    node["max_pods"] = kMaxPods;
    node["labels"] = Json{{"kai.scheduler/type", name},
                          {"node-role.kubernetes.io/mig-enabled", "false"},
                          {"nvidia.com/gpu.count", std::to_string(g)},
                          {"nvidia.com/gpu.memory", std::to_string(kGpuMemoryMib)},
                          {"nvidia.com/mig.strategy", ""}};
    if (topology) {
      const int rack = i / kNodesPerRack;
      const int block = rack / kRacksPerBlock;
      const int zone = block / kBlocksPerZone;
      node["labels"]["bench/zone"] = "z" + std::to_string(zone);
      node["labels"]["bench/block"] = "b" + std::to_string(block);
      node["labels"]["bench/rack"] = "r" + std::to_string(rack);
    }
    nodes.push_back(std::move(node));
  }
  doc["nodes"] = std::move(nodes);
  if (topology) {
    doc["topologies"] = Json::array({Json{
        {"name", "bench"}, {"levels", Json::array({"bench/zone", "bench/block", "bench/rack"})}}});
  }
  return node_names;
}

// The node of each running job, in job order: each node's jobs one after the other, or
// round-robin (the k-th job of a round on the k-th node that still has one to take).
std::vector<int> RunningJobNodes(const std::vector<int>& used, bool round_robin) {
  std::vector<int> out;
  if (!round_robin) {
    for (size_t i = 0; i < used.size(); ++i) out.insert(out.end(), used[i], static_cast<int>(i));
    return out;
  }
  const int rounds = used.empty() ? 0 : *std::max_element(used.begin(), used.end());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < used.size(); ++i) {
      if (used[i] > r) out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

bool WriteJson(const Json& doc, const std::string& path, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot open for writing";
    return false;
  }
  out << doc.dump() << '\n';
  out.close();
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

// The busy shared cluster (ClusterGenOptions::busy_shared).
bool WriteBusyShared(const ClusterGenOptions& options, const std::string& path,
                     ClusterGenSummary& summary, std::string& error) {
  // Leaf queues: GPU quota as a share of the cluster (90% in all, the rest split by the
  // over-quota weights) and the weight itself; queues 0-2 are the small ones most running jobs
  // are in.
  constexpr int kLeaves = 10;
  constexpr std::array<double, kLeaves> kQuotaShare = {0.02, 0.03, 0.05, 0.08, 0.09,
                                                       0.10, 0.12, 0.13, 0.13, 0.15};
  constexpr std::array<double, kLeaves> kWeight = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  constexpr int kOverQuotaQueues = 3;
  // Free GPUs per node (0-3) and GPUs per running job (1-4).
  constexpr std::array<double, 4> kFreeWeights = {0.80, 0.12, 0.05, 0.03};
  constexpr std::array<double, 4> kRunningGpuWeights = {0.70, 0.20, 0.05, 0.05};
  // Pending jobs: GPUs per pod 1, 2, 4, 8; priorities 50, 75, 100.
  constexpr std::array<double, 4> kPendingGpuWeights = {0.4, 0.3, 0.2, 0.1};
  constexpr std::array<int, 4> kPendingGpus = {1, 2, 4, 8};
  constexpr std::array<double, 3> kPriorityWeights = {0.5, 0.3, 0.2};
  constexpr std::array<int, 3> kPriorities = {50, 75, 100};
  constexpr int kPendingJobsPerNode = 10;

  Rng rng(options.seed);
  summary = ClusterGenSummary{};
  const int n = options.nodes;
  const int g = options.gpus_per_node;
  summary.nodes = n;
  summary.total_gpus = static_cast<int64_t>(n) * g;

  Json doc;
  doc["format_version"] = 1;
  doc["name"] = "gantry-bench busy shared cluster: " + std::to_string(n) + " nodes x " +
                std::to_string(g) + " GPUs";
  doc["config"] = Config(options.with_predicates);
  const std::vector<std::string> node_names = AddNodes(doc, n, g, /*topology=*/false);

  const auto total = static_cast<double>(summary.total_gpus);
  Json queues = Json::array();
  queues.push_back(Json{
      {"name", "shared"}, {"creation_offset_minutes", 0}, {"resources", QueueResources(total)}});
  std::vector<std::string> leaves;
  for (int l = 0; l < kLeaves; ++l) {
    leaves.push_back(Padded("shared-team-", l, 2));
    const auto li = static_cast<size_t>(l);
    queues.push_back(
        Json{{"name", leaves.back()},
             {"parent", "shared"},
             {"creation_offset_minutes", l + 1},
             {"resources", QueueResources(std::floor(total * kQuotaShare[li]), kWeight[li])}});
  }
  summary.queues = static_cast<int>(queues.size());
  doc["queues"] = std::move(queues);

  struct Running {
    int node = 0;
    int gpus = 0;
    int queue = 0;
    int priority = 0;
  };
  std::vector<Running> running;
  for (int i = 0; i < n; ++i) {
    const int free = std::min(rng.Weighted(kFreeWeights), g);
    summary.free_gpus += free;
    if (free == 0) ++summary.full_nodes;
    if (free == g) ++summary.empty_nodes;
    for (int left = g - free; left > 0;) {
      Running r;
      r.node = i;
      r.gpus = std::min(rng.Weighted(kRunningGpuWeights) + 1, left);
      r.queue = rng.Unit() < 0.75 ? rng.Below(kOverQuotaQueues)
                                  : kOverQuotaQueues + rng.Below(kLeaves - kOverQuotaQueues);
      // Non-preemptible running jobs only in the queues under their quota.
      if (r.queue >= kOverQuotaQueues && rng.Unit() < 0.15) {
        r.priority = 100;
      } else {
        r.priority = rng.Unit() < 0.7 ? 50 : 75;
      }
      left -= r.gpus;
      running.push_back(r);
    }
  }
  struct Pending {
    int pods = 0;
    int gpus_per_pod = 0;
    int queue = 0;
    int priority = 0;
  };
  std::vector<Pending> pending(static_cast<size_t>(n) * kPendingJobsPerNode);
  for (Pending& p : pending) {
    p.pods = 1 + rng.Below(4);
    p.gpus_per_pod = kPendingGpus[static_cast<size_t>(rng.Weighted(kPendingGpuWeights))];
    p.queue = rng.Below(kLeaves);
    p.priority = kPriorities[static_cast<size_t>(rng.Weighted(kPriorityWeights))];
    summary.pending_pods += p.pods;
    summary.pending_gpus += static_cast<int64_t>(p.pods) * p.gpus_per_pod;
  }
  summary.running_pods = static_cast<int>(running.size());
  summary.pending_jobs = static_cast<int>(pending.size());
  summary.jobs = summary.running_pods + summary.pending_jobs;
  summary.pods = summary.running_pods + summary.pending_pods;

  // Jobs: running ones first (older), then the pending ones; distinct ages.
  Json jobs = Json::array();
  const int total_jobs = summary.jobs;
  int job_index = 0;
  auto add_job = [&](const std::string& name, int queue, int priority, Json tasks) {
    if (priority >= 100) ++summary.non_preemptible_jobs;
    jobs.push_back(Json{{"name", name},
                        {"namespace", "bench"},
                        {"queue", leaves[static_cast<size_t>(queue)]},
                        {"priority", priority},
                        {"preemptibility", priority >= 100 ? "non-preemptible" : "preemptible"},
                        {"age_minutes", total_jobs - job_index},
                        {"min_available", static_cast<int>(tasks.size())},
                        {"tasks", std::move(tasks)}});
    ++job_index;
  };
  const int run_digits = DigitsFor(summary.running_pods);
  for (const Running& r : running) {
    const std::string name = Padded("run-", job_index, run_digits);
    add_job(name, r.queue, r.priority,
            Json::array(
                {Task(name + "-0", "running", &node_names[static_cast<size_t>(r.node)], r.gpus)}));
  }
  const int pending_digits = DigitsFor(summary.pending_jobs);
  for (size_t k = 0; k < pending.size(); ++k) {
    const Pending& p = pending[k];
    const std::string name = Padded("job-", static_cast<int>(k), pending_digits);
    Json tasks = Json::array();
    for (int t = 0; t < p.pods; ++t) {
      tasks.push_back(Task(name + "-" + std::to_string(t), "pending", nullptr, p.gpus_per_pod));
    }
    add_job(name, p.queue, p.priority, std::move(tasks));
  }
  doc["jobs"] = std::move(jobs);
  return WriteJson(doc, path, error);
}

// The default cluster and its variants (every shape but the busy and mixed ones).
bool WriteDefaultShape(const ClusterGenOptions& options, const std::string& path,
                       ClusterGenSummary& summary, std::string& error) {
  Rng rng(options.seed);
  summary = ClusterGenSummary{};
  const int n = options.nodes;
  const int g = options.gpus_per_node;
  summary.nodes = n;
  summary.total_gpus = static_cast<int64_t>(n) * g;
  const auto used_gpus = static_cast<int64_t>(
      std::llround(static_cast<double>(summary.total_gpus) * options.running_gpu_fraction));
  summary.free_gpus = summary.total_gpus - used_gpus;

  Json doc;
  doc["format_version"] = 1;
  doc["name"] = "gantry-bench: " + std::to_string(n) + " nodes x " + std::to_string(g) + " GPUs";
  doc["config"] = Config(options.with_predicates);

  // Nodes.
  const std::vector<std::string> node_names = AddNodes(doc, n, g, options.topology);

  // Queues: departments first, then their leaf queues. GPU quotas add up to the cluster.
  const double department_quota = static_cast<double>(summary.total_gpus) / options.departments;
  const double leaf_quota = department_quota / options.queues_per_department;
  Json queues = Json::array();
  std::vector<std::string> leaves;
  int offset = 0;
  for (int d = 0; d < options.departments; ++d) {
    Json q;
    q["name"] = Padded("dept-", d, 2);
    q["creation_offset_minutes"] = offset++;
    q["resources"] = QueueResources(department_quota);
    queues.push_back(std::move(q));
  }
  for (int d = 0; d < options.departments; ++d) {
    for (int l = 0; l < options.queues_per_department; ++l) {
      leaves.push_back(Padded("dept-", d, 2) + Padded("-queue-", l, 2));
      Json q;
      q["name"] = leaves.back();
      q["parent"] = Padded("dept-", d, 2);
      q["creation_offset_minutes"] = offset++;
      q["resources"] = QueueResources(leaf_quota);
      queues.push_back(std::move(q));
    }
  }
  summary.queues = static_cast<int>(queues.size());
  doc["queues"] = std::move(queues);

  // Running one-GPU pods, one job each, on nodes left with varying free GPUs.
  const std::vector<int> free = DrawFreeGpus(rng, n, g, summary.free_gpus);
  struct PendingGang {
    int pods = 0;
    int gpus_per_pod = 0;
    int queue = 0;
    double fraction = 0;   // > 0: every pod asks for this share of a GPU
    std::string required;  // topology constraint levels ("" = none)
    std::string preferred;
  };
  std::vector<PendingGang> gangs;
  const double pending_target =
      options.pending_to_free_ratio * static_cast<double>(summary.free_gpus);
  while (static_cast<double>(summary.pending_gpus) < pending_target) {
    PendingGang gang;
    gang.pods = DrawGangPods(rng);
    gang.gpus_per_pod = DrawGpusPerPod(rng);
    gang.queue = rng.Below(static_cast<int>(leaves.size()));
    if (options.fractional_share > 0 && rng.Unit() < options.fractional_share) {
      gang.gpus_per_pod = 1;
      gang.fraction = DrawFraction(rng);
      summary.fractional_pods += gang.pods;
    }
    if (options.topology && gang.pods > 1) {
      gang.required = rng.Below(2) == 0 ? "bench/zone" : "bench/block";
      gang.preferred = "bench/rack";
      ++summary.constrained_jobs;
    }
    summary.pending_gpus += static_cast<int64_t>(gang.pods) * gang.gpus_per_pod;
    summary.pending_pods += gang.pods;
    gangs.push_back(gang);
  }
  if (options.hero_gang_pods > 0) {
    // The hero gang goes first: the oldest pending job, in the first leaf queue.
    PendingGang hero;
    hero.pods = options.hero_gang_pods;
    hero.gpus_per_pod = g;
    summary.pending_gpus += static_cast<int64_t>(hero.pods) * hero.gpus_per_pod;
    summary.pending_pods += hero.pods;
    gangs.insert(gangs.begin(), hero);
  }
  for (int f : free) {
    if (f == 0) ++summary.full_nodes;
    if (f == g) ++summary.empty_nodes;
  }
  summary.running_pods = static_cast<int>(used_gpus);
  summary.pending_jobs = static_cast<int>(gangs.size());
  summary.jobs = summary.running_pods + summary.pending_jobs;
  summary.pods = summary.running_pods + summary.pending_pods;

  // Jobs: running ones first (older), then the pending gangs. Ages are distinct, as in the corpus:
  // the i-th of J jobs is J - i minutes old.
  Json jobs = Json::array();
  const int total_jobs = summary.jobs;
  int job_index = 0;
  const int run_digits = DigitsFor(summary.running_pods);
  std::vector<int> used(free.size());
  for (size_t i = 0; i < free.size(); ++i) used[i] = g - free[i];
  for (const int i : RunningJobNodes(used, options.round_robin)) {
    const std::string name = Padded("run-", job_index, run_digits);
    Json job;
    job["name"] = name;
    job["namespace"] = "bench";
    job["queue"] = leaves[static_cast<size_t>(rng.Below(static_cast<int>(leaves.size())))];
    job["priority"] = 50;
    job["preemptibility"] = "preemptible";
    job["age_minutes"] = total_jobs - job_index;
    job["min_available"] = 1;
    double fraction = 0;
    if (options.fractional_share > 0 && rng.Unit() < options.fractional_share) {
      fraction = DrawFraction(rng);
      ++summary.fractional_pods;
    }
    job["tasks"] = Json::array(
        {Task(name + "-0", "running", &node_names[static_cast<size_t>(i)], 1, fraction)});
    jobs.push_back(std::move(job));
    ++job_index;
  }
  const int gang_digits = DigitsFor(summary.pending_jobs);
  for (size_t k = 0; k < gangs.size(); ++k) {
    const PendingGang& gang = gangs[k];
    const std::string name = Padded("gang-", static_cast<int>(k), gang_digits);
    Json job;
    job["name"] = name;
    job["namespace"] = "bench";
    job["queue"] = leaves[static_cast<size_t>(gang.queue)];
    job["priority"] = 50;
    job["preemptibility"] = "preemptible";
    job["age_minutes"] = total_jobs - job_index;
    if (gang.required.empty()) {
      job["min_available"] = gang.pods;
    } else {
      job["subgroup_tree"] = Json{
          {"name", ""},
          {"topology_constraint", Json{{"topology", "bench"},
                                       {"required_level", gang.required},
                                       {"preferred_level", gang.preferred}}},
          {"children", Json::array({Json{{"name", "default"}, {"min_available", gang.pods}}})}};
    }
    Json tasks = Json::array();
    for (int p = 0; p < gang.pods; ++p) {
      tasks.push_back(Task(name + "-" + std::to_string(p), "pending", nullptr, gang.gpus_per_pod,
                           gang.fraction));
    }
    job["tasks"] = std::move(tasks);
    jobs.push_back(std::move(job));
    ++job_index;
  }
  doc["jobs"] = std::move(jobs);
  return WriteJson(doc, path, error);
}

}  // namespace gen

bool WriteClusterScenario(const ClusterGenOptions& options, const std::string& path,
                          ClusterGenSummary& summary, std::string& error) {
  if (options.busy_shared) return gen::WriteBusyShared(options, path, summary, error);
  if (options.mixed) return gen::WriteMixed(options, path, summary, error);
  return gen::WriteDefaultShape(options, path, summary, error);
}

}  // namespace gantry::bench
