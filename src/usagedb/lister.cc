#include "usagedb/lister.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gantry::usagedb {

namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Ms(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000)); }

}  // namespace

UsageLister::UsageLister(std::unique_ptr<UsageClient> client, const UsageParams& params, Log log,
                         Clock clock)
    : client_(std::move(client)),
      log_(log ? std::move(log) : Log([](const std::string&) {})),
      clock_(clock ? std::move(clock) : Clock(&WallMs)),
      fetch_interval_ms_(std::max<int64_t>(1, Ms(params.fetch_interval_seconds))),
      staleness_ms_(std::max(Ms(params.staleness_period_seconds), fetch_interval_ms_)),
      wait_timeout_ms_(Ms(params.wait_timeout_seconds)) {
  if (Ms(params.staleness_period_seconds) < fetch_interval_ms_) {
    log_("usage db: stalenessPeriod is less than fetchInterval, using the fetch interval");
  }
}

UsageLister::~UsageLister() { Stop(); }

void UsageLister::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      FetchOnce();
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(fetch_interval_ms_), [&] { return stop_; });
    }
  });
}

void UsageLister::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool UsageLister::WaitForFirstAnswer() {
  std::unique_lock lock(mu_);
  const bool got = cv_.wait_for(lock, std::chrono::milliseconds(wait_timeout_ms_),
                                [&] { return last_time_ms_ >= 0 || stop_; });
  if (last_time_ms_ < 0) {
    log_("usage db: no usage data after waiting " + std::to_string(wait_timeout_ms_) +
         " ms; scheduling without it until it arrives");
  }
  return got && last_time_ms_ >= 0;
}

void UsageLister::FetchOnce() {
  const int64_t now = clock_();
  auto usage = client_->GetResourceUsage(now);
  std::unique_lock lock(mu_);
  if (!usage.ok()) {
    ++failed_;
    // Every failure would repeat each interval while the database is down: log the first.
    if (!failure_logged_) {
      log_("usage db: failed to fetch usage data (keeping the last answer): " + usage.error());
      failure_logged_ = true;
    }
    return;
  }
  ++ok_;
  if (failure_logged_ || stale_logged_) log_("usage db: usage data fetched again");
  failure_logged_ = false;
  stale_logged_ = false;
  last_ = std::make_shared<const UsageByQueue>(std::move(usage).value());
  last_time_ms_ = now;
  lock.unlock();
  cv_.notify_all();
}

std::shared_ptr<const UsageByQueue> UsageLister::Get(int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (last_time_ms_ < 0) return nullptr;
  if (now_ms - last_time_ms_ > staleness_ms_) {
    if (!stale_logged_) {
      log_("usage db: usage data is stale (last update " + std::to_string(now_ms - last_time_ms_) +
           " ms ago, staleness period " + std::to_string(staleness_ms_) +
           " ms); scheduling without historical usage");
      stale_logged_ = true;
    }
    return nullptr;
  }
  return last_;
}

}  // namespace gantry::usagedb
