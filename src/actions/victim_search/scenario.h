// A scenario of the victim search (KAI's pod-accumulated scenario): the pending pods of one
// prefix, the victims recorded for the previous prefix, and the potential victims added job by
// job from the victims queue, grouped as KAI's victim job representatives. What validators see
// (ScenarioInfo) is built from it on demand.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry::victim_search {

// Appends `pods` to `out`. (Most victim groups hold one pod: a push is cheaper than a range
// insert there, and this runs for every group of every scenario.)
inline void AppendPods(std::vector<PodId>& out, std::span<const PodId> pods) {
  if (pods.size() == 1) {
    out.push_back(pods.front());
  } else {
    out.insert(out.end(), pods.begin(), pods.end());
  }
}

// Groups of one victim job's pods taken together (KAI's job representative clones), in one
// flat list.
struct VictimGroups {
  std::vector<JobId> jobs;
  std::vector<size_t> ends;  // group i holds pods[ends[i - 1] .. ends[i])
  std::vector<PodId> pods;

  size_t size() const { return jobs.size(); }
  JobId job(size_t i) const { return jobs[i]; }
  std::span<const PodId> tasks(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::span<const PodId>(pods).subspan(begin, ends[i] - begin);
  }
  // Empties the groups, keeping the lists' capacity.
  void Clear() {
    jobs.clear();
    ends.clear();
    pods.clear();
  }
  void Add(JobId job, std::span<const PodId> group) {
    jobs.push_back(job);
    AppendPods(pods, group);
    ends.push_back(pods.size());
  }
};

// A group of a scenario: one victim job's pods taken together, group_pods[begin, end), and the
// job's next group (-1: none).
struct ScenarioGroup {
  JobId job;
  size_t begin;
  size_t end;
  int32_t next;
};

// Per-pod and per-job lookups of a scenario, as flat arrays reused from one scenario to the next
// (only the entries a scenario touched are reset).
struct ScenarioIndex {
  std::vector<int32_t> group_of_pod;  // first group holding the pod, or -1
  std::vector<char> recorded;         // the pod is a recorded victim
  std::vector<int32_t> victim_slot;   // per job: its entry in ScenarioInfo::victims, or -1
  // Per job: its first and last group in the scenario, or -1 (the groups of a job are chained
  // through Scenario's Group::next, in order).
  std::vector<int32_t> first_group_of_job, last_group_of_job;
  // Per node (at NodeSlot(node)): the jobs with potential victims there.
  std::vector<std::vector<JobId>> jobs_by_node;
  // A node's index in jobs_by_node: node + 1, so that kNone (-1) is 0.
  static size_t NodeSlot(NodeId node) {
    return static_cast<size_t>(static_cast<int64_t>(node) + 1);
  }
  std::vector<size_t> touched_nodes;
  // What validators see (the preemptor's pods and every victim so far), and victim pod lists
  // kept for reuse.
  ScenarioInfo info;
  std::vector<std::vector<PodId>> spare_lists;
  // A scenario's own lists, kept between scenarios with their capacity (a prefix's scenario
  // grows them to every victim it considers).
  struct Lists {
    std::vector<PodId> group_pods;
    std::vector<ScenarioGroup> groups;
  };
  Lists spare;

  void Size(size_t pods, size_t jobs, size_t nodes) {
    if (jobs_by_node.size() != nodes + 1) jobs_by_node.assign(nodes + 1, {});
    if (group_of_pod.size() != pods) {
      group_of_pod.assign(pods, -1);
      recorded.assign(pods, 0);
    }
    if (victim_slot.size() != jobs) {
      victim_slot.assign(jobs, -1);
      first_group_of_job.assign(jobs, -1);
      last_group_of_job.assign(jobs, -1);
    }
  }
  // Clears what a scenario set: the entries of its pods (`pods`: every pod of its groups) and
  // jobs (its groups' jobs), and the nodes it listed.
  void Reset(std::span<const PodId> pods, std::span<const ScenarioGroup> groups) {
    for (PodId p : pods) {
      group_of_pod[p] = -1;
      recorded[p] = 0;
    }
    for (const ScenarioGroup& g : groups) {
      victim_slot[g.job] = -1;
      first_group_of_job[g.job] = -1;
      last_group_of_job[g.job] = -1;
    }
    for (size_t n : touched_nodes) jobs_by_node[n].clear();
    touched_nodes.clear();
  }
};

// The victims considered for one pod prefix of the pending job.
class Scenario {
 public:
  Scenario(const Session& ssn, ScenarioIndex& index, JobId preemptor, std::vector<PodId> pending,
           const VictimGroups& recorded)
      : index_(index), preemptor_(preemptor), pending_(std::move(pending)) {
    // (The index is clean: the previous scenario on it reset what it set, see ~Scenario.)
    index_.Size(ssn.cluster().pods.size(), ssn.cluster().jobs.size(), ssn.cluster().nodes.size());
    ScenarioInfo& info = index_.info;
    // Victim pod lists go back to the pool, to be reused without allocating.
    for (auto& [job, pods] : info.victims) index_.spare_lists.push_back(std::move(pods));
    info.victims.clear();
    info.preemptor = preemptor_;
    info.preemptor_tasks = pending_;
    // (Lists kept with their capacity between scenarios; see ~Scenario.)
    group_pods_ = std::move(index_.spare.group_pods);
    groups_ = std::move(index_.spare.groups);
    group_pods_.clear();
    groups_.clear();
    // (The recorded tasks are the groups' pods in order.)
    recorded_tasks_ = recorded.pods;
    groups_.reserve(recorded.size());
    group_pods_.reserve(recorded.pods.size());
    for (size_t i = 0; i < recorded.size(); ++i) {
      AppendGroup(recorded.job(i), recorded.tasks(i));
    }
    recorded_groups_ = groups_.size();
    for (PodId p : recorded_tasks_) index_.recorded[p] = 1;
  }
  ~Scenario() {
    index_.Reset(group_pods_, groups_);
    index_.spare.group_pods = std::move(group_pods_);
    index_.spare.groups = std::move(groups_);
  }
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  const std::vector<PodId>& pending() const { return pending_; }
  const std::vector<PodId>& recorded_tasks() const { return recorded_tasks_; }

  bool IsRecorded(PodId p) const { return index_.recorded[p] != 0; }

  void AddPotentialVictims(const Session& ssn, std::span<const PodId> tasks) {
    if (tasks.empty()) return;
    const JobId job = ssn.pod_briefs()[tasks.front()].job;
    AppendGroup(job, tasks);
    for (PodId p : tasks) {
      const size_t slot = ScenarioIndex::NodeSlot(ssn.pod(p).node);
      auto& jobs = index_.jobs_by_node[slot];
      if (jobs.empty()) index_.touched_nodes.push_back(slot);
      if (std::find(jobs.begin(), jobs.end(), job) == jobs.end()) jobs.push_back(job);
    }
  }

  // Job of the last potential victim added, or kNone. (The potential victims are the groups
  // after the recorded ones, so the last of them is the last pod of group_pods.)
  JobId LatestPotentialVictimJob(const Session& ssn) const {
    return groups_.size() == recorded_groups_ ? kNone : ssn.pod_briefs()[group_pods_.back()].job;
  }

  // Every task of every group of the jobs that have potential victims on `node`, into `out`.
  // With `job_stamp`: appends, skipping jobs stamped `stamp` in it and stamping those taken.
  void VictimTasksFromNode(NodeId node, std::vector<PodId>& out,
                           std::vector<uint64_t>* job_stamp = nullptr, uint64_t stamp = 0) const {
    if (job_stamp == nullptr) out.clear();
    for (JobId job : index_.jobs_by_node[ScenarioIndex::NodeSlot(node)]) {
      if (job_stamp != nullptr) {
        if ((*job_stamp)[job] == stamp) continue;
        (*job_stamp)[job] = stamp;
      }
      for (int32_t g = index_.first_group_of_job[job]; g >= 0;
           g = groups_[static_cast<size_t>(g)].next) {
        const auto tasks = group_tasks(g);
        AppendPods(out, tasks);
      }
    }
  }

  // The jobs with potential victims on `node`, in the order VictimTasksFromNode lists their tasks.
  std::span<const JobId> JobsOnNode(NodeId node) const {
    return index_.jobs_by_node[ScenarioIndex::NodeSlot(node)];
  }

  // Every group's pods in order, the recorded victims' first (a pod's place here is its slot).
  std::span<const PodId> group_pods() const { return group_pods_; }
  // Calls f(slot) for every task VictimTasksFromNode(node) lists, in that order.
  template <typename F>
  void ForEachSlotFromNode(NodeId node, F&& f) const {
    for (JobId job : index_.jobs_by_node[ScenarioIndex::NodeSlot(node)]) {
      for (int32_t g = index_.first_group_of_job[job]; g >= 0;
           g = groups_[static_cast<size_t>(g)].next) {
        const Group& group = groups_[static_cast<size_t>(g)];
        for (size_t i = group.begin; i < group.end; ++i) f(i);
      }
    }
  }

  // Index of the group holding `p` (the victim job representative for a task), or -1.
  int32_t GroupIndexOf(PodId p) const { return index_.group_of_pod[p]; }
  JobId group_job(int32_t g) const { return groups_[static_cast<size_t>(g)].job; }
  std::span<const PodId> group_tasks(int32_t g) const {
    const Group& group = groups_[static_cast<size_t>(g)];
    return std::span<const PodId>(group_pods_).subspan(group.begin, group.end - group.begin);
  }

  // What validators see. Its victim lists are brought up to date here, from the groups added
  // since the last call (most scenarios are never validated).
  const ScenarioInfo& Info() const {
    auto& victims = index_.info.victims;
    for (; info_groups_ < groups_.size(); ++info_groups_) {
      const JobId job = groups_[info_groups_].job;
      const auto tasks = group_tasks(static_cast<int32_t>(info_groups_));
      int32_t& slot = index_.victim_slot[job];
      if (slot < 0) {
        slot = static_cast<int32_t>(victims.size());
        std::vector<PodId> list;
        if (!index_.spare_lists.empty()) {
          list = std::move(index_.spare_lists.back());
          index_.spare_lists.pop_back();
          list.clear();
        }
        list.assign(tasks.begin(), tasks.end());
        victims.emplace_back(job, std::move(list));
      } else {
        auto& v = victims[static_cast<size_t>(slot)].second;
        v.insert(v.end(), tasks.begin(), tasks.end());
      }
    }
    return index_.info;
  }
  // Records which victims a simulation evicted (see ScenarioInfo::evicted_known).
  void SetEvicted(std::span<const PodId> potential) const {
    index_.info.evicted_known = true;
    index_.info.evicted_recorded = recorded_tasks_;
    index_.info.evicted_potential = potential;
  }
  size_t group_count() const { return groups_.size(); }

 private:
  using Group = ScenarioGroup;

  void AppendGroup(JobId job, std::span<const PodId> tasks) {
    const int32_t index = static_cast<int32_t>(groups_.size());
    groups_.push_back({job, group_pods_.size(), group_pods_.size() + tasks.size(), -1});
    AppendPods(group_pods_, tasks);
    for (PodId p : tasks) {
      if (index_.group_of_pod[p] < 0) {
        index_.group_of_pod[p] = index;
      }
    }
    // (Info lists the job's victims when asked.)
    int32_t& last = index_.last_group_of_job[job];
    if (last < 0) {
      index_.first_group_of_job[job] = index;
    } else {
      groups_[static_cast<size_t>(last)].next = index;
    }
    last = index;
  }

  ScenarioIndex& index_;
  JobId preemptor_;
  std::vector<PodId> pending_;
  std::vector<PodId> recorded_tasks_;
  size_t recorded_groups_ = 0;  // the first groups: the recorded victims'
  std::vector<Group> groups_;
  std::vector<PodId> group_pods_;
  mutable size_t info_groups_ = 0;  // groups listed in the ScenarioInfo's victims (see Info)
};

// What taking an entry's victims does to the victims queue, given the recorded victims: the
// entry is skipped when it holds a recorded victim (then the rest of the entry, without the
// recorded pods, goes back to the queue), otherwise its victims are planned and, when the entry
// has more active pods, the rest goes back.
struct PopStep {
  bool skip = false;
  bool push = false;
  std::vector<PodId> rest;
};
inline void DecideStep(const Session& ssn, const JobView& next, std::span<const PodId> victims,
                       bool has_more, const Scenario& scenario, PopStep& out) {
  out.skip = false;
  out.push = false;
  out.rest.clear();
  const std::vector<PodId>& all = next.partial ? next.pods : ssn.cluster().jobs[next.job].pods;
  for (PodId p : victims) {
    if (!scenario.IsRecorded(p)) continue;
    // Part of this job is already a recorded victim: consider only the rest later.
    out.skip = true;
    for (PodId q : all) {
      if (!scenario.IsRecorded(q)) out.rest.push_back(q);
    }
    out.push = !out.rest.empty();
    return;
  }
  if (has_more) {
    for (PodId q : all) {
      if (std::find(victims.begin(), victims.end(), q) == victims.end()) out.rest.push_back(q);
    }
    out.push = true;
  }
}

}  // namespace gantry::victim_search
