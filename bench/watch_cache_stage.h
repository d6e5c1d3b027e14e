// gantry-bench's `--only watch-cache` stage (bench/README.md).
#pragma once

#include <cstdint>
#include <string>

#include "scenario/scenario.h"
#include "scheduler/scheduler.h"

namespace gantry::bench {

// `--only watch-cache`: the cluster's objects (kube_objects.h) fed to a WatchCache as watch
// events (ADDED), each first serialized and parsed back as the ListWatcher parses what the API
// server sends (kube::ParseFiltered with the kind's field filter); then Take() (a full assembly)
// and a session built on its Cluster. Timed: parsing, the cache's conversion and storing, the
// assembly and the session build (building and serializing the objects is not). Memory: the
// heap the cache holds per kind (jemalloc's allocated bytes, so nothing the allocator caches
// counts), the assembled model's and the session's, and the RSS (after returning cached memory
// to the system before each reading).
// Prints its lines; `json_fields` gets its fields of the JSON line. False on an error (printed).
bool MeasureWatchCache(const gantry::Scenario& sc, gantry::Scheduler& scheduler, int64_t now,
                       int nodes, bool whole, std::string& json_fields);

}  // namespace gantry::bench
