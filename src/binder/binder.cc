#include "binder/binder.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include "binder/controller.h"
#include "binder/log.h"
#include "binder/reconciler.h"
#include "binder/steps.h"
#include "kube/leader_election.h"
#include "observability/http_server.h"
#include "observability/kai_metrics.h"

namespace gantry::binder {

int RunBinder(const BinderOptions& options, std::ostream& err) {
  if (options.workers < 1) {
    err << "binder: --workers must be at least 1\n";
    return 2;
  }
  // SIGTERM and SIGINT are taken by a thread of their own (sigwait); every thread started from
  // here on inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto config =
      options.kubeconfig.empty() ? kube::DefaultConfig() : kube::LoadKubeconfig(options.kubeconfig);
  if (!config.ok()) {
    err << "binder: " << config.error() << "\n";
    return 1;
  }
  auto client = kube::Client::FromConfig(config.value(), {.qps = 100, .burst = 200});
  if (!client.ok()) {
    err << "binder: " << client.error().ToString() << "\n";
    return 1;
  }

  kube::LeaderElectionConfig lease;
  lease.lease_namespace = options.lease_namespace;
  lease.lease_name = options.lease_name;
  lease.identity = options.identity.empty() ? kube::DefaultIdentity() : options.identity;
  if (auto valid = kube::ValidateLeaderElectionConfig(lease); !valid.ok()) {
    err << "binder: " << valid.error() << "\n";
    return 2;
  }

  obs::Registry registry;
  obs::BinderMetrics metrics(registry);
  Reconciler reconciler(client.value(), DefaultSteps(client.value()));
  kube::LeaderElector elector(client.value(), lease);

  std::mutex mu;
  std::unique_ptr<Controller> controller;
  obs::HttpServer server({.address = options.metrics_address});
  obs::ServeObservability(server, registry, [&]() -> obs::Readiness {
    if (elector.holder().empty()) return {false, "no leader known yet"};
    if (!elector.IsLeader()) return {true, ""};
    std::lock_guard<std::mutex> lock(mu);
    if (controller == nullptr || !controller->synced()) {
      return {false, "BindRequests not listed yet"};
    }
    return {true, ""};
  });
  if (auto started = server.Start(); !started.ok()) {
    err << "binder: " << started.error() << "\n";
    return 1;
  }
  Log("binder: serving /metrics, /healthz, /readyz on port " + std::to_string(server.port()) +
      "; campaigning for lease " + lease.lease_namespace + "/" + lease.lease_name + " as " +
      lease.identity);

  kube::StopSignal stop;
  std::atomic<bool> signalled{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!stop.stopped()) {
      signalled = true;
      Log(std::string("binder: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
    }
    stop.Stop();
  });

  kube::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    Log("binder: leading; starting " + std::to_string(options.workers) + " workers");
    std::lock_guard<std::mutex> lock(mu);
    ControllerOptions controller_options;
    controller_options.workers = options.workers;
    controller =
        std::make_unique<Controller>(client.value(), reconciler, controller_options, &metrics);
    controller->Start();
  };
  callbacks.on_new_leader = [](const std::string& holder) {
    Log("binder: lease holder is now " + (holder.empty() ? std::string("nobody") : holder));
  };
  elector.Run(callbacks, stop);

  // Stop the workers before the process goes: a bind in progress finishes first.
  std::unique_ptr<Controller> running;
  {
    std::lock_guard<std::mutex> lock(mu);
    running = std::move(controller);
  }
  if (running != nullptr) running->Stop();
  server.Stop();
  bool by_signal = signalled.load();
  if (!stop.stopped()) stop.Stop();
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // wakes its sigwait if still waiting
  signal_thread.join();
  if (by_signal) {
    Log("binder: stopped");
    return 0;
  }
  Log("binder: lost leadership, exiting");
  return 1;
}

}  // namespace gantry::binder
