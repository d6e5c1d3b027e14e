#include "actions/victim_search/generators.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "actions/victim_search/victims.h"

namespace gantry::victim_search {

void NodeLocalScenarios(const Session& ssn, const Scenario& acc, const VictimGroups& batches,
                        std::vector<VictimGroups>& out) {
  out.clear();
  if (batches.pods.empty()) {
    if (!acc.recorded_tasks().empty()) out.emplace_back();  // the recorded victims alone
    return;
  }
  // (The latest pop's job; its pods' nodes in name order, those on no node left out.)
  const JobId latest = batches.job(batches.size() - 1);
  NodeId single = kNone;
  const std::span<const NodeId> nodes = NodesOfJob(ssn, latest, single);
  std::set<std::vector<PodId>> seen;
  std::vector<PodId> victims;
  std::vector<PodId> key;
  const auto& briefs = ssn.pod_briefs();
  for (NodeId node : nodes) {
    if (node == kNone) continue;
    acc.VictimTasksFromNode(node, victims);
    if (victims.empty()) continue;
    key = victims;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second) continue;
    // Grouped by job, jobs in the order of their first task.
    VictimGroups& scenario = out.emplace_back();
    std::vector<JobId> jobs;
    for (PodId p : victims) {
      const JobId j = briefs[p].job;
      if (std::find(jobs.begin(), jobs.end(), j) == jobs.end()) jobs.push_back(j);
    }
    std::vector<PodId> group;
    for (JobId j : jobs) {
      group.clear();
      for (PodId p : victims) {
        if (briefs[p].job == j) group.push_back(p);
      }
      scenario.Add(j, group);
    }
  }
}

SubScenarioEmitter::SubScenarioEmitter(const Session& ssn, const Scenario& acc,
                                       const VictimGroups& batches,
                                       const IdleGpuCapacities& capacities,
                                       const std::vector<char>& feasible)
    : batches_(batches) {
  const Cluster& c = ssn.cluster();
  double demand = 0;
  double min_task = -1;
  for (PodId p : acc.pending()) {
    const double g = ScenarioGpus(c.pods[p]);
    demand += g;
    if (min_task < 0 || g < min_task) min_task = g;
  }
  std::unordered_map<NodeId, double> recorded_freed;
  for (PodId p : acc.recorded_tasks()) {
    const NodeId n = ssn.pod(p).node;
    if (n != kNone) recorded_freed[n] += ssn.AcceptedGpus(p);
  }
  // Per node holding potential victims: its batches (pop order), where its first victim came,
  // and its capacity once they are evicted.
  struct NodeInfo {
    std::vector<uint32_t> batches;
    size_t first_seen = 0;
    double capacity = 0;
  };
  std::unordered_map<NodeId, NodeInfo> by_node;
  std::vector<NodeId> order;  // nodes in the order they first appear
  size_t index = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    for (PodId p : batches.tasks(b)) {
      const NodeId n = ssn.pod(p).node;
      const size_t at = index++;
      if (n == kNone) continue;
      auto [it, fresh] = by_node.try_emplace(n);
      NodeInfo& info = it->second;
      if (fresh) {
        info.first_seen = at;
        order.push_back(n);
      }
      if (info.batches.empty() || info.batches.back() != b) {
        info.batches.push_back(static_cast<uint32_t>(b));
      }
      info.capacity += ssn.AcceptedGpus(p);  // (each of the node's own tasks once)
    }
  }
  for (NodeId n : order) {
    NodeInfo& info = by_node[n];
    info.capacity += capacities.capacity[static_cast<size_t>(n)];
    if (auto it = recorded_freed.find(n); it != recorded_freed.end()) info.capacity += it->second;
    if (min_task > 0 && info.capacity < min_task) continue;
    candidates_.push_back(n);
  }
  std::sort(candidates_.begin(), candidates_.end(), [&](NodeId a, NodeId b) {
    const NodeInfo& x = by_node[a];
    const NodeInfo& y = by_node[b];
    if (x.capacity != y.capacity) return x.capacity < y.capacity;
    return x.first_seen < y.first_seen;
  });
  for (NodeId n : candidates_) node_batches_.push_back(by_node[n].batches);
  // The feasible nodes without potential victims count as they are.
  double baseline = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(feasible.size()); ++n) {
    if (!feasible[static_cast<size_t>(n)] || by_node.count(n) != 0) continue;
    baseline += capacities.capacity[static_cast<size_t>(n)];
    if (auto it = recorded_freed.find(n); it != recorded_freed.end()) baseline += it->second;
  }
  const double remaining = std::max(0.0, demand - baseline);
  if (remaining <= 0) {
    next_k_ = 0;
  } else {
    double covered = 0;
    next_k_ = candidates_.size() + 1;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      covered += by_node[candidates_[i]].capacity;
      if (covered >= remaining) {
        next_k_ = i + 1;
        break;
      }
    }
  }
  done_ = next_k_ > candidates_.size();
}

bool SubScenarioEmitter::Next(VictimGroups& out) {
  out = VictimGroups();
  if (done_) return false;
  const size_t k = next_k_;
  std::vector<char> picked(batches_.size(), 0);
  for (size_t i = 0; i < k; ++i) {
    for (uint32_t b : node_batches_[i]) picked[b] = 1;
  }
  if (k >= candidates_.size()) {
    done_ = true;
  } else {
    next_k_ = std::min(k + step_, candidates_.size());
    step_ *= 2;
  }
  for (size_t b = 0; b < batches_.size(); ++b) {
    if (picked[b]) out.Add(batches_.job(b), batches_.tasks(b));
  }
  return true;
}

}  // namespace gantry::victim_search
