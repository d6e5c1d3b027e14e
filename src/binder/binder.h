// `gantry binder`: the binder process. It serves /metrics, /healthz and /readyz, campaigns for
// the Lease "gantry-binder" in the lease namespace, and while it leads runs the Controller
// (controller.h) that carries out BindRequests. It exits 0 on SIGTERM or SIGINT (releasing the
// lease), and 1 when it loses leadership (a restarted process campaigns again) or cannot start.
//
// Readiness (/readyz): the lease holder is known and, on the leader, the caches of BindRequests,
// pods and nodes are synced (the listed requests queued).
//
// API client limits: --qps / --burst (KAI's flag names) bound the requests of the main client
// (lists, watches, binds, status writes, the rare confirming reads); pod events go through a
// second client with the same limits, as a controller-runtime event recorder does, so they never
// hold up a bind. The defaults, 100 requests/s with bursts of 300, let the binder carry out about
// 50 binds/s (two requests each: the binding and the status) - kube-scheduler's default rate of
// 50 binds/s - and a burst of 150 at once. KAI's binder defaults to 50/300 with controller-runtime.
#pragma once

#include <iosfwd>
#include <string>

namespace gantry::binder {

struct BinderOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, else in-cluster, else ~/.kube/config
  std::string metrics_address = ":8080";
  int workers = 10;  // KAI's --max-concurrent-reconciles default
  double qps = 100;  // client-side rate limit of API requests (<= 0: none)
  int burst = 300;
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-binder";
  // Unique per process; empty: hostname (the pod name) plus a random suffix.
  std::string identity;
};

int RunBinder(const BinderOptions& options, std::ostream& err);

}  // namespace gantry::binder
