// `gantry scheduler`: the live scheduler process (flags as deploy/scheduler.yaml passes them).
#pragma once

#include <iosfwd>
#include <string>

namespace gantry::cli {

struct SchedulerOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string scheduler_name = "kai-scheduler";
  std::string period = "1s";  // a duration: "1s", "500ms", "2m"
  std::string config;         // scheduler configuration (YAML); empty: the defaults
  std::string lease_namespace = "gantry-system";
  std::string metrics_address = ":8080";
  int bind_request_workers = 8;      // BindRequests created at once
  int status_recording_workers = 5;  // PodGroup annotation patches sent at once
};

// Runs until SIGTERM or SIGINT (exit 0) or until leadership is lost (exit 1).
int RunScheduler(const SchedulerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gantry::cli
