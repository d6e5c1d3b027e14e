// DRA state of a session: which devices each ResourceClaim holds and who has it reserved.
//
// Claims start from their observed status (Cluster::resource_claims). The dynamicresources plugin
// changes them as pods are placed and removed: placing a pod reserves its claims and allocates
// devices on the pod's node to a claim that has none; removing the last reservation frees the
// claim's devices (KAI's allocate / deallocate handlers). Session::WriteBack carries the result
// into the next cycle's cluster.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/cluster.h"

namespace gantry {

// KEP-5004: the devices of a pod's special claim (its DRA-backed extended resources), each with
// the device request of the claim it is for.
struct ExtendedClaim {
  std::vector<DeviceRef> devices;
  std::vector<std::string> requests;  // per device
};

// The extended resources of `pod` that node `node` has no device plugin for: those it gets
// through DRA there.
std::vector<const DraExtendedResource*> ExtendedResourcesNeedingDra(const Pod& pod,
                                                                    const Node& node);

class DraState {
 public:
  explicit DraState(const Cluster& cluster);

  const ResourceClaim& claim(int32_t c) const { return claims_[c]; }
  const std::vector<ResourceClaim>& claims() const { return claims_; }
  // Reservations on the claim, including consumers outside the model.
  int32_t Consumers(int32_t c) const {
    return claims_[c].other_consumers + static_cast<int32_t>(claims_[c].reserved.size());
  }
  // Whether every claim of `pod` can be satisfied on node n: allocated claims must hold devices
  // reachable from n; unallocated ones need enough free devices of their class there. So must
  // its DRA-backed extended resources the node has no device plugin for (KEP-5004).
  bool Fits(const Pod& pod, NodeId n) const;
  // Reserves the pod's claims and allocates devices on n to those without any, and to its
  // special claim.
  void Reserve(PodId p, const Pod& pod, NodeId n);
  // Drops the pod's reservations; a claim left without consumers releases its devices, and so
  // does the pod's special claim.
  void Unreserve(PodId p, const Pod& pod);
  // The devices of the pod's special claim in this session (null: none allocated).
  const ExtendedClaim* extended(PodId p) const {
    auto it = extended_.find(p);
    return it == extended_.end() ? nullptr : &it->second;
  }

 private:
  bool Reachable(const ResourceSlice& s, NodeId n) const { return s.node == kNone || s.node == n; }
  size_t Index(DeviceRef d) const {
    return static_cast<size_t>(offset_[d.slice]) + static_cast<size_t>(d.device);
  }
  int32_t& Owner(DeviceRef d) { return owner_[Index(d)]; }
  int32_t OwnerOf(DeviceRef d) const { return owner_[Index(d)]; }

  // Free devices of `device_class` reachable from n for `count` more devices, skipping `taken`;
  // appended to `taken`. False when there are not enough.
  bool Pick(const std::string& device_class, int64_t count, NodeId n,
            std::vector<DeviceRef>& taken) const;

  const Cluster& cluster_;
  std::vector<ResourceClaim> claims_;
  std::unordered_map<PodId, ExtendedClaim> extended_;
  std::vector<int32_t> offset_;  // per slice: index of its first device in owner_
  // Per device: the claim holding it, -1 when free, or -2 - p for pod p's special claim.
  std::vector<int32_t> owner_;
};

}  // namespace gantry
