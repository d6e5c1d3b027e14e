#include "statusctl/process.h"

#include <atomic>
#include <mutex>
#include <ostream>
#include <thread>

#include "binder/log.h"
#include "kube/leader_election.h"
#include "kube/termination.h"
#include "kube/transport.h"
#include "observability/http_server.h"

namespace gantry::statusctl {

using binder::Log;

int RunControllerProcess(const std::string& name, const ProcessOptions& options,
                         obs::Registry& registry, const TermFactory& make_term, std::ostream& err) {
  if (options.workers < 1) {
    err << name << ": --max-concurrent-reconciles must be at least 1\n";
    return 2;
  }
  kube::StopSignal stop;
  kube::TerminationSignals signals(
      stop, [&name](const char* signal) { Log(name + ": " + signal + ", stopping"); });

  auto transport = kube::TransportForFlag(options.kubeconfig);
  if (!transport.ok()) {
    err << name << ": " << transport.error() << "\n";
    return 1;
  }
  const kube::ClientOptions limits{.qps = options.qps, .burst = options.burst};
  auto client = std::make_shared<kube::Client>(transport.value(), limits);

  kube::LeaderElectionConfig lease;
  lease.lease_namespace = options.lease_namespace;
  lease.lease_name = "gantry-" + name;
  lease.identity = options.identity.empty() ? kube::DefaultIdentity() : options.identity;
  if (auto valid = kube::ValidateLeaderElectionConfig(lease); !valid.ok()) {
    err << name << ": " << valid.error() << "\n";
    return 2;
  }
  std::unique_ptr<kube::LeaderElector> elector;
  if (options.leader_elect) elector = std::make_unique<kube::LeaderElector>(client, lease);

  std::mutex mu;
  std::unique_ptr<Term> term;
  auto readiness = [&]() -> obs::Readiness {
    if (elector != nullptr) {
      if (elector->holder().empty()) return {false, "no leader known yet"};
      if (!elector->IsLeader()) return {true, ""};
    }
    std::lock_guard<std::mutex> lock(mu);
    if (term == nullptr || !term->synced()) return {false, "watches not listed yet"};
    return {true, ""};
  };
  obs::HttpServer server({.address = options.metrics_address});
  obs::ServeObservability(server, registry, readiness);
  if (auto started = server.Start(); !started.ok()) {
    err << name << ": " << started.error() << "\n";
    return 1;
  }
  std::unique_ptr<obs::HttpServer> probes;
  if (!options.probe_address.empty() && options.probe_address != options.metrics_address) {
    probes =
        std::make_unique<obs::HttpServer>(obs::HttpServerOptions{.address = options.probe_address});
    obs::ServeObservability(*probes, registry, readiness);
    if (auto started = probes->Start(); !started.ok()) {
      err << name << ": " << started.error() << "\n";
      server.Stop();
      return 1;
    }
  }
  Log(name + ": serving /metrics, /healthz, /readyz on port " + std::to_string(server.port()) +
      (elector != nullptr ? "; campaigning for lease " + lease.lease_namespace + "/" +
                                lease.lease_name + " as " + lease.identity
                          : "; leader election off"));

  auto start_term = [&] {
    Log(name + ": starting " + std::to_string(options.workers) + " workers");
    auto t = make_term(client);
    Term* raw = t.get();
    {
      std::lock_guard<std::mutex> lock(mu);
      term = std::move(t);
    }
    raw->Start();
  };
  if (elector != nullptr) {
    kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = start_term;
    callbacks.on_new_leader = [&name](const std::string& holder) {
      Log(name + ": lease holder is now " + (holder.empty() ? std::string("nobody") : holder));
    };
    elector->Run(callbacks, stop);
  } else {
    start_term();
    while (!stop.WaitFor(std::chrono::hours(1))) {
    }
  }

  std::unique_ptr<Term> running;
  {
    std::lock_guard<std::mutex> lock(mu);
    running = std::move(term);
  }
  if (running != nullptr) running->Stop();
  if (probes != nullptr) probes->Stop();
  server.Stop();
  if (signals.received()) {
    Log(name + ": stopped");
    return 0;
  }
  Log(name + ": lost leadership, exiting");
  return 1;
}

}  // namespace gantry::statusctl
