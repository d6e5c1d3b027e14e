// What `gantry simulate` prints and writes: a text summary, one JSON document, a self-contained
// HTML report (inline SVG charts, nothing fetched) and the timeline as CSV.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sim/simulation.h"

namespace gantry::sim {

// Wait-time percentiles of the jobs of one queue that started (seconds).
struct WaitStats {
  int jobs = 0;
  int started = 0;
  int finished = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
  double lost_work_seconds = 0;
  int evictions = 0;
};
WaitStats QueueWaits(const Outcome& o, const std::string& queue);

void PrintSummary(const Outcome& o, std::ostream& out);
nlohmann::json ToJson(const Outcome& o);
std::string TimelineCsv(const Outcome& o);
// Every bind decision of a timeline run: cycle, virtual time, job, pod, node (in cycle order).
std::string PlacementsCsv(const Outcome& o);
// The HTML report. Charts (each an <svg> in a <figure> with the id named): chart-queues,
// chart-utilization, chart-pending, chart-waits, chart-evictions, and for inflation
// chart-inflation.
std::string HtmlReport(const Outcome& o);

}  // namespace gantry::sim
