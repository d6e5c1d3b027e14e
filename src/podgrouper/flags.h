// The command-line flags of `gantry podgrouper` (KAI's pod-grouper flag names where KAI has
// them). Header-only: included by the CLI, which links CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include "kube/client_flags.h"
#include "podgrouper/command.h"

namespace gantry::podgrouper {

inline void AddPodGrouperFlags(CLI::App& cmd, PodGrouperOptions& o) {
  kube::AddClientFlags(cmd, o.kubeconfig, o.qps, o.burst);
  cmd.add_option("--metrics-address,--metrics-bind-address", o.metrics_address,
                 "Address serving /metrics, /healthz and /readyz")
      ->capture_default_str();
  cmd.add_option("--scheduler-name", o.scheduler_name,
                 "Group pods whose spec.schedulerName is this")
      ->capture_default_str();
  cmd.add_option("--queue-label-key", o.queue_label_key, "Label naming a workload's queue")
      ->capture_default_str();
  cmd.add_option("--nodepool-label-key", o.node_pool_label_key, "Label naming the node pool")
      ->capture_default_str();
  cmd.add_option("--default-priorities-configmap-name", o.defaults_config_map_name,
                 "ConfigMap of default priority classes and preemptibility per workload kind");
  cmd.add_option("--default-priorities-configmap-namespace", o.defaults_config_map_namespace,
                 "Namespace of that ConfigMap");
  cmd.add_option("--knative-gang-schedule", o.knative_gang_schedule,
                 "Group a Knative revision's pods as one gang")
      ->capture_default_str();
  cmd.add_option("--generic-karta-fallback", o.generic_karta_fallback,
                 "Group pods of kinds without a grouping plugin by the run.ai Karta describing "
                 "the kind (its gang-scheduling instructions)")
      ->capture_default_str();
  cmd.add_option("--max-concurrent-reconciles", o.workers, "Pods reconciled at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd.add_option("--namespace-for-leases", o.lease_namespace,
                 "Namespace of the leader-election Lease (gantry-podgrouper)")
      ->capture_default_str();
}

}  // namespace gantry::podgrouper
