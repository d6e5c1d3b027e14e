// `gantry simulate`: the scheduler on a virtual clock.
//
// A simulation file (docs/simulation.md) is a scenario document (cluster, queues, scheduler
// configuration, jobs) plus when each job arrives and how long it runs, or a workload imported
// from the Alibaba openb trace (openb.h). The simulator keeps the cluster as the live mode's watch
// cache would see it and runs the real Scheduler - the same actions and plugins - once every
// scheduling period of virtual time. Nothing sleeps: the clock jumps over periods in which nothing
// can change (no arrival, no bind or eviction completing, no pod finishing, and the last cycle
// decided nothing) - except that it never stays away longer than `idle_recheck_seconds` while pods
// wait, so rules that depend on elapsed time alone (minimum runtime, stale-gang grace) still act.
//
// Decisions are applied as a cluster would carry them out: a bind completes after the bind latency
// (or fails with the configured probability, the pod going back to pending), a running pod
// succeeds after its duration, an evicted pod is released after the eviction latency and returns
// to pending (the work it had done is counted as lost). The job facts the live mode keeps in
// PodGroup annotations (last start, stale since) are carried from one cycle to the next the same
// way, to the second.
//
// Inflation mode is the FGD paper's protocol: single-pod jobs drawn in seeded random order from
// the workload (cloned or dropped until the requested GPUs reach a target share of the cluster's),
// arriving one after another and never finishing; a pod the scheduler cannot place at once is
// dropped. Arrivals are handed to the scheduler in batches; every pod gets the same priority (the
// protocol has no preemption), so the scheduler takes them in arrival order and a batch decides as
// one-at-a-time arrivals would when node scores depend only on the cluster's state (a unit test
// compares the two). gpufragmentation learns its pod distribution from the pods it has seen, so
// with it the batch size shifts early scores slightly.
//
// Determinism: one seed drives every random choice (inflation order, bind failures); the same file
// and seed give byte-identical output.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "framework/config.h"
#include "model/cluster.h"
#include "util/status.h"

namespace gantry::sim {

struct ClockSettings {
  double period_seconds = 1;
  double bind_latency_seconds = 0;
  double bind_failure_rate = 0;  // in [0, 1)
  double eviction_latency_seconds = 0;
  double idle_recheck_seconds = 30;
  std::optional<double> until_seconds;
  // A cycle every period until until_seconds even when nothing waits (KAI's time-based fairshare
  // simulator samples every cycle; see kai_time_aware.h).
  bool tick_every_period = false;
  // With a usage database (time-based fairshare): the time its history starts; usage is empty
  // before it, and its samples are taken from then on.
  double usage_start_seconds = 0;
};

struct InflationSettings {
  bool enabled = false;
  double target_percent = 130;
  int batch = 256;
};

// A job with its pods, before it arrives. Pod ids inside are local (0..pods.size()-1).
struct JobSpec {
  Job job;
  std::vector<Pod> pods;
  double submit_seconds = 0;
  double duration_seconds = 0;  // 0: runs until the simulation ends
  // Per pod (empty: none fails): seconds of running after which the pod fails (0: never). A
  // failed pod stays failed; the rest of its gang is then what stale-gang eviction acts on.
  std::vector<double> fail_after_seconds;
};

struct Simulation {
  std::string origin;
  std::string name;
  SchedulerConfig config;
  Cluster cluster;            // nodes, queues, topologies; no jobs
  std::vector<JobSpec> jobs;  // in arrival order (submit time, then file order)
  ClockSettings clock;
  InflationSettings inflation;
  uint64_t seed = 42;
};

// Reads a simulation file (YAML or JSON); errors name the file, the object and the field.
Result<Simulation> LoadSimulationFile(const std::string& path);
Result<Simulation> ParseSimulation(const std::string& text, const std::string& origin,
                                   const std::string& base_dir);

// One sample of the cluster after a cycle.
struct Sample {
  double t = 0;                // seconds since the simulation's start
  double gpus_allocated = 0;   // GPUs held by allocated-like pods (fractions as fractions)
  double gpus_fragmented = 0;  // free GPU capacity typical pods cannot use
  int jobs_pending = 0;        // arrived jobs with a pending pod
  int jobs_running = 0;
  std::vector<double> queue_allocated;   // per leaf queue (Outcome::queues), GPUs
  std::vector<double> queue_fair_share;  // per leaf queue, GPUs
  // What each queue's status would report (KAI's podgroup and queue controllers): GPUs of its
  // pods bound to a node, running or still releasing, not those being bound; per leaf queue.
  std::vector<double> queue_status_allocated;
  // Per parent queue (Outcome::parent_queues): fair share and status allocation, GPUs.
  std::vector<double> parent_fair_share;
  std::vector<double> parent_status_allocated;
};

struct JobRecord {
  std::string name;
  std::string queue;
  double submit = 0;
  std::optional<double> first_start;  // all pods of the gang minimum running for the first time
  std::optional<double> end;
  double lost_work_seconds = 0;  // pod-seconds of work undone by evictions
  int evictions = 0;
};

struct EvictionEvent {
  double t = 0;
  std::string action;
  std::string pod;
};

// A pod placed by a cycle (timeline mode): the cycle's number (1-based, counting only the cycles
// that ran), its virtual time, the pod, its job and node.
struct Placement {
  int64_t cycle = 0;
  double t = 0;
  std::string job;
  std::string pod;
  std::string node;
};

struct InflationPoint {
  double arrived_gpus = 0;
  double allocated_gpus = 0;
};

struct Outcome {
  std::string name;
  uint64_t seed = 0;
  bool inflation = false;
  double cluster_gpus = 0;
  std::vector<std::string> queues;         // leaf queues
  std::vector<std::string> parent_queues;  // the other queues (departments and above)
  std::vector<Sample> samples;
  std::vector<JobRecord> jobs;
  std::vector<EvictionEvent> evictions;
  std::vector<Placement> placements;  // timeline mode: every bind decision, in cycle order
  std::vector<InflationPoint> curve;  // inflation: after each arrival
  int64_t cycles = 0;
  int64_t binds = 0;
  int64_t bind_failures = 0;
  double end_time = 0;
  double usage_start_seconds = 0;  // ClockSettings::usage_start_seconds
  // Inflation: allocated GPUs / cluster GPUs in percent at the end, pods arrived / dropped.
  double gpu_allocation_ratio = 0;
  int64_t pods_arrived = 0;
  int64_t pods_dropped = 0;
};

// Called after each cycle with the virtual time and the share of the run done (0..1).
using Progress = void (*)(double fraction, void* context);

// Runs the simulation. `seed` overrides the file's, `until` its end time.
Result<Outcome> Run(const Simulation& sim, std::optional<uint64_t> seed,
                    std::optional<double> until, Progress progress = nullptr,
                    void* progress_context = nullptr);

}  // namespace gantry::sim
