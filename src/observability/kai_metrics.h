// The metrics Gantry's processes export, under the names KAI Scheduler's components export for
// the same thing, so dashboards and alerts written for KAI keep working after the switch.
//
// SchedulerMetrics: KAI's scheduler metrics (cycle, session, action and plugin latencies in
// milliseconds, task scheduling / bind latency histograms with exponential buckets 5 ms ...
// 2560 ms, per-action pod-group and scenario counters, preemption attempts, evicted pods, queue
// fair share). KAI exports them without a prefix.
//
// BinderMetrics: KAI's binder is a controller-runtime controller named "bindrequest", so what it
// exports about binding are controller-runtime's reconcile metrics with controller="bindrequest":
// reconciles by result (success, error, requeue, requeue_after), errors, reconcile time in
// seconds, active workers and the worker limit.
//
// Each struct registers its families on the registry given to the constructor (once per
// registry) and keeps references to them.
#pragma once

#include <string>

#include "observability/metrics.h"

namespace gantry::obs {

// KAI's latency histogram buckets in milliseconds: 5, 10, 20, ..., 2560.
std::vector<double> KaiLatencyBucketsMs();

struct SchedulerMetrics {
  explicit SchedulerMetrics(Registry& registry);

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
  GaugeFamily& queue_fair_share_cpu_cores;  // queue_fair_share_cpu_cores{queue_name}
  GaugeFamily& queue_fair_share_memory_gb;  // queue_fair_share_memory_gb{queue_name}
  GaugeFamily& queue_fair_share_gpu;        // queue_fair_share_gpu{queue_name}
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
};

}  // namespace gantry::obs
