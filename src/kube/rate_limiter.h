// Client-side request throttling and retry pacing.
//
// RateLimiter is a token bucket: `burst` tokens, refilled at `qps` per second; each request takes
// one, waiting for it when the bucket is empty. Backoff produces growing, jittered delays for
// retries (watch reconnects). Both take their time and randomness from the caller, so tests are
// deterministic.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

#include "kube/clock.h"

namespace gantry::kube {

// Thread-safe.
class RateLimiter {
 public:
  // `qps` <= 0 disables limiting. `burst` is at least 1.
  RateLimiter(double qps, int burst, ClockPtr clock);

  // Takes a token if one is available now.
  bool TryAccept();
  // Takes a token, possibly one that becomes available only later, and returns how long the
  // caller must wait before using it (zero when one was available). Waiters are served in
  // call order.
  Clock::Duration Reserve();
  // Reserve() and sleep on the clock. Returns false if `stop` was raised while waiting.
  bool Accept(const StopSignal* stop = nullptr);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void Refill(Clock::TimePoint now);

  double qps_;
  int burst_;
  ClockPtr clock_;
  std::mutex mu_;
  double tokens_;  // may go negative: tokens promised to waiters
  Clock::TimePoint last_;
};

struct BackoffPolicy {
  Clock::Duration initial = std::chrono::milliseconds(800);
  Clock::Duration max = std::chrono::seconds(30);
  double factor = 2.0;
  // Each delay is the base delay times (1 + jitter * u), u uniform in [0, 1).
  double jitter = 0.2;
};

// The delay before retry number `attempt` (1 = the first): initial * factor^(attempt - 1), capped
// at max, without jitter. The one backoff formula: Backoff::Next follows the same sequence (and
// adds jitter), the binder's BindRequest retries and its controller's requeues use it directly.
Clock::Duration BackoffDelay(const BackoffPolicy& policy, int attempt);

// Exponential backoff with jitter. Not thread-safe (one per retry loop).
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, uint64_t seed = std::random_device{}());
  // The next delay: initial, initial*factor, ... capped at max, each with jitter added.
  Clock::Duration Next();
  // Back to the initial delay (after a success).
  void Reset();
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  Clock::Duration base_;
  std::mt19937_64 rng_;
};

}  // namespace gantry::kube
