#include "binder/controller.h"

#include <exception>
#include <iostream>

#include "binder/log.h"

namespace gantry::binder {

Controller::Controller(std::shared_ptr<kube::Client> client, BinderCache& cache,
                       Reconciler& reconciler, ControllerOptions options,
                       obs::BinderMetrics* metrics, kube::ClockPtr clock)
    : client_(std::move(client)),
      cache_(cache),
      reconciler_(reconciler),
      options_(std::move(options)),
      metrics_(metrics),
      clock_(std::move(clock)),
      queue_(clock_) {
  if (metrics_ != nullptr) queue_.SetMetrics(&metrics_->workqueue);
}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  if (started_) return;
  started_ = true;
  if (metrics_ != nullptr) metrics_->max_concurrent_reconciles.Set(options_.workers);
  cache_.bind_requests().AddListener(
      [this](kube::EventType type, const kube::Object& object) { Offer(type, object); });
  cache_.Start(client_, options_.ns, clock_, [](const std::string& what, const kube::ApiError& e) {
    Log("binder: watching " + what + ": " + e.ToString());
  });
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Work(); });
}

void Controller::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stop_.Stop();
  cache_.Stop();
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
}

void Controller::Offer(kube::EventType type, const kube::Object& object) {
  if (type != kube::EventType::kAdded && type != kube::EventType::kModified) return;
  auto br = ParseBindRequest(object);
  // Invalid requests are queued too: the reconciler fails them with the reason.
  if (br.ok() && (br.value().Finished() || br.value().deleting)) return;
  queue_.Add(kube::NamespaceOf(object) + "/" + kube::NameOf(object));
}

void Controller::Work() {
  using Next = ReconcileResult::Next;
  // Reconciling before the pods and nodes are listed would only find the caches empty.
  while (!cache_.synced()) {
    if (stop_.WaitFor(std::chrono::milliseconds(10))) return;
  }
  if (!logged_sync_.exchange(true)) {
    Log("binder: synced " + std::to_string(cache_.bind_requests().size()) + " BindRequests, " +
        std::to_string(cache_.pods().size()) + " pods, " + std::to_string(cache_.nodes().size()) +
        " nodes");
  }
  while (auto key = queue_.Get()) {
    size_t slash = key->find('/');
    if (metrics_ != nullptr) metrics_->active_workers.Inc();
    auto start = clock_->Now();
    ReconcileResult r;
    // As controller-runtime recovers a reconciler's panic: an unexpected exception is an error
    // result for this BindRequest (requeued with backoff); the worker and the others go on.
    try {
      r = reconciler_.Reconcile(key->substr(0, slash), key->substr(slash + 1));
    } catch (const std::exception& e) {
      r.next = Next::kRequeue;
      r.metric_result = "error";
      r.message = std::string("unexpected error: ") + e.what();
    }
    double seconds = std::chrono::duration<double>(clock_->Now() - start).count();
    if (metrics_ != nullptr) {
      metrics_->active_workers.Dec();
      metrics_->ObserveReconcile(r.metric_result, seconds);
    }
    if (!r.message.empty() && r.message != "deleted") Log("binder: " + *key + ": " + r.message);
    std::optional<kube::Clock::Duration> retry;
    int requeues = 0;
    {
      std::lock_guard<std::mutex> lock(backoff_mu_);
      if (r.next == Next::kRequeue) {
        requeues = ++requeues_[*key];
      } else {
        requeues_.erase(*key);
      }
    }
    if (r.next == Next::kRetryAfter) {
      retry = r.after;
    } else if (r.next == Next::kRequeue) {
      // An error requeue is a rate-limited add in controller-runtime: a workqueue retry.
      retry = kube::BackoffDelay(options_.requeue_backoff, requeues);
      if (metrics_ != nullptr) metrics_->workqueue.retries.Inc();
    }
    queue_.Done(*key, retry);
  }
}

}  // namespace gantry::binder
