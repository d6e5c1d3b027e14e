// The scenario loader (JSON and YAML): any input loads or is refused with an error naming the
// origin; never a crash, an exception or unbounded memory.
#include "fuzz_util.h"
#include "scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = gantry::ParseScenario(std::string(gantry::fuzz::Text(data, size)), "fuzz");
  if (!r.ok()) gantry::fuzz::Check(r.error().rfind("fuzz", 0) == 0, "error names the origin");
  return 0;
}
