#include "actions/victim_search/scenario_filters.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace gantry {

namespace {

bool HasRequiredNodeAffinity(const Pod& pod) {
  return !pod.node_selector.items().empty() || !pod.required_node_affinity.empty();
}

// The node-affinity plugin's filter: node selector and required node affinity terms.
bool MatchesNode(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector.items()) {
    const std::string* have = node.labels.Get(key);
    if (!have || *have != value) return false;
  }
  if (pod.required_node_affinity.empty()) return true;
  for (const auto& term : pod.required_node_affinity) {
    LabelSelector selector;
    selector.expressions = term.requirements;
    if (selector.Matches(node.labels)) return true;
  }
  return false;
}

}  // namespace

// (KAI's ResReq.GPUs() plus the DRA GPUs.)
double ScenarioGpus(const Pod& pod) { return pod.RequestedGpus() + pod.dra_gpus; }

bool GreedyMatch(std::span<const double> requirements, std::span<const double> capacities) {
  thread_local std::vector<double> used;
  used.assign(capacities.size(), 0.0);
  // A holder passed over for a requirement (too little room left) is passed over again for an
  // equal one (room only shrinks), so a run of equal requirements resumes where the last one
  // was matched: the same holders are chosen as by scanning from the first.
  size_t start = 0;
  double previous = -1;
  for (double required : requirements) {
    if (required == 0) return true;
    if (required != previous) start = 0;
    previous = required;
    bool matched = false;
    for (size_t h = start; h < capacities.size(); ++h) {
      if (capacities[h] < required) break;
      if (capacities[h] - used[h] >= required) {
        used[h] += required;
        matched = true;
        start = h;
        break;
      }
    }
    if (!matched) return false;
  }
  return true;
}

void IdleGpuCapacities::Compute(const Session& ssn) {
  const size_t n = ssn.cluster().nodes.size();
  capacity.resize(n);
  for (NodeId i = 0; i < static_cast<NodeId>(n); ++i) {
    capacity[static_cast<size_t>(i)] = ssn.IdleGpuSum(i).first + ssn.ReleasingGpuSum(i).first;
  }
  by_capacity.resize(n);
  // Most idle first, ties in node order (a stable sort). With whole capacities of at most a
  // few hundred GPUs (always, for whole-GPU nodes) a counting sort gives the same order.
  constexpr double kMaxCounted = 256;
  const bool countable = std::all_of(capacity.begin(), capacity.end(), [](double c) {
    return c >= 0 && c <= kMaxCounted && c == static_cast<double>(static_cast<int>(c));
  });
  if (countable) {
    std::vector<size_t> starts(static_cast<size_t>(kMaxCounted) + 2, 0);
    for (double c : capacity) ++starts[static_cast<size_t>(kMaxCounted - c) + 1];
    for (size_t k = 1; k < starts.size(); ++k) starts[k] += starts[k - 1];
    for (size_t i = 0; i < n; ++i) {
      by_capacity[starts[static_cast<size_t>(kMaxCounted - capacity[i])]++] =
          static_cast<NodeId>(i);
    }
  } else {
    for (size_t i = 0; i < n; ++i) by_capacity[i] = static_cast<NodeId>(i);
    std::stable_sort(by_capacity.begin(), by_capacity.end(), [&](NodeId a, NodeId b) {
      return capacity[static_cast<size_t>(a)] > capacity[static_cast<size_t>(b)];
    });
  }
  computed = true;
}

ScenarioFilters::ScenarioFilters(const Session& ssn, const IdleGpuCapacities& capacities,
                                 JobId preemptor, std::span<const PodId> pending,
                                 std::span<const PodId> recorded, const std::vector<char>& feasible)
    : ssn_(ssn), pending_(pending), recorded_(recorded) {
  const Cluster& c = ssn.cluster();
  // Node affinities (KAI builds this filter only when a pending pod has such a requirement).
  for (PodId p : pending_)
    affinity_active_ = affinity_active_ || HasRequiredNodeAffinity(c.pods[p]);
  if (affinity_active_) {
    affinity_nodes_.assign(c.nodes.size(), 0);
    for (size_t n = 0; n < feasible.size(); ++n) {
      if (feasible[n]) {
        affinity_nodes_[n] = 1;
        affinity_list_.push_back(static_cast<NodeId>(n));
      }
    }
    for (PodId p : recorded_) AddAffinityNode(p);
  }

  // Topology-aware idle GPUs: the sub-groups (inner groups of the tree, root included) with a
  // required level, grouped by (topology, level); each asks for its pending pods' GPUs.
  const Job& job = c.jobs[preemptor];
  for (size_t g = 0; g < job.groups.size(); ++g) {
    const auto& t = job.groups[g].topology;
    if (!t || t->required_level.empty()) continue;
    // GPUs of the pending pods under group g.
    double gpus = 0;
    for (PodId p : pending_) {
      int32_t group = job.pod_sets[static_cast<size_t>(c.pods[p].pod_set)].parent_group;
      while (group != kNone && group != static_cast<int32_t>(g)) {
        group = job.groups[static_cast<size_t>(group)].parent;
      }
      if (group == static_cast<int32_t>(g)) gpus += ScenarioGpus(c.pods[p]);
    }
    auto it = std::find_if(constraints_.begin(), constraints_.end(), [&](const Constraint& k) {
      return k.level == t->required_level && k.topology_name == t->topology;
    });
    if (it == constraints_.end()) {
      constraints_.push_back({});
      it = constraints_.end() - 1;
      it->topology_name = t->topology;
      it->level = t->required_level;
    }
    it->required.push_back(gpus);
  }
  for (Constraint& k : constraints_) {
    std::sort(k.required.begin(), k.required.end(), std::greater<>());
    k.node_domain.assign(c.nodes.size(), -1);
    for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
      const std::string* value = c.nodes[static_cast<size_t>(n)].labels.Get(k.level);
      if (!value || value->empty()) continue;
      auto d = std::find(k.domains.begin(), k.domains.end(), *value);
      if (d == k.domains.end()) {
        k.domains.push_back(*value);
        k.capacity.push_back(0);
        d = k.domains.end() - 1;
      }
      const size_t index = static_cast<size_t>(d - k.domains.begin());
      k.node_domain[static_cast<size_t>(n)] = static_cast<int32_t>(index);
      k.capacity[index] += capacities.capacity[static_cast<size_t>(n)];
    }
  }
  if (!constraints_.empty()) topology_seen_pods_.assign(c.pods.size(), 0);
  topology_sorted_ = ssn.params().topology_filter_sorted;
  if (topology_sorted_) {
    for (Constraint& k : constraints_) {
      const size_t domains = k.capacity.size();
      k.sorted_domain.resize(domains);
      for (size_t d = 0; d < domains; ++d) k.sorted_domain[d] = static_cast<int32_t>(d);
      std::stable_sort(k.sorted_domain.begin(), k.sorted_domain.end(), [&k](int32_t a, int32_t b) {
        return k.capacity[static_cast<size_t>(a)] > k.capacity[static_cast<size_t>(b)];
      });
      k.sorted.resize(domains);
      k.position.resize(domains);
      for (size_t i = 0; i < domains; ++i) {
        const auto d = static_cast<size_t>(k.sorted_domain[i]);
        k.sorted[i] = k.capacity[d];
        k.position[d] = static_cast<int32_t>(i);
      }
    }
  }

  // Idle GPUs: the pending pods' GPUs, most first, and the most idle nodes, one per pending pod.
  for (PodId p : pending_) required_.push_back(ScenarioGpus(c.pods[p]));
  std::sort(required_.begin(), required_.end(), std::greater<>());
  idle_ = capacities.capacity;
  const size_t k = std::min(pending_.size(), capacities.by_capacity.size());
  // (by_capacity is ordered most first: the values come in descending order.)
  for (size_t i = 0; i < k; ++i) {
    const double value = idle_[static_cast<size_t>(capacities.by_capacity[i])];
    if (!top_.empty() && top_.front().first == value) {
      ++top_.front().second;
    } else {
      top_.insert(top_.begin(), {value, 1});
    }
  }
  top_size_ = k;
  for (PodId p : recorded_) AddIdleVictim(p);
}

bool ScenarioFilters::Accept(std::span<const PodId> potential) {
  if (affinity_active_ && !NodeAffinitiesAccept(potential)) return false;
  if (!constraints_.empty() && !TopologyAccept(potential)) return false;
  return IdleGpusAccept(potential);
}

void ScenarioFilters::AddAffinityNode(PodId victim) {
  const NodeId n = ssn_.pod(victim).node;
  if (n == kNone || affinity_nodes_[static_cast<size_t>(n)]) return;
  affinity_nodes_[static_cast<size_t>(n)] = 1;
  affinity_list_.push_back(n);
}

bool ScenarioFilters::NodeAffinitiesAccept(std::span<const PodId> potential) {
  for (; affinity_seen_ < potential.size(); ++affinity_seen_) {
    AddAffinityNode(potential[affinity_seen_]);
  }
  const Cluster& c = ssn_.cluster();
  for (PodId p : pending_) {
    const Pod& pod = c.pods[p];
    if (!HasRequiredNodeAffinity(pod)) continue;
    bool any = false;
    for (NodeId n : affinity_list_) {
      if (MatchesNode(pod, c.nodes[static_cast<size_t>(n)])) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

void ScenarioFilters::AddTopologyVictim(PodId victim) {
  if (topology_seen_pods_[victim]) return;
  topology_seen_pods_[victim] = 1;
  const NodeId n = ssn_.pod(victim).node;
  if (n == kNone) return;
  const double freed = ssn_.AcceptedGpus(victim);
  for (Constraint& k : constraints_) {
    const int32_t d = k.node_domain[static_cast<size_t>(n)];
    if (d < 0) continue;
    k.capacity[static_cast<size_t>(d)] += freed;
    if (topology_sorted_ && freed != 0) {
      Resort(k, d);
      topology_answer_known_ = false;
    }
  }
}

void ScenarioFilters::Resort(Constraint& k, int32_t d) {
  const double value = k.capacity[static_cast<size_t>(d)];
  const auto p = static_cast<size_t>(k.position[static_cast<size_t>(d)]);
  k.sorted[p] = value;
  size_t from = p;
  size_t to = p;
  if (p > 0 && k.sorted[p - 1] < value) {
    // Up: before the first entry smaller than the new value (the entries before p are
    // most first).
    const auto first =
        std::upper_bound(k.sorted.begin(), k.sorted.begin() + static_cast<std::ptrdiff_t>(p), value,
                         std::greater<>());
    from = static_cast<size_t>(first - k.sorted.begin());
    std::rotate(k.sorted.begin() + static_cast<std::ptrdiff_t>(from),
                k.sorted.begin() + static_cast<std::ptrdiff_t>(p),
                k.sorted.begin() + static_cast<std::ptrdiff_t>(p + 1));
    std::rotate(k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(from),
                k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(p),
                k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(p + 1));
  } else if (p + 1 < k.sorted.size() && k.sorted[p + 1] > value) {
    // Down (a capacity that shrank): after the last entry larger than the new value.
    const auto last = std::upper_bound(k.sorted.begin() + static_cast<std::ptrdiff_t>(p + 1),
                                       k.sorted.end(), value, std::greater<>());
    to = static_cast<size_t>(last - k.sorted.begin()) - 1;
    std::rotate(k.sorted.begin() + static_cast<std::ptrdiff_t>(p),
                k.sorted.begin() + static_cast<std::ptrdiff_t>(p + 1),
                k.sorted.begin() + static_cast<std::ptrdiff_t>(to + 1));
    std::rotate(k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(p),
                k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(p + 1),
                k.sorted_domain.begin() + static_cast<std::ptrdiff_t>(to + 1));
  }
  for (size_t i = from; i <= to; ++i) {
    k.position[static_cast<size_t>(k.sorted_domain[i])] = static_cast<int32_t>(i);
  }
}

bool ScenarioFilters::TopologyAccept(std::span<const PodId> potential) {
  if (!topology_recorded_done_) {
    for (PodId p : recorded_) AddTopologyVictim(p);
    topology_recorded_done_ = true;
  }
  for (; topology_seen_ < potential.size(); ++topology_seen_) {
    AddTopologyVictim(potential[topology_seen_]);
  }
  // KAI keeps each constraint's domains ordered by capacity (most first); the order of equal
  // capacities does not change the greedy match's answer.
  if (topology_sorted_) {
    if (!topology_answer_known_) {
      topology_answer_ = true;
      for (const Constraint& k : constraints_) {
        if (!GreedyMatch(k.required, k.sorted)) {
          topology_answer_ = false;
          break;
        }
      }
      topology_answer_known_ = true;
    }
    return topology_answer_;
  }
  std::vector<double> caps;
  for (const Constraint& k : constraints_) {
    caps = k.capacity;
    std::sort(caps.begin(), caps.end(), std::greater<>());
    if (!GreedyMatch(k.required, caps)) return false;
  }
  return true;
}

void ScenarioFilters::AddIdleVictim(PodId victim) {
  const NodeId n = ssn_.pod(victim).node;
  if (n == kNone || top_size_ == 0) return;
  const size_t node = static_cast<size_t>(n);
  const double before = idle_[node];
  idle_[node] += ssn_.AcceptedGpus(victim);
  const double after = idle_[node];
  const double min = top_.front().first;
  // KAI keeps the K most idle nodes, a node entering only with strictly more idle GPUs than the
  // least of them. The kept values are therefore always the K largest of all nodes' values (the
  // node that leaves holds the minimum, which is at least every value outside), so only that
  // multiset is kept: a node at or above the minimum counts as kept (ties at the minimum hold the
  // same value either way).
  if (!(after > min)) return;
  idle_answer_known_ = false;
  auto less = [](const std::pair<double, size_t>& entry, double v) { return entry.first < v; };
  const double dropped = before >= min ? before : min;
  auto it = std::lower_bound(top_.begin(), top_.end(), dropped, less);
  if (--it->second == 0) top_.erase(it);
  it = std::lower_bound(top_.begin(), top_.end(), after, less);
  if (it != top_.end() && it->first == after) {
    ++it->second;
  } else {
    top_.insert(it, {after, 1});
  }
}

bool ScenarioFilters::IdleGpusAccept(std::span<const PodId> potential) {
  for (; idle_seen_ < potential.size(); ++idle_seen_) AddIdleVictim(potential[idle_seen_]);
  if (idle_answer_known_) return idle_answer_;
  std::vector<double>& caps = caps_scratch_;
  caps.clear();
  for (auto it = top_.rbegin(); it != top_.rend(); ++it) {
    caps.insert(caps.end(), it->second, it->first);
  }
  idle_answer_ = GreedyMatch(required_, caps);
  idle_answer_known_ = true;
  return idle_answer_;
}

const IdleGpuCapacities& IdleGpuCapacities::Kept(const Session& ssn) {
  struct Kept {
    uint64_t session = 0;
    uint64_t version = 0;
    IdleGpuCapacities capacities;
  };
  thread_local Kept kept;
  if (!kept.capacities.computed || kept.session != ssn.serial() ||
      kept.version != ssn.state_version()) {
    kept.capacities.Compute(ssn);
    kept.session = ssn.serial();
    kept.version = ssn.state_version();
  }
  return kept.capacities;
}

}  // namespace gantry
