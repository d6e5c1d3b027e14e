#include "cli/scheduler_command.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/termination.h"
#include "live/scheduler_loop.h"
#include "observability/metrics.h"
#include "util/duration.h"
#include "util/read_file.h"

namespace gantry::cli {

int RunScheduler(const SchedulerOptions& options, std::ostream& out, std::ostream& err) {
  live::LiveSchedulerOptions live;
  live.scheduler_name = options.scheduler_name;
  live.lease_namespace = options.lease_namespace;
  live.metrics_address = options.metrics_address;
  live.plugin_server_port = options.plugin_server_port;
  if (!options.metrics_namespace.empty() &&
      !obs::IsValidMetricName(options.metrics_namespace + "_x")) {
    err << "error: --metrics-namespace: \"" << options.metrics_namespace
        << "\" is not a valid metric name prefix (letters, digits, _ and :, not starting with a "
           "digit)\n";
    return 2;
  }
  live.metrics_namespace = options.metrics_namespace;
  live.nodepool_label_key = options.nodepool_label_key;
  live.bind_request_workers = options.bind_request_workers;
  live.status_recording_workers = options.status_recording_workers;
  // Whole milliseconds of a Go duration ("1s", "500ms", "1m30s").
  const Result<int64_t> period_ns = ParseGoDuration(options.period);
  const int64_t period = period_ns.ok() ? period_ns.value() / 1'000'000 : -1;
  if (period <= 0) {
    err << "error: --period: expected a positive duration such as 1s or 500ms, got \""
        << options.period << "\"\n";
    return 2;
  }
  live.period = std::chrono::milliseconds(period);
  live.update_pod_eviction_condition = options.update_pod_eviction_condition;
  live.partition_label_value = options.partition_label_value;
  for (const auto& w : options.warnings) err << "warning: " << w << "\n";
  if (!options.config.empty()) {
    auto text = ReadInputFile(options.config);
    if (!text.ok()) {
      err << "error: " << text.error() << "\n";
      return 2;
    }
    auto cfg = ParseSchedulerConfig(text.value(), options.config);
    if (!cfg.ok()) {
      err << "error: " << cfg.error() << "\n";
      return 2;
    }
    live.config = cfg.value();
  }
  // Flags given on the command line take precedence over the configuration file.
  SchedulerParams& params = live.config.params;
  if (!options.queue_label_key.empty()) params.queue_label_key = options.queue_label_key;
  if (options.max_consolidation_preemptees != -2) {
    if (options.max_consolidation_preemptees < -1) {
      err << "error: --max-consolidation-preemptees: expected -1 (no limit) or more\n";
      return 2;
    }
    params.max_consolidation_preemptees = options.max_consolidation_preemptees;
  }
  if (!options.default_staleness_grace_period.empty()) {
    // (Negative: never evicted for staleness.)
    const Result<double> seconds = ParseGoDurationSeconds(options.default_staleness_grace_period);
    if (!seconds.ok()) {
      err << "error: --default-staleness-grace-period: expected a duration such as 60s, got \""
          << options.default_staleness_grace_period << "\"\n";
      return 2;
    }
    params.staleness_grace_period_seconds = seconds.value();
  }
  if (!options.stuck_in_releasing_threshold.empty()) {
    const Result<double> seconds = ParseGoDurationSeconds(options.stuck_in_releasing_threshold);
    if (!seconds.ok() || seconds.value() < 0) {
      err << "error: --stuck-in-releasing-threshold: expected a duration such as 2m, got \""
          << options.stuck_in_releasing_threshold << "\"\n";
      return 2;
    }
    params.stuck_in_releasing_threshold_seconds = seconds.value();
  }
  if (!options.allow_consolidating_reclaim.empty()) {
    const std::string& v = options.allow_consolidating_reclaim;
    if (v != "true" && v != "false") {
      err << "error: --allow-consolidating-reclaim: expected true or false, got \"" << v << "\"\n";
      return 2;
    }
    params.allow_consolidating_reclaim = v == "true";
  }
  auto cfg =
      options.kubeconfig.empty() ? kube::DefaultConfig() : kube::LoadKubeconfig(options.kubeconfig);
  if (!cfg.ok()) {
    err << "error: " << cfg.error() << "\n";
    return 2;
  }
  auto client = kube::Client::FromConfig(
      cfg.value(), {.qps = static_cast<double>(options.qps), .burst = options.burst});
  if (!client.ok()) {
    err << "error: " << client.error().ToString() << "\n";
    return 2;
  }

  kube::StopSignal stop;
  kube::TerminationSignals signals(stop);

  out << "gantry scheduler: " << cfg.value().source << ", scheduler name " << options.scheduler_name
      << ", period " << period << " ms" << std::endl;
  return live::RunLiveScheduler(client.value(), live, stop, out);
}

}  // namespace gantry::cli
