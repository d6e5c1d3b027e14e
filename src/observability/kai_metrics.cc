#include "observability/kai_metrics.h"

#include <stdexcept>

namespace gantry::obs {

std::vector<double> KaiLatencyBucketsMs() { return ExponentialBuckets(5, 2, 10); }

std::string QualifiedName(const std::string& ns, const std::string& name) {
  std::string full = ns.empty() ? name : ns + "_" + name;
  if (!IsValidMetricName(full)) {
    throw std::invalid_argument("metrics namespace \"" + ns + "\": \"" + full +
                                "\" is not a valid metric name");
  }
  return full;
}

std::vector<std::string> SchedulerMetrics::QueueLabels(const std::string& name,
                                                       const std::string& display_name) {
  return {display_name.empty() ? name : display_name, name, display_name};
}

namespace {

// controller-runtime's reconcile_time_seconds buckets.
std::vector<double> ReconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

// client-go's work queue duration buckets: 10 ns ... 1000 s.
std::vector<double> WorkqueueBuckets() { return ExponentialBuckets(10e-9, 10, 12); }

std::vector<std::string> QueueLabelNames() {
  return {"queue_name", "queue_metadata_name", "queue_display_name"};
}

}  // namespace

SchedulerMetrics::SchedulerMetrics(Registry& r, const std::string& ns)
    : e2e_scheduling_latency_ms(
          r.AddGauge(QualifiedName(ns, "e2e_scheduling_latency_milliseconds"),
                     "Duration of the last scheduling cycle (every action), in milliseconds")
              .With({})),
      open_session_latency_ms(
          r.AddGauge(QualifiedName(ns, "open_session_latency_milliseconds"),
                     "Duration of the last session opening (plugins included), in milliseconds")
              .With({})),
      close_session_latency_ms(
          r.AddGauge(QualifiedName(ns, "close_session_latency_milliseconds"),
                     "Duration of the last session closing (plugins included), in milliseconds")
              .With({})),
      action_latency_ms(r.AddGauge(QualifiedName(ns, "action_scheduling_latency_milliseconds"),
                                   "Duration of each action in the last cycle, in milliseconds",
                                   {"action"})),
      plugin_latency_ms(r.AddGauge(QualifiedName(ns, "plugin_scheduling_latency_milliseconds"),
                                   "Duration of each plugin's session callbacks in the last "
                                   "cycle, in milliseconds",
                                   {"plugin", "OnSession"})),
      task_scheduling_latency_ms(
          r.AddHistogram(QualifiedName(ns, "task_scheduling_latency_milliseconds"),
                         "Time from a pod's creation to the scheduler's bind request, in "
                         "milliseconds",
                         {}, KaiLatencyBucketsMs())
              .With({})),
      task_bind_latency_ms(r.AddHistogram(QualifiedName(ns, "task_bind_latency_milliseconds"),
                                          "Time the scheduler spends handing a pod to the "
                                          "binder (BindRequest creation), in milliseconds",
                                          {}, KaiLatencyBucketsMs())
                               .With({})),
      podgroups_scheduled(r.AddCounter(QualifiedName(ns, "podgroups_scheduled_by_action"),
                                       "Pod groups scheduled, by action", {"action"})),
      podgroups_acted_on(r.AddCounter(QualifiedName(ns, "podgroups_acted_on_by_action"),
                                      "Pod groups an action tried, by action", {"action"})),
      scenarios_simulated(r.AddCounter(QualifiedName(ns, "scenarios_simulation_by_action"),
                                       "Victim scenarios simulated, by action", {"action"})),
      scenarios_filtered(r.AddCounter(QualifiedName(ns, "scenarios_filtered_by_action"),
                                      "Victim scenarios rejected before simulation, by action",
                                      {"action"})),
      preemption_attempts(r.AddCounter(QualifiedName(ns, "total_preemption_attempts"),
                                       "Preemption attempts since start")
                              .With({})),
      evicted_pods(r.AddCounter(QualifiedName(ns, "pod_group_evicted_pods_total"),
                                "Pods evicted, by pod group",
                                {"podgroup", "namespace", "uid", "nodepool", "action"})),
      queue_fair_share_cpu_cores(r.AddGauge(QualifiedName(ns, "queue_fair_share_cpu_cores"),
                                            "Fair share of each queue: CPU cores",
                                            QueueLabelNames())),
      queue_fair_share_memory_gb(r.AddGauge(QualifiedName(ns, "queue_fair_share_memory_gb"),
                                            "Fair share of each queue: memory in GB",
                                            QueueLabelNames())),
      queue_fair_share_gpu(r.AddGauge(QualifiedName(ns, "queue_fair_share_gpu"),
                                      "Fair share of each queue: GPUs", QueueLabelNames())),
      queue_cpu_usage(r.AddGauge(QualifiedName(ns, "queue_cpu_usage"),
                                 "Historical CPU usage of each queue (0 without a usage database)",
                                 QueueLabelNames())),
      queue_memory_usage(r.AddGauge(QualifiedName(ns, "queue_memory_usage"),
                                    "Historical memory usage of each queue (0 without a usage "
                                    "database)",
                                    QueueLabelNames())),
      queue_gpu_usage(r.AddGauge(QualifiedName(ns, "queue_gpu_usage"),
                                 "Historical GPU usage of each queue (0 without a usage database)",
                                 QueueLabelNames())),
      usage_query_latency_ms(r.AddHistogram(QualifiedName(ns, "usage_query_latency_milliseconds"),
                                            "Usage database query latency, in milliseconds", {},
                                            KaiLatencyBucketsMs())
                                 .With({})),
      scenario_search_jobs(r.AddCounter(QualifiedName(ns, "scenario_search_jobs_total"),
                                        "Victim searches, by action and how they ended",
                                        {"action", "result", "reduced_budget"})),
      scenario_search_action_budget_exhausted(r.AddCounter(
          QualifiedName(ns, "scenario_search_action_budget_exhausted_total"),
          "Victim searches stopped once their action's time budget was spent", {"action"})),
      scenario_search_action_budget_s(r.AddGauge(
          QualifiedName(ns, "scenario_search_action_budget_configured_seconds"),
          "Time budget of an action's victim searches in seconds (0: unlimited)", {"action"})),
      scenario_search_job_budget_s(
          r.AddGauge(QualifiedName(ns, "scenario_search_job_budget_configured_seconds"),
                     "Time budget of one job's victim search in seconds (0: unlimited)")
              .With({})),
      scenario_search_generator_budget_s(
          r.AddGauge(QualifiedName(ns, "scenario_search_generator_budget_configured_seconds"),
                     "Time budget of a scenario generator's search in seconds (0: unlimited)",
                     {"generator"})) {}

WorkqueueMetrics::WorkqueueMetrics(Registry& r, const std::string& name)
    : depth(r.AddGauge("workqueue_depth", "Current depth of workqueue by workqueue and priority",
                       {"name", "controller", "priority"})
                .With({name, name, ""})),
      adds(r.AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue",
                        {"name", "controller"})
               .With({name, name})),
      queue_duration(r.AddHistogram("workqueue_queue_duration_seconds",
                                    "How long in seconds an item stays in workqueue before being "
                                    "requested",
                                    {"name", "controller"}, WorkqueueBuckets())
                         .With({name, name})),
      work_duration(r.AddHistogram("workqueue_work_duration_seconds",
                                   "How long in seconds processing an item from workqueue takes.",
                                   {"name", "controller"}, WorkqueueBuckets())
                        .With({name, name})),
      unfinished_work(r.AddGauge("workqueue_unfinished_work_seconds",
                                 "How many seconds of work has been done that is in progress and "
                                 "hasn't been observed by work_duration",
                                 {"name", "controller"})
                          .With({name, name})),
      longest_running(r.AddGauge("workqueue_longest_running_processor_seconds",
                                 "How many seconds has the longest running processor for "
                                 "workqueue been running.",
                                 {"name", "controller"})
                          .With({name, name})),
      retries(r.AddCounter("workqueue_retries_total",
                           "Total number of retries handled by workqueue", {"name", "controller"})
                  .With({name, name})) {}

BinderMetrics::BinderMetrics(Registry& r)
    : reconcile_total(r.AddCounter("controller_runtime_reconcile_total",
                                   "BindRequest reconciles, by result", {"controller", "result"})),
      reconcile_errors_total(r.AddCounter("controller_runtime_reconcile_errors_total",
                                          "BindRequest reconciles that ended in an error",
                                          {"controller"})),
      reconcile_time_seconds(r.AddHistogram("controller_runtime_reconcile_time_seconds",
                                            "Duration of one BindRequest reconcile, in seconds",
                                            {"controller"}, ReconcileTimeBuckets())),
      active_workers(r.AddGauge("controller_runtime_active_workers",
                                "Workers reconciling a BindRequest now", {"controller"})
                         .With({kController})),
      max_concurrent_reconciles(r.AddGauge("controller_runtime_max_concurrent_reconciles",
                                           "Number of binder workers", {"controller"})
                                    .With({kController})),
      workqueue(r, kController) {
  // Every result is exported from the start (as 0), so rates work before the first bind.
  for (const char* result : {kSuccess, kError, kRequeue, kRequeueAfter}) {
    reconcile_total.With({kController, result});
  }
  reconcile_errors_total.With({kController});
  reconcile_time_seconds.With({kController});
}

void BinderMetrics::ObserveReconcile(const std::string& result, double seconds) {
  reconcile_total.With({kController, result}).Inc();
  if (result == kError) reconcile_errors_total.With({kController}).Inc();
  reconcile_time_seconds.With({kController}).Observe(seconds);
}

}  // namespace gantry::obs
