// The binder's work queue of BindRequest keys ("namespace/name"), with client-go's guarantees:
//   - a key is queued at most once however often it is added;
//   - a key is handed to one worker at a time; added again while being processed, it is queued
//     again when that worker is Done with it;
//   - a key can be scheduled for later (a retry after backoff); until then, adds of the same
//     key are absorbed by the scheduled one, so watch events (including the binder's own status
//     writes) do not cut a backoff short.
// Time comes from a kube::Clock (a FakeClock in tests: a scheduled key becomes due when the test
// advances it; Get() re-checks at least every 50 ms of real time).
//
// With metrics (SetMetrics), it keeps client-go's workqueue_* figures: depth, adds, time queued,
// time in progress, and the unfinished work (refreshed by every Get and Done).
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "kube/clock.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {

class WorkQueue {
 public:
  explicit WorkQueue(kube::ClockPtr clock) : clock_(std::move(clock)) {}
  // Keeps `metrics` (may be null; must outlive the queue) up to date. Call before any Add.
  void SetMetrics(obs::WorkqueueMetrics* metrics) { metrics_ = metrics; }

  // Queues `key` now, unless it is queued or scheduled already.
  void Add(const std::string& key);
  // Schedules `key` for `delay` from now (replacing an earlier schedule of it).
  void AddAfter(const std::string& key, kube::Clock::Duration delay);
  // The next key to process, waiting for one (or for a scheduled one to become due); nullopt
  // once ShutDown(). The caller must call Done(key) afterwards.
  std::optional<std::string> Get();
  // The worker finished `key`. `retry_after`: schedule it again (AddAfter) instead of requeueing
  // it for adds that arrived meanwhile.
  void Done(const std::string& key, std::optional<kube::Clock::Duration> retry_after = {});
  // Wakes every Get() with nullopt; later adds are ignored.
  void ShutDown();

  // Keys queued now (not scheduled, not in progress).
  size_t Depth() const;
  // Keys scheduled for later.
  size_t Scheduled() const;

 private:
  // Moves due scheduled keys to the queue; returns the time the next one is due.
  std::optional<kube::Clock::TimePoint> PromoteDue();
  void Enqueue(const std::string& key);

  // Sets the depth and the unfinished work gauges (mu_ held).
  void UpdateGauges();

  kube::ClockPtr clock_;
  obs::WorkqueueMetrics* metrics_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  std::map<std::string, kube::Clock::TimePoint> processing_;  // key -> when it was handed out
  std::map<std::string, kube::Clock::TimePoint> queued_at_;   // key -> when it was queued
  std::set<std::string> dirty_;                               // added while processing
  std::map<std::string, kube::Clock::TimePoint> scheduled_;
  bool shut_down_ = false;
};

}  // namespace gantry::binder
