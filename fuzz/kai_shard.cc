// KAI SchedulingShards (`gantry kai-shard`): any input renders or is refused with an error, and
// whatever renders is a configuration Gantry's scheduler loads.
#include "cli/kai_shard.h"

#include "framework/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto takes_flag = [](const std::string& name) { return name == "schedule-period"; };
  auto r = gantry::cli::ReadKaiShards(std::string(gantry::fuzz::Text(data, size)), "fuzz", {},
                                      takes_flag);
  if (!r.ok()) {
    gantry::fuzz::Check(!r.error().empty(), "an error has a message");
    return 0;
  }
  for (const auto& shard : r.value()) {
    auto config = gantry::ParseSchedulerConfig(shard.config_yaml, "rendered");
    // A rendered configuration may still be refused by the scheduler (a plugin argument the
    // shard set), but never without a message.
    if (!config.ok()) gantry::fuzz::Check(!config.error().empty(), "an error has a message");
  }
  (void)gantry::cli::HelmValuesForShards(r.value());
  return 0;
}
