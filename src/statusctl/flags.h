// The command-line flags of `gantry podgroup-controller` and `gantry queue-controller` (KAI's
// flag names for each). Header-only: included by the CLI, which links CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include "kube/client_flags.h"
#include "statusctl/podgroup_controller.h"
#include "statusctl/queue_controller.h"

namespace gantry::statusctl {

inline void AddProcessFlags(CLI::App& cmd, ProcessOptions& o) {
  kube::AddClientFlags(cmd, o.kubeconfig, o.qps, o.burst);
  cmd.add_flag("--leader-elect", o.leader_elect,
               "Campaign for a Lease and run only while holding it (one active replica)");
  cmd.add_option("--namespace-for-leases", o.lease_namespace,
                 "Namespace of the leader-election Lease")
      ->capture_default_str();
  cmd.add_option("--max-concurrent-reconciles", o.workers, "Objects reconciled at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
}

inline void AddPodGroupControllerFlags(CLI::App& cmd, PodGroupControllerOptions& o) {
  AddProcessFlags(cmd, o.process);
  cmd.add_option("--metrics-bind-address,--metrics-address", o.process.metrics_address,
                 "Address serving /metrics, /healthz and /readyz")
      ->capture_default_str();
  cmd.add_option("--health-probe-bind-address", o.process.probe_address,
                 "A second address serving /healthz and /readyz (empty: none)");
}

// `label_map` and `default_map` receive the raw map flags; ParseStringMapFlag checks them.
inline void AddQueueControllerFlags(CLI::App& cmd, QueueControllerOptions& o,
                                    std::string& label_map, std::string& default_map) {
  AddProcessFlags(cmd, o.process);
  cmd.add_option("--metrics-listen-address,--metrics-address", o.process.metrics_address,
                 "Address serving /metrics, /healthz and /readyz")
      ->capture_default_str();
  cmd.add_option("--metrics-namespace", o.metrics_namespace,
                 "Prefix of the queue metric names (kai_queue_info, ...)")
      ->capture_default_str();
  cmd.add_option("--queue-label-to-metric-label", label_map,
                 "Queue label keys exported as metric labels, e.g. 'foo=bar,baz=qux'");
  cmd.add_option("--queue-label-to-default-metric-value", default_map,
                 "Metric label values for queues without the label, e.g. 'foo=1,baz=0'");
}

}  // namespace gantry::statusctl
