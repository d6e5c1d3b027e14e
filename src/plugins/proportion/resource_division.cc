#include "plugins/proportion/resource_division.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace gantry::proportion {

namespace {

bool IsSatisfied(const ResourceShare& s) {
  if (s.request <= s.fair_share) return true;
  return s.max_allowed != kUnlimited && s.max_allowed <= s.fair_share;
}

double RemainingRequested(const ResourceShare& s) {
  const double requested = s.Requestable();
  return requested < s.fair_share ? 0 : requested - s.fair_share;
}

struct Remainder {
  QueueId queue;
  double amount;
};

// Over-quota division among queues of one priority, in rounds. Returns what is left; `remainders`
// collects queues whose share was rounded down.
double DivideUpToFairShare(const Cluster& cluster, double total, double k_value, QueueResource res,
                           const std::vector<QueueId>& queues, std::vector<QueueShare>& shares,
                           std::map<QueueId, double>& remainders) {
  for (;;) {
    bool another_round = false;
    const double to_give = total;
    double total_weights = 0;
    for (QueueId q : queues) {
      if (RemainingRequested(shares[q][res]) > 0) total_weights += shares[q][res].over_quota_weight;
    }
    if (total_weights == 0) break;
    std::map<QueueId, double> weights;
    double weights_sum = 0;
    for (QueueId q : queues) {
      const ResourceShare& s = shares[q][res];
      if (IsSatisfied(s)) continue;
      const double nw = s.over_quota_weight / total_weights;
      const double w = std::max(0.0, nw + k_value * (nw - s.usage));
      weights[q] = w;
      weights_sum += w;
    }
    if (weights_sum == 0) break;
    for (QueueId q : queues) {
      if (total == 0) break;
      ResourceShare& s = shares[q][res];
      if (IsSatisfied(s)) continue;
      const double requested = RemainingRequested(s);
      if (s.over_quota_weight == 0) continue;
      const double fair = to_give * (weights[q] / weights_sum);
      double give = 0;
      if (requested <= fair) {
        give = requested;
        remainders.erase(q);
      } else {
        const double rounded = std::floor(fair);
        if (rounded > 0) give = rounded;
        if (fair - give > 0) remainders[q] = fair - give;
      }
      if (give == 0) continue;
      s.fair_share += give;
      total -= give;
      another_round = another_round || requested < fair;
    }
    if (!another_round || total == 0) break;
  }
  (void)cluster;
  return total;
}

double DivideRemainder(const Cluster& cluster, double total, QueueResource res,
                       const std::map<QueueId, double>& remainders,
                       std::vector<QueueShare>& shares) {
  std::vector<std::pair<QueueId, double>> order(remainders.begin(), remainders.end());
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    const Queue& qa = cluster.queues[a.first];
    const Queue& qb = cluster.queues[b.first];
    if (qa.creation_ms != qb.creation_ms) return qa.creation_ms < qb.creation_ms;
    return qa.name < qb.name;
  });
  for (const auto& [q, _] : order) {
    if (total == 0) break;
    const double give = std::min(1.0, total);
    shares[q][res].fair_share += give;
    total -= give;
  }
  return total;
}

void DivideResource(const Cluster& cluster, double total, double k_value, QueueResource res,
                    const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares) {
  // Deserved phase.
  double remaining = total;
  for (QueueId q : siblings) {
    ResourceShare& s = shares[q][res];
    const double deserved = s.deserved == kUnlimited ? total : s.deserved;
    const double amount = std::min(deserved, s.Requestable());
    s.fair_share += amount;
    remaining -= amount;
  }
  if (remaining <= 0) return;
  // Over-quota phase, by priority (higher first).
  std::map<int, std::vector<QueueId>, std::greater<>> by_priority;
  for (QueueId q : siblings) by_priority[cluster.queues[q].priority].push_back(q);
  std::map<int, std::map<QueueId, double>, std::greater<>> remainders;
  for (auto& [priority, queues] : by_priority) {
    remaining =
        DivideUpToFairShare(cluster, remaining, k_value, res, queues, shares, remainders[priority]);
  }
  for (auto& [priority, rem] : remainders) {
    if (remaining <= 0) break;
    if (rem.empty()) continue;
    remaining = DivideRemainder(cluster, remaining, res, rem, shares);
  }
}

}  // namespace

void DivideAmongSiblings(const Cluster& cluster, const Quantities& total, double k_value,
                         const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares) {
  for (auto res : kQueueResources) {
    DivideResource(cluster, total[res], k_value, res, siblings, shares);
  }
}

void ComputeFairShares(const Cluster& cluster, const Quantities& total, double k_value,
                       std::vector<QueueShare>& shares) {
  std::vector<QueueId> roots;
  for (QueueId q = 0; q < static_cast<QueueId>(cluster.queues.size()); ++q) {
    if (cluster.queues[q].parent == kNone) roots.push_back(q);
  }
  // Breadth-first: a parent's fair share is final before its children are divided.
  std::vector<std::pair<Quantities, std::vector<QueueId>>> work{{total, roots}};
  while (!work.empty()) {
    auto [amount, siblings] = std::move(work.back());
    work.pop_back();
    if (siblings.empty()) continue;
    DivideAmongSiblings(cluster, amount, k_value, siblings, shares);
    for (QueueId q : siblings) {
      if (!cluster.queues[q].children.empty()) {
        work.emplace_back(shares[q].FairShare(), cluster.queues[q].children);
      }
    }
  }
}

}  // namespace gantry::proportion
