#include "plugins/proportion/resource_share.h"

#include <algorithm>

namespace gantry::proportion {

double ResourceShare::Requestable() const {
  return max_allowed == kUnlimited ? request : std::min(max_allowed, request);
}

double ResourceShare::Allocatable() const {
  if (deserved == kUnlimited) return max_allowed;
  double a = std::max(deserved, fair_share);
  if (max_allowed != kUnlimited) a = std::min(max_allowed, a);
  return a;
}

Quantities QueueShare::FairShare() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.fair_share; });
}
Quantities QueueShare::Allocated() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.allocated; });
}
Quantities QueueShare::Deserved() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.deserved; });
}
Quantities QueueShare::AllocatableShare() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.Allocatable(); });
}

double QueueShare::DominantShare(const Quantities& total) const {
  double dominant = 0;
  for (auto res : kQueueResources) {
    const ResourceShare& s = (*this)[res];
    double allocatable = s.Allocatable();
    if (allocatable == kUnlimited) allocatable = total[res];
    const double value = allocatable == 0 ? s.allocated * 1000 : s.allocated / allocatable;
    dominant = std::max(dominant, value);
  }
  return dominant;
}

}  // namespace gantry::proportion
