// The Prometheus usage client: KAI's queries of the queue allocation metrics over Prometheus'
// HTTP API (GET /api/v1/query, an instant query evaluated now). Per resource (GPU, CPU, memory):
//
//   decayed(m)  = ((m) * (0.5^((<now> - time()) / <half life seconds>)))    (m without a half-life)
//   capacity    = sum_over_time((decayed(<capacity metric>))[<range>:<resolution>])
//   usage(q)    = sum_over_time((decayed(<allocation metric>))[<range>:<resolution>]){queue_name=q}
//                 / capacity
//
// where the range is the window size (sliding windows) or the time since the window's last
// reset (tumbling and cron windows). Metrics are KAI's defaults (kai_queue_allocated_gpus /
// _cpu_cores / _memory_bytes; sum(kube_node_status_capacity{resource="nvidia_com_gpu"}) ...) or
// the extraParams gpuAllocationMetric, cpuAllocationMetric, memoryAllocationMetric,
// gpuCapacityMetric, cpuCapacityMetric, memoryCapacityMetric; extraParams usageQueryTimeout (10s)
// and queryResolution (1m) as in KAI.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

#include "usagedb/client.h"
#include "usagedb/usage_math.h"

namespace gantry::usagedb {

class PrometheusClient : public UsageClient {
 public:
  // An HTTP GET of `url` with a timeout; the body, or an error. The default uses libcurl.
  using HttpGet = std::function<Result<std::string>(const std::string& url, double timeout_s)>;

  static Result<std::unique_ptr<PrometheusClient>> Create(const std::string& address,
                                                          const UsageParams& params,
                                                          HttpGet get = nullptr);

  Result<UsageByQueue> GetResourceUsage(int64_t now_ms) override;

  // The PromQL expressions for one resource (0 GPU, 1 CPU, 2 memory) at `now_ms`.
  std::string CapacityQuery(int resource, int64_t now_ms) const;
  std::string AllocationQuery(int resource, int64_t now_ms) const;

 private:
  PrometheusClient(std::string address, UsageParams params, HttpGet get);
  std::string WindowQuery(const std::string& metric, int64_t now_ms) const;
  // Runs an instant query; the samples of its vector result as (queue_name label, value).
  Result<std::vector<std::pair<std::string, double>>> Query(const std::string& promql,
                                                            int64_t now_ms) const;

  std::string address_;
  UsageParams params_;
  HttpGet get_;
  std::optional<CronSchedule> cron_;
  double query_timeout_s_ = 10;
  double resolution_s_ = 60;
  std::array<std::string, 3> allocation_metric_;
  std::array<std::string, 3> capacity_metric_;
};

// libcurl GET: the body of a 2xx answer, else an error naming the status or the failure.
Result<std::string> CurlGet(const std::string& url, double timeout_s);

}  // namespace gantry::usagedb
