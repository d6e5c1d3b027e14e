#include "statusctl/workers.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "binder/log.h"

namespace gantry::statusctl {

std::vector<std::string> FiledUnder::Update(const std::string& object, const std::string& owner,
                                            bool deleted) {
  std::vector<std::string> keys;
  if (!owner.empty()) keys.push_back(owner);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owner_of_.find(object);
  if (it != owner_of_.end() && it->second != owner) keys.push_back(it->second);
  if (deleted || owner.empty()) {
    if (it != owner_of_.end()) owner_of_.erase(it);
  } else if (it != owner_of_.end()) {
    it->second = owner;
  } else {
    owner_of_.emplace(object, owner);
  }
  return keys;
}

KeyWorkers::KeyWorkers(std::string log_prefix, Reconcile reconcile)
    : log_prefix_(std::move(log_prefix)),
      reconcile_(std::move(reconcile)),
      queue_(kube::RealClock()) {}

KeyWorkers::~KeyWorkers() { Stop(); }

void KeyWorkers::Start(int workers) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
}

void KeyWorkers::Stop() {
  queue_.ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void KeyWorkers::Work() {
  while (auto key = queue_.Get()) {
    std::optional<kube::Clock::Duration> retry;
    ReconcileOutcome r;
    // As controller-runtime recovers a reconciler's panic: an unexpected exception fails this
    // key (retried with backoff, logged); the worker and the other keys go on.
    try {
      r = reconcile_(*key);
    } catch (const std::exception& e) {
      r = ReconcileOutcome{ReconcileOutcome::kFailed, *key + ": unexpected error: " + e.what()};
    }
    if (r.kind == ReconcileOutcome::kConflict) {
      retry = std::chrono::milliseconds(100);
    } else if (r.kind == ReconcileOutcome::kFailed) {
      binder::Log(log_prefix_ + ": " + r.error);
      std::lock_guard<std::mutex> lock(mu_);
      int& failures = failures_[*key];
      retry = std::min<kube::Clock::Duration>(
          std::chrono::seconds(1) * (1LL << std::min(failures, 6)), std::chrono::minutes(1));
      ++failures;
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      failures_.erase(*key);
    }
    queue_.Done(*key, retry);
  }
}

}  // namespace gantry::statusctl
