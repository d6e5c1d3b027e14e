#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace gantry::kube {

RateLimiter::RateLimiter(double qps, int burst, ClockPtr clock)
    : qps_(qps), burst_(std::max(burst, 1)), clock_(std::move(clock)) {
  tokens_ = burst_;
  last_ = clock_->Now();
}

void RateLimiter::Refill(Clock::TimePoint now) {
  if (now <= last_) return;
  double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

bool RateLimiter::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  Refill(clock_->Now());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

Clock::Duration RateLimiter::Reserve() {
  if (qps_ <= 0) return Clock::Duration::zero();
  std::lock_guard<std::mutex> lock(mu_);
  Refill(clock_->Now());
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Clock::Duration::zero();
  return std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

bool RateLimiter::Accept(const StopSignal* stop) {
  Clock::Duration wait = Reserve();
  if (wait <= Clock::Duration::zero()) return stop == nullptr || !stop->stopped();
  return clock_->SleepFor(wait, stop);
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(policy), base_(policy.initial), rng_(seed) {}

Clock::Duration BackoffDelay(const BackoffPolicy& policy, int attempt) {
  // The exponent stops at 30: past it every policy in use is at its cap long since.
  const double grown = static_cast<double>(policy.initial.count()) *
                       std::pow(policy.factor, std::clamp(attempt - 1, 0, 30));
  if (grown >= static_cast<double>(policy.max.count())) return policy.max;
  return Clock::Duration(static_cast<Clock::Duration::rep>(grown));
}

Clock::Duration Backoff::Next() {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double factor = 1.0 + policy_.jitter * u(rng_);
  auto delay = std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double, std::nano>(static_cast<double>(base_.count()) * factor));
  auto grown = std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double, std::nano>(
      static_cast<double>(base_.count()) * policy_.factor));
  base_ = std::min(grown, policy_.max);
  return delay;
}

void Backoff::Reset() { base_ = policy_.initial; }

}  // namespace gantry::kube
