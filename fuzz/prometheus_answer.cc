// The Prometheus usage client's reading of query answers (JSON from the usage database): any
// answer gives usage or an error with a message; the process never crashes.
#include "framework/config.h"
#include "fuzz_util.h"
#include "usagedb/prometheus_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string answer(gantry::fuzz::Text(data, size));
  gantry::UsageParams params;
  params.half_life_seconds = 600;
  auto client = gantry::usagedb::PrometheusClient::Create(
      "http://127.0.0.1:9090", params,
      [&](const std::string&, double) -> gantry::Result<std::string> { return answer; });
  gantry::fuzz::Check(client.ok(), "the client is created");
  auto usage = client.value()->GetResourceUsage(1'735'689'600'000);
  if (!usage.ok()) gantry::fuzz::Check(!usage.error().empty(), "an error has a message");
  return 0;
}
