// `gantry podgroup-controller` (KAI's podgroup-controller): keeps each PodGroup's
// status.resourcesStatus (requested, allocated, allocatedNonPreemptible; status_resources.h)
// equal to what its pods ask for and hold. Level-triggered: a PodGroup is reconciled when it or
// one of its pods (annotation pod-group-name) changes, from watch caches of PodGroups, pods,
// nodes (GPU memory labels) and PriorityClasses; the status is written only when it changed,
// through the status subresource with the cached resourceVersion (a conflict is retried once the
// watch has the newer object). KAI's PodGroup conditions are left to the scheduler.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kube/informer.h"
#include "statusctl/process.h"
#include "statusctl/status_resources.h"

namespace gantry::statusctl {

struct PodGroupControllerOptions {
  ProcessOptions process;
};

// The PodGroup's priority: its class's value, else the global default class's, else 50.
using PriorityOf = std::function<int32_t(const std::string& priority_class_name)>;

// The PodGroup object to write (with the new resourcesStatus), or nullopt when its status is
// already right. Errors name the PodGroup and the field (a pod's malformed request, a malformed
// status).
Result<std::optional<Object>> PodGroupStatusUpdate(const Object& pod_group,
                                                   const std::vector<kube::ObjectPtr>& pods,
                                                   const NodeGpuMemory& node_gpu_memory,
                                                   const PriorityOf& priority_of);

int RunPodGroupController(const PodGroupControllerOptions& options, std::ostream& err);

}  // namespace gantry::statusctl
