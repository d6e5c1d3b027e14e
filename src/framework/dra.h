// DRA state of a session: which devices each ResourceClaim holds and who has it reserved.
//
// Claims start from their observed status (Cluster::resource_claims). The dynamicresources plugin
// changes them as pods are placed and removed: placing a pod reserves its claims and allocates
// devices on the pod's node to a claim that has none; removing the last reservation frees the
// claim's devices (KAI's allocate / deallocate handlers). Session::WriteBack carries the result
// into the next cycle's cluster.
#pragma once

#include <cstdint>
#include <vector>

#include "model/cluster.h"

namespace gantry {

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
  // reachable from n; unallocated ones need enough free devices of their class there.
  bool Fits(const Pod& pod, NodeId n) const;
  // Reserves the pod's claims and allocates devices on n to those without any.
  void Reserve(PodId p, const Pod& pod, NodeId n);
  // Drops the pod's reservations; a claim left without consumers releases its devices.
  void Unreserve(PodId p, const Pod& pod);

 private:
  bool Reachable(const ResourceSlice& s, NodeId n) const { return s.node == kNone || s.node == n; }
  int32_t& Owner(DeviceRef d) { return owner_[static_cast<size_t>(offset_[d.slice] + d.device)]; }
  int32_t OwnerOf(DeviceRef d) const {
    return owner_[static_cast<size_t>(offset_[d.slice] + d.device)];
  }

  const Cluster& cluster_;
  std::vector<ResourceClaim> claims_;
  std::vector<int32_t> offset_;  // per slice: index of its first device in owner_
  std::vector<int32_t> owner_;   // per device: the claim holding it, or -1
};

}  // namespace gantry
