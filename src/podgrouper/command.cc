#include "podgrouper/command.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <ostream>
#include <thread>

#include "binder/event_sender.h"
#include "binder/log.h"
#include "binder/work_queue.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "kube/termination.h"
#include "observability/http_server.h"
#include "podgrouper/controller.h"
#include "podgrouper/kube_cluster.h"

namespace gantry::podgrouper {

namespace {

using binder::Log;

// One term of leadership: caches, hub, reconciler, workers.
class Term {
 public:
  Term(const PodGrouperOptions& options, const std::shared_ptr<kube::Client>& client,
       binder::AsyncEventSender& events, obs::CounterFamily& reconciles)
      : options_(options),
        client_(client),
        events_(events),
        cluster_(client),
        queue_(kube::RealClock()),
        reconciles_(reconciles) {
    HubOptions hub_options;
    hub_options.defaults.queue_label_key = options.queue_label_key;
    hub_options.defaults.node_pool_label_key = options.node_pool_label_key;
    hub_options.defaults.defaults_config_map_name = options.defaults_config_map_name;
    hub_options.defaults.defaults_config_map_namespace = options.defaults_config_map_namespace;
    hub_options.knative_gang_schedule = options.knative_gang_schedule;
    hub_options.generic_karta_fallback = options.generic_karta_fallback;
    hub_ = MakeDefaultHub(hub_options, cluster_);
    reconciler_ = std::make_unique<Reconciler>(
        client, *hub_,
        ReconcilerOptions{options.scheduler_name, options.node_pool_label_key,
                          options.queue_label_key});
    pods_.AddListener([this](kube::EventType type, const kube::Object& pod) {
      if (type == kube::EventType::kDeleted) return;
      queue_.Add(kube::ObjectKey(kube::NamespaceOf(pod), kube::NameOf(pod)));
    });
    kube::ListWatchOptions watch;
    watch.field_selector = "spec.schedulerName=" + options.scheduler_name;
    pod_informer_ = std::make_unique<kube::Informer>(client, kube::resources::kPods, watch, pods_);
  }

  void Start() {
    // Until the owner caches are in, owners are read from the API server (kube_cluster.h).
    cluster_.Start();
    pod_informer_->Start();
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Work(); });
  }

  void Stop() {
    queue_.ShutDown();
    for (auto& t : workers_) t.join();
    workers_.clear();
    pod_informer_->Stop();
    cluster_.Stop();
  }

  bool synced() const { return cluster_.synced() && pods_.synced(); }

 private:
  void Work() {
    while (auto key = queue_.Get()) {
      std::optional<kube::Clock::Duration> retry;
      auto slash = key->find('/');
      kube::ObjectPtr pod = pods_.Get(key->substr(0, slash), key->substr(slash + 1));
      if (pod != nullptr) {
        ReconcileResult r;
        // As controller-runtime recovers a reconciler's panic: an unexpected exception (an
        // object of a shape nothing checked) fails this pod, which is retried with backoff;
        // the worker and the other pods go on.
        try {
          r = reconciler_->Reconcile(*pod);
        } catch (const std::exception& e) {
          r = ReconcileResult{Outcome::kFailed, "pod " + *key + ": unexpected error: " + e.what(),
                              ""};
        }
        reconciles_.With({OutcomeName(r.outcome)}).Inc();
        if (r.outcome == Outcome::kConflict) {
          retry = std::chrono::milliseconds(100);
        } else if (r.outcome == Outcome::kFailed) {
          retry = Backoff(*key);
          Log("podgrouper: " + r.error);
          kube::EventInfo info{.type = "Warning",
                               .reason = "PodGrouperWarning",
                               .message = r.error,
                               .component = "pod-grouper",
                               .instance = ""};
          events_.Send(kube::MakeEvent(kube::resources::kPods, *pod, info,
                                       std::chrono::system_clock::now()));
        } else {
          Forget(*key);
        }
      } else {
        Forget(*key);
      }
      queue_.Done(*key, retry);
    }
  }

  kube::Clock::Duration Backoff(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    int& failures = failures_[key];
    auto delay = std::chrono::seconds(1) * (1LL << std::min(failures, 6));
    ++failures;
    return std::min<kube::Clock::Duration>(delay, std::chrono::minutes(1));
  }
  void Forget(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.erase(key);
  }
  static std::string OutcomeName(Outcome o) {
    switch (o) {
      case Outcome::kSkipped:
        return "skipped";
      case Outcome::kUnchanged:
        return "unchanged";
      case Outcome::kCreated:
        return "created";
      case Outcome::kUpdated:
        return "updated";
      case Outcome::kConflict:
        return "conflict";
      case Outcome::kFailed:
        return "failed";
    }
    return "unknown";
  }

  const PodGrouperOptions& options_;
  std::shared_ptr<kube::Client> client_;
  binder::AsyncEventSender& events_;
  KubeCluster cluster_;
  std::unique_ptr<Hub> hub_;
  std::unique_ptr<Reconciler> reconciler_;
  kube::Store pods_;
  std::unique_ptr<kube::Informer> pod_informer_;
  binder::WorkQueue queue_;
  obs::CounterFamily& reconciles_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::map<std::string, int> failures_;
};

}  // namespace

int RunPodGrouper(const PodGrouperOptions& options, std::ostream& err) {
  if (options.workers < 1) {
    err << "podgrouper: --max-concurrent-reconciles must be at least 1\n";
    return 2;
  }
  if (options.scheduler_name.empty()) {
    err << "podgrouper: --scheduler-name must not be empty\n";
    return 2;
  }
  kube::StopSignal stop;
  kube::TerminationSignals signals(
      stop, [](const char* signal) { Log(std::string("podgrouper: ") + signal + ", stopping"); });

  auto transport = kube::TransportForFlag(options.kubeconfig);
  if (!transport.ok()) {
    err << "podgrouper: " << transport.error() << "\n";
    return 1;
  }
  const kube::ClientOptions limits{.qps = options.qps, .burst = options.burst};
  auto client = std::make_shared<kube::Client>(transport.value(), limits);
  binder::AsyncEventSender events(std::make_shared<kube::Client>(transport.value(), limits));

  kube::LeaderElectionConfig lease;
  lease.lease_namespace = options.lease_namespace;
  lease.lease_name = options.lease_name;
  lease.identity = options.identity.empty() ? kube::DefaultIdentity() : options.identity;
  if (auto valid = kube::ValidateLeaderElectionConfig(lease); !valid.ok()) {
    err << "podgrouper: " << valid.error() << "\n";
    return 2;
  }
  kube::LeaderElector elector(client, lease);

  obs::Registry registry;
  obs::CounterFamily& reconciles =
      registry.AddCounter("gantry_podgrouper_reconciles_total",
                          "Pod reconciles of the pod-grouper by outcome", {"outcome"});
  std::mutex mu;
  std::unique_ptr<Term> term;
  obs::HttpServer server({.address = options.metrics_address});
  obs::ServeObservability(server, registry, [&]() -> obs::Readiness {
    if (elector.holder().empty()) return {false, "no leader known yet"};
    if (!elector.IsLeader()) return {true, ""};
    std::lock_guard<std::mutex> lock(mu);
    if (term == nullptr || !term->synced()) return {false, "pods and owners not listed yet"};
    return {true, ""};
  });
  if (auto started = server.Start(); !started.ok()) {
    err << "podgrouper: " << started.error() << "\n";
    return 1;
  }
  Log("podgrouper: serving /metrics, /healthz, /readyz on port " + std::to_string(server.port()) +
      "; grouping pods of scheduler " + options.scheduler_name + "; campaigning for lease " +
      lease.lease_namespace + "/" + lease.lease_name + " as " + lease.identity);

  kube::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    Log("podgrouper: leading; starting " + std::to_string(options.workers) + " workers");
    auto t = std::make_unique<Term>(options, client, events, reconciles);
    Term* raw = t.get();
    {
      std::lock_guard<std::mutex> lock(mu);
      term = std::move(t);
    }
    raw->Start();
  };
  callbacks.on_new_leader = [](const std::string& holder) {
    Log("podgrouper: lease holder is now " + (holder.empty() ? std::string("nobody") : holder));
  };
  elector.Run(callbacks, stop);

  std::unique_ptr<Term> running;
  {
    std::lock_guard<std::mutex> lock(mu);
    running = std::move(term);
  }
  if (running != nullptr) running->Stop();
  events.Stop();
  server.Stop();
  if (signals.received()) {
    Log("podgrouper: stopped");
    return 0;
  }
  Log("podgrouper: lost leadership, exiting");
  return 1;
}

}  // namespace gantry::podgrouper
