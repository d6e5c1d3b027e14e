#include "binder/event_sender.h"

namespace gantry::binder {

AsyncEventSender::AsyncEventSender(std::shared_ptr<kube::Client> client, size_t capacity)
    : client_(std::move(client)), capacity_(capacity) {
  thread_ = std::thread([this] { Run(); });
}

AsyncEventSender::~AsyncEventSender() { Stop(); }

void AsyncEventSender::Send(kube::Object event) {
  Write w;
  w.ns = kube::NamespaceOf(event);
  w.body = std::move(event);
  Queue(std::move(w));
}

void AsyncEventSender::PatchPodStatus(std::string ns, std::string name, kube::Object patch) {
  Queue(Write{true, std::move(ns), std::move(name), std::move(patch)});
}

void AsyncEventSender::Queue(Write write) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= capacity_) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(write));
  }
  cv_.notify_one();
}

void AsyncEventSender::Stop(std::chrono::milliseconds flush_timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      flush_deadline_ = std::chrono::steady_clock::now() + flush_timeout;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AsyncEventSender::Run() {
  for (;;) {
    Write w;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() || (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_)) {
        dropped_ += static_cast<int64_t>(queue_.size());
        queue_.clear();
        return;
      }
      w = std::move(queue_.front());
      queue_.pop_front();
    }
    // Only success counts: the objects returned are not parsed.
    const kube::FieldFilter* nothing = &kube::FieldFilter::Nothing();
    bool ok = w.pod_status
                  ? client_
                        ->Patch(kube::resources::kPods, w.ns, w.name,
                                kube::PatchType::kStrategicMerge, w.body, "status", nothing)
                        .ok()
                  : client_->Create(kube::resources::kEvents, w.ns, w.body, nothing).ok();
    std::lock_guard<std::mutex> lock(mu_);
    ++(ok ? sent_ : failed_);
  }
}

int64_t AsyncEventSender::sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}
int64_t AsyncEventSender::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}
int64_t AsyncEventSender::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace gantry::binder
