#include "framework/gpu_sharing.h"

namespace gantry {

SharedGpu& NodeSharedGpus::Get(int32_t group) {
  for (SharedGpu& d : devices_) {
    if (d.group == group) return d;
  }
  devices_.push_back(SharedGpu{group});
  return devices_.back();
}

const SharedGpu* NodeSharedGpus::Find(int32_t group) const {
  for (const SharedGpu& d : devices_) {
    if (d.group == group) return &d;
  }
  return nullptr;
}

int NodeSharedGpus::UsedGroups() const {
  int n = 0;
  for (const SharedGpu& d : devices_) n += d.used > 0 ? 1 : 0;
  return n;
}

int NodeSharedGpus::CountFitting(int64_t memory, int64_t device_memory, int wanted) const {
  int n = 0;
  for (const SharedGpu& d : devices_) {
    if (FitsOnGroup(d, memory, device_memory) && ++n >= wanted) break;
  }
  return n;
}

bool NodeSharedGpus::operator==(const NodeSharedGpus& o) const {
  if (devices_.size() != o.devices_.size()) return false;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const SharedGpu& a = devices_[i];
    const SharedGpu& b = o.devices_[i];
    if (a.used != b.used || a.releasing != b.releasing || a.allocated != b.allocated ||
        a.allocated_seen != b.allocated_seen || a.marked_releasing != b.marked_releasing) {
      return false;
    }
  }
  return true;
}

namespace {
// KAI compares whole counters truncated to integers.
int Whole(double v) { return static_cast<int>(v); }
}  // namespace

void NodeSharedGpus::Add(int32_t group, int64_t memory, PodStatus status, int device_count,
                         double whole_used, double& idle_gpus, double& releasing_gpus) {
  SharedGpu& d = Get(group);
  d.used += memory;
  auto used_gpus = [&] { return Whole(whole_used) + UsedGroups(); };
  switch (status) {
    case PodStatus::kReleasing:
      d.releasing += memory;
      d.allocated += memory;
      d.allocated_seen = true;
      if (d.used == d.releasing) {
        // The last non-releasing user of the device is gone: the device is releasing.
        if (!d.marked_releasing) {
          releasing_gpus += 1;
          d.marked_releasing = true;
        }
        if (device_count < Whole(idle_gpus) + used_gpus()) idle_gpus -= 1;
      }
      break;
    case PodStatus::kPipelined:
      d.releasing -= memory;
      if (d.used - memory == d.releasing + memory) releasing_gpus -= 1;
      break;
    default:
      d.allocated += memory;
      d.allocated_seen = true;
      if (d.used <= memory) {
        // First user of the device: it leaves the idle GPUs.
        if (device_count < Whole(idle_gpus) + used_gpus()) idle_gpus -= 1;
      }
      if (d.marked_releasing) {
        releasing_gpus -= 1;
        d.marked_releasing = false;
      }
  }
}

void NodeSharedGpus::DropIfIdle(int32_t group) {
  for (auto it = devices_.begin(); it != devices_.end(); ++it) {
    if (it->group != group) continue;
    if (it->used == 0 && it->releasing == 0 && it->allocated == 0 && !it->marked_releasing) {
      devices_.erase(it);
    }
    return;
  }
}

void NodeSharedGpus::Remove(int32_t group, int64_t memory, PodStatus status, int device_count,
                            double whole_used, double& idle_gpus, double& releasing_gpus) {
  RemoveImpl(group, memory, status, device_count, whole_used, idle_gpus, releasing_gpus);
  DropIfIdle(group);
}

void NodeSharedGpus::RemoveImpl(int32_t group, int64_t memory, PodStatus status, int device_count,
                                double whole_used, double& idle_gpus, double& releasing_gpus) {
  SharedGpu& d = Get(group);
  d.used -= memory;
  auto used_gpus = [&] { return Whole(whole_used) + UsedGroups(); };
  switch (status) {
    case PodStatus::kReleasing:
      d.releasing -= memory;
      d.allocated -= memory;
      d.allocated_seen = true;
      if (d.used <= 0) {
        if (device_count >= Whole(idle_gpus) + used_gpus()) idle_gpus += 1;
        if (d.marked_releasing) {
          releasing_gpus -= 1;
          d.marked_releasing = false;
        }
      }
      break;
    case PodStatus::kPipelined: {
      d.releasing += memory;
      const bool back_to_releasing =
          (d.used + memory == d.releasing - memory) || (d.used == 0 && d.releasing == 0);
      if (back_to_releasing) releasing_gpus += 1;
      break;
    }
    default:
      d.allocated -= memory;
      d.allocated_seen = true;
      if (d.used <= 0) {
        if (device_count >= Whole(idle_gpus) + used_gpus()) idle_gpus += 1;
      }
      if (d.used != 0 && d.releasing == d.used && !d.marked_releasing) {
        releasing_gpus += 1;
        d.marked_releasing = true;
      }
  }
}

}  // namespace gantry
