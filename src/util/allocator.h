// The memory allocator of the gantry executables.
//
// gantry and gantry-bench link jemalloc (CMake option GANTRY_JEMALLOC, on by default, off in
// sanitizer builds) with its heap backed by transparent huge pages: a scheduling cycle reads
// large per-pod, per-job and per-node arrays in scattered order, and 2 MiB pages remove most of
// its TLB misses (about 8% of the 5,000-node cycle's CPU time, see bench/README.md). The
// setting is compiled in (allocator.cc); MALLOC_CONF in the environment overrides it, e.g.
// MALLOC_CONF=thp:default to leave pages to the system's setting. Hosts whose transparent huge
// pages are "never" simply get normal pages.
#pragma once

#include <cstdint>
#include <string>

namespace gantry {

// One line naming the allocator and, for jemalloc, its version and huge-page mode as it
// applies them, e.g. "jemalloc 5.3.0-0-g54eaed1d8b56 (thp: always)" or "system malloc".
std::string AllocatorDescription();

// Bytes the program holds allocated now (jemalloc's stats.allocated, refreshed), for memory
// measurements that must not depend on what the allocator keeps cached; -1 with another
// allocator.
int64_t AllocatedBytes();

// Gives the memory the allocator keeps cached back to the system (jemalloc: purges every
// arena), so that the RSS measured next reflects live data; nothing with another allocator.
void ReleaseFreeMemory();

}  // namespace gantry
