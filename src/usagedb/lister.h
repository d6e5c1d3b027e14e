// UsageLister: asks a usage client every fetch interval on a thread of its own (never on the
// scheduling cycle), keeps the last good answer and hands it to each cycle while it is younger
// than the staleness period. Older than that, cycles get no usage (fair shares as without
// time-based fairshare) and the lister logs it once, until a fetch succeeds again. (KAI keeps
// handing out stale usage with an error; Gantry stops using it, as its issue asks.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "usagedb/client.h"

namespace gantry::usagedb {

class UsageLister {
 public:
  using Clock = std::function<int64_t()>;  // Unix ms
  using Log = std::function<void(const std::string&)>;

  // Staleness below the fetch interval is raised to it (as KAI does).
  UsageLister(std::unique_ptr<UsageClient> client, const UsageParams& params, Log log,
              Clock clock = nullptr);
  ~UsageLister();
  UsageLister(const UsageLister&) = delete;
  UsageLister& operator=(const UsageLister&) = delete;

  // Starts the fetch thread (a first fetch at once).
  void Start();
  // Stops and joins it.
  void Stop();
  // Waits until a first answer arrived or the wait timeout passed; true when one did.
  bool WaitForFirstAnswer();
  // One fetch now, on the caller's thread (what the thread does every interval).
  void FetchOnce();

  // The usage for a cycle at `now_ms`: the last good answer, or null when there is none or it
  // is older than the staleness period.
  std::shared_ptr<const UsageByQueue> Get(int64_t now_ms);

  int64_t fetches_ok() const { return ok_; }
  int64_t fetches_failed() const { return failed_; }

 private:
  std::unique_ptr<UsageClient> client_;
  Log log_;
  Clock clock_;
  int64_t fetch_interval_ms_;
  int64_t staleness_ms_;
  int64_t wait_timeout_ms_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const UsageByQueue> last_;
  int64_t last_time_ms_ = -1;
  bool stale_logged_ = false;
  bool failure_logged_ = false;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<int64_t> ok_{0}, failed_{0};
};

}  // namespace gantry::usagedb
