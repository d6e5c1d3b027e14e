// Time for the Kubernetes layer: a Clock interface (the only way this layer reads time or
// sleeps), the real clock, a FakeClock for tests, and a StopSignal that interrupts waits.
//
// Rate limiting, watch backoff and leader election take a Clock so tests run on simulated time:
// with a FakeClock, a sleep advances the fake time at once and is recorded, so tests assert on
// the requested waits instead of timing anything.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace gantry::kube {

// A flag that one thread raises to stop another, and that blocked waits observe at once.
// Thread-safe.
class StopSignal {
 public:
  // Raises the flag and wakes every waiter. Idempotent.
  void Stop();
  bool stopped() const;
  // Waits up to `d`; returns true as soon as the flag is raised (or if it already was).
  bool WaitFor(std::chrono::nanoseconds d) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopped_ = false;
};

// Monotonic time (for durations and deadlines), wall time (for timestamps written to the API,
// such as a Lease's renewTime) and sleeping. Implementations are thread-safe.
class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  virtual WallTime WallNow() const = 0;
  // Sleeps for `d` or until `stop` is raised (when given). Returns false when stopped.
  virtual bool SleepFor(Duration d, const StopSignal* stop) = 0;
};
using ClockPtr = std::shared_ptr<Clock>;

// The process's real clock (steady_clock, system_clock, condition-variable waits).
ClockPtr RealClock();

// Simulated time for tests. Now() only moves through Advance() or SleepFor(), which advances by
// the requested duration immediately and records it in sleeps().
class FakeClock : public Clock {
 public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'700'000'000)))
      : wall_start_(wall_start) {}

  TimePoint Now() const override;
  WallTime WallNow() const override;
  bool SleepFor(Duration d, const StopSignal* stop) override;

  void Advance(Duration d);
  // Every duration passed to SleepFor, in order.
  std::vector<Duration> sleeps() const;

 private:
  mutable std::mutex mu_;
  Duration elapsed_{0};
  WallTime wall_start_;
  std::vector<Duration> sleeps_;
};

}  // namespace gantry::kube
