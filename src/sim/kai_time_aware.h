// Import of the input of KAI's time-based fairshare simulator (KAI-Scheduler's
// cmd/time-based-fairshare-simulator), and its CSV output, so that `gantry simulate` runs KAI's
// own example files and its results can be set beside KAI's.
//
// KAI's simulator starts a real API server and the real scheduler, binder and controllers; every
// simulator cycle it sleeps 10 ms, appends what each queue's status says it holds to an in-memory
// usage history (one entry per cycle), and records each queue's allocation and the scheduler's
// latest fair share. Here one of its cycles is one second of virtual time:
//
//   KAI input                         simulation
//   Cycles: N (100)                   until_seconds: N - 1, a cycle every second
//   (tick_every_period) WindowSize: W (5)                 usageDBConfig: embedded store, sliding
//   window of W seconds, HalfLifePeriod: H (absent: 0)       half-life H seconds (0: no decay), one
//   usage sample per
//                                       second (queryResolution 1s)
//   KValue: k (1)                     proportion's kValue
//   Nodes: [{GPUs: g, Count: c}]      c nodes test-node-<g>[-<i>]: g GPUs, 8 CPUs, 16 GiB
//   Queues: [{Name, Parent, Priority  queues with GPU quota, over-quota weight and no GPU limit;
//     (100), DeservedGPUs (0),          CPU and memory quota, weight and limit 0 (KAI's queues set
//     Weight (1)}]                      the GPU only); an empty Parent: a top-level queue
//   Jobs: {queue: {GPUs, NumPods,     NumJobs jobs <queue>-<j> per queue, each NumPods pods of
//     NumJobs}}                         GPUs whole GPUs and nothing else, gang minimum 1, priority
//                                       50 (preemptible), never ending; queue by queue in the
//                                       file's order, 4 s apart (KAI creates them queue by queue)
//
// A `Simulation` mapping beside KAI's fields (KAI's simulator ignores unknown keys) sets Gantry's
// clock settings over the import's (docs/simulation.md): bind and eviction latencies, the
// warm-up (usage_start_seconds); `Cycles` still counts the cycles after the warm-up.
//
// Field names match case-insensitively, as Go's JSON decoding does; a null value is an absent one.
// Where KAI's simulator differs on purpose or by accident, this import says so instead of copying
// it: KAI creates one node per entry whatever Count says (and fails on two entries with the same
// GPU count), and panics when HalfLifePeriod is absent. An unknown field is an error here (KAI
// ignores it).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "sim/simulation.h"
#include "util/status.h"

namespace gantry::sim {

// True when `root` (a parsed simulation file) is in the shape of KAI's simulator input: a
// top-level key that only that shape has (Cycles, WindowSize, HalfLifePeriod, KValue, in any
// case) or a `Jobs` mapping (Gantry's `jobs` is a list).
bool IsKaiTimeAwareInput(const YAML::Node& root);

// The simulation KAI's input describes (the mapping above). Errors name the file and the field.
Result<Simulation> ImportKaiTimeAware(const YAML::Node& root, const std::string& origin);

// KAI's simulator CSV: `Time,QueueID,Allocation,FairShare`, one row per queue (departments too)
// per cycle, Time the cycle index (the sample's virtual second), allocation and fair share in GPUs
// printed as Go's %f. Queues in the cluster's order within a cycle (KAI's order is a Go map's).
std::string KaiTimeAwareCsv(const Outcome& o);

}  // namespace gantry::sim
