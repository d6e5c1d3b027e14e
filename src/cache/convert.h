// Converters from Kubernetes API objects (JSON exactly as the API server serves them) to the
// pieces of the cluster model (model/cluster.h).
//
// Each converter looks at one object only and either returns its record or an Error whose
// message names the offending field ("spec.resources.gpu.quota: must be -1 (unlimited) or >= 0
// (got -3)"). Relations between objects (a PodGroup's queue, a pod's PodGroup, a BindRequest's
// pod, priority class names) are resolved later, when the watch cache assembles a Cluster
// (watch_cache.h), because the objects arrive in any order.
//
// The semantics follow KAI Scheduler's cluster snapshot:
//  - Pod requests are what Kubernetes schedules with: the larger of the sum of the app containers
//    (plus restartable init containers, "sidecars") and the largest init container (plus the
//    sidecars started before it), plus spec.overhead.
//  - GPUs: whole devices from the nvidia.com/gpu request; a share of a device from the
//    `gpu-fraction` annotation (at least kMinGpuFraction; with `gpu-fraction-num-devices`
//    devices); GPU memory in MiB from
//    the `gpu-memory` annotation; MIG instances from nvidia.com/mig-<g>g.<m>gb requests.
//  - Pod status from phase, node, deletion timestamp and scheduling gates (ModelPodStatus).
//  - Host ports: spec.containers[].ports[] and those of restartable init containers with a
//    hostPort above 0 (protocol TCP and host IP 0.0.0.0 when unset), as Kubernetes' NodePorts
//    plugin reads them. ConfigMaps the pod needs: as Pod::config_maps says (KAI's ConfigMap
//    predicate).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/cluster.h"
#include "util/status.h"

namespace gantry::cache {

using Object = nlohmann::json;

// KAI's label and annotation keys (unchanged, so workloads written for KAI keep working).
inline constexpr const char* kQueueLabel = "kai.scheduler/queue";
inline constexpr const char* kPodGroupAnnotation = "pod-group-name";
inline constexpr const char* kSubGroupLabel = "kai.scheduler/subgroup-name";
inline constexpr const char* kGpuFractionAnnotation = "gpu-fraction";
inline constexpr const char* kGpuFractionDevicesAnnotation = "gpu-fraction-num-devices";
// The smallest `gpu-fraction` accepted: a BindRequest carries the portion with two decimals
// (spec.receivedGPU.portion), and a smaller fraction would be written as "0.00", which the binder
// refuses, so the pod would be placed and fail to bind every cycle.
inline constexpr double kMinGpuFraction = 0.005;
inline constexpr const char* kGpuMemoryAnnotation = "gpu-memory";
inline constexpr const char* kLastStartAnnotation = "kai.scheduler/last-start-timestamp";
inline constexpr const char* kStaleSinceAnnotation = "kai.scheduler/stale-podgroup-timestamp";
inline constexpr const char* kGpuCountLabel = "nvidia.com/gpu.count";
inline constexpr const char* kGpuMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr const char* kMigStrategyLabel = "nvidia.com/mig.strategy";
// The shared-GPU group of a pod (the binder's label; runai-gpu-group/<group> for each group of a
// pod spanning several devices).
inline constexpr const char* kGpuGroupLabel = "runai-gpu-group";
// The label of KAI's GPU reservation pods (the binder's, in namespace kai-resource-reservation).
inline constexpr const char* kAppLabel = "app";
inline constexpr const char* kReservationAppValue = "kai-resource-reservation";
// Where a running pod's resources sit on its node's NUMA zones (a JSON list of {zone, amount},
// written by KAI's NUMA placement exporter).
inline constexpr const char* kNumaPlacementObservedAnnotation =
    "kai.scheduler/numa-placement-observed";

// Extended resources by name (MIG profiles and other vendor devices). They are interned into a
// Cluster's ResourceNames when the cluster is assembled.
using NamedQuantities = std::vector<std::pair<std::string, double>>;

struct NodeRecord {
  Node node;  // allocatable without extended resources; name_rank and shape unset
  NamedQuantities extended;
};

// DRA (resource.k8s.io/v1). A device of a slice as an allocation result names it.
struct DeviceResult {
  std::string request;  // the claim's device request it satisfies
  std::string driver;
  std::string pool;
  std::string device;
  bool operator==(const DeviceResult&) const = default;
};

// One entry of a pod's spec.resourceClaims: the pod's name for it and the ResourceClaim it uses
// (spec.resourceClaims[].resourceClaimName, or for a template the claim generated for the pod as
// status.resourceClaimStatuses names it; empty until it is generated).
struct PodClaimRef {
  std::string name;
  std::string claim_name;
  bool from_template = false;
  bool operator==(const PodClaimRef&) const = default;
};

// KEP-5004: one container's request of an extended resource (a name with a domain outside
// kubernetes.io, nvidia.com/gpu included), a whole positive count. Device classes may back it.
struct ContainerExtendedRequest {
  int32_t container = 0;  // index among the init containers followed by the app containers
  std::string container_name;
  bool short_lived = false;  // an init container that is not a sidecar (restartPolicy Always)
  std::string resource;
  int64_t count = 0;
  // The resource's place among the names of the container's requests in byte order (the "j"
  // of the special claim's request name container-<i>-request-<j>).
  int32_t key_index = 0;
  bool operator==(const ContainerExtendedRequest&) const = default;
};

struct PodRecord {
  // The model pod with request, GPU kind, labels, selectors, affinities, tolerations and status
  // filled; job, pod_set, node and nominated_node are resolved at assembly.
  Pod pod;
  NamedQuantities extended;  // extended-resource requests (MIG instances, ...)
  std::string node_name;     // spec.nodeName
  std::string nominated_node_name;
  std::string scheduler_name;
  std::string pod_group;  // the pod-group-name annotation
  std::string subgroup;   // the kai.scheduler/subgroup-name label
  int64_t creation_ms = 0;
  SharedList<PodClaimRef> claims;  // spec.resourceClaims (DRA)
  // The containers' extended-resource requests (KEP-5004: resolved against device classes at
  // assembly).
  SharedList<ContainerExtendedRequest> extended_requests;
  // status.qosClass is Guaranteed (set by the API server at creation, never changed). A job is
  // Guaranteed (Job::qos_class, what the numa plugin reads) when all its pods are.
  bool qos_guaranteed = false;
};

struct SubGroupSpec {
  std::string name;
  int32_t min_member = 1;
  std::string parent;  // empty: under the PodGroup itself
  std::optional<TopologyConstraint> topology;
  std::optional<int32_t> min_sub_group;  // direct child sub-groups required (0 allowed)
  bool operator==(const SubGroupSpec&) const = default;
};

struct PodGroupRecord {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string queue;
  std::string priority_class;
  std::string preemptibility;  // "", "preemptible", "non-preemptible"
  int32_t min_member = 1;
  int64_t creation_ms = 0;
  bool deleting = false;
  SharedOptional<TopologyConstraint> topology;  // out of line: most PodGroups set none
  std::vector<SubGroupSpec> sub_groups;         // validated: unique names, known parents, no cycle
  std::optional<int32_t> min_sub_group;         // spec.minSubGroup (direct sub-groups)
  double preemption_delay_seconds = 0;          // spec.preemptionDelay (Go duration)
  std::optional<double> staleness_grace_period_seconds;  // spec.stalenessGracePeriod
  std::optional<int64_t> last_start_ms;
  std::optional<int64_t> stale_since_ms;
  // spec.schedulingBackoff: -1 (KAI's default, also when unset) has the PodGroup scheduled every
  // cycle; any other value has a scheduler try it once per node pool: while its last scheduling
  // condition (highest transitionID) names the PodGroup's node pool, the scheduler leaves it out
  // (KAI v0.17's isPodGroupUpForScheduler). That condition's node pool is read only when a
  // backoff is set.
  int32_t scheduling_backoff = -1;
  std::optional<std::string> last_condition_node_pool;
  // metadata.labels (the node-pool label's key is the scheduler's flag).
  LabelList labels;  // shared by equal lists (see SharedList)
  // Whether the scheduler leaves this PodGroup out (see scheduling_backoff). The PodGroup's node
  // pool is its `nodepool_label_key` label, "default" when absent or empty.
  bool BackedOff(std::string_view nodepool_label_key) const;
  bool operator==(const PodGroupRecord&) const = default;
};

struct BindRequestRecord {
  std::string name;
  std::string namespace_;
  std::string pod_name;
  std::string selected_node;
  std::string phase;    // "", "Pending", "Succeeded", "Failed"
  std::string pod_uid;  // of the owning Pod (ownerReferences); empty when not set
  Labels labels;        // metadata.labels: the node pool it was made for (node_pool.h)
  int32_t failed_attempts = 0;
  std::optional<int32_t> backoff_limit;
  // The binder gave up: phase Failed and no attempts left (KAI's rule). A failed request no
  // longer holds its pod, and the scheduler deletes it so the pod can be placed again.
  bool GaveUp() const {
    return phase == "Failed" && (!backoff_limit || failed_attempts >= *backoff_limit);
  }
  std::vector<std::string> gpu_groups;
  // spec.resourceClaimAllocations: the devices the scheduler chose per pod claim (by the pod's
  // name for the claim), which the binder writes into the claims.
  std::vector<std::pair<std::string, std::vector<DeviceResult>>> claim_allocations;
  // spec.extendedResourceClaimAllocation.allocation.devices.results (KEP-5004): the devices of
  // the claim the binder creates for the pod's DRA-backed extended resources.
  std::vector<DeviceResult> extended_allocation;
};

struct PriorityClassRecord {
  std::string name;
  int32_t value = 0;
  bool global_default = false;
};

// A DeviceClass: its name and the driver its selectors pin. Gantry reads one form of CEL
// selector, `device.driver == "<driver>"` (the form DRA drivers install); other selectors are
// ignored, so such a class matches every device of its driver. A class without a driver selector
// matches the devices of the driver named like the class.
struct DeviceClassRecord {
  std::string name;
  std::string driver;  // empty: none recognised
  // spec.extendedResourceName (KEP-5004): pods asking for this extended resource get devices of
  // the class on nodes without it; empty when unset. Every class is also reachable as
  // deviceclass.resource.kubernetes.io/<name>.
  std::string extended_resource_name;
  int64_t creation_ms = 0;  // metadata.creationTimestamp: the newer class wins a shared name
};

// The implicit extended resource name of every device class (KEP-5004).
inline constexpr std::string_view kDeviceClassResourcePrefix =
    "deviceclass.resource.kubernetes.io/";
// Kubernetes' test for an extended resource name: a qualified name with a domain outside
// kubernetes.io, not starting with "requests.".
bool IsExtendedResourceName(std::string_view name);
// The extended resources of `requests` that `class_of` (resource name -> device class) maps,
// with the special claim's device requests and container mappings Kubernetes derives for them
// (app containers and sidecars get a request each; plain init containers reuse the devices of
// containers not started yet, and share one request, the largest). Sorted by resource name.
std::vector<DraExtendedResource> DraExtendedResources(
    const std::vector<ContainerExtendedRequest>& requests,
    const std::map<std::string, std::string, std::less<>>& class_of);

// A ResourceSlice: devices of a driver in a pool, on one node (spec.nodeName) or on every node
// (spec.allNodes). Slices limited by spec.nodeSelector or per-device node selection are refused.
struct ResourceSliceRecord {
  std::string name;
  std::string driver;
  std::string pool;
  std::string node_name;  // empty with all_nodes
  bool all_nodes = false;
  std::vector<std::string> devices;  // spec.devices[].name
};

// A ResourceClaim: `claim` holds name, namespace, labels, device class and count (the sum of its
// requests, which must all ask for an exact count of one device class, without selectors) and
// device_requests; its allocation and reservations are resolved at assembly.
struct ResourceClaimRecord {
  ResourceClaim claim;
  std::string uid;
  bool allocated = false;             // status.allocation is set
  std::vector<DeviceResult> results;  // status.allocation.devices.results
  struct Consumer {
    std::string resource;  // "pods" for pods
    std::string name;
    std::string uid;
  };
  std::vector<Consumer> reserved_for;  // status.reservedFor
};

// A NodeResourceTopology (topology.node.k8s.io/v1alpha2): the NUMA layout of the node of the same
// name. Read as KAI's numa support reads it:
//  - zones of type "Node" (NUMA nodes) only; other zone types (sockets, dies, ...) are skipped.
//    Zones are ordered by the number their name ends with ("node-0" < "node-1" < "node-10"),
//    numbered before unnumbered ones, then by name: a zone's index is its place in that order;
//  - per zone, each resource's allocatable and available amounts (cpu in millicores, others in
//    base units, rounded up);
//  - the Topology Manager policy and scope from the attributes topologyManagerPolicy /
//    topologyManagerScope (scope defaults to container), else from the deprecated
//    topologyPolicies[0] ("SingleNUMANodePodLevel", ...); neither: policy none.
// Refused, naming the field: a missing name or zone type, a zone without a name or with one
// used twice, a resource without a name or listed twice in a zone, a malformed or negative
// amount, a policy or scope the kubelet does not have. KAI reads an unknown policy as none;
// Gantry reports it, since a misspelt policy would silently turn NUMA placement off for the
// node.
struct NodeTopologyRecord {
  std::string node_name;             // metadata.name
  std::optional<NumaTopology> numa;  // empty: the object lists no zone of type "Node"
};

// A ConfigMap: only its address is read (KAI's ConfigMap predicate asks whether a pod's
// ConfigMaps exist, never what they hold).
struct ConfigMapRecord {
  std::string namespace_;
  std::string name;
};

// The model status of a pod (KAI's pod status rules):
//   Succeeded / Failed / Unknown phases map to themselves;
//   terminating (deletionTimestamp) on a node -> Releasing; terminating and never placed ->
//   Deleted; Running -> Running; Pending on a node -> Bound; Pending with scheduling gates ->
//   Gated; otherwise Pending.
PodStatus ModelPodStatus(std::string_view phase, bool has_node, bool terminating, bool gated);

// Milliseconds since the epoch of an RFC 3339 timestamp; nullopt when absent or malformed.
std::optional<int64_t> TimestampMs(const Object& object, std::initializer_list<const char*> path);

Result<NodeRecord> ConvertNode(const Object& node);
Result<PodRecord> ConvertPod(const Object& pod);
// Queue (scheduling.run.ai/v2): quotas from spec.resources (cpu in millicores, memory in
// megabytes, gpu in devices; -1 unlimited), spec.parentQueue, spec.priority, min runtimes.
Result<Queue> ConvertQueue(const Object& queue);
Result<PodGroupRecord> ConvertPodGroup(const Object& pod_group);
Result<Topology> ConvertTopology(const Object& topology);
Result<NodeTopologyRecord> ConvertNodeResourceTopology(const Object& nrt);
// The observed-placement annotation's value (kNumaPlacementObservedAnnotation): zones by id with
// their amounts (units as in NodeTopologyRecord); `field` prefixes error messages.
Result<std::vector<NumaZonePlacement>> ConvertNumaPlacement(const std::string& value,
                                                            const std::string& field);
Result<BindRequestRecord> ConvertBindRequest(const Object& bind_request);
Result<ConfigMapRecord> ConvertConfigMap(const Object& config_map);
Result<PriorityClassRecord> ConvertPriorityClass(const Object& priority_class);
// DRA objects (resource.k8s.io/v1).
Result<DeviceClassRecord> ConvertDeviceClass(const Object& device_class);
Result<ResourceSliceRecord> ConvertResourceSlice(const Object& slice);
Result<ResourceClaimRecord> ConvertResourceClaim(const Object& claim);
// A pod's spec.resourceClaims (also filled by ConvertPod into PodRecord::claims).
Result<std::vector<PodClaimRef>> ConvertPodClaims(const Object& pod);
// The containers' extended-resource requests of a pod spec (PodRecord::extended_requests);
// throws BadField on a malformed one (for use inside a converter).
std::vector<ContainerExtendedRequest> ContainerExtendedRequests(const Object& spec);
// A list of allocation results (status.allocation.devices.results, or the same field of a
// BindRequest's resourceClaimAllocations); `field` prefixes error messages.
Result<std::vector<DeviceResult>> ConvertDeviceResults(const Object& results,
                                                       const std::string& field);

}  // namespace gantry::cache
