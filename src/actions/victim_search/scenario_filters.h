// KAI's accumulated scenario filters: cheap tests the victim search applies to a scenario before
// simulating it (a scenario that fails one is skipped). They are built for one pod prefix of the
// pending job, in the session state the scenarios are generated in (no victim evicted), and see
// the scenario's victims accumulate: the recorded victims, then the potential victims in the
// order they were added.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "framework/session.h"

namespace gantry {

// Per-solve inputs that do not change between prefixes (every prefix starts from the same
// session state): each node's idle plus releasing GPUs (KAI's GetSumOfIdleGPUs +
// GetSumOfReleasingGPUs), and the nodes ordered by them, most first (ties by node index).
struct IdleGpuCapacities {
  std::vector<double> capacity;
  std::vector<NodeId> by_capacity;
  void Compute(const Session& ssn);
  bool computed = false;

  // The idle-GPU capacities of the session as it is (clean), kept per thread with the session
  // and state version they were computed at: searches that leave the session as they found it
  // (every failed one, e.g. most preempt searches) do not count them again. (A pod joins or
  // leaves a node, or turns releasing, only through a change of its status, which the state
  // version follows.)
  static const IdleGpuCapacities& Kept(const Session& ssn);
};

class ScenarioFilters {
 public:
  // `feasible` flags the nodes the prefix may use (the job's feasible nodes and the recorded
  // victims' nodes).
  ScenarioFilters(const Session& ssn, const IdleGpuCapacities& capacities, JobId preemptor,
                  std::span<const PodId> pending, std::span<const PodId> recorded,
                  const std::vector<char>& feasible);

  // Whether the scenario whose potential victims are `potential` (which extends the list given
  // at the previous call) passes every filter, in KAI's order: node affinities, topology-aware
  // idle GPUs, idle GPUs. The first failing filter decides; filters after it catch up on the
  // victims at their next call, as KAI's do.
  bool Accept(std::span<const PodId> potential);

 private:
  // KAI's AccumulatedNodeAffinities.
  bool NodeAffinitiesAccept(std::span<const PodId> potential);
  void AddAffinityNode(PodId victim);
  // KAI's TopologyAwareIdleGpus.
  bool TopologyAccept(std::span<const PodId> potential);
  void AddTopologyVictim(PodId victim);
  // KAI's AccumulatedIdleGpus.
  bool IdleGpusAccept(std::span<const PodId> potential);
  void AddIdleVictim(PodId victim);

  const Session& ssn_;
  std::span<const PodId> pending_;
  std::span<const PodId> recorded_;

  // Node affinities: active when some pending pod has a node selector or required node affinity.
  bool affinity_active_ = false;
  std::vector<char> affinity_nodes_;
  std::vector<NodeId> affinity_list_;
  size_t affinity_seen_ = 0;  // potential victims taken into account

  // Topology: one entry per (topology, level) constraint of the preemptor's sub-groups.
  struct Constraint {
    std::string topology_name;
    std::string level;
    std::vector<std::string> domains;  // label values of the level
    std::vector<double> capacity;      // per domain
    std::vector<int32_t> node_domain;  // per node: domain index or -1
    std::vector<double> required;      // GPUs of each constrained sub-group, most first
    // SchedulerParams::topology_filter_sorted: the capacities most first (ties in any order),
    // the domain of each entry, and each domain's entry.
    std::vector<double> sorted;
    std::vector<int32_t> sorted_domain;
    std::vector<int32_t> position;
  };
  // Moves domain d's entry of k.sorted to where its new capacity belongs.
  static void Resort(Constraint& k, int32_t d);
  std::vector<Constraint> constraints_;
  bool topology_sorted_ = false;
  // TopologyAccept's last answer (sorted mode), valid while no capacity changed since.
  bool topology_answer_known_ = false;
  bool topology_answer_ = false;
  std::vector<char> topology_seen_pods_;
  size_t topology_seen_ = 0;
  bool topology_recorded_done_ = false;

  // Idle GPUs.
  std::vector<double> required_;  // the pending pods' GPUs, most first
  std::vector<double> idle_;      // per node, growing with the victims seen
  // The idle GPUs of the most idle nodes (at most one node per pending pod), as (value, count)
  // in ascending value order (few distinct values: a flat list); see AddIdleVictim.
  std::vector<std::pair<double, size_t>> top_;
  size_t top_size_ = 0;
  std::vector<double> caps_scratch_;
  size_t idle_seen_ = 0;
  // IdleGpusAccept's last answer, valid while top_ is unchanged since (the match reads only
  // top_ and the fixed requirements).
  bool idle_answer_known_ = false;
  bool idle_answer_ = false;
};

// A pod's GPUs as KAI's scenario filters and generators count a request (its
// GpuRequirement.GetGpusQuota: whole GPUs, fractions of devices, MIG GPU-equivalents, DRA GPUs).
double ScenarioGpus(const Pod& pod);

// KAI's greedy first-fit-decreasing match: each requirement (largest first) goes to the first
// holder (most capacity first) with room left; a requirement larger than a holder's whole
// capacity ends the search for it.
bool GreedyMatch(std::span<const double> requirements, std::span<const double> capacities);

}  // namespace gantry
