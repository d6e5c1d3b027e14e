// The scheduler configuration (KAI's YAML): any input parses or is refused with an error.
#include "framework/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = gantry::ParseSchedulerConfig(std::string(gantry::fuzz::Text(data, size)), "fuzz");
  if (!r.ok()) gantry::fuzz::Check(!r.error().empty(), "an error has a message");
  return 0;
}
