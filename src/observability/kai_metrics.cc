#include "observability/kai_metrics.h"

namespace gantry::obs {

std::vector<double> KaiLatencyBucketsMs() { return ExponentialBuckets(5, 2, 10); }

namespace {

// controller-runtime's reconcile_time_seconds buckets.
std::vector<double> ReconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

}  // namespace

SchedulerMetrics::SchedulerMetrics(Registry& r)
    : e2e_scheduling_latency_ms(
          r.AddGauge("e2e_scheduling_latency_milliseconds",
                     "Duration of the last scheduling cycle (every action), in milliseconds")
              .With({})),
      open_session_latency_ms(
          r.AddGauge("open_session_latency_milliseconds",
                     "Duration of the last session opening (plugins included), in milliseconds")
              .With({})),
      close_session_latency_ms(
          r.AddGauge("close_session_latency_milliseconds",
                     "Duration of the last session closing (plugins included), in milliseconds")
              .With({})),
      action_latency_ms(r.AddGauge("action_scheduling_latency_milliseconds",
                                   "Duration of each action in the last cycle, in milliseconds",
                                   {"action"})),
      plugin_latency_ms(r.AddGauge("plugin_scheduling_latency_milliseconds",
                                   "Duration of each plugin's session callbacks in the last "
                                   "cycle, in milliseconds",
                                   {"plugin", "OnSession"})),
      task_scheduling_latency_ms(
          r.AddHistogram("task_scheduling_latency_milliseconds",
                         "Time from a pod's creation to the scheduler's bind decision, in "
                         "milliseconds",
                         {}, KaiLatencyBucketsMs())
              .With({})),
      task_bind_latency_ms(r.AddHistogram("task_bind_latency_milliseconds",
                                          "Time the scheduler spends handing a pod to the "
                                          "binder (BindRequest creation), in milliseconds",
                                          {}, KaiLatencyBucketsMs())
                               .With({})),
      podgroups_scheduled(r.AddCounter("podgroups_scheduled_by_action",
                                       "Pod groups scheduled, by action", {"action"})),
      podgroups_acted_on(r.AddCounter("podgroups_acted_on_by_action",
                                      "Pod groups an action tried, by action", {"action"})),
      scenarios_simulated(r.AddCounter("scenarios_simulation_by_action",
                                       "Victim scenarios simulated, by action", {"action"})),
      scenarios_filtered(r.AddCounter("scenarios_filtered_by_action",
                                      "Victim scenarios rejected before simulation, by action",
                                      {"action"})),
      preemption_attempts(
          r.AddCounter("total_preemption_attempts", "Preemption attempts since start").With({})),
      evicted_pods(r.AddCounter("pod_group_evicted_pods_total", "Pods evicted, by pod group",
                                {"podgroup", "namespace", "uid", "nodepool", "action"})),
      queue_fair_share_cpu_cores(r.AddGauge("queue_fair_share_cpu_cores",
                                            "Fair share of each queue: CPU cores", {"queue_name"})),
      queue_fair_share_memory_gb(r.AddGauge(
          "queue_fair_share_memory_gb", "Fair share of each queue: memory in GB", {"queue_name"})),
      queue_fair_share_gpu(
          r.AddGauge("queue_fair_share_gpu", "Fair share of each queue: GPUs", {"queue_name"})) {}

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
                                    .With({kController})) {
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
