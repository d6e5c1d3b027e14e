#include "framework/preemption_delay.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "framework/session.h"

namespace gantry {

std::optional<int64_t> PreemptionDelayEndMs(const Session& ssn, JobId j) {
  const Job& job = ssn.cluster().jobs[j];
  if (!(job.preemption_delay_seconds > 0)) return std::nullopt;
  int64_t anchor = job.creation_ms;
  if (const auto& evicted = ssn.job_state(j).last_eviction_ms; evicted && *evicted > anchor) {
    anchor = *evicted;
  }
  return anchor + static_cast<int64_t>(std::llround(job.preemption_delay_seconds * 1000));
}

bool WithinPreemptionDelay(const Session& ssn, JobId j) {
  const auto end = PreemptionDelayEndMs(ssn, j);
  return end && ssn.now_ms() < *end;
}

void RecordPreemptionDelayErrors(Session& ssn, const JobsOrderOptions& options) {
  if (!options.filter_within_preemption_delay) return;
  JobsOrderOptions without = options;
  without.filter_within_preemption_delay = false;
  const JobsByQueue probe(ssn, without);
  for (JobId j : ssn.jobs_pending_at_open()) {
    if (!WithinPreemptionDelay(ssn, j) || !probe.Eligible(j)) continue;
    bool recorded = false;
    for (const JobFitError& e : ssn.job_state(j).fit_errors) {
      recorded = recorded || e.reason == kPreemptionDelayNotElapsed;
    }
    if (recorded) continue;
    const Job& job = ssn.cluster().jobs[j];
    ssn.AddJobFitError(j, JobFitError{kPreemptionDelayNotElapsed,
                                      {"Workload is within its preemption delay window (" +
                                       GoDurationString(job.preemption_delay_seconds) +
                                       ") and may not trigger evictions before " +
                                       Rfc3339Utc(*PreemptionDelayEndMs(ssn, j))},
                                      ""});
  }
}

std::string GoDurationString(double seconds) {
  if (seconds == 0) return "0s";
  std::string sign = seconds < 0 ? "-" : "";
  const int64_t ns = std::llround(std::fabs(seconds) * 1e9);
  if (ns < 1'000'000'000) {
    // Below a second Go picks ms / µs / ns; the delays users give are whole seconds or more.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%gms", static_cast<double>(ns) / 1e6);
    return sign + buf;
  }
  const int64_t hours = ns / 3'600'000'000'000;
  const int64_t minutes = (ns / 60'000'000'000) % 60;
  const int64_t sub_minute_ns = ns % 60'000'000'000;
  std::string secs = std::to_string(sub_minute_ns / 1'000'000'000);
  if (int64_t frac = sub_minute_ns % 1'000'000'000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 9 - digits.size(), '0');
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    secs += "." + digits;
  }
  std::string out = sign;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  return out + secs + "s";
}

std::string Rfc3339Utc(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gantry
