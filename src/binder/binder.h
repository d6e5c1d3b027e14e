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
// hold up a bind. The defaults, 200 requests/s with bursts of 400, let the binder carry out about
// 100 binds/s (two requests each: the binding and the status) and 200 at once: every request is a
// write the cluster asked for, and the API server's priority and fairness (429 with Retry-After,
// which the client honours) protects it beyond that. KAI's binder defaults to 50 / 300.
#pragma once

#include <iosfwd>
#include <string>

#include "binder/gpu_sharing_step.h"

namespace gantry::binder {

struct BinderOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, else in-cluster, else ~/.kube/config
  std::string metrics_address = ":8080";
  int workers = 10;  // KAI's --max-concurrent-reconciles default
  double qps = 200;  // client-side rate limit of API requests (<= 0: none)
  int burst = 400;
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-binder";
  // Image of the GPU reservation pods (KAI's --resource-reservation-pod-image and its default).
  std::string reservation_image = kDefaultReservationImage;
  // Unique per process; empty: hostname (the pod name) plus a random suffix.
  std::string identity;
};

int RunBinder(const BinderOptions& options, std::ostream& err);

}  // namespace gantry::binder
