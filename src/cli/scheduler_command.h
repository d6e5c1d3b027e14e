// `gantry scheduler`: the live scheduler process (flags as deploy/scheduler.yaml passes them).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gantry::cli {

struct SchedulerOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string scheduler_name = "kai-scheduler";
  std::string period = "1s";  // a duration: "1s", "500ms", "2m"
  std::string config;         // scheduler configuration (YAML); empty: the defaults
  std::string lease_namespace = "gantry-system";
  std::string metrics_address = ":8080";
  int plugin_server_port = 8081;          // KAI's plugin server on 127.0.0.1 (0: a free port)
  std::string metrics_namespace = "kai";  // prefix of the KAI metric names
  int bind_request_workers = 8;           // BindRequests created at once
  int status_recording_workers = 5;       // PodGroup annotation patches sent at once
  // KAI's scheduler flags (cmd/scheduler options), with KAI's defaults.
  int qps = 50;                                // client-side limit of API requests per second
  int burst = 300;                             // requests allowed at once above qps
  std::string queue_label_key;                 // empty: the configuration's (kai.scheduler/queue)
  int max_consolidation_preemptees = -2;       // -2: the configuration's (16); -1: no limit
  std::string default_staleness_grace_period;  // empty: the configuration's (60s); negative: never
  std::string stuck_in_releasing_threshold;    // empty: the configuration's (2m)
  std::string allow_consolidating_reclaim;     // empty: the configuration's (true)
  bool update_pod_eviction_condition = false;  // write DisruptionTarget before evicting
  std::string partition_label_value;           // node pool served (empty: the default one)
  std::string nodepool_label_key = "kai.scheduler/node-pool";  // PodGroup label naming its pool
  std::vector<std::string> warnings;  // flags accepted without effect (compat_flags.h)
};

// Runs until SIGTERM or SIGINT (exit 0) or until leadership is lost (exit 1).
int RunScheduler(const SchedulerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gantry::cli
