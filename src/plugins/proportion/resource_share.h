// A queue's share of the cluster, per resource (KAI's resource_share package): what it deserves,
// its fair share, its limit and what it holds, with the quantity comparisons the rules use.
#pragma once

#include <array>

#include "model/cluster.h"
#include "model/resources.h"

namespace gantry::proportion {

// One resource of one queue.
struct ResourceShare {
  double deserved = 0;
  double fair_share = 0;
  double max_allowed = kUnlimited;
  double over_quota_weight = 0;
  double allocated = 0;
  double allocated_non_preemptible = 0;
  double request = 0;
  double usage = 0;  // historical usage, normalised to the cluster (0 when not tracked)

  // Request capped by the limit.
  double Requestable() const;
  // What the queue may hold without being over its share: max(deserved, fair share), capped.
  double Allocatable() const;
};

struct QueueShare {
  std::array<ResourceShare, 3> r;
  ResourceShare& operator[](QueueResource res) { return r[static_cast<int>(res)]; }
  const ResourceShare& operator[](QueueResource res) const { return r[static_cast<int>(res)]; }
  Quantities FairShare() const;
  Quantities Allocated() const;
  Quantities Deserved() const;
  Quantities AllocatableShare() const;
  double DominantShare(const Quantities& total) const;
};

// One field of every resource of a share, as quantities.
template <typename F>
Quantities Map(const QueueShare& s, F f) {
  Quantities q;
  for (auto res : kQueueResources) q[res] = f(s[res]);
  return q;
}

// KAI's resource-quantity comparison, where -1 (unlimited) is larger than everything.
inline int CompareQuantity(double a, double b) {
  if (a == kUnlimited) return b == kUnlimited ? 0 : 1;
  if (b == kUnlimited) return -1;
  return a > b ? 1 : a < b ? -1 : 0;
}
// a <= b in every resource (unlimited the largest).
inline bool LessEqual(const Quantities& a, const Quantities& b) {
  for (auto res : kQueueResources) {
    if (CompareQuantity(a[res], b[res]) > 0) return false;
  }
  return true;
}
// Strictly less in every resource.
inline bool Less(const Quantities& a, const Quantities& b) {
  for (auto res : kQueueResources) {
    if (a[res] >= b[res]) return false;
  }
  return true;
}

}  // namespace gantry::proportion
