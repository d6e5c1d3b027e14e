// The usage database: where the scheduler reads each queue's historical usage for time-based
// fairshare (KAI's usagedb). A client answers with the usage of every queue it knows, normalised
// to the cluster's capacity over the configured window; `UsageLister` (lister.h) asks it off the
// scheduling cycle and hands each cycle the last good answer.
#pragma once

#include <cstdint>
#include <memory>

#include "framework/config.h"
#include "model/cluster.h"
#include "util/status.h"

namespace gantry::usagedb {

class UsageClient {
 public:
  virtual ~UsageClient() = default;
  // Usage per queue name at `now_ms` (Unix ms). An error leaves the caller's last answer in use.
  virtual Result<UsageByQueue> GetResourceUsage(int64_t now_ms) = 0;
};

// The client `config` names ("prometheus": prometheus_client.h; "embedded": embedded_store.h),
// with its connection string resolved (connectionStringEnvVar read from the environment). Fails
// naming the field at fault.
Result<std::unique_ptr<UsageClient>> MakeUsageClient(const UsageDbConfig& config);

}  // namespace gantry::usagedb
