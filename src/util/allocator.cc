#include "util/allocator.h"

#ifdef GANTRY_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>

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

}  // namespace gantry
