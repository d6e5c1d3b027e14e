// What the status controllers write, computed from API objects (KAI's pkg/podgroupcontroller and
// pkg/queuecontroller semantics), with no I/O: the controllers (podgroup_controller.h,
// queue_controller.h) feed these functions from their watch caches.
//
// PodGroup status.resourcesStatus, from the PodGroup's pods (annotation pod-group-name):
//  - requested: every Pending or Running pod's requests (kube::PodSpecRequests, the arithmetic
//    the scheduler and binder use) plus its GPU-sharing request: gpu-fraction (times
//    gpu-fraction-num-devices) as nvidia.com/gpu, gpu-memory (times the same count) as
//    run.ai/gpu.memory;
//  - allocated: the same for every pod holding its node (Running, or Pending with PodScheduled
//    True), with the GPU share it received: when the binder marked the pod
//    received-resource-type: Fraction, the gpu-fraction annotation, or the gpu-memory annotation
//    over the node's per-device memory (label nvidia.com/gpu.memory);
//  - allocatedNonPreemptible: `allocated` when the PodGroup is non-preemptible (spec
//    preemptibility, else its priority class's value >= 100); left as it was otherwise (as KAI).
// Succeeded and Failed pods count nothing.
//
// Queue status: childQueues (the queues naming it as spec.parentQueue, by name) and requested /
// allocated / allocatedNonPreemptible = the sums over its child queues' status and its PodGroups'
// resourcesStatus. A parent is recomputed when a child's status changes, so sums reach the root.
//
// "Unchanged" compares quantities by value ("1Gi" equals "1073741824"), so a status is written
// only when an amount, a resource or a child changed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/quantity.h"
#include "util/status.h"

namespace gantry::statusctl {

using kube::Object;
using kube::ResourceQuantities;

// KAI's names.
inline constexpr const char* kPodGroupAnnotation = "pod-group-name";
inline constexpr const char* kGpuFractionAnnotation = "gpu-fraction";
inline constexpr const char* kGpuFractionDevicesAnnotation = "gpu-fraction-num-devices";
inline constexpr const char* kGpuMemoryAnnotation = "gpu-memory";
inline constexpr const char* kReceivedTypeAnnotation = "received-resource-type";
inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr const char* kGpuMemoryResource = "run.ai/gpu.memory";
inline constexpr const char* kNodeGpuMemoryLabel = "nvidia.com/gpu.memory";
// Priority at and above which a PodGroup without spec.preemptibility is non-preemptible, and the
// priority of one whose class is unknown and with no global default class.
inline constexpr int32_t kNonPreemptiblePriority = 100;
inline constexpr int32_t kDefaultPodGroupPriority = 50;

struct PodResources {
  ResourceQuantities requested;
  ResourceQuantities allocated;
};

// The per-device GPU memory (MiB) of a node, from its nvidia.com/gpu.memory label; nullopt when
// the node or the label is unknown.
using NodeGpuMemory = std::function<std::optional<double>(const std::string& node_name)>;

// One pod's share. Errors name the pod's field (a malformed request or annotation, a fraction
// by memory on a node without the memory label).
Result<PodResources> PodStatusResources(const Object& pod, const NodeGpuMemory& node_gpu_memory);

// KAI's rule: explicit spec.preemptibility wins, else priority < 100 is preemptible.
bool IsPreemptible(const std::string& preemptibility, int32_t priority);

struct ResourcesStatus {
  ResourceQuantities requested;
  ResourceQuantities allocated;
  ResourceQuantities allocated_non_preemptible;
  bool operator==(const ResourcesStatus&) const = default;
};

// A ResourceList object as written to status: {"cpu": "1500m", "memory": "1073741824"}.
Object ToResourceList(const ResourceQuantities& q);
// The fields of a status object ({"requested": {...}, "allocated": {...},
// "allocatedNonPreemptible": {...}}); absent lists are empty. Errors name the field under
// `field`.
Result<ResourcesStatus> ParseResourcesStatus(const Object* status, const std::string& field);
Object ToJson(const ResourcesStatus& s);

// The resourcesStatus a PodGroup should have, given its pods' shares and the one it has now.
ResourcesStatus PodGroupResourcesStatus(const std::vector<PodResources>& pods, bool preemptible,
                                        const ResourcesStatus& current);

struct QueueStatus {
  std::vector<std::string> child_queues;  // sorted by name
  ResourcesStatus resources;
  bool operator==(const QueueStatus&) const = default;
};

// A queue's status from its children's status and its PodGroups' resourcesStatus.
QueueStatus QueueStatusFrom(std::vector<std::string> child_names,
                            const std::vector<ResourcesStatus>& children,
                            const std::vector<ResourcesStatus>& pod_groups);

// Writes the fields into an object's status (a copy of the cached object, then PUT to its status
// subresource with its resourceVersion, so a concurrent writer's change is never overwritten:
// the server answers Conflict). Empty lists are removed, as KAI's omitempty fields are.
void SetPodGroupResourcesStatus(Object& pod_group, const ResourcesStatus& s);
void SetQueueStatus(Object& queue, const QueueStatus& s);
// The status a Queue object holds now (malformed fields: an error naming them).
Result<QueueStatus> ParseQueueStatus(const Object& queue);

}  // namespace gantry::statusctl
