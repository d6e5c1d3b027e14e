#include "binder/controller.h"

#include <cmath>
#include <iostream>

#include "binder/log.h"

namespace gantry::binder {

Controller::Controller(std::shared_ptr<kube::Client> client, Reconciler& reconciler,
                       ControllerOptions options, obs::BinderMetrics* metrics, kube::ClockPtr clock)
    : client_(std::move(client)),
      reconciler_(reconciler),
      options_(std::move(options)),
      metrics_(metrics),
      clock_(std::move(clock)),
      queue_(clock_) {}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  if (started_) return;
  started_ = true;
  if (metrics_ != nullptr) metrics_->max_concurrent_reconciles.Set(options_.workers);
  kube::ListWatchOptions lw;
  lw.ns = options_.ns;
  watcher_ = std::make_unique<kube::ListWatcher>(client_, kube::resources::kBindRequests, lw, *this,
                                                 clock_);
  watch_thread_ = std::thread([this] { watcher_->Run(); });
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Work(); });
}

void Controller::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  watcher_->Stop();
  queue_.ShutDown();
  watch_thread_.join();
  for (auto& t : workers_) t.join();
}

void Controller::Offer(const kube::Object& object) {
  auto br = ParseBindRequest(object);
  // Invalid requests are queued too: the reconciler fails them with the reason.
  if (br.ok() && (br.value().Finished() || br.value().deleting)) return;
  queue_.Add(kube::NamespaceOf(object) + "/" + kube::NameOf(object));
}

void Controller::OnSync(std::vector<kube::Object> items, const std::string& /*rv*/) {
  for (const auto& item : items) Offer(item);
  if (!synced_.exchange(true)) {
    Log("binder: synced " + std::to_string(items.size()) + " BindRequests");
  }
}

void Controller::OnEvent(kube::EventType type, const kube::Object& object) {
  if (type == kube::EventType::kAdded || type == kube::EventType::kModified) Offer(object);
}

void Controller::OnError(const kube::ApiError& error, kube::Clock::Duration retry_in) {
  Log("binder: watching BindRequests: " + error.ToString() + "; retrying in " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(retry_in).count()) +
      " ms");
}

void Controller::Work() {
  using Next = ReconcileResult::Next;
  while (auto key = queue_.Get()) {
    size_t slash = key->find('/');
    if (metrics_ != nullptr) metrics_->active_workers.Inc();
    auto start = clock_->Now();
    ReconcileResult r = reconciler_.Reconcile(key->substr(0, slash), key->substr(slash + 1));
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
      const auto& p = options_.requeue_backoff;
      double factor = std::pow(p.factor, std::min(requeues - 1, 30));
      auto base = std::chrono::duration_cast<kube::Clock::Duration>(p.initial * factor);
      retry = std::min<kube::Clock::Duration>(base, p.max);
    }
    queue_.Done(*key, retry);
  }
}

}  // namespace gantry::binder
