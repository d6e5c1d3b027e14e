// Shared GPUs: the per-device bookkeeping of fractional and GPU-memory pods on one node.
//
// A shared-GPU pod occupies one or more physical devices, each identified by a *shared-GPU group*
// (an id the placement chooses and the BindRequest carries). Per group a node tracks, in MiB of
// GPU memory, what is used (any occupying pod), what is releasing (evicted or terminating pods)
// and what is allocated (pods not pipelined). A group with any user takes one whole device out of
// the node's idle GPUs, however small the share; a group all of whose users are releasing counts
// as one releasing GPU, which pipelined pods then consume.
//
// The rules are KAI's (pkg/scheduler/api/node_info/gpu_sharing_node_info.go), including their
// order of evaluation: the counters are compared right after each change, so the same sequence of
// adds and removes leaves the same idle / releasing counts as in KAI. Groups are listed in the
// order they appeared; a group left with nothing in use, releasing or allocated is dropped (KAI
// keeps such map entries, but no rule can tell them from absent ones: a group is only joined
// while in use, and a freed device gets a new group) - otherwise the simulations of the victim
// search would leave thousands of dead entries on busy nodes.
//
// Nothing here allocates except the first appearance of a group on a node.
#pragma once

#include <cstdint>
#include <vector>

#include "model/resources.h"
#include "model/status.h"

namespace gantry {

struct SharedGpu {
  int32_t group = -1;             // interned group id (Session::GroupName)
  int64_t used = 0;               // MiB held by occupying pods
  int64_t releasing = 0;          // MiB of releasing pods, minus what pipelined pods took from them
  int64_t allocated = 0;          // MiB of non-pipelined pods
  bool allocated_seen = false;    // an allocated entry exists (set by allocated / releasing pods)
  bool marked_releasing = false;  // counted as one releasing GPU of the node
};

// The shared devices of one node. `idle_gpus` / `releasing_gpus` are the node's whole-GPU
// counters (NodeState), adjusted here by one device at a time.
class NodeSharedGpus {
 public:
  // Adds / removes one pod's share of `memory` MiB on `group`. `status` is the pod's status while
  // it occupies the node (the same at add and remove). `device_count` is the node's number of
  // physical GPUs and `whole_used` the GPUs held by whole-GPU pods.
  void Add(int32_t group, int64_t memory, PodStatus status, int device_count, double whole_used,
           double& idle_gpus, double& releasing_gpus);
  void Remove(int32_t group, int64_t memory, PodStatus status, int device_count, double whole_used,
              double& idle_gpus, double& releasing_gpus);

  // Groups with memory in use.
  int UsedGroups() const;
  const std::vector<SharedGpu>& devices() const { return devices_; }
  const SharedGpu* Find(int32_t group) const;
  bool empty() const { return devices_.empty(); }

  // Can a share of `memory` MiB join this group (counting releasing memory as free)? The group
  // must be in use and not wholly releasing.
  static bool FitsOnGroup(const SharedGpu& d, int64_t memory, int64_t device_memory) {
    return d.used != 0 && device_memory - d.allocated + d.releasing - memory >= 0 &&
           d.allocated != d.releasing;
  }
  // Same, on what is not allocated at all (no waiting for releasing pods).
  static bool FitsIdleOnGroup(const SharedGpu& d, int64_t memory, int64_t device_memory) {
    return d.allocated_seen && device_memory - d.allocated - memory >= 0;
  }
  // Number of groups a share of `memory` fits on, stopping at `wanted`.
  int CountFitting(int64_t memory, int64_t device_memory, int wanted) const;

  bool operator==(const NodeSharedGpus& o) const;

 private:
  SharedGpu& Get(int32_t group);
  void RemoveImpl(int32_t group, int64_t memory, PodStatus status, int device_count,
                  double whole_used, double& idle_gpus, double& releasing_gpus);
  void DropIfIdle(int32_t group);
  std::vector<SharedGpu> devices_;
};

}  // namespace gantry
