// `gantry queue-controller` (KAI's queue-controller): keeps each Queue's status.childQueues and
// its requested / allocated / allocatedNonPreemptible sums (status_resources.h) and exports
// KAI's queue metrics. Level-triggered from watch caches of Queues and PodGroups: a queue is
// reconciled when it, one of its child queues or one of its PodGroups changes, so a change
// climbs the hierarchy one parent at a time. The status is written only when it changed, through
// the status subresource with the cached resourceVersion (conflicts retried).
//
// Metrics (namespace --metrics-namespace, default "kai"; gauges with labels queue_name,
// queue_metadata_name, queue_display_name and one per --queue-label-to-metric-label entry):
//   <ns>_queue_info                    1 per queue
//   <ns>_queue_deserved_gpus           spec.resources.gpu.quota
//   <ns>_queue_quota_cpu_cores         spec.resources.cpu.quota / 1000 (-1 stays -1: unlimited)
//   <ns>_queue_quota_memory_bytes      spec.resources.memory.quota * 1e6 (-1 stays -1)
//   <ns>_queue_allocated_gpus          status.allocated of the first resource named */gpu
//   <ns>_queue_allocated_cpu_cores     status.allocated cpu
//   <ns>_queue_allocated_memory_bytes  status.allocated memory
// (allocated values rounded to 4 decimals). A deleted queue's series are removed.
#pragma once

#include <iosfwd>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/informer.h"
#include "observability/metrics.h"
#include "statusctl/process.h"
#include "statusctl/status_resources.h"

namespace gantry::statusctl {

struct QueueControllerOptions {
  ProcessOptions process;
  std::string metrics_namespace = "kai";
  // Queue label key -> metric label name (--queue-label-to-metric-label foo=bar,baz=qux).
  std::map<std::string, std::string> queue_label_to_metric_label;
  // Queue label key -> value when the queue lacks the label (default "").
  std::map<std::string, std::string> queue_label_to_default_metric_value;
};

// Parses KAI's map flag form "k1=v1,k2=v2" (empty: no entries); errors name the bad entry.
Result<std::map<std::string, std::string>> ParseStringMapFlag(const std::string& text);

// The Queue object to write (with the new status), or nullopt when its status is already right.
Result<std::optional<Object>> QueueStatusUpdate(const Object& queue,
                                                const std::vector<kube::ObjectPtr>& child_queues,
                                                const std::vector<kube::ObjectPtr>& pod_groups);

// KAI's queue gauges in a registry.
class QueueMetrics {
 public:
  QueueMetrics(obs::Registry& registry, const QueueControllerOptions& options);
  // Sets the queue's series (replacing earlier ones, whose extra labels may differ).
  void Set(const Object& queue);
  // Removes the series of queue `name`.
  void Reset(const std::string& name);

 private:
  std::vector<std::string> queue_label_keys_;  // sorted; parallel to the metric label names
  std::map<std::string, std::string> defaults_;
  std::vector<obs::GaugeFamily*> families_;  // info first
  std::mutex mu_;
};

int RunQueueController(const QueueControllerOptions& options, std::ostream& err);

}  // namespace gantry::statusctl
