#include "actions/victim_search/eviction_messages.h"

#include <optional>
#include <string>
#include <vector>

#include "actions/victim_search/message_memo.h"

namespace gantry {

namespace {
std::string QueueDetailsText(const Queue& queue, const std::optional<Quantities>& allocated,
                             const std::optional<Quantities>& deserved,
                             const std::optional<Quantities>& fair_share) {
  auto text = [](const std::optional<Quantities>& v) {
    if (!v) return std::string("?");
    return "GPU: " + Humanize((*v)[QueueResource::kGpu], 1) +
           ", CPU: " + Humanize((*v)[QueueResource::kCpu], 1000) +
           " (cores), memory: " + Humanize((*v)[QueueResource::kMemory], 1e9) + " (GB)";
  };
  return queue.name + " uses <" + text(allocated) + "> with a quota of <" + text(deserved) +
         ">, fair-share of <" + text(fair_share) + "> and queue priority of <" +
         std::to_string(queue.priority) + ">.";
}

// KAI's queue details line (reclaim messages name the two queues).
std::string QueueDetails(const Session& ssn, QueueId q) {
  const Queue& queue = ssn.cluster().queues[q];
  const auto allocated = ssn.QueueAllocated(q);
  const auto deserved = ssn.QueueDeserved(q);
  const auto fair_share = ssn.QueueFairShare(q);
  if (ssn.params().solver_shortcuts) {
    return victim_search::MemoizedQueueDetails(q, queue, allocated, deserved, fair_share,
                                               QueueDetailsText);
  }
  return QueueDetailsText(queue, allocated, deserved, fair_share);
}
}  // namespace

std::string EvictionMessage(const Session& ssn, EvictionAction action, PodId victim,
                            JobId preemptor) {
  const auto& c = ssn.cluster();
  const Pod& pod = c.pods[victim];
  const Job& job = c.jobs[preemptor];
  switch (action) {
    case EvictionAction::kPreempt:
      return "Pod " + pod.namespace_ + "/" + pod.name +
             " was preempted by higher priority workload " + job.namespace_ + "/" + job.name;
    case EvictionAction::kConsolidation:
      return "Pod " + pod.namespace_ + "/" + pod.name +
             " was preempted and rescheduled due to bin packing (resource consolidation) "
             "procedure";
    case EvictionAction::kReclaim: {
      std::string msg = "Pod " + pod.namespace_ + "/" + pod.name + " was preempted by workload " +
                        job.namespace_ + "/" + job.name + ".";
      QueueId reclaimer_q = job.queue;
      QueueId reclaimee_q = c.jobs[pod.job].queue;
      if (c.queues[reclaimer_q].parent != c.queues[reclaimee_q].parent) {
        reclaimer_q = c.queues[reclaimer_q].parent;
        reclaimee_q = c.queues[reclaimee_q].parent;
      }
      if (reclaimer_q == kNone || reclaimee_q == kNone) return msg + "\n";
      return msg + "\n" + QueueDetails(ssn, reclaimee_q) + "\n" + QueueDetails(ssn, reclaimer_q);
    }
  }
  return "";
}

}  // namespace gantry
