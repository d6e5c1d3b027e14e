#include "usagedb/usage_math.h"

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <sstream>

namespace gantry::usagedb {

double DecayWeight(double age_seconds, const std::optional<double>& half_life_seconds) {
  if (!half_life_seconds || *half_life_seconds <= 0) return 1;
  return std::pow(0.5, age_seconds / *half_life_seconds);
}

namespace {

Result<std::vector<bool>> ParseField(const std::string& field, int lo, int hi, const char* what) {
  std::vector<bool> set(static_cast<size_t>(hi) + 1, false);
  std::stringstream items(field);
  std::string item;
  const auto bad = [&] {
    return Error{std::string("cron ") + what + " field \"" + field + "\": expected *, numbers " +
                 std::to_string(lo) + "-" + std::to_string(hi) + ", ranges, steps or lists"};
  };
  const auto number = [](const std::string& s, int& out) {
    if (s.empty() || s.size() > 4) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    out = std::atoi(s.c_str());
    return true;
  };
  bool any = false;
  while (std::getline(items, item, ',')) {
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string::npos) {
      if (!number(item.substr(slash + 1), step) || step <= 0) return bad();
      item = item.substr(0, slash);
    }
    int a = lo, b = hi;
    if (item == "*" || item == "?") {
    } else if (auto dash = item.find('-'); dash != std::string::npos) {
      if (!number(item.substr(0, dash), a) || !number(item.substr(dash + 1), b)) return bad();
    } else {
      if (!number(item, a)) return bad();
      if (step == 1) b = a;
    }
    if (a < lo || b > hi || a > b) return bad();
    for (int v = a; v <= b; v += step) set[static_cast<size_t>(v)] = true;
    any = true;
  }
  if (!any) return bad();
  return set;
}

}  // namespace

Result<CronSchedule> CronSchedule::Parse(const std::string& text) {
  std::string expr = text;
  if (expr == "@yearly" || expr == "@annually") expr = "0 0 1 1 *";
  if (expr == "@monthly") expr = "0 0 1 * *";
  if (expr == "@weekly") expr = "0 0 * * 0";
  if (expr == "@daily" || expr == "@midnight") expr = "0 0 * * *";
  if (expr == "@hourly") expr = "0 * * * *";
  std::stringstream in(expr);
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  if (fields.size() != 5) {
    return Error{"cron expression \"" + text +
                 "\": expected 5 fields (minute hour day-of-month "
                 "month day-of-week), got " +
                 std::to_string(fields.size())};
  }
  CronSchedule c;
  auto m = ParseField(fields[0], 0, 59, "minute");
  auto h = ParseField(fields[1], 0, 23, "hour");
  auto dom = ParseField(fields[2], 1, 31, "day-of-month");
  auto mon = ParseField(fields[3], 1, 12, "month");
  auto dow = ParseField(fields[4], 0, 7, "day-of-week");
  for (auto* r : {&m, &h, &dom, &mon, &dow}) {
    if (!r->ok()) return Error{"cron expression \"" + text + "\": " + r->error()};
  }
  c.minute_ = m.value();
  c.hour_ = h.value();
  c.dom_ = dom.value();
  c.month_ = mon.value();
  c.dow_ = dow.value();
  if (c.dow_[7]) c.dow_[0] = true;  // 7 is Sunday too
  c.dom_any_ = fields[2] == "*" || fields[2] == "?";
  c.dow_any_ = fields[4] == "*" || fields[4] == "?";
  return c;
}

int64_t CronSchedule::Next(int64_t after_ms) const {
  constexpr int64_t kMinute = 60'000;
  constexpr int64_t kDay = int64_t{24} * 60 * kMinute;
  int64_t t = (after_ms / kMinute + 1) * kMinute;
  if (after_ms < 0 && after_ms % kMinute != 0) t -= kMinute;
  const int64_t limit = t + int64_t{8} * 366 * 24 * 60 * kMinute;
  while (t < limit) {
    const std::time_t secs = static_cast<std::time_t>(t / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    if (!month_[static_cast<size_t>(tm.tm_mon) + 1]) {
      // Skip to the first minute of the next month.
      tm.tm_mday = 1;
      tm.tm_hour = 0;
      tm.tm_min = 0;
      tm.tm_sec = 0;
      tm.tm_mon += 1;
      t = static_cast<int64_t>(timegm(&tm)) * 1000;
      continue;
    }
    const bool dom_ok = dom_[static_cast<size_t>(tm.tm_mday)];
    const bool dow_ok = dow_[static_cast<size_t>(tm.tm_wday)];
    // Standard cron: with both day fields restricted, either may match.
    const bool day_ok = dom_any_ && dow_any_ ? true
                        : dom_any_           ? dow_ok
                        : dow_any_           ? dom_ok
                                             : (dom_ok || dow_ok);
    if (!day_ok) {
      t = (t / kDay + 1) * kDay;
      continue;
    }
    if (!hour_[static_cast<size_t>(tm.tm_hour)]) {
      t = (t / (60 * kMinute) + 1) * (60 * kMinute);
      continue;
    }
    if (minute_[static_cast<size_t>(tm.tm_min)]) return t;
    t += kMinute;
  }
  return -1;
}

int64_t WindowStartMs(int64_t now_ms, const UsageParams& params, const CronSchedule* cron) {
  const auto window_ms = static_cast<int64_t>(std::llround(params.window_size_seconds * 1000));
  switch (params.window_type) {
    case UsageParams::WindowType::kSliding:
      return now_ms - window_ms;
    case UsageParams::WindowType::kTumbling: {
      const int64_t start = params.tumbling_window_start_ms.value_or(now_ms);
      if (start > now_ms || window_ms <= 0) return now_ms;
      // The latest reset strictly before now (KAI's loop), the start itself at the earliest.
      const int64_t k = (now_ms - start) / window_ms;
      const int64_t resets = (now_ms - start) % window_ms == 0 && k > 0 ? k - 1 : k;
      return start + resets * window_ms;
    }
    case UsageParams::WindowType::kCron: {
      if (cron == nullptr) return now_ms;
      // The last occurrence before now: step from a point far enough back (KAI starts three
      // occurrences' distance before now).
      const int64_t first = cron->Next(now_ms);
      if (first < 0) return now_ms;
      const int64_t third = cron->Next(cron->Next(first));
      int64_t previous = now_ms - (third - now_ms);
      for (int64_t t = cron->Next(previous); t >= 0 && t < now_ms; t = cron->Next(t)) previous = t;
      return previous;
    }
  }
  return now_ms;
}

}  // namespace gantry::usagedb
