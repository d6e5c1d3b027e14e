#include "live/scheduler_loop.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>
#include <vector>

#include "cache/watch_cache.h"
#include "kube/events.h"
#include "kube/leader_election.h"
#include "kube/list_watcher.h"
#include "kube/time_format.h"
#include "live/annotation_writer.h"
#include "live/decisions.h"
#include "live/plugin_server.h"
#include "observability/http_server.h"
#include "observability/kai_metrics.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "usagedb/embedded_store.h"
#include "usagedb/lister.h"
#include "util/json_fields.h"

namespace gantry::live {

namespace {

using cache::Kind;
using kube::Object;

class Loop {
 public:
  Loop(std::shared_ptr<kube::Client> client, const LiveSchedulerOptions& options, std::ostream& log)
      : client_(std::move(client)),
        options_(options),
        log_(log),
        pool_{options.nodepool_label_key, options.partition_label_value},
        cache_(options.scheduler_name, pool_) {}

  int Run(const kube::StopSignal& stop);

 private:
  void Log(const std::string& line) {
    std::lock_guard lock(log_mu_);
    log_ << line << std::endl;
  }
  std::string Now() const { return kube::FormatTime(std::chrono::system_clock::now()); }
  void Cycle(Scheduler& scheduler);
  void ReportObjectErrors(const std::vector<cache::ObjectError>& errors);
  void Evict(const Session& ssn, const EvictionDecision& e);
  // Creates the BindRequest `br` of a placement of `pod` on `node` (the pod's and node's names).
  // Thread-safe: the binds of a cycle are written by several workers.
  void Bind(const Pod& pod, const std::string& node, const Object& br);
  void BindAll(const Session& ssn);
  void MarkPending(const Session& ssn, JobId j);
  void ClearConditions(const Session& ssn, JobId j);
  // Sends a merge patch of the PodGroup's status; the answer goes into the cache.
  void PatchPodGroupStatus(const Job& job, const Object& patch);
  // KAI labels a pod bound by a shard's scheduler with the shard's pool.
  void LabelWithPool(const Pod& pod);
  void Event(Kind kind, const Object& involved, const std::string& type, const std::string& reason,
             const std::string& message);

  std::shared_ptr<kube::Client> client_;
  const LiveSchedulerOptions& options_;
  std::ostream& log_;
  std::mutex log_mu_;
  // Time-based fairshare (configured usageDBConfig): the lister fetching usage off the cycle,
  // and the embedded store when that is the client (fed a sample per cycle).
  std::unique_ptr<usagedb::UsageLister> usage_;
  usagedb::EmbeddedUsageStore* embedded_usage_ = nullptr;
  const cache::NodePool pool_;
  cache::WatchCache cache_;
  std::set<std::string> reported_errors_;
  // Whether `message` differs from the last one sent about `uid` (and records it): an unchanged
  // reason is not re-sent every cycle.
  bool NewMessage(const std::string& uid, const std::string& message) {
    pending_now_[uid] = message;
    auto it = pending_before_.find(uid);
    return it == pending_before_.end() || it->second != message;
  }
  // The last event text per PodGroup or pod uid: of the previous cycle, and of this one (objects
  // no longer pending are forgotten).
  std::map<std::string, std::string> pending_before_;
  std::map<std::string, std::string> pending_now_;
  JobMemory job_memory_;
  // KAI's start and staleness timestamps into the PodGroups' annotations (JobTimesPatch), sent
  // off the cycle; what the server returns goes into the cache.
  AnnotationWriter job_times_{
      client_,
      nullptr,  // the watch brings the patched PodGroups (the writer holds back repeats meanwhile)
      [this](const std::string& line) { Log(line); }, options_.status_recording_workers};
  obs::Registry registry_;
  obs::SchedulerMetrics metrics_{registry_, options_.metrics_namespace};
  // Exports what the session did (per-action counts, victim searches, queue fair shares) into
  // metrics_ (before the session closes: the fair shares are the proportion plugin's).
  void ExportSessionMetrics(const Session& ssn);
};

void Loop::Event(Kind kind, const Object& involved, const std::string& type,
                 const std::string& reason, const std::string& message) {
  kube::EventInfo info;
  info.type = type;
  info.reason = reason;
  info.message = message;
  info.component = options_.scheduler_name;
  if (!pool_.value.empty()) info.component += "-" + pool_.value;  // as KAI names a shard
  info.instance = options_.identity;
  const kube::ResourceType& rt = cache::ResourceOf(kind);
  Object ev = kube::MakeEvent(rt, involved, info, std::chrono::system_clock::now());
  auto r = client_->Create(kube::resources::kEvents, kube::NamespaceOf(ev), ev,
                           &kube::FieldFilter::Nothing());
  if (!r.ok())
    Log("event " + reason + " about " + kube::NameOf(involved) + ": " + r.error().ToString());
}

void Loop::ReportObjectErrors(const std::vector<cache::ObjectError>& errors) {
  std::set<std::string> now;
  for (const cache::ObjectError& e : errors) {
    const std::string text = e.ToString();
    now.insert(text);
    if (reported_errors_.count(text)) continue;
    Log("skipped: " + text);
    auto raw = cache_.Get(e.kind, e.namespace_, e.name);
    if (!raw) continue;
    const bool workload = e.kind == Kind::kPod || e.kind == Kind::kPodGroup;
    Event(e.kind, *raw, "Warning", workload ? "Unschedulable" : "InvalidObject", e.message);
  }
  reported_errors_ = std::move(now);
}

void Loop::Evict(const Session& ssn, const EvictionDecision& e) {
  const Pod& pod = ssn.cluster().pods[e.pod];
  if (options_.update_pod_eviction_condition) {
    auto patched = client_->Patch(kube::resources::kPods, pod.namespace_, pod.name,
                                  kube::PatchType::kStrategicMerge,
                                  EvictionConditionPatch(e.message, Now()), "status");
    if (!patched.ok() && !patched.error().IsNotFound()) {
      Log("evict " + pod.namespace_ + "/" + pod.name +
          ": condition: " + patched.error().ToString());
    }
  }
  kube::DeleteOptions del;
  del.precondition_uid = pod.uid;
  auto deleted = client_->Delete(kube::resources::kPods, pod.namespace_, pod.name, del);
  if (!deleted.ok()) {
    if (!deleted.error().IsNotFound()) {
      Log("evict " + pod.namespace_ + "/" + pod.name + ": " + deleted.error().ToString());
    }
    return;
  }
  // A graceful delete returns the terminating pod: the next snapshot sees it releasing.
  if (StringOr(deleted.value(), "kind") == "Pod") {
    cache_.Apply(Kind::kPod, kube::EventType::kModified, deleted.value());
  }
  if (auto raw = cache_.Get(Kind::kPod, pod.namespace_, pod.name)) {
    Event(Kind::kPod, *raw, "Normal", "Evict", e.message);
  }
  if (pod.job != kNone) {
    const Job& job = ssn.cluster().jobs[pod.job];
    if (auto pg = cache_.Get(Kind::kPodGroup, job.namespace_, job.name)) {
      Event(Kind::kPodGroup, *pg, "Normal", "Evict", e.message);
      // One per evicted pod, as KAI counts them, by the PodGroup's node pool.
      std::string pool;
      if (const auto labels = pg->find("metadata"); labels != pg->end() && labels->is_object()) {
        const Object& l = labels->value("labels", Object::object());
        if (l.is_object()) pool = l.value(options_.nodepool_label_key, "");
      }
      if (pool.empty()) pool = "default";
      metrics_.evicted_pods.With({job.name, job.namespace_, kube::UidOf(*pg), pool, e.action})
          .Inc();
    }
  }
}

void Loop::BindAll(const Session& ssn) {
  const std::vector<BindDecision>& binds = ssn.binds();
  if (binds.empty()) return;
  // The requests are made here, from the session; only the writes run on the workers.
  std::vector<Object> requests;
  requests.reserve(binds.size());
  for (const BindDecision& b : binds) {
    requests.push_back(MakeBindRequest(ssn, b, options_.bind_backoff_limit, pool_));
  }
  const Cluster& cl = ssn.cluster();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < binds.size(); i = next++) {
      Bind(cl.pods[binds[i].pod], cl.nodes[binds[i].node].name, requests[i]);
    }
  };
  const size_t workers =
      std::min(binds.size(), static_cast<size_t>(std::max(1, options_.bind_request_workers)));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

void Loop::Bind(const Pod& pod, const std::string& node, const Object& br) {
  const auto start = std::chrono::steady_clock::now();
  auto created = client_->Create(kube::resources::kBindRequests, pod.namespace_, br);
  // As KAI's: the bind latency is the BindRequest's creation, whatever its outcome; the
  // scheduling latency (creation to bind request) counts the pods handed to the binder.
  metrics_.task_bind_latency_ms.Observe(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (created.ok()) {
    std::optional<std::chrono::system_clock::time_point> created_at;
    cache_.Inspect(Kind::kPod, pod.namespace_, pod.name, [&](const Object& raw) {
      const Object& meta = raw.value("metadata", Object::object());
      if (meta.is_object()) created_at = kube::ParseTime(StringOr(meta, "creationTimestamp"));
    });
    if (created_at) {
      metrics_.task_scheduling_latency_ms.Observe(std::max(
          0.0,
          std::chrono::duration<double, std::milli>(std::chrono::system_clock::now() - *created_at)
              .count()));
    }
    cache_.Apply(Kind::kBindRequest, kube::EventType::kAdded, created.value());
    LabelWithPool(pod);
    return;
  }
  if (created.error().IsAlreadyExists()) {
    // A request for this pod exists (possibly not yet seen through the watch): the pod is
    // already being bound; never ask twice.
    auto existing = client_->Get(kube::resources::kBindRequests, pod.namespace_, pod.name);
    if (!existing.ok()) return;
    cache_.Apply(Kind::kBindRequest, kube::EventType::kAdded, existing.value());
    // If it is stale (an earlier pod's, or given up on), the next cycle deletes it and asks again.
    return;
  }
  Log("bind " + pod.namespace_ + "/" + pod.name + " -> " + node + ": " +
      created.error().ToString());
}

void Loop::LabelWithPool(const Pod& pod) {
  if (pool_.value.empty()) return;
  bool labelled = true;
  cache_.Inspect(Kind::kPod, pod.namespace_, pod.name,
                 [&](const Object& raw) { labelled = pool_.Holds(raw); });
  if (labelled) return;
  const Object patch{{"metadata", {{"labels", {{pool_.label_key, pool_.value}}}}}};
  auto r = client_->Patch(kube::resources::kPods, pod.namespace_, pod.name, kube::PatchType::kMerge,
                          patch);
  if (!r.ok() && !r.error().IsNotFound()) {
    Log("pod " + pod.namespace_ + "/" + pod.name + " node-pool label: " + r.error().ToString());
  }
}

void Loop::PatchPodGroupStatus(const Job& job, const Object& patch) {
  auto r = client_->Patch(kube::resources::kPodGroups, job.namespace_, job.name,
                          kube::PatchType::kMerge, patch, "status");
  if (r.ok()) {
    cache_.Apply(Kind::kPodGroup, kube::EventType::kModified, r.value());
  } else if (!r.error().IsNotFound()) {
    Log("podgroup " + job.namespace_ + "/" + job.name + " status: " + r.error().ToString());
  }
}

void Loop::ClearConditions(const Session& ssn, JobId j) {
  const Job& job = ssn.cluster().jobs[j];
  std::optional<Object> patch;
  cache_.Inspect(Kind::kPodGroup, job.namespace_, job.name, [&](const Object& raw) {
    const auto status = raw.find("status");
    if (status != raw.end()) patch = ClearConditionsPatch(ssn, j, *status);
  });
  if (patch) PatchPodGroupStatus(job, *patch);
}

void Loop::MarkPending(const Session& ssn, JobId j) {
  const Job& job = ssn.cluster().jobs[j];
  // The PodGroup is looked at in place (no copy of the object): its uid, whether its pods are to
  // be marked, and (below) its status.
  std::string uid;
  bool mark_pods = true;
  std::string pool;
  std::string prefix;  // KAI's "Node-Pool '<pool>': " for a PodGroup tried once per pool
  Object pg;           // metadata only, for events
  if (!cache_.Inspect(Kind::kPodGroup, job.namespace_, job.name, [&](const Object& raw) {
        uid = kube::UidOf(raw);
        pg = Object{{"metadata", raw.value("metadata", Object::object())}};
        const Object* spec = raw.contains("spec") ? &raw["spec"] : nullptr;
        mark_pods = !(spec && spec->is_object() && spec->contains("markUnschedulable") &&
                      (*spec)["markUnschedulable"] == false);
        pool = NodePoolOf(raw, options_.nodepool_label_key);
        prefix = NodePoolPrefix(raw, pool);
      })) {
    return;
  }
  if (!ssn.IsReadyForScheduling(j)) {
    // Not enough pods yet (or some gated): a NotReady event, as KAI records, and no condition.
    const std::string message = NotReadyMessage(ssn, j);
    if (NewMessage(uid, message)) Event(Kind::kPodGroup, pg, "Normal", "NotReady", message);
    return;
  }
  // Each pending pod: an Unschedulable warning and, unless the PodGroup's spec.markUnschedulable
  // is false, a PodScheduled=False condition. The pod is looked at in place (no copy) since most
  // cycles have nothing new to write about it.
  const std::string now = Now();
  for (PodId p : job.pods) {
    const Pod& pod = ssn.cluster().pods[p];
    if (ssn.pod(p).status != PodStatus::kPending) continue;
    const std::string message = prefix + PodUnschedulableMessage(ssn, p);
    const bool new_message = NewMessage(pod.uid, message);
    std::optional<Object> patch;
    Object meta;
    const bool found = cache_.Inspect(Kind::kPod, pod.namespace_, pod.name, [&](const Object& raw) {
      if (mark_pods) patch = PodUnschedulablePatch(raw, message, now);
      if (new_message) meta = Object{{"metadata", raw.value("metadata", Object::object())}};
    });
    if (!found) continue;
    if (new_message) Event(Kind::kPod, meta, "Warning", kUnschedulableReason, message);
    if (patch) {
      auto r = client_->Patch(kube::resources::kPods, pod.namespace_, pod.name,
                              kube::PatchType::kStrategicMerge, *patch, "status");
      if (r.ok()) {
        cache_.Apply(Kind::kPod, kube::EventType::kModified, r.value());
      } else if (!r.error().IsNotFound()) {
        Log("pod " + pod.namespace_ + "/" + pod.name + " condition: " + r.error().ToString());
      }
    }
  }
  const std::string message = prefix + UnschedulableMessage(ssn, j);
  if (NewMessage(uid, message)) Event(Kind::kPodGroup, pg, "Normal", kUnschedulableReason, message);
  std::optional<Object> patch;
  cache_.Inspect(Kind::kPodGroup, job.namespace_, job.name, [&](const Object& raw) {
    static const Object no_status = Object::object();
    patch = UnschedulableStatusPatch(ssn, j, raw.contains("status") ? raw["status"] : no_status,
                                     pool, message, now);
  });
  if (patch) PatchPodGroupStatus(job, *patch);
}

void Loop::Cycle(Scheduler& scheduler) {
  const auto taking = std::chrono::steady_clock::now();
  cache::Snapshot snap = cache_.Take();
  const double take_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - taking).count();
  ReportObjectErrors(snap.errors);
  // Stale BindRequests hold no pod in this snapshot; deleting them lets the pods' new requests
  // (named after the pod) be created.
  for (const cache::ObjectRef& br : snap.stale_bind_requests) {
    auto r = client_->Delete(kube::resources::kBindRequests, br.namespace_, br.name);
    if (r.ok() || r.error().IsNotFound()) {
      cache_.Apply(Kind::kBindRequest, kube::EventType::kDeleted,
                   Object{{"metadata", {{"name", br.name}, {"namespace", br.namespace_}}}});
    } else {
      Log("delete stale BindRequest " + br.namespace_ + "/" + br.name + ": " +
          r.error().ToString());
    }
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const UsageByQueue> usage;
  if (usage_) {
    if (embedded_usage_ != nullptr)
      embedded_usage_->Record(usagedb::SampleOf(*snap.cluster, now_ms));
    usage = usage_->Get(now_ms);
    // Without an answer (none yet, or stale) the queues have no historical usage.
    if (!usage) usage = std::make_shared<const UsageByQueue>();
  }
  std::unique_ptr<Session> ssn = scheduler.OpenSession(*snap.cluster, now_ms, std::move(usage));
  metrics_.open_session_latency_ms.Set(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  job_memory_.Restore(*ssn, snap.layout);
  scheduler.RunActions(*ssn, [this](std::string_view action, double ms) {
    metrics_.action_latency_ms.With({std::string(action)}).Set(ms);
  });
  job_memory_.Record(*ssn, snap.layout);
  const auto decided = std::chrono::steady_clock::now();
  for (const EvictionDecision& e : ssn->evictions()) Evict(*ssn, e);
  BindAll(*ssn);
  for (JobId j = 0; j < static_cast<JobId>(snap.cluster->jobs.size()); ++j) {
    if (auto patch = JobTimesPatch(*ssn, j)) {
      job_times_.Offer(snap.cluster->jobs[j].namespace_, snap.cluster->jobs[j].name,
                       std::move(*patch));
    }
  }
  int pending = 0;
  pending_now_.clear();
  for (JobId j = 0; j < static_cast<JobId>(snap.cluster->jobs.size()); ++j) {
    if (!LeftPending(*ssn, j)) {
      ClearConditions(*ssn, j);
      continue;
    }
    ++pending;
    MarkPending(*ssn, j);
  }
  pending_before_.swap(pending_now_);
  const auto written = std::chrono::steady_clock::now();
  metrics_.e2e_scheduling_latency_ms.Set(
      std::chrono::duration<double, std::milli>(written - start).count());
  if (!ssn->binds().empty() || !ssn->evictions().empty()) {
    auto ms = [](auto d) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    Log("cycle " + std::to_string(snap.generation) + ": " +
        std::to_string(snap.cluster->pods.size()) + " pods, " +
        std::to_string(snap.cluster->jobs.size()) + " jobs: " +
        std::to_string(ssn->binds().size()) + " binds, " + std::to_string(ssn->evictions().size()) +
        " evictions, " + std::to_string(pending) + " jobs pending; snapshot in " +
        std::to_string(take_ms) + " ms, decided in " + std::to_string(ms(decided - start)) +
        " ms, written in " + std::to_string(ms(written - decided)) + " ms");
  }
  ExportSessionMetrics(*ssn);
  const auto closing = std::chrono::steady_clock::now();
  scheduler.CloseSession(*ssn);
  metrics_.close_session_latency_ms.Set(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - closing)
          .count());
  for (const PluginTiming& p : ssn->plugin_timings()) {
    metrics_.plugin_latency_ms.With({p.plugin, "OnSessionOpen"}).Set(p.open_ms);
    metrics_.plugin_latency_ms.With({p.plugin, "OnSessionClose"}).Set(p.close_ms);
  }
}

void Loop::ExportSessionMetrics(const Session& ssn) {
  for (const ActionCounts& a : ssn.all_action_counts()) {
    if (a.action.empty()) continue;
    const std::vector<std::string> action{a.action};
    // (An action's children appear once it has run, at 0 if it did nothing; KAI's appear once
    // the action has counted something.)
    metrics_.podgroups_scheduled.With(action).Inc(static_cast<double>(a.podgroups_scheduled));
    metrics_.podgroups_acted_on.With(action).Inc(static_cast<double>(a.podgroups_acted_on));
    metrics_.scenarios_simulated.With(action).Inc(static_cast<double>(a.scenarios_simulated));
    metrics_.scenarios_filtered.With(action).Inc(static_cast<double>(a.scenarios_filtered));
    metrics_.preemption_attempts.Inc(static_cast<double>(a.preemption_attempts));
    if (!a.has_budgets) continue;
    // An eviction action: its configured budgets (KAI sets them as each such action starts),
    // its searches by result and the searches its spent budget stopped.
    metrics_.scenario_search_action_budget_s.With(action).Set(
        static_cast<double>(a.action_budget_ns) / 1e9);
    metrics_.scenario_search_job_budget_s.Set(static_cast<double>(a.job_budget_ns) / 1e9);
    for (const auto& [generator, ns] : a.generator_budgets_ns) {
      metrics_.scenario_search_generator_budget_s.With({generator})
          .Set(static_cast<double>(ns) / 1e9);
    }
    for (size_t end = 0; end < kSearchEnds; ++end) {
      for (int reduced = 0; reduced < 2; ++reduced) {
        if (const int64_t n = a.searches[end][reduced]; n > 0) {
          metrics_.scenario_search_jobs
              .With({a.action, SearchEndName(static_cast<SearchEnd>(end)),
                     reduced ? "true" : "false"})
              .Inc(static_cast<double>(n));
        }
      }
    }
    if (a.action_budget_exhausted > 0) {
      metrics_.scenario_search_action_budget_exhausted.With(action).Inc(
          static_cast<double>(a.action_budget_exhausted));
    }
  }
  const Cluster& c = ssn.cluster();
  for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
    auto fair = ssn.QueueFairShare(q);
    if (!fair) continue;
    const auto labels =
        obs::SchedulerMetrics::QueueLabels(c.queues[q].name, c.queues[q].display_name);
    metrics_.queue_fair_share_gpu.With(labels).Set((*fair)[QueueResource::kGpu]);
    metrics_.queue_fair_share_cpu_cores.With(labels).Set((*fair)[QueueResource::kCpu] / 1000);
    metrics_.queue_fair_share_memory_gb.With(labels).Set((*fair)[QueueResource::kMemory] / 1e9);
    // No usage database: the historical usage KAI reports is 0.
    metrics_.queue_cpu_usage.With(labels).Set(0);
    metrics_.queue_memory_usage.With(labels).Set(0);
    metrics_.queue_gpu_usage.With(labels).Set(0);
  }
}

int Loop::Run(const kube::StopSignal& stop) {
  SchedulerConfig config = options_.config;
  config.params.scheduler_name = options_.scheduler_name;
  auto scheduler = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  if (!scheduler.ok()) {
    Log("error: scheduler configuration: " + scheduler.error());
    return 2;
  }
  for (const auto& w : config.warnings) Log("warning: scheduler configuration: " + w);
  for (const auto& w : scheduler.value()->warnings()) Log("warning: scheduler configuration: " + w);
  // The plugin server, before anything else starts (a port that cannot be bound ends the process
  // at once); destroyed before the scheduler, whose plugins answer its requests.
  std::unique_ptr<obs::HttpServer> plugin_server;
  if (options_.plugin_server_port >= 0) {
    const PluginHttpHandlers handlers = scheduler.value()->HttpHandlers();
    auto started = StartPluginServer(options_.plugin_server_port, handlers);
    if (!started.ok()) {
      Log("error: " + started.error());
      return 2;
    }
    plugin_server = std::move(started).value();
    std::string paths;
    for (const auto& [path, handler] : handlers) paths += (paths.empty() ? "" : ", ") + path;
    Log("plugin server on 127.0.0.1:" + std::to_string(plugin_server->port()) + " (" +
        (paths.empty() ? "no plugin endpoints" : paths) + ")");
  }
  if (config.usage_db) {
    auto client = usagedb::MakeUsageClient(*config.usage_db);
    if (!client.ok()) {
      Log("error: scheduler configuration: " + client.error());
      return 2;
    }
    embedded_usage_ = dynamic_cast<usagedb::EmbeddedUsageStore*>(client.value().get());
    usage_ = std::make_unique<usagedb::UsageLister>(std::move(client).value(),
                                                    config.usage_db->usage_params,
                                                    [this](const std::string& line) { Log(line); });
    usage_->Start();
    Log("usage db: " + config.usage_db->client_type + " client started");
  }

  cache_.SetErrorHandler([this](Kind kind, const kube::ApiError& error) {
    Log("watch " + cache::ResourceOf(kind).Describe() + ": " + error.ToString());
  });
  // Watch every kind the model is built from.
  std::vector<std::unique_ptr<kube::ListWatcher>> watchers;
  std::vector<std::thread> threads;
  watchers.reserve(cache::kNumKinds);
  for (int k = 0; k < cache::kNumKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    kube::ListWatchOptions options;
    options.filter = cache::FieldsOf(kind);  // build only the fields the cache reads
    watchers.push_back(std::make_unique<kube::ListWatcher>(client_, cache::ResourceOf(kind),
                                                           options, cache_.handler(kind)));
  }
  threads.reserve(watchers.size());
  for (auto& w : watchers) threads.emplace_back([&w] { w->Run(); });

  // Leader election on its own thread; the cycle loop runs while leading.
  kube::LeaderElectionConfig lec;
  lec.lease_namespace = options_.lease_namespace;
  lec.lease_name = options_.lease_name;
  if (!pool_.value.empty()) lec.lease_name += "-" + pool_.value;  // one leader per shard
  lec.identity = options_.identity.empty() ? kube::DefaultIdentity() : options_.identity;
  kube::LeaderElector elector(client_, lec);
  obs::HttpServer server(
      {.address = options_.metrics_address.empty() ? ":0" : options_.metrics_address});
  if (!options_.metrics_address.empty()) {
    obs::ServeObservability(server, registry_, [&]() -> obs::Readiness {
      if (elector.holder().empty()) return {false, "no leader known yet"};
      if (elector.IsLeader() && !cache_.synced()) return {false, "cache not synced yet"};
      return {true, ""};
    });
    if (auto started = server.Start(); !started.ok()) {
      Log("error: " + started.error());
      for (auto& w : watchers) w->Stop();
      for (auto& t : threads) t.join();
      return 2;
    }
    Log("serving /metrics, /healthz, /readyz on port " + std::to_string(server.port()));
  }
  kube::StopSignal stop_election;
  std::atomic<bool> election_over{false};
  std::thread election([&] {
    kube::LeaderCallbacks cb;
    cb.on_started_leading = [&] { Log("leading as " + lec.identity); };
    cb.on_new_leader = [&](const std::string& holder) {
      if (holder != lec.identity) Log("leader is " + (holder.empty() ? "(none)" : holder));
    };
    elector.Run(cb, stop_election);
    election_over = true;
  });

  job_times_.Start();
  int code = 0;
  bool announced_sync = false;
  while (!stop.stopped()) {
    if (election_over) {
      Log("lost leadership; exiting");
      code = 1;
      break;
    }
    if (elector.IsLeader() && cache_.synced()) {
      if (!announced_sync) {
        Log("cache synced; scheduling every " + std::to_string(options_.period.count()) + " ms");
        announced_sync = true;
        // KAI waits for the first usage answer (up to waitTimeout) before scheduling.
        if (usage_ && embedded_usage_ == nullptr) usage_->WaitForFirstAnswer();
      }
      Cycle(*scheduler.value());
    }
    // Waits for the period, returning early on stop.
    if (stop.WaitFor(options_.period)) break;
  }

  job_times_.Stop();
  if (usage_) usage_->Stop();
  stop_election.Stop();
  election.join();
  server.Stop();
  if (plugin_server) plugin_server->Stop();
  for (auto& w : watchers) w->Stop();
  for (auto& t : threads) t.join();
  const cache::CacheStats stats = cache_.stats();
  Log("watch cache: " + std::to_string(stats.conversions) + " objects converted, " +
      std::to_string(stats.assemblies) + " full assemblies, " + std::to_string(stats.patches) +
      " patches (" + std::to_string(stats.patch_copies) + " on a copy, " +
      std::to_string(stats.pods_patched) + " pods rebuilt)");
  Log(code == 0 ? "stopped" : "stopped after losing leadership");
  return code;
}

}  // namespace

int RunLiveScheduler(std::shared_ptr<kube::Client> client, const LiveSchedulerOptions& options,
                     const kube::StopSignal& stop, std::ostream& log) {
  // No fast bins in glibc's allocator: with them, every allocation of 1 KiB or more (request and
  // response bodies) first merges all freed small chunks (malloc_consolidate: 4-6% of the
  // process's CPU with the small JSON nodes watch events free). Small frees still go through
  // the per-thread caches.
  mallopt(M_MXFAST, 0);
  Loop loop(std::move(client), options, log);
  return loop.Run(stop);
}

}  // namespace gantry::live
