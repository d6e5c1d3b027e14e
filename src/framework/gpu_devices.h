// The session's GPU devices (Session derives from SessionGpuDevices; the methods that also read
// the nodes are Session's, in gpu_devices.cc): the shared-GPU groups each pod occupies, each
// node's shared devices (gpu_sharing.h), the cluster's MIG profiles and the GPUs each pod was
// accepted with.
//
// Session's GPU-device methods, as KAI computes them:
// - GpuMemoryOn / PodGpuMemoryOn: the GPU memory (MiB) a shared-GPU pod takes on each of its
//   devices on a node.
// - RepresentativeFits: whether a synthetic request (the topology plugin's representative pods: k
//   copies of a job's largest pod) fits a node's idle and releasing resources, as KAI checks such
//   a pod: resources other than GPUs and MIG instances, then whole free devices plus shared devices
//   with room.
// - IdleGpuSum / ReleasingGpuSum (KAI's GetSumOfIdleGPUs / GetSumOfReleasingGPUs): a node's idle
//   (releasing) GPUs counting whole devices, the free (releasing) part of shared devices and MIG
//   instances as GPU-equivalents; second, the same as GPU memory in MiB.
// - AcceptedGpus / AcceptedQuantities: the GPUs the pod was granted when it was last placed (KAI's
//   AcceptedResource), as its queue charge; 0 for a pod never placed.
// - RequiredInitGpusOn (KAI's GetRequiredInitQuota): the GPUs the queue capacity check charges for
//   placing the pod on a node (the device share there; a whole-GPU pod counts one device).
// - SelectSharedGpus (KAI's FittingGPUs and GetNodePreferableGpuForSharing): chooses the devices of
//   a node for a shared-GPU pod, fitting shared devices and free whole devices, best GPU-order
//   score first; fills the groups (new groups for whole devices) and tells whether some chosen
//   device has room only once releasing pods are gone. False if too few devices.
// - GroupNames / GroupName / NewGroup / SetPodGroups: the interned group ids and their strings.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/gpu_sharing.h"
#include "model/cluster.h"

namespace gantry {

class SessionGpuDevices {
 public:
  // Shared-GPU groups a pod occupies (interned ids; GroupName turns one into its id string).
  const std::vector<int32_t>& pod_groups(PodId p) const { return pod_groups_[p]; }
  const std::string& GroupName(int32_t group) const { return group_names_[group]; }
  // Sets the groups of a pod (Statement records the previous ones).
  void SetPodGroups(PodId p, std::vector<int32_t> groups) { pod_groups_[p] = std::move(groups); }
  // The shared devices of a node.
  const NodeSharedGpus& shared_gpus(NodeId n) const { return shared_[n]; }
  struct MigProfile {
    int slot;    // extended-resource slot
    int gpus;    // g of nvidia.com/mig-<g>g.<m>gb
    int mem_gb;  // m
  };
  const std::vector<MigProfile>& mig_profiles() const { return mig_profiles_; }
  double AcceptedGpus(PodId p) const { return accepted_gpus_[p]; }

 protected:
  std::vector<std::vector<int32_t>> pod_groups_;
  std::vector<std::string> group_names_;
  std::unordered_map<std::string, int32_t> group_ids_;
  uint64_t group_seq_ = 0;
  std::vector<NodeSharedGpus> shared_;
  std::vector<MigProfile> mig_profiles_;
  std::vector<double> accepted_gpus_;
  // SelectSharedGpus' candidates (kept for their storage).
  struct GpuCandidate {
    double score;
    int32_t group;  // -1: a free whole device
  };
  std::vector<GpuCandidate> gpu_candidates_;
};

}  // namespace gantry
