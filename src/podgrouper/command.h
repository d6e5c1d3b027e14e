// `gantry podgrouper`: the pod-grouper process (KAI's pod-grouper). It serves /metrics,
// /healthz and /readyz, campaigns for the Lease "gantry-podgrouper" in the lease namespace, and
// while it leads watches the pods whose spec.schedulerName is --scheduler-name and reconciles
// each (controller.h) on --max-concurrent-reconciles workers, retrying failures with exponential
// backoff (1 s doubling to 1 min, as KAI). A failure is also a Warning event "PodGrouperWarning"
// on the pod. Exits 0 on SIGTERM / SIGINT, 1 when it loses leadership or cannot start.
#pragma once

#include <iosfwd>
#include <string>

namespace gantry::podgrouper {

struct PodGrouperOptions {
  std::string kubeconfig;
  std::string metrics_address = ":8080";
  std::string scheduler_name = "kai-scheduler";
  std::string queue_label_key = "kai.scheduler/queue";
  std::string node_pool_label_key = "kai.scheduler/node-pool";
  std::string defaults_config_map_name;       // --default-priorities-configmap-name
  std::string defaults_config_map_namespace;  // --default-priorities-configmap-namespace
  bool knative_gang_schedule = true;
  bool generic_karta_fallback = true;  // KAI's --generic-karta-fallback
  int workers = 10;                    // KAI's --max-concurrent-reconciles default
  double qps = 50;                     // KAI's defaults
  int burst = 300;
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-podgrouper";
  std::string identity;  // empty: hostname and pid
};

int RunPodGrouper(const PodGrouperOptions& options, std::ostream& err);

}  // namespace gantry::podgrouper
