#include "util/allocator.h"

#ifdef GANTRY_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>

#include <string>

// jemalloc's compiled-in options, read when it starts (before main): every extent it maps is
// advised for transparent huge pages, its metadata too once it grows. This object is linked
// into an executable only through AllocatorDescription, which each executable calls.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:auto";
}
#endif

namespace gantry {

std::string AllocatorDescription() {
#ifdef GANTRY_WITH_JEMALLOC
  const char* version = nullptr;
  size_t size = sizeof(version);
  const bool has_version = mallctl("version", &version, &size, nullptr, 0) == 0;
  const char* thp = nullptr;
  size = sizeof(thp);
  const bool has_thp = mallctl("opt.thp", &thp, &size, nullptr, 0) == 0;
  return std::string("jemalloc ") + (has_version ? version : "(unknown version)") +
         " (thp: " + (has_thp ? thp : "unknown") + ")";
#else
  return "system malloc";
#endif
}

int64_t AllocatedBytes() {
#ifdef GANTRY_WITH_JEMALLOC
  // This thread's cache of freed blocks counts as allocated until flushed; the statistics are a
  // snapshot taken at the last "epoch" write.
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  uint64_t epoch = 1;
  size_t size = sizeof(epoch);
  mallctl("epoch", &epoch, &size, &epoch, size);
  size_t allocated = 0;
  size = sizeof(allocated);
  if (mallctl("stats.allocated", &allocated, &size, nullptr, 0) != 0) return -1;
  return static_cast<int64_t>(allocated);
#else
  return -1;
#endif
}

void ReleaseFreeMemory() {
#ifdef GANTRY_WITH_JEMALLOC
  const std::string purge = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  mallctl(purge.c_str(), nullptr, nullptr, nullptr, 0);
#endif
}

}  // namespace gantry
