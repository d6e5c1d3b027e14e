// Deterministic synthetic cluster for the benchmark, written as a scenario file (the format of
// shared/spec/scenario.md, config mode single_session with the single action "allocate").
//
// The cluster: N nodes of 8 GPUs; 10 departments x 10 leaf queues whose GPU quotas add up to the
// cluster's GPUs; 75% of the GPUs held by running one-GPU pods (one job each) packed so that nodes
// are left with varying free GPUs; pending gangs of 1-32 pods of 1-8 GPUs each (min_available =
// pod count) in random leaf queues, asking for about twice the free GPUs in total.
//
// Shapes of the benchmark family (bench/README.md, "The shapes") are ClusterGenOptions settings:
// fractional pods, topology, round-robin placement of the running pods (KAI's benchmark layouts),
// a hero gang; the busy shared cluster (`busy_shared`) has a generator of its own.
//
// The same options always produce the same file, byte for byte (std::mt19937_64, fixed seed).
#pragma once

#include <cstdint>
#include <string>

namespace gantry::bench {

struct ClusterGenOptions {
  int nodes = 100;
  int gpus_per_node = 8;
  int departments = 10;
  int queues_per_department = 10;
  double running_gpu_fraction = 0.75;  // share of all GPUs held by running one-GPU pods
  double pending_to_free_ratio = 2.0;  // pending GPU request / free GPUs
  bool with_predicates = true;         // the default plugin list with or without "predicates"
  // Variant: share of pods asking for a fraction of a GPU (running one-GPU pods and whole pending
  // gangs of one-GPU pods are turned into fractions of 0.25, 0.5 or 0.75).
  double fractional_share = 0;
  // Variant: a three-level topology (zone / block / rack: 8 nodes per rack, 4 racks per block,
  // 4 blocks per zone); pending gangs of several pods require their zone or block and prefer a
  // rack.
  bool topology = false;
  // Variant: the running one-GPU pods are placed round-robin, the i-th running job on the i-th
  // node (mod N) among the nodes that still have a running pod to take, as KAI's benchmarks lay
  // out their jobs, instead of each node's running jobs one after the other.
  bool round_robin = false;
  // Variant: > 0 adds one pending gang of this many 8-GPU pods (the oldest pending job, in the
  // first leaf queue) beside the usual ones.
  int hero_gang_pods = 0;
  // The busy shared cluster: one parent queue over 10 leaf queues of different quotas and
  // over-quota weights; about 97% of the GPUs held by running jobs of 1-4 GPUs (priorities 50,
  // 75 and a few non-preemptible 100), three quarters of them in the three queues of smallest
  // quota (far over their shares, the others under); 10 pending jobs per node of 1-4 pods x
  // 1-8 GPUs at priorities 50, 75 and 100 (non-preemptible) in every queue. The fields above
  // other than nodes, with_predicates and seed do not apply.
  bool busy_shared = false;
  // The mixed cluster (its own generator, bench/README.md "The shapes"): about 10 pods per node,
  // most running (whole-GPU pods of 1-8 GPUs, shared devices holding 2-3 fractional pods, CPU-only
  // pods), in multi-pod and single-pod jobs of a two-level queue tree with varied quotas and
  // weights; some non-preemptible jobs; pending gangs (some fractional, some requiring their
  // topology block or zone) of about half a pod per node. Written job by job, so that 100,000
  // nodes / 1,000,000 pods stay cheap to generate. The fields above other than nodes,
  // gpus_per_node, with_predicates and seed do not apply.
  bool mixed = false;
  uint64_t seed = 0x6a616e7472794245;  // fixed: the file only depends on the options
};

struct ClusterGenSummary {
  int nodes = 0;
  int queues = 0;  // departments + leaf queues
  int jobs = 0;
  int pods = 0;  // running + pending
  int running_pods = 0;
  int pending_jobs = 0;
  int pending_pods = 0;
  int64_t total_gpus = 0;
  int64_t free_gpus = 0;         // after the running pods
  int64_t pending_gpus = 0;      // sum of the pending pods' requests
  int full_nodes = 0;            // nodes with no free GPU
  int empty_nodes = 0;           // nodes with every GPU free
  int fractional_pods = 0;       // running + pending pods asking for a fraction
  int constrained_jobs = 0;      // pending gangs with a topology constraint
  int non_preemptible_jobs = 0;  // jobs at priority 100 (busy shared cluster, mixed)
  int cpu_only_pods = 0;         // pods asking for no GPU (mixed)
};

// Writes the scenario to `path` (overwriting it). Returns false with `error` set when the file
// cannot be written.
bool WriteClusterScenario(const ClusterGenOptions& options, const std::string& path,
                          ClusterGenSummary& summary, std::string& error);

}  // namespace gantry::bench
