// The arithmetic of time-based fairshare, shared by the usage clients: how much a sample of a
// given age weighs (half-life decay), where the usage window starts (sliding, tumbling, cron), and
// the normalised usage of a queue (decayed allocation over decayed capacity), as KAI computes them
// in its Prometheus queries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/config.h"
#include "util/status.h"

namespace gantry::usagedb {

// 0.5^(age / half life); 1 without a half-life (no decay).
double DecayWeight(double age_seconds, const std::optional<double>& half_life_seconds);

// A five-field cron expression (minute hour day-of-month month day-of-week, UTC) with `*`,
// numbers, ranges `a-b`, steps `*/n` / `a-b/n`, lists `a,b`, and the macros @hourly, @daily
// (@midnight), @weekly, @monthly, @yearly (@annually).
class CronSchedule {
 public:
  static Result<CronSchedule> Parse(const std::string& text);
  // The first time strictly after `after_ms` (Unix ms) the schedule names, whole minutes; -1 when
  // none within eight years.
  int64_t Next(int64_t after_ms) const;

 private:
  std::vector<bool> minute_, hour_, dom_, month_, dow_;
  bool dom_any_ = true, dow_any_ = true;
};

// Start of the usage window at `now_ms` (Unix ms): now - window size for sliding windows; for
// tumbling windows the latest start + k * window size before now (now itself when the start
// lies ahead); for cron windows the latest time the schedule names before now.
int64_t WindowStartMs(int64_t now_ms, const UsageParams& params, const CronSchedule* cron);

}  // namespace gantry::usagedb
