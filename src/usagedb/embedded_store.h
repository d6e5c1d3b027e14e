// An in-process usage database: the scheduler (or the simulator, or a test) records what each
// queue holds and what the cluster has, sample by sample; usage is computed from those samples
// exactly as the Prometheus client's query computes it from scraped ones:
//
//   usage(queue, resource) = sum over samples in the window of allocated * 0.5^(age / half life)
//                          / sum over the same samples of capacity * 0.5^(age / half life)
//
// For offline runs, scenarios and the simulator, where no Prometheus exists. Samples older than
// the window are dropped as new ones arrive. Thread-safe.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "usagedb/client.h"
#include "usagedb/usage_math.h"

namespace gantry::usagedb {

struct UsageSample {
  int64_t time_ms = 0;
  // What each queue holds (cpu millicores, memory bytes, GPUs: any unit, the same as capacity's).
  UsageByQueue allocated;
  QueueUsage capacity;
};

class EmbeddedUsageStore : public UsageClient {
 public:
  explicit EmbeddedUsageStore(UsageParams params, std::optional<CronSchedule> cron = std::nullopt)
      : params_(std::move(params)), cron_(std::move(cron)) {}

  // Adds a sample; samples must come in time order (older ones are ignored).
  void Record(UsageSample sample);
  Result<UsageByQueue> GetResourceUsage(int64_t now_ms) override;

  size_t sample_count() const;

 private:
  UsageParams params_;
  std::optional<CronSchedule> cron_;
  mutable std::mutex mu_;
  std::deque<UsageSample> samples_;
};

// Which pods a sample counts as held by their queue.
enum class HeldPods {
  // What the scheduler has placed: allocated, binding, bound or running pods.
  kAllocated,
  // What KAI's queue status (and so the queue allocation metrics Prometheus scrapes) reports: pods
  // bound to a node, running or bound, and pods still releasing their node after an eviction;
  // not those whose bind is still under way.
  kBound,
};

// Samples of a cluster at one moment: what each leaf queue's held pods request, summed up the
// hierarchy (parents hold their children's), and the nodes' allocatable resources.
UsageSample SampleOf(const Cluster& cluster, int64_t time_ms, HeldPods held = HeldPods::kAllocated);

}  // namespace gantry::usagedb
