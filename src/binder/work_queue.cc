#include "binder/work_queue.h"

#include <algorithm>

namespace gantry::binder {

void WorkQueue::Enqueue(const std::string& key) {
  if (processing_.count(key) != 0) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) queue_.push_back(key);
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
      processing_.insert(key);
      return key;
    }
    kube::Clock::Duration wait = std::chrono::milliseconds(50);
    if (next) wait = std::clamp<kube::Clock::Duration>(*next - clock_->Now(), {}, wait);
    cv_.wait_for(lock, wait);
  }
}

void WorkQueue::Done(const std::string& key, std::optional<kube::Clock::Duration> retry_after) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
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
