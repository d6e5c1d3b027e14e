// KAI capacity_policy: queue limits and the non-preemptible quota.
#include <string>

#include "framework/session.h"
#include "plugins/proportion/plugin.h"

namespace gantry::proportion {

namespace {

constexpr double kMilliCpuToCores = 1000;
constexpr double kMemoryToGb = 1e9;

std::string OverLimitMessage(const std::string& queue, QueueResource r, double max_allowed,
                             double used, double requested) {
  std::string what, details;
  switch (r) {
    case QueueResource::kGpu:
      what = "GPUs";
      details = "Limit is " + Humanize(max_allowed, 1) + " GPUs, currently " + Humanize(used, 1) +
                " GPUs allocated and workload requested " + Humanize(requested, 1) + " GPUs";
      break;
    case QueueResource::kCpu:
      what = "CPU cores";
      details = "Limit is " + Humanize(max_allowed, kMilliCpuToCores) + " cores, currently " +
                Humanize(used, kMilliCpuToCores) + " cores allocated and workload requested " +
                Humanize(requested, kMilliCpuToCores) + " cores";
      break;
    case QueueResource::kMemory:
      what = "memory";
      details = "Limit is " + Humanize(max_allowed, kMemoryToGb) + " GB, currently " +
                Humanize(used, kMemoryToGb) + " GB allocated and workload requested " +
                Humanize(requested, kMemoryToGb) + " GB";
      break;
  }
  return queue + " quota has reached the allowable limit of " + what + ". " + details;
}

std::string NonPreemptibleOverQuotaMessage(const std::string& queue, QueueResource r,
                                           double deserved, double used,
                                           const Quantities& requested) {
  std::string details;
  switch (r) {
    case QueueResource::kGpu:
      details = "Workload requested " + FormatNumber(requested[r]) + " GPUs, but " + queue +
                " quota is " + Humanize(deserved, 1) + " GPUs, while " + Humanize(used, 1) +
                " GPUs are already allocated for non-preemptible pods.";
      break;
    case QueueResource::kCpu:
      details = "Workload requested " + Humanize(requested[r], kMilliCpuToCores) +
                " CPU cores, but " + queue + " quota is " + Humanize(deserved, kMilliCpuToCores) +
                " cores, while " + Humanize(used, kMilliCpuToCores) +
                " cores are already allocated for non-preemptible pods.";
      break;
    case QueueResource::kMemory:
      details = "Workload requested " + Humanize(requested[r], kMemoryToGb) + " GB memory, but " +
                queue + " quota is " + Humanize(deserved, kMemoryToGb) + " GB, while " +
                Humanize(used, kMemoryToGb) + " GB are already allocated for non-preemptible pods.";
      break;
  }
  return "Non-preemptible workload is over quota. " + details +
         " Use a preemptible workload to go over quota.";
}

}  // namespace

SchedulableResult ProportionPlugin::CheckCapacity(const Session& s, JobId j,
                                                  const Quantities& requested,
                                                  bool check_limit) const {
  const Cluster& c = s.cluster();
  const Job& job = c.jobs[j];
  if (check_limit) {
    for (QueueId q = job.queue; q != kNone; q = c.queues[q].parent) {
      const QueueShare& sh = shares_[q];
      for (auto res : kQueueResources) {
        const ResourceShare& r = sh[res];
        if (r.max_allowed == kUnlimited || requested[res] == 0) continue;
        if (r.max_allowed < r.allocated + requested[res]) {
          return {
              false, "OverLimit",
              OverLimitMessage(c.queues[q].name, res, r.max_allowed, r.allocated, requested[res])};
        }
      }
    }
  }
  if (job.preemptible) return {};
  for (QueueId q = job.queue; q != kNone; q = c.queues[q].parent) {
    const QueueShare& sh = shares_[q];
    for (auto res : kQueueResources) {
      const ResourceShare& r = sh[res];
      if (r.deserved == kUnlimited || requested[res] == 0) continue;
      if (r.deserved < r.allocated_non_preemptible + requested[res]) {
        return {false, "NonPreemptibleOverQuota",
                NonPreemptibleOverQuotaMessage(c.queues[q].name, res, r.deserved,
                                               r.allocated_non_preemptible, requested)};
      }
    }
  }
  return {};
}

Quantities ProportionPlugin::Requested(const Cluster& c, std::span<const PodId> pods) {
  Quantities q;
  for (PodId p : pods) q += PodQuantities(c, c.pods[p]);
  return q;
}

// The pods' requests as the job-level capacity checks count them: a GPU-memory request as the
// smallest fraction it can be, on the node with the most GPU memory (KAI's getRequiredQuota).
Quantities ProportionPlugin::RequestedQuota(const Cluster& c, std::span<const PodId> pods) {
  Quantities q;
  for (PodId p : pods) {
    q += c.pods[p].RequestQuantities();
    q[QueueResource::kGpu] += c.pods[p].GpuMemoryAsDevices(c.max_node_gpu_memory_mib);
  }
  return q;
}

}  // namespace gantry::proportion
