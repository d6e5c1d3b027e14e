#include "kube/clock.h"

#include <thread>

namespace gantry::kube {

void StopSignal::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool StopSignal::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

bool StopSignal::WaitFor(std::chrono::nanoseconds d) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, d, [this] { return stopped_; });
}

namespace {

class SystemClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  bool SleepFor(Duration d, const StopSignal* stop) override {
    if (stop != nullptr) return !stop->WaitFor(d);
    if (d > Duration::zero()) std::this_thread::sleep_for(d);
    return true;
  }
};

}  // namespace

ClockPtr RealClock() {
  static const ClockPtr clock = std::make_shared<SystemClock>();
  return clock;
}

Clock::TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(elapsed_));
}

Clock::WallTime FakeClock::WallNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_start_ + std::chrono::duration_cast<WallTime::duration>(elapsed_);
}

bool FakeClock::SleepFor(Duration d, const StopSignal* stop) {
  std::lock_guard<std::mutex> lock(mu_);
  sleeps_.push_back(d);
  if (d > Duration::zero()) elapsed_ += d;
  return stop == nullptr || !stop->stopped();
}

void FakeClock::Advance(Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  elapsed_ += d;
}

std::vector<Clock::Duration> FakeClock::sleeps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sleeps_;
}

}  // namespace gantry::kube
