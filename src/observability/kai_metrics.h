// The metrics Gantry's processes export, under the names KAI Scheduler's components export for
// the same thing, so dashboards and alerts written for KAI keep working after the switch.
//
// SchedulerMetrics: KAI's scheduler metrics (cycle, session, action and plugin latencies in
// milliseconds, task scheduling / bind latency histograms with exponential buckets 5 ms ...
// 2560 ms, per-action pod-group and scenario counters, preemption attempts, evicted pods, queue
// fair share and usage). Their names start with the metrics namespace and "_" (KAI's
// --metrics-namespace, "kai" by default: kai_e2e_scheduling_latency_milliseconds); an empty
// namespace gives the bare names.
//
// BinderMetrics: KAI's binder is a controller-runtime controller named "bindrequest", so what it
// exports about binding are controller-runtime's reconcile metrics with controller="bindrequest":
// reconciles by result (success, error, requeue, requeue_after), errors, reconcile time in
// seconds, active workers and the worker limit.
//
// WorkqueueMetrics: client-go's work queue metrics as controller-runtime registers them
// (workqueue_depth, _adds_total, _queue_duration_seconds, _work_duration_seconds,
// _unfinished_work_seconds, _longest_running_processor_seconds, _retries_total, labelled
// name and controller = "bindrequest"; depth also priority = ""). Never prefixed.
//
// Each struct registers its families on the registry given to the constructor (once per
// registry) and keeps references to them.
#pragma once

#include <string>
#include <vector>

#include "observability/metrics.h"

namespace gantry::obs {

// KAI's latency histogram buckets in milliseconds: 5, 10, 20, ..., 2560.
std::vector<double> KaiLatencyBucketsMs();

// KAI's default metrics namespace (the prefix of the scheduler's families).
inline constexpr const char* kDefaultMetricsNamespace = "kai";

// `name` in metrics namespace `ns`: "ns_name", or `name` when ns is empty (Prometheus'
// BuildFQName). Throws std::invalid_argument unless the result is a valid metric name.
std::string QualifiedName(const std::string& ns, const std::string& name);

struct SchedulerMetrics {
  // Registers the families as `<metrics_namespace>_<name>`.
  explicit SchedulerMetrics(Registry& registry,
                            const std::string& metrics_namespace = kDefaultMetricsNamespace);

  // The values of the queue labels: queue_name (the display name when set, else the Queue's
  // metadata.name, as KAI's), queue_metadata_name, queue_display_name ("" when unset).
  static std::vector<std::string> QueueLabels(const std::string& name,
                                              const std::string& display_name);

  Gauge& e2e_scheduling_latency_ms;  // e2e_scheduling_latency_milliseconds: last cycle
  Gauge& open_session_latency_ms;    // open_session_latency_milliseconds
  Gauge& close_session_latency_ms;   // close_session_latency_milliseconds
  GaugeFamily& action_latency_ms;    // action_scheduling_latency_milliseconds{action}
  GaugeFamily& plugin_latency_ms;    // plugin_scheduling_latency_milliseconds{plugin,OnSession}
  Histogram& task_scheduling_latency_ms;  // task_scheduling_latency_milliseconds: creation->bind
  Histogram& task_bind_latency_ms;        // task_bind_latency_milliseconds: BindRequest creation
  CounterFamily& podgroups_scheduled;     // podgroups_scheduled_by_action{action}
  CounterFamily& podgroups_acted_on;      // podgroups_acted_on_by_action{action}
  CounterFamily& scenarios_simulated;     // scenarios_simulation_by_action{action}
  CounterFamily& scenarios_filtered;      // scenarios_filtered_by_action{action}
  Counter& preemption_attempts;           // total_preemption_attempts
  // pod_group_evicted_pods_total{podgroup,namespace,uid,nodepool,action}
  CounterFamily& evicted_pods;
  // Per queue, labelled queue_name, queue_metadata_name, queue_display_name (QueueLabels):
  GaugeFamily& queue_fair_share_cpu_cores;  // queue_fair_share_cpu_cores
  GaugeFamily& queue_fair_share_memory_gb;  // queue_fair_share_memory_gb
  GaugeFamily& queue_fair_share_gpu;        // queue_fair_share_gpu
  GaugeFamily& queue_cpu_usage;             // queue_cpu_usage (historical usage; 0 without one)
  GaugeFamily& queue_memory_usage;          // queue_memory_usage
  GaugeFamily& queue_gpu_usage;             // queue_gpu_usage
  // usage_query_latency_milliseconds: observed only by a usage database query (Gantry queries
  // none, so it stays empty, as KAI's does without usageDBConfig).
  Histogram& usage_query_latency_ms;
  // KAI's bounded scenario search (scenarioSearchBudgets): victim searches by result
  // (scenario_search_jobs_total{action,result,reduced_budget}), searches stopped once the
  // action's budget was spent (scenario_search_action_budget_exhausted_total{action}) and the
  // configured budgets in seconds, 0 meaning unlimited:
  // scenario_search_action_budget_configured_seconds{action},
  // scenario_search_job_budget_configured_seconds,
  // scenario_search_generator_budget_configured_seconds{generator}.
  CounterFamily& scenario_search_jobs;
  CounterFamily& scenario_search_action_budget_exhausted;
  GaugeFamily& scenario_search_action_budget_s;
  Gauge& scenario_search_job_budget_s;
  GaugeFamily& scenario_search_generator_budget_s;
};

// The work queue metrics of one controller-runtime queue (the children of its label values).
struct WorkqueueMetrics {
  WorkqueueMetrics(Registry& registry, const std::string& name);

  Gauge& depth;               // keys waiting (not scheduled for later, not in progress)
  Counter& adds;              // keys queued (an add absorbed by a queued key is not counted)
  Histogram& queue_duration;  // seconds from queued to handed to a worker
  Histogram& work_duration;   // seconds a worker spent on a key
  Gauge& unfinished_work;     // seconds of work in progress, summed over the workers
  Gauge& longest_running;     // seconds the longest key in progress has run
  Counter& retries;           // keys requeued with backoff after an error
};

struct BinderMetrics {
  // The controller label value KAI's binder uses.
  static constexpr const char* kController = "bindrequest";
  // Reconcile results, as controller-runtime names them.
  static constexpr const char* kSuccess = "success";
  static constexpr const char* kError = "error";
  static constexpr const char* kRequeue = "requeue";
  static constexpr const char* kRequeueAfter = "requeue_after";

  explicit BinderMetrics(Registry& registry);

  // Counts one reconcile with its result and duration (and an error when result is kError).
  void ObserveReconcile(const std::string& result, double seconds);

  CounterFamily& reconcile_total;           // controller_runtime_reconcile_total{controller,result}
  CounterFamily& reconcile_errors_total;    // controller_runtime_reconcile_errors_total{controller}
  HistogramFamily& reconcile_time_seconds;  // controller_runtime_reconcile_time_seconds{controller}
  Gauge& active_workers;             // controller_runtime_active_workers{controller="bindrequest"}
  Gauge& max_concurrent_reconciles;  // controller_runtime_max_concurrent_reconciles{controller=...}
  WorkqueueMetrics workqueue;        // workqueue_*{name="bindrequest",controller="bindrequest"}
};

}  // namespace gantry::obs
