// The cluster model: nodes, pods, pod groups (jobs) and queues in flat, id-indexed vectors.
//
// A Cluster is the scheduler's picture of the world between cycles. The scenario loader builds it
// from a file today; the live mode's watch cache builds and updates the same structure from
// Kubernetes objects. Objects refer to each other by index (NodeId, PodId, JobId, QueueId), never
// by name, so the hot path does no string lookups. Names are resolved once, at load time, through
// the *_index maps.
//
// Only the observed state lives here (pod status, node, GPU groups). A scheduling session copies
// that small mutable part into its own arrays (see framework/session.h) and never touches the
// Cluster, so a failed or discarded cycle leaves it as it was.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model/numa.h"
#include "model/resources.h"
#include "model/shared_list.h"
#include "model/status.h"

namespace gantry {

using NodeId = int32_t;
using PodId = int32_t;
using JobId = int32_t;
using QueueId = int32_t;
inline constexpr int32_t kNone = -1;

// A label (key, value), and lists of them that equal ones may share (see SharedList).
using Label = std::pair<std::string, std::string>;
using LabelList = SharedList<Label>;
using LabelListPool = SharedListPool<Label, StringPairHash>;

// A sorted key/value list: labels, node selectors. Small, so a vector beats a map. Copies share
// the list until one of them is written (the pods of one job carry the same labels).
class Labels {
 public:
  void Set(std::string key, std::string value);
  const std::string* Get(std::string_view key) const;
  bool Has(std::string_view key) const { return Get(key) != nullptr; }
  const std::vector<Label>& items() const { return items_.items(); }
  bool empty() const { return items_.empty(); }
  // Holds the pool's list equal to this one (see SharedListPool::Intern).
  void ShareFrom(LabelListPool& pool) { items_ = pool.Intern(std::move(items_)); }
  bool SharesWith(const Labels& other) const { return items_.SharesWith(other.items_); }

 private:
  LabelList items_;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct Toleration {
  std::string key;           // empty with operator Exists tolerates everything
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty tolerates every effect
  bool operator==(const Toleration&) const = default;
};
struct TolerationHash {
  size_t operator()(const Toleration& t) const {
    const std::hash<std::string> h;
    return ((h(t.key) * 31 + h(t.op)) * 31 + h(t.value)) * 31 + h(t.effect);
  }
};

// One requirement of a node selector term or label selector (In, NotIn, Exists, DoesNotExist,
// Gt, Lt).
struct SelectorRequirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
};

// Terms are ORed; the requirements inside a term are ANDed (Kubernetes' NodeSelector).
struct NodeSelectorTerm {
  std::vector<SelectorRequirement> requirements;
};

struct LabelSelector {
  Labels match_labels;
  std::vector<SelectorRequirement> expressions;
  bool Matches(const Labels& labels) const;
};

struct Pod;

// An inter-pod (anti-)affinity term.
struct PodAffinityTerm {
  LabelSelector selector;
  std::string topology_key;
  std::vector<std::string> namespaces;  // empty: the pod's own namespace
  // Whether `other` is in the term's namespaces (those of `owner`, the pod the term belongs to,
  // when none are named) and has labels the selector matches.
  bool MatchesPod(const Pod& owner, const Pod& other) const;
};

// A preferred inter-pod (anti-)affinity term (preferredDuringSchedulingIgnoredDuringExecution):
// the term and its weight, 1 to 100.
struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;
};

// A port of the node a pod's container binds (spec.containers[].ports[] with a hostPort):
// Kubernetes' NodePorts rules. Read as the API defaults it: protocol TCP and host IP 0.0.0.0
// (every address of the node) when unset. Two pods conflict on a node when they use the same
// protocol and port and the same host IP, or either one 0.0.0.0.
struct HostPort {
  std::string host_ip = "0.0.0.0";
  std::string protocol = "TCP";
  int32_t port = 0;  // > 0
  bool ConflictsWith(const HostPort& o) const {
    return port == o.port && protocol == o.protocol &&
           (host_ip == o.host_ip || host_ip == kAnyHostIp || o.host_ip == kAnyHostIp);
  }
  bool operator==(const HostPort&) const = default;
  static constexpr std::string_view kAnyHostIp = "0.0.0.0";
};

enum class GpuRequestKind : uint8_t { kNoGpu, kWhole, kFraction, kMemory, kMig };

struct TopologyConstraint {
  std::string topology;
  std::string required_level;
  std::string preferred_level;
  bool operator==(const TopologyConstraint&) const = default;
};

// A Topology object (kai.scheduler/v1alpha1): node-label keys from the outermost domain level to
// the innermost (e.g. zone, block, rack). A node belongs to the topology only if it has every one.
struct Topology {
  std::string name;
  std::vector<std::string> levels;
};

// DRA (resource.k8s.io): a ResourceSlice publishes `device_count` devices ("0".."n-1") of a driver
// on one node, or on every node.
struct ResourceSlice {
  std::string name;
  std::string driver;
  std::string device_class;
  NodeId node = -1;  // kNone: available on all nodes
  int32_t device_count = 0;
  // As the API names them (live mode): the slice's pool and its devices' names, one per device.
  // Empty in scenarios, where the pool is the node's name (or the slice's, for all nodes) and
  // device i is named "i".
  std::string pool;
  std::vector<std::string> device_names;
};

// A device of a slice: (slice index, device index).
struct DeviceRef {
  int32_t slice = 0;
  int32_t device = 0;
  bool operator==(const DeviceRef&) const = default;
};

// A ResourceClaim asking for `count` devices of one device class. Its observed status: the
// devices allocated to it (empty: not allocated) and who holds a reservation on it.
struct ResourceClaim {
  std::string name;
  std::string namespace_;
  Labels labels;
  std::string device_class;
  int32_t count = 0;
  bool from_template = false;  // generated from a pod's ResourceClaimTemplate
  // Observed state.
  std::vector<DeviceRef> allocation;
  bool allocated = false;
  int32_t other_consumers = 0;    // reservations by pods outside the cluster model
  std::vector<int32_t> reserved;  // pods (PodId) holding a reservation
  // Live mode: the name of the claim's device request each of its `count` devices is for (the
  // requests in order, each repeated by its count); empty in scenarios.
  std::vector<std::string> device_requests;
  bool IsGpuClaim() const;  // KAI: the device class name contains "gpu"
};

// KEP-5004 (DRA-backed extended resources): one of a pod's extended resources that a
// DeviceClass backs (spec.extendedResourceName, or the implicit name
// deviceclass.resource.kubernetes.io/<class>). On a node that reports none of the resource in
// its allocatable, the pod gets devices of the class through a ResourceClaim the binder creates
// for it (KAI's "special claim"): one exact-count device request per (container, resource),
// named container-<i>-request-<j>, which the containers map onto (pod
// status.extendedResourceClaimStatus). Live mode only: scenarios have no such requests.
struct ExtendedDeviceRequest {
  std::string name;  // container-<i>-request-<j>
  int64_t count = 0;
  bool operator==(const ExtendedDeviceRequest&) const = default;
};
struct ExtendedResourceMapping {
  std::string container;
  std::string request;  // an ExtendedDeviceRequest's name
  bool operator==(const ExtendedResourceMapping&) const = default;
};
struct DraExtendedResource {
  std::string resource;      // the extended resource name the pod asks for
  std::string device_class;  // the DeviceClass backing it
  std::vector<ExtendedDeviceRequest> requests;
  std::vector<ExtendedResourceMapping> mappings;
  int64_t Devices() const {
    int64_t n = 0;
    for (const auto& r : requests) n += r.count;
    return n;
  }
  bool operator==(const DraExtendedResource&) const = default;
};

struct Node {
  std::string name;
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
  Resources allocatable;  // pods slot count in allocatable.pods
  double gpu_memory_mib = 0;
  int gpu_count = 0;         // physical devices (the nvidia.com/gpu.count label)
  std::string mig_strategy;  // "", "single", "mixed"
  // Rank of the name in byte order among all nodes: equal scores are broken by it.
  int32_t name_rank = 0;
  int32_t dra_gpus = 0;  // GPUs published by DRA ResourceSlices (included in allocatable.gpus)
  // Live mode: the extended resources (names with a domain, nvidia.com/gpu included) the node
  // reports a non-zero allocatable of, sorted. A DRA-backed extended resource among them is
  // served by the node's device plugin, not through DRA (KEP-5004).
  std::vector<std::string> extended_resources;
  bool HasExtendedResource(std::string_view resource) const;
  // Nodes with the same value have the same allocatable resources, taints, schedulability and
  // MIG setup: they differ only in name and labels (set by Cluster::Finalize).
  int32_t shape = 0;
  // The node's NUMA layout, when a NodeResourceTopology describes it.
  std::optional<NumaTopology> numa;
};

struct Pod {
  std::string name;
  std::string namespace_;
  std::string uid;
  JobId job = kNone;
  int32_t pod_set = 0;  // index into the job's pod_sets

  // What the pod asks for. request.gpus holds whole GPUs only; shared-GPU requests are described
  // by gpu_kind / gpu_fraction / gpu_memory_mib / gpu_devices.
  Resources request;
  GpuRequestKind gpu_kind = GpuRequestKind::kNoGpu;
  bool legacy_mig = false;
  int32_t gpu_devices = 0;
  double gpu_fraction = 0;
  double gpu_memory_mib = 0;
  // DRA: the claims the pod references (the GPUs they ask for: dra_gpus, below).
  std::vector<int32_t> claims;
  // Live mode: the pod's name for each of `claims` (spec.resourceClaims[].name), as BindRequests
  // name them; empty in scenarios.
  std::vector<std::string> claim_names;
  // KEP-5004: the pod's extended resources backed by device classes, by resource name.
  std::vector<DraExtendedResource> dra_extended;

  Labels labels;
  Labels node_selector;
  std::vector<NodeSelectorTerm> required_node_affinity;
  // Most pods carry the same tolerations (admission's defaults): shared (see SharedList).
  SharedList<Toleration> tolerations;
  std::vector<PodAffinityTerm> pod_affinity;
  std::vector<PodAffinityTerm> pod_anti_affinity;
  // Preferred inter-pod affinity and anti-affinity: scored by the podaffinity plugin, never a
  // filter.
  std::vector<WeightedPodAffinityTerm> preferred_pod_affinity;
  std::vector<WeightedPodAffinityTerm> preferred_pod_anti_affinity;
  bool HasPreferredPodAffinity() const {
    return !preferred_pod_affinity.empty() || !preferred_pod_anti_affinity.empty();
  }
  int32_t dra_gpus = 0;  // GPUs the DRA claims ask for (devices of GPU classes)
  NodeId nominated_node = kNone;
  // Host ports of the app containers and restartable init containers (sidecars), which no other
  // pod on the node may use (see HostPort).
  std::vector<HostPort> host_ports;
  // The ConfigMaps (in the pod's namespace) the pod cannot start without, each named once, in
  // the order of first mention: those of mounted configMap volumes and projected volume sources
  // and of the containers' env valueFrom / envFrom (init, app and ephemeral containers), except
  // optional ones and those whose name starts with the runai/shared-gpu-configmap annotation's
  // value (KAI's ConfigMap predicate).
  SharedList<std::string> config_maps;  // shared as the tolerations are

  // Observed state.
  PodStatus status = PodStatus::kPending;
  NodeId node = kNone;
  std::vector<std::string> gpu_groups;
  // Where a running pod's resources sit on its node's NUMA zones, as last observed.
  std::vector<NumaZonePlacement> numa_observed;
  Labels annotations;  // other pod annotations, kept verbatim

  bool IsBestEffort() const {
    return request.cpu_millis == 0 && request.memory_bytes == 0 && request.gpus == 0 &&
           !request.HasScalars() && gpu_kind != GpuRequestKind::kMemory &&
           gpu_kind != GpuRequestKind::kFraction;
  }
  bool IsSharedGpu() const {
    return gpu_kind == GpuRequestKind::kFraction || gpu_kind == GpuRequestKind::kMemory;
  }
  bool IsCpuOnly() const {
    return request.gpus == 0 && !IsSharedGpu() && gpu_kind != GpuRequestKind::kMig && dra_gpus == 0;
  }
  // GPUs as KAI's gpus_required counts them: whole count, or the fraction rounded to hundredths
  // times the device count.
  double RequestedGpus() const;
  // GPU-equivalents of the pod's MIG instances (a `<g>g.<m>gb` profile counts g per instance),
  // computed when the pod is loaded.
  double mig_gpus = 0;

  // The three ways KAI's queue accounting counts a pod's GPUs (the node-dependent fourth, what a
  // placed pod was granted, lives in the session):
  //  - RequestGpuQuota: the request itself (queue capacity checks of a job): whole GPUs, the
  //    rounded fraction, MIG GPU-equivalents; a GPU-memory request counts 0 here.
  //  - InitGpuQuota: what allocating the pod is expected to cost (queue order, reclaim): the
  //    request, with GPU memory converted to devices with the cluster's smallest GPU memory.
  double RequestGpuQuota() const;
  double InitGpuQuota(double min_node_gpu_memory_mib) const;
  // A GPU-memory request as devices of `device_memory_mib` each (devices x requested MiB /
  // device MiB); 0 for any other request.
  double GpuMemoryAsDevices(double device_memory_mib) const {
    if (gpu_kind != GpuRequestKind::kMemory || gpu_memory_mib <= 0 || device_memory_mib <= 0) {
      return 0;
    }
    return (gpu_devices > 1 ? gpu_devices : 1) * (gpu_memory_mib / device_memory_mib);
  }
  Quantities RequestQuantities() const { return WithGpus(RequestGpuQuota()); }
  Quantities InitQuantities(double min_node_gpu_memory_mib) const {
    return WithGpus(InitGpuQuota(min_node_gpu_memory_mib));
  }
  Quantities WithGpus(double gpus) const {
    Quantities q;
    q[QueueResource::kCpu] = request.cpu_millis;
    q[QueueResource::kMemory] = request.memory_bytes;
    q[QueueResource::kGpu] = gpus;
    return q;
  }
};

// A leaf of the sub-group tree: the pods of one gang with its minimum.
struct PodSet {
  std::string name;
  int32_t min_available = 1;
  int32_t parent_group = 0;
  std::optional<TopologyConstraint> topology;
  std::vector<PodId> pods;
};

// An inner node of the sub-group tree. Group 0 is the root.
struct SubGroup {
  std::string name;
  int32_t parent = kNone;
  std::vector<int32_t> child_groups;
  std::vector<int32_t> child_pod_sets;
  std::optional<TopologyConstraint> topology;
  // How many direct members (child groups and pod sets) must be satisfied for this group to be;
  // unset: all of them (PodGroup spec.minSubGroup / subGroups[].minSubGroup).
  std::optional<int32_t> min_subgroups;
};

struct Job {
  std::string name;
  std::string namespace_;
  QueueId queue = kNone;
  std::string queue_name;  // kept for messages when the queue is missing
  int32_t priority = 0;
  bool preemptible = true;
  int64_t creation_ms = 0;
  std::vector<PodSet> pod_sets;
  std::vector<SubGroup> groups;  // groups[0] is the root
  std::vector<PodId> pods;
  bool deleting = false;
  // Minimum age before the job may trigger evictions (spec.preemptionDelay); <= 0: none.
  double preemption_delay_seconds = 0;
  // Per-job override of the stale-gang grace period (spec.stalenessGracePeriod); negative: never.
  std::optional<double> staleness_grace_period_seconds;
  std::string qos_class;  // pod status.qosClass of the job's pods (Guaranteed, Burstable, ...)
  // Session inputs derived by whoever builds the cluster (scenario runner, watch cache).
  std::optional<int64_t> last_start_ms;
  std::optional<int64_t> stale_since_ms;
  // Offset of this job's first pod set in flat per-pod-set arrays.
  int32_t pod_set_base = 0;
};

// One resource of a queue: deserved quota, limit, over-quota weight. -1 = unlimited / not set.
struct QueueQuota {
  double quota = kUnlimited;
  double limit = kUnlimited;
  double over_quota_weight = 1;
};

// A queue's historical usage for time-based fairshare, per resource, as a fraction of the
// cluster's capacity over the usage window (KAI's QueueUsage: decayed allocation / decayed
// capacity). All zero: no history.
struct QueueUsage {
  double cpu = 0;
  double memory = 0;
  double gpu = 0;
  double operator[](QueueResource r) const {
    return r == QueueResource::kCpu ? cpu : r == QueueResource::kMemory ? memory : gpu;
  }
  bool operator==(const QueueUsage&) const = default;
};

// Historical usage by queue name (KAI's ClusterUsage); queues not listed have none.
using UsageByQueue = std::unordered_map<std::string, QueueUsage>;

struct Queue {
  std::string name;
  std::string display_name;  // spec.displayName ("" when unset)
  QueueId parent = kNone;
  std::string parent_name;
  std::vector<QueueId> children;
  int32_t priority = 100;
  int64_t creation_ms = 0;
  // cpu in millicores, memory in bytes, gpu in devices.
  QueueQuota cpu;
  QueueQuota memory;
  QueueQuota gpu;
  // Minimum runtimes protecting this queue's jobs, inherited down the hierarchy (unset here:
  // from the parent, or the minruntime plugin's defaults).
  std::optional<double> preempt_min_runtime_seconds;
  std::optional<double> reclaim_min_runtime_seconds;
  // Historical usage carried by the cluster (scenario files); a session given usage of its own
  // (Scheduler::OpenSession) uses that instead.
  QueueUsage usage;
  bool IsLeaf() const { return children.empty(); }
  const QueueQuota& quota(QueueResource r) const {
    return r == QueueResource::kCpu ? cpu : r == QueueResource::kMemory ? memory : gpu;
  }
};

struct Cluster {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<Job> jobs;
  std::vector<Queue> queues;
  std::vector<Topology> topologies;
  // DRA objects.
  std::vector<std::string> device_classes;
  std::vector<ResourceSlice> resource_slices;
  std::vector<ResourceClaim> resource_claims;
  bool dra_enabled = true;  // the DynamicResourceAllocation feature gate
  // The ConfigMaps that exist, as "namespace/name" (null: none). Shared, so copying a Cluster
  // does not copy it; replaced whole when it changes.
  std::shared_ptr<const std::unordered_set<std::string>> config_maps;
  bool HasConfigMap(std::string_view ns, std::string_view name) const;
  ResourceNames resource_names;
  double min_node_gpu_memory_mib = 100;
  // The largest node GPU memory (KAI's MaxNodeGPUMemoryMiB): turns GPU-memory requests into the
  // smallest fraction for queue capacity checks.
  double max_node_gpu_memory_mib = 100;

  std::unordered_map<std::string, NodeId> node_index;
  std::unordered_map<std::string, QueueId> queue_index;
  std::unordered_map<std::string, JobId> job_index;
  std::unordered_map<std::string, PodId> pod_index;

  NodeId FindNode(std::string_view name) const;
  QueueId FindQueue(std::string_view name) const;
  JobId FindJob(std::string_view name) const;
  PodId FindPod(std::string_view name) const;

  int32_t total_pod_sets() const { return total_pod_sets_; }
  // Pod ids in byte order of pod names.
  const std::vector<PodId>& pods_by_name() const { return pods_by_name_; }

  // Recomputes derived indexes: name maps, queue children, node name ranks, pod-set offsets.
  // Call after adding or removing objects.
  void Finalize();
  // The job and pod part of Finalize alone (name maps, pods by name, pod-set offsets, jobs' queue
  // ids), for callers that added or removed jobs and pods but changed no node or queue.
  void FinalizeJobs();

 private:
  int32_t total_pod_sets_ = 0;
  std::vector<PodId> pods_by_name_;
};

}  // namespace gantry
