// `gantry binder`: the binder process. It serves /metrics, /healthz and /readyz, campaigns for
// the Lease "gantry-binder" in the lease namespace, and while it leads runs the Controller
// (controller.h) that carries out BindRequests. It exits 0 on SIGTERM or SIGINT (releasing the
// lease), and 1 when it loses leadership (a restarted process campaigns again) or cannot start.
//
// Readiness (/readyz): the lease holder is known and, on the leader, the first list of
// BindRequests has been queued.
#pragma once

#include <iosfwd>
#include <string>

namespace gantry::binder {

struct BinderOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, else in-cluster, else ~/.kube/config
  std::string metrics_address = ":8080";
  int workers = 4;
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-binder";
  // Unique per process; empty: hostname (the pod name) plus a random suffix.
  std::string identity;
};

int RunBinder(const BinderOptions& options, std::ostream& err);

}  // namespace gantry::binder
