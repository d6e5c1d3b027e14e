// `gantry binder`: the binder process. It serves /metrics, /healthz and /readyz (the probes also
// on --health-probe-bind-address when given), campaigns for
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
// hold up a bind. The defaults are KAI's binder's, 50 requests/s with bursts of 300.

#pragma once

#include <iosfwd>
#include <string>

#include "binder/gpu_sharing_step.h"

namespace gantry::binder {

struct BinderOptions {
  std::string kubeconfig;  // empty: $KUBECONFIG, else in-cluster, else ~/.kube/config
  std::string metrics_address = ":8080";
  // KAI's --health-probe-bind-address: a second address serving /healthz and /readyz (not
  // /metrics), as controller-runtime's probe server. Empty, or equal to metrics_address: the
  // probes are served on metrics_address only. KAI's binary defaults to :8081 and KAI's operator
  // always passes it; Gantry's default is empty so that its manifests need one port.
  std::string probe_address;
  int workers = 10;  // KAI's --max-concurrent-reconciles default
  double qps = 50;   // client-side rate limit of API requests (<= 0: none); KAI's default
  int burst = 300;
  std::string lease_namespace = "gantry-system";
  std::string lease_name = "gantry-binder";
  // Image of the GPU reservation pods (KAI's --resource-reservation-pod-image and its default).
  std::string reservation_image = kDefaultReservationImage;
  // Unique per process; empty: hostname (the pod name) plus a random suffix.
  std::string identity;
};

int RunBinder(const BinderOptions& options, std::ostream& err);

}  // namespace gantry::binder
