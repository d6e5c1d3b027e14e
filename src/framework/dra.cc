#include "framework/dra.h"

#include <algorithm>

#include "util/checked_number.h"

namespace gantry {

std::vector<const DraExtendedResource*> ExtendedResourcesNeedingDra(const Pod& pod,
                                                                    const Node& node) {
  std::vector<const DraExtendedResource*> out;
  for (const DraExtendedResource& e : pod.dra_extended) {
    if (!node.HasExtendedResource(e.resource)) out.push_back(&e);
  }
  return out;
}

bool DraState::Pick(const std::string& device_class, int64_t count, NodeId n,
                    std::vector<DeviceRef>& taken) const {
  const auto& slices = cluster_.resource_slices;
  for (size_t si = 0; si < slices.size() && count > 0; ++si) {
    const ResourceSlice& s = slices[si];
    if (!Reachable(s, n) || s.device_class != device_class) continue;
    for (int32_t dv = 0; dv < s.device_count && count > 0; ++dv) {
      const DeviceRef d{static_cast<int32_t>(si), dv};
      if (OwnerOf(d) != -1 || std::find(taken.begin(), taken.end(), d) != taken.end()) continue;
      taken.push_back(d);
      --count;
    }
  }
  return count == 0;
}

DraState::DraState(const Cluster& cluster) : cluster_(cluster), claims_(cluster.resource_claims) {
  int32_t total = 0;
  for (const ResourceSlice& s : cluster.resource_slices) {
    offset_.push_back(total);
    total += s.device_count;
  }
  owner_.assign(static_cast<size_t>(total), -1);
  for (size_t c = 0; c < claims_.size(); ++c) {
    for (const DeviceRef& d : claims_[c].allocation) Owner(d) = static_cast<int32_t>(c);
  }
}

bool DraState::Fits(const Pod& pod, NodeId n) const {
  const auto& slices = cluster_.resource_slices;
  // Devices this pod would take on n, per claim (two claims must not share a device).
  std::vector<DeviceRef> taken;
  for (int32_t c : pod.claims) {
    const ResourceClaim& rc = claims_[c];
    if (rc.allocated) {
      for (const DeviceRef& d : rc.allocation) {
        if (!Reachable(slices[d.slice], n)) return false;
      }
      continue;
    }
    int32_t need = rc.count;
    for (size_t si = 0; si < slices.size() && need > 0; ++si) {
      const ResourceSlice& s = slices[si];
      if (!Reachable(s, n) || s.device_class != rc.device_class) continue;
      for (int32_t dv = 0; dv < s.device_count && need > 0; ++dv) {
        const DeviceRef d{static_cast<int32_t>(si), dv};
        if (OwnerOf(d) != -1 || std::find(taken.begin(), taken.end(), d) != taken.end()) continue;
        taken.push_back(d);
        --need;
      }
    }
    if (need > 0) return false;
  }
  // The special claim: its devices on n, one request after another (at most 32 in a claim).
  int64_t devices = 0;
  for (const DraExtendedResource* e : ExtendedResourcesNeedingDra(pod, cluster_.nodes[n])) {
    devices += e->Devices();
    if (devices > kMaxDevicesPerClaim) return false;
    if (!Pick(e->device_class, e->Devices(), n, taken)) return false;
  }
  return true;
}

void DraState::Reserve(PodId p, const Pod& pod, NodeId n) {
  const auto& slices = cluster_.resource_slices;
  for (int32_t c : pod.claims) {
    ResourceClaim& rc = claims_[c];
    if (std::find(rc.reserved.begin(), rc.reserved.end(), p) == rc.reserved.end()) {
      rc.reserved.push_back(p);
    }
    if (rc.allocated) continue;
    std::vector<DeviceRef> chosen;
    for (size_t si = 0; si < slices.size() && static_cast<int32_t>(chosen.size()) < rc.count;
         ++si) {
      const ResourceSlice& s = slices[si];
      if (!Reachable(s, n) || s.device_class != rc.device_class) continue;
      for (int32_t dv = 0; dv < s.device_count && static_cast<int32_t>(chosen.size()) < rc.count;
           ++dv) {
        const DeviceRef d{static_cast<int32_t>(si), dv};
        if (OwnerOf(d) == -1) chosen.push_back(d);
      }
    }
    if (static_cast<int32_t>(chosen.size()) < rc.count) continue;  // not allocatable here
    for (const DeviceRef& d : chosen) Owner(d) = c;
    rc.allocation = std::move(chosen);
    rc.allocated = true;
  }
  // The special claim (KAI logs and goes on when it cannot be allocated; the predicate has
  // checked it).
  if (pod.dra_extended.empty() || extended_.count(p)) return;
  ExtendedClaim claim;
  int64_t devices = 0;
  for (const DraExtendedResource* e : ExtendedResourcesNeedingDra(pod, cluster_.nodes[n])) {
    for (const ExtendedDeviceRequest& r : e->requests) {
      devices += r.count;
      if (devices > kMaxDevicesPerClaim || !Pick(e->device_class, r.count, n, claim.devices)) {
        return;
      }
      claim.requests.resize(claim.devices.size(), r.name);
    }
  }
  if (claim.devices.empty()) return;  // the node's device plugin serves them all
  for (const DeviceRef& d : claim.devices) Owner(d) = -2 - p;
  extended_.emplace(p, std::move(claim));
}

void DraState::Unreserve(PodId p, const Pod& pod) {
  if (auto it = extended_.find(p); it != extended_.end()) {
    for (const DeviceRef& d : it->second.devices) Owner(d) = -1;
    extended_.erase(it);
  }
  for (int32_t c : pod.claims) {
    ResourceClaim& rc = claims_[c];
    std::erase(rc.reserved, p);
    if (Consumers(c) > 0 || !rc.allocated) continue;
    for (const DeviceRef& d : rc.allocation) Owner(d) = -1;
    rc.allocation.clear();
    rc.allocated = false;
  }
}

}  // namespace gantry
