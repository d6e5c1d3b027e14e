#include "usagedb/embedded_store.h"

#include <algorithm>

#include "model/status.h"

namespace gantry::usagedb {

void EmbeddedUsageStore::Record(UsageSample sample) {
  std::lock_guard lock(mu_);
  if (!samples_.empty() && sample.time_ms < samples_.back().time_ms) return;
  const int64_t time_ms = sample.time_ms;
  samples_.push_back(std::move(sample));
  // A sliding window never looks further back than its size; tumbling and cron windows reach
  // back to their last reset, at most one window size (cron: kept while in any window).
  if (params_.window_type == UsageParams::WindowType::kSliding) {
    const auto keep_from = time_ms - static_cast<int64_t>(params_.window_size_seconds * 1000);
    while (!samples_.empty() && samples_.front().time_ms <= keep_from) samples_.pop_front();
  }
}

size_t EmbeddedUsageStore::sample_count() const {
  std::lock_guard lock(mu_);
  return samples_.size();
}

Result<UsageByQueue> EmbeddedUsageStore::GetResourceUsage(int64_t now_ms) {
  std::lock_guard lock(mu_);
  const int64_t start = WindowStartMs(now_ms, params_, cron_ ? &*cron_ : nullptr);
  const bool sliding = params_.window_type == UsageParams::WindowType::kSliding;
  QueueUsage capacity;
  UsageByQueue decayed;
  for (const UsageSample& s : samples_) {
    if (s.time_ms > now_ms) break;
    // A sliding window is (now - size, now]; a tumbling one [last reset, now].
    if (sliding ? s.time_ms <= start : s.time_ms < start) continue;
    const double w =
        DecayWeight(static_cast<double>(now_ms - s.time_ms) / 1000.0, params_.half_life_seconds);
    capacity.cpu += s.capacity.cpu * w;
    capacity.memory += s.capacity.memory * w;
    capacity.gpu += s.capacity.gpu * w;
    for (const auto& [queue, a] : s.allocated) {
      QueueUsage& d = decayed[queue];
      d.cpu += a.cpu * w;
      d.memory += a.memory * w;
      d.gpu += a.gpu * w;
    }
  }
  // KAI divides by the capacity found; with none recorded, by 1 (no capacity to normalise by).
  const auto ratio = [](double used, double cap) { return cap > 0 ? used / cap : used; };
  UsageByQueue out;
  for (const auto& [queue, d] : decayed) {
    out[queue] = {ratio(d.cpu, capacity.cpu), ratio(d.memory, capacity.memory),
                  ratio(d.gpu, capacity.gpu)};
  }
  return out;
}

UsageSample SampleOf(const Cluster& cluster, int64_t time_ms, HeldPods held) {
  UsageSample s;
  s.time_ms = time_ms;
  for (const Node& n : cluster.nodes) {
    s.capacity.cpu += static_cast<double>(n.allocatable.cpu_millis);
    s.capacity.memory += static_cast<double>(n.allocatable.memory_bytes);
    s.capacity.gpu += static_cast<double>(n.allocatable.gpus);
  }
  for (const Queue& q : cluster.queues) s.allocated[q.name];
  for (const Pod& pod : cluster.pods) {
    const bool counted = held == HeldPods::kAllocated ? IsAllocatedLike(pod.status)
                                                      : (pod.status == PodStatus::kBound ||
                                                         pod.status == PodStatus::kRunning ||
                                                         pod.status == PodStatus::kReleasing);
    if (pod.job == kNone || !counted) continue;
    const Quantities q = pod.RequestQuantities();
    for (QueueId id = cluster.jobs[pod.job].queue; id != kNone; id = cluster.queues[id].parent) {
      QueueUsage& u = s.allocated[cluster.queues[id].name];
      u.cpu += q[QueueResource::kCpu];
      u.memory += q[QueueResource::kMemory];
      u.gpu += q[QueueResource::kGpu];
    }
  }
  return s;
}

}  // namespace gantry::usagedb
