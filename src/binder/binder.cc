#include "binder/binder.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include "binder/api_counter.h"
#include "binder/cache.h"
#include "binder/controller.h"
#include "binder/event_sender.h"
#include "binder/gpu_sharing_step.h"
#include "binder/log.h"
#include "binder/reconciler.h"
#include "binder/reservation_sync.h"
#include "binder/steps.h"
#include "kube/leader_election.h"
#include "kube/termination.h"
#include "observability/http_server.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {

int RunBinder(const BinderOptions& options, std::ostream& err) {
  // No fast bins in glibc's allocator (see RunLiveScheduler): they cost 4-6% of the binder's CPU
  // in malloc_consolidate.
  mallopt(M_MXFAST, 0);
  if (options.workers < 1) {
    err << "binder: --max-concurrent-reconciles (--workers) must be at least 1\n";
    return 2;
  }
  if (options.burst < 1) {
    err << "binder: --burst must be at least 1\n";
    return 2;
  }
  kube::StopSignal stop;
  kube::TerminationSignals signals(
      stop, [](const char* signal) { Log(std::string("binder: ") + signal + ", stopping"); });

  auto transport = kube::TransportForFlag(options.kubeconfig);
  if (!transport.ok()) {
    err << "binder: " << transport.error() << "\n";
    return 1;
  }
  obs::Registry registry;
  obs::BinderMetrics metrics(registry);
  // Every request is counted (gantry_binder_api_requests_total), events included.
  auto counted = std::make_shared<CountingTransport>(transport.value(), &registry);
  const kube::ClientOptions limits{.qps = options.qps, .burst = options.burst};
  auto client = std::make_shared<kube::Client>(counted, limits);
  // Events have a client (a rate limit) of their own, like a controller-runtime event recorder.
  AsyncEventSender events(std::make_shared<kube::Client>(counted, limits));

  kube::LeaderElectionConfig lease;
  lease.lease_namespace = options.lease_namespace;
  lease.lease_name = options.lease_name;
  lease.identity = options.identity.empty() ? kube::DefaultIdentity() : options.identity;
  if (auto valid = kube::ValidateLeaderElectionConfig(lease); !valid.ok()) {
    err << "binder: " << valid.error() << "\n";
    return 2;
  }

  kube::LeaderElector elector(client, lease);

  // One term of leadership: the caches, the reconciler and the controller (created when leading;
  // a standby holds no caches).
  struct Term {
    BinderCache cache;
    std::shared_ptr<ReservationSync> reservations;
    std::unique_ptr<Reconciler> reconciler;
    std::unique_ptr<Controller> controller;
  };
  std::mutex mu;
  std::unique_ptr<Term> term;
  auto readiness = [&]() -> obs::Readiness {
    if (elector.holder().empty()) return {false, "no leader known yet"};
    if (!elector.IsLeader()) return {true, ""};
    std::lock_guard<std::mutex> lock(mu);
    if (term == nullptr || !term->controller->synced()) {
      return {false, "BindRequests, pods and nodes not listed yet"};
    }
    return {true, ""};
  };
  obs::HttpServer server({.address = options.metrics_address});
  obs::ServeObservability(server, registry, readiness);
  if (auto started = server.Start(); !started.ok()) {
    err << "binder: " << started.error() << "\n";
    return 1;
  }
  // KAI's --health-probe-bind-address: the probes on a port of their own as well (unless it is
  // the metrics address; port 0 picks a free port each time, so it never is).
  std::unique_ptr<obs::HttpServer> probes;
  const bool any_port = options.probe_address.ends_with(":0");
  if (!options.probe_address.empty() &&
      (options.probe_address != options.metrics_address || any_port)) {
    probes =
        std::make_unique<obs::HttpServer>(obs::HttpServerOptions{.address = options.probe_address});
    obs::ServeProbes(*probes, readiness);
    if (auto started = probes->Start(); !started.ok()) {
      err << "binder: --health-probe-bind-address: " << started.error() << "\n";
      server.Stop();
      return 1;
    }
  }
  Log("binder: serving /metrics, /healthz, /readyz on port " + std::to_string(server.port()) +
      "; campaigning for lease " + lease.lease_namespace + "/" + lease.lease_name + " as " +
      lease.identity);
  if (probes != nullptr) {
    Log("binder: serving /healthz, /readyz on probe port " + std::to_string(probes->port()));
  }
  std::ostringstream limit_line;
  limit_line << "binder: API client limit " << options.qps << " requests/s, burst " << options.burst
             << "; " << options.workers << " workers when leading";
  Log(limit_line.str());

  kube::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    Log("binder: leading; starting " + std::to_string(options.workers) + " workers");
    std::lock_guard<std::mutex> lock(mu);
    term = std::make_unique<Term>();
    ReconcilerOptions reconciler_options;
    reconciler_options.send_event = [&events](kube::Object event) {
      events.Send(std::move(event));
    };
    reconciler_options.patch_pod_status = [&events](std::string ns, std::string name,
                                                    kube::Object patch) {
      events.PatchPodStatus(std::move(ns), std::move(name), std::move(patch));
    };
    // GPU reservation pods left without users are deleted (reservation_sync.h); its listeners
    // go on the cache before the cache starts.
    GpuSharingOptions gpu_sharing;
    gpu_sharing.reservation_image = options.reservation_image;
    term->reservations =
        std::make_shared<ReservationSync>(client, gpu_sharing.reservation_namespace, &term->cache);
    term->reservations->Watch();
    term->reconciler = std::make_unique<Reconciler>(
        client, term->cache, DefaultSteps(client, term->cache, term->reservations, gpu_sharing),
        reconciler_options);
    ControllerOptions controller_options;
    controller_options.workers = options.workers;
    term->controller = std::make_unique<Controller>(client, term->cache, *term->reconciler,
                                                    controller_options, &metrics);
    term->controller->Start();
    term->reservations->Start();
  };
  callbacks.on_new_leader = [](const std::string& holder) {
    Log("binder: lease holder is now " + (holder.empty() ? std::string("nobody") : holder));
  };
  elector.Run(callbacks, stop);

  // Stop the workers before the process goes: a bind in progress finishes first.
  std::unique_ptr<Term> running;
  {
    std::lock_guard<std::mutex> lock(mu);
    running = std::move(term);
  }
  if (running != nullptr) {
    running->controller->Stop();
    running->reservations->Stop();
    Log("binder: GPU reservation pods deleted as unused: " +
        std::to_string(running->reservations->deleted()));
  }
  events.Stop();
  Log("binder: API requests: " + counted->Summary() + "; events sent " +
      std::to_string(events.sent()) + ", failed " + std::to_string(events.failed()) + ", dropped " +
      std::to_string(events.dropped()));
  if (probes != nullptr) probes->Stop();
  server.Stop();
  if (signals.received()) {
    Log("binder: stopped");
    return 0;
  }
  Log("binder: lost leadership, exiting");
  return 1;
}

}  // namespace gantry::binder
