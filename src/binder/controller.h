// The binder's control loop: a ListWatcher on BindRequests feeds a WorkQueue with the keys of
// requests that still need work (not Succeeded, not Failed for good), and `workers` threads
// take keys from it and run the Reconciler, rescheduling retries as it says. Every reconcile is
// counted in the binder metrics (kai_metrics.h).
//
//   Controller controller(client, reconciler, {.workers = 4}, &metrics);
//   controller.Start();   // returns at once; threads run until Stop()
//   controller.synced();  // the first list has been queued
//   controller.Stop();    // stops the watch, lets workers finish their current key, joins
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "binder/reconciler.h"
#include "binder/work_queue.h"
#include "kube/list_watcher.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {

struct ControllerOptions {
  int workers = 4;
  std::string ns;  // namespace to watch; empty: all
  // Backoff of keys whose reconcile hit an API error (ReconcileResult::kRequeue).
  kube::BackoffPolicy requeue_backoff{std::chrono::milliseconds(100), std::chrono::seconds(30), 2.0,
                                      0.2};
};

class Controller : public kube::WatchHandler {
 public:
  // `metrics` may be null.
  Controller(std::shared_ptr<kube::Client> client, Reconciler& reconciler,
             ControllerOptions options, obs::BinderMetrics* metrics,
             kube::ClockPtr clock = kube::RealClock());
  ~Controller() override;

  void Start();
  void Stop();
  // The first list of BindRequests has been seen.
  bool synced() const { return synced_.load(); }
  WorkQueue& queue() { return queue_; }

  // WatchHandler
  void OnSync(std::vector<kube::Object> items, const std::string& resource_version) override;
  void OnEvent(kube::EventType type, const kube::Object& object) override;
  void OnError(const kube::ApiError& error, kube::Clock::Duration retry_in) override;

 private:
  void Offer(const kube::Object& object);
  void Work();

  std::shared_ptr<kube::Client> client_;
  Reconciler& reconciler_;
  ControllerOptions options_;
  obs::BinderMetrics* metrics_;
  kube::ClockPtr clock_;
  WorkQueue queue_;
  std::unique_ptr<kube::ListWatcher> watcher_;
  std::thread watch_thread_;
  std::vector<std::thread> workers_;
  std::atomic<bool> synced_{false};
  std::mutex backoff_mu_;
  std::map<std::string, int> requeues_;  // consecutive API-error requeues per key
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace gantry::binder
