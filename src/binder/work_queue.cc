#include "binder/work_queue.h"

#include <algorithm>

namespace gantry::binder {

void WorkQueue::Enqueue(const std::string& key) {
  if (processing_.count(key) != 0) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    if (metrics_ != nullptr) {
      queued_at_[key] = clock_->Now();
      metrics_->adds.Inc();
      metrics_->depth.Set(static_cast<double>(queue_.size()));
    }
  }
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_ || scheduled_.count(key) != 0) return;
  Enqueue(key);
}

void WorkQueue::AddAfter(const std::string& key, kube::Clock::Duration delay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  scheduled_[key] = clock_->Now() + delay;
  cv_.notify_all();
}

std::optional<kube::Clock::TimePoint> WorkQueue::PromoteDue() {
  const auto now = clock_->Now();
  std::optional<kube::Clock::TimePoint> next;
  for (auto it = scheduled_.begin(); it != scheduled_.end();) {
    if (it->second <= now) {
      std::string key = it->first;
      it = scheduled_.erase(it);
      Enqueue(key);
    } else {
      next = next ? std::min(*next, it->second) : it->second;
      ++it;
    }
  }
  return next;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (shut_down_) return std::nullopt;
    auto next = PromoteDue();
    if (!queue_.empty()) {
      std::string key = queue_.front();
      queue_.pop_front();
      queued_.erase(key);
      const auto now = clock_->Now();
      processing_[key] = now;
      if (metrics_ != nullptr) {
        if (auto at = queued_at_.find(key); at != queued_at_.end()) {
          metrics_->queue_duration.Observe(std::chrono::duration<double>(now - at->second).count());
          queued_at_.erase(at);
        }
        UpdateGauges();
      }
      return key;
    }
    kube::Clock::Duration wait = std::chrono::milliseconds(50);
    if (next) wait = std::clamp<kube::Clock::Duration>(*next - clock_->Now(), {}, wait);
    if (metrics_ != nullptr) UpdateGauges();
    cv_.wait_for(lock, wait);
  }
}

void WorkQueue::UpdateGauges() {
  const auto now = clock_->Now();
  double unfinished = 0;
  double longest = 0;
  for (const auto& [key, since] : processing_) {
    const double s = std::chrono::duration<double>(now - since).count();
    unfinished += s;
    longest = std::max(longest, s);
  }
  metrics_->depth.Set(static_cast<double>(queue_.size()));
  metrics_->unfinished_work.Set(unfinished);
  metrics_->longest_running.Set(longest);
}

void WorkQueue::Done(const std::string& key, std::optional<kube::Clock::Duration> retry_after) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = processing_.find(key); it != processing_.end()) {
    if (metrics_ != nullptr) {
      metrics_->work_duration.Observe(
          std::chrono::duration<double>(clock_->Now() - it->second).count());
    }
    processing_.erase(it);
    if (metrics_ != nullptr) UpdateGauges();
  }
  bool dirty = dirty_.erase(key) != 0;
  if (shut_down_) return;
  if (retry_after) {
    scheduled_[key] = clock_->Now() + *retry_after;
    cv_.notify_all();
  } else if (dirty && scheduled_.count(key) == 0) {
    Enqueue(key);
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

size_t WorkQueue::Scheduled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduled_.size();
}

}  // namespace gantry::binder
