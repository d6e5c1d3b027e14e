// The binder's control loop: the BinderCache (cache.h) lists and watches BindRequests, pods and
// nodes; every BindRequest it lists or sees added or changed that still needs work (not
// Succeeded, not Failed for good, not being deleted) is queued by key on a WorkQueue, and
// `workers` threads take keys from it and run the Reconciler, rescheduling retries as it says.
// Workers start reconciling once all three caches are synced. Every reconcile is counted in the
// binder metrics (kai_metrics.h).
//
//   BinderCache cache;
//   Reconciler reconciler(client, cache, DefaultSteps(client, cache));
//   Controller controller(client, cache, reconciler, {.workers = 10}, &metrics);
//   controller.Start();   // returns at once; the cache and the threads run until Stop()
//   controller.synced();  // the caches are synced and the listed requests queued
//   controller.Stop();    // stops the watches, lets workers finish their current key, joins
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "binder/cache.h"
#include "binder/reconciler.h"
#include "binder/work_queue.h"
#include "kube/list_watcher.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {

struct ControllerOptions {
  int workers = 10;  // KAI's --max-concurrent-reconciles default
  std::string ns;    // namespace to watch; empty: all
  // Backoff of keys whose reconcile hit an API error (ReconcileResult::kRequeue).
  kube::BackoffPolicy requeue_backoff{std::chrono::milliseconds(100), std::chrono::seconds(30), 2.0,
                                      0.2};
};

class Controller {
 public:
  // `metrics` may be null. `cache` and `reconciler` must outlive the controller; Start() starts
  // the cache (with `client`) and Stop() stops it.
  Controller(std::shared_ptr<kube::Client> client, BinderCache& cache, Reconciler& reconciler,
             ControllerOptions options, obs::BinderMetrics* metrics,
             kube::ClockPtr clock = kube::RealClock());
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void Start();
  void Stop();
  // The caches are synced (the listed BindRequests are queued).
  bool synced() const { return cache_.synced(); }
  WorkQueue& queue() { return queue_; }

 private:
  // BindRequest listener: queues the key of a request that needs work.
  void Offer(kube::EventType type, const kube::Object& object);
  void Work();

  std::shared_ptr<kube::Client> client_;
  BinderCache& cache_;
  Reconciler& reconciler_;
  ControllerOptions options_;
  obs::BinderMetrics* metrics_;
  kube::ClockPtr clock_;
  WorkQueue queue_;
  kube::StopSignal stop_;
  std::vector<std::thread> workers_;
  std::atomic<bool> logged_sync_{false};
  std::mutex backoff_mu_;
  std::map<std::string, int> requeues_;  // consecutive API-error requeues per key
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace gantry::binder
