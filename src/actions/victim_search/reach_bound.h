// Accelerator of the victim search: scenarios whose nodes cannot reach a node that frees a block
// the pending pods lack (issue 24, the scenario count as the cluster grows).
//
// A prefix's scenarios accumulate potential victims pop after pop, and on a large cluster almost
// all of them fail the capacity pre-check (capacity_blocks.h): each scenario is simulated once per
// node n of its latest victim job, evicting the victims of the jobs with potential victims on n, so
// it frees GPUs only on the nodes of those jobs' victims (its touched nodes), and most of those
// nodes free no block of the size the pending pods lack. Deciding that per scenario lists every
// victim of those jobs; this rule decides it from running sums kept over the whole prefix.
//
// Why it is sound. In the prefix's base state (recorded victims evicted, F the feasible nodes) the
// blocks of g free GPUs after a node's evictions are at most
//   base(g) + sum over its touched nodes m of gain_m(g),
//   gain_m(g) = blocks_g(free_m + GPUs of every potential victim accumulated on m)
//               - (m in F ? blocks_g(free_m) : 0),
// since a node's simulation evicts a part of the accumulated victims (evicting fewer never frees
// more) and the nodes it adds to F start counted. For a size g where the pending pods need more
// blocks than base(g) (the largest such size is taken), the pre-check - a necessary condition for
// placing the pending pods, gpu_blocks.h - can only pass when a touched node has gain_m(g) > 0:
// m is in U. A node n reaches U when a job with potential victims on n has a victim on a node of U
// (W, the nodes that reach U). A scenario none of whose nodes is in W fails the pre-check on every
// node: each node's simulation would end kFailed with nothing kept (the reference path undoes its
// evictions and the feasible nodes they added), so the scenario ends unsolved without being tried.
// U and W only grow as victims accumulate, and are kept incrementally: each victim is added once
// per prefix (its node's sum, the job's node list, the node's job list), and a node entering U
// marks the nodes of the jobs with victims on it. A victim whose GPUs are not counted exactly (not
// active there, not whole GPUs) puts its node in U (it might free anything). base(g) is the
// capacity pre-check's count of the batch (CapacityBlocks::BaseBlocks), read at each call: nodes
// that join the feasible ones (a rejected simulation keeps the nodes it added, as KAI does) have no
// free GPU in the base state and leave it as it is (capacity_blocks.h), and U and W, counted with
// them outside F, are kept as they were, supersets of what they would be counted afresh. Sums are
// used only while every count is a whole number (exact in any order).
//
// Victims of one-pod jobs (SchedulerParams::solver_reach_single_pod_jobs). The job and node lists
// exist only to carry reach from a node of U to the other nodes of a job's victims. A job of one
// pod has one node m (NodesOfJob is {m}, and its potential victim is its pod, on m when counted),
// so through it a node reaches U exactly when m is in U: its pod needs no list entry, only m marked
// in W when m enters U. This is what the lists would give: m enters U only once a counted victim on
// m was added (its sum starts at its first victim), the job of that victim then has m among its
// nodes, so m is in W from then on either way; and a job of several pods listed on m is marked on
// m's entry into U as before (its entry in m's job list is kept). On the whole-GPU shapes of the
// benchmark almost every victim is a one-pod job (the generated running pods; only the gangs placed
// by allocate have several): the rule then costs one sum and one comparison per victim instead of
// two list searches and insertions (issue 24: the catch-up was 9% of the 5,000-node cycle). The
// answers, U and W, are the same with the switch off, which keeps every victim in the lists.
//
// Part of SearchAccelerator (accelerator.h), which exists only with the solver shortcuts on;
// SchedulerParams::solver_reach_bound switches this rule alone off (its
// differential test compares the decisions with and without it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "actions/victim_search/gpu_blocks.h"
#include "actions/victim_search/scenario.h"
#include "framework/session.h"

namespace gantry::victim_search {

class ReachBound {
 public:
  // A prefix starts (its base state and pending pods are new): everything is built again.
  void StartPrefix() { built_ = false; }
  // Whether victims of one-pod jobs skip the job and node lists (see the file comment).
  void SetSinglePodJobs(bool on) { single_pod_jobs_ = on; }

  // Whether every node of `nodes` (the latest victim job's) fails the capacity pre-check of
  // `scenario` for the pending pods' profile `profile` (see the file comment). The session must
  // be in the prefix's base state, with `feasible` flagging the feasible nodes and `base(g)` the
  // blocks of g free GPUs (g = 0: free GPUs) they hold, exact sums where `base_exact`.
  // `slot(i, node, counted, gpus)` gives what evicting the scenario's pod of slot i
  // (Scenario::group_pods) frees in the base state: its node and, when `counted`, exactly `gpus`.
  template <typename Base, typename Slot>
  bool OutOfReach(const Session& ssn, const Scenario& scenario, const SizeProfile& profile,
                  const std::vector<char>& feasible, bool base_exact, const Base& base,
                  std::span<const NodeId> nodes, const Slot& slot) {
    if (!built_) Build(ssn, profile, base_exact, base);
    // (Once the base count no longer lacks blocks of g_, or is not exact, the rule stops for the
    // prefix.)
    if (active_ && !(base_exact && need_ > base(g_))) active_ = false;
    if (!active_) return false;
    CatchUp(ssn, scenario, feasible, slot);
    for (NodeId n : nodes) {
      if (n == kNone || reach_[static_cast<size_t>(n)] == stamp_) return false;
    }
    return !nodes.empty();
  }

 private:
  // The size g_ the rule follows; the sums start over.
  template <typename Base>
  void Build(const Session& ssn, const SizeProfile& profile, bool base_exact, const Base& base) {
    built_ = true;
    active_ = false;
    seen_slots_ = 0;
    stamp_ = ++store_.last_stamp;
    const auto& c = ssn.cluster();
    if (node_stamp_.size() != c.nodes.size() || job_reach_.size() != c.jobs.size()) {
      node_stamp_.assign(c.nodes.size(), 0);
      in_u_.assign(c.nodes.size(), 0);
      reach_.assign(c.nodes.size(), 0);
      acc_.assign(c.nodes.size(), 0.0);
      node_jobs_.assign(c.nodes.size(), {});
      job_reach_.assign(c.jobs.size(), 0);
      job_nodes_.assign(c.jobs.size(), {});
    } else {
      for (JobId j : touched_jobs_) job_nodes_[static_cast<size_t>(j)].clear();
      for (NodeId n : touched_nodes_) node_jobs_[static_cast<size_t>(n)].clear();
    }
    touched_jobs_.clear();
    touched_nodes_.clear();
    if (profile.always_fits || !base_exact) return;
    // The largest size whose blocks the base state lacks (0: only the total GPUs).
    for (const auto& [g, count] : profile.steps) {
      if (count > base(g)) {
        g_ = g;
        need_ = count;
        active_ = true;
        return;
      }
    }
    if (profile.total > base(0)) {
      g_ = 0;
      need_ = profile.total;
      active_ = true;
    }
  }

  // Adds the potential victims the scenario accumulated since the last call.
  template <typename Slot>
  void CatchUp(const Session& ssn, const Scenario& scenario, const std::vector<char>& feasible,
               const Slot& slot) {
    const std::span<const PodId> pods = scenario.group_pods();
    const size_t recorded = scenario.recorded_tasks().size();
    if (seen_slots_ < recorded) seen_slots_ = recorded;
    const auto free = ssn.non_allocated_gpus();
    const auto& briefs = ssn.pod_briefs();
    for (; seen_slots_ < pods.size(); ++seen_slots_) {
      NodeId m = kNone;
      bool counted = false;
      double gpus = 0;
      slot(seen_slots_, m, counted, gpus);
      if (m == kNone) continue;  // (frees nothing on a node)
      const size_t mi = static_cast<size_t>(m);
      const JobId j = briefs[pods[seen_slots_]].job;
      const size_t ji = static_cast<size_t>(j);
      if (node_stamp_[mi] != stamp_) {
        node_stamp_[mi] = stamp_;
        touched_nodes_.push_back(m);
        acc_[mi] = free[m];
      }
      if (single_pod_jobs_ && counted && ssn.single_pod(j) != kNone) {
        // (A one-pod job: no list entry, see the file comment.)
        acc_[mi] += gpus;
        if (in_u_[mi] != stamp_ && Gains(mi, free[m], counted, feasible[m])) EnterU(m);
        continue;
      }
      std::vector<NodeId>& jn = job_nodes_[ji];
      if (jn.empty()) touched_jobs_.push_back(j);
      if (std::find(jn.begin(), jn.end(), m) == jn.end()) {
        jn.push_back(m);
        if (job_reach_[ji] == stamp_) reach_[mi] = stamp_;
      }
      std::vector<JobId>& nj = node_jobs_[mi];
      if (std::find(nj.begin(), nj.end(), j) == nj.end()) nj.push_back(j);
      if (counted) acc_[mi] += gpus;
      if (in_u_[mi] != stamp_) {
        if (Gains(mi, free[m], counted, feasible[m])) EnterU(m);
      } else if (job_reach_[ji] != stamp_) {
        Reaches(j);
      }
    }
  }

  // Whether node mi (free GPUs `free` in the base state) frees a block of g_ with its sum.
  bool Gains(size_t mi, double free, bool counted, bool feasible) const {
    const double base = NodeBlocks(free, g_);
    return !counted || !ExactlySummable(acc_[mi]) ||
           NodeBlocks(acc_[mi], g_) - (feasible ? base : 0) > 0;
  }

  // Node m frees a block of g_: every job with potential victims on it reaches U, and so does m
  // itself (some victim on m was added; with one-pod jobs it may be in no list).
  void EnterU(NodeId m) {
    in_u_[static_cast<size_t>(m)] = stamp_;
    if (single_pod_jobs_) reach_[static_cast<size_t>(m)] = stamp_;
    for (JobId j : node_jobs_[static_cast<size_t>(m)]) {
      if (job_reach_[static_cast<size_t>(j)] != stamp_) Reaches(j);
    }
  }
  // Job j has a potential victim on a node of U: the nodes of its victims reach U.
  void Reaches(JobId j) {
    job_reach_[static_cast<size_t>(j)] = stamp_;
    for (NodeId n : job_nodes_[static_cast<size_t>(j)]) reach_[static_cast<size_t>(n)] = stamp_;
  }

  bool built_ = false;
  bool single_pod_jobs_ = true;
  bool active_ = false;  // the base state lacks blocks of g_ (and its counts are exact)
  double g_ = 0;
  double need_ = 0;        // blocks of g_ (g_ = 0: GPUs) the pending pods need
  size_t seen_slots_ = 0;  // Scenario::group_pods slots added
  // Entries are current where their stamp is stamp_ (one per build). The lists are kept per
  // thread with their capacity (searches do not nest; stamps are unique per thread, so an entry
  // a previous search left never matches), not sized per search: a cycle runs thousands of
  // searches on a cluster of tens of thousands of jobs.
  struct Store {
    uint64_t last_stamp = 0;
    std::vector<uint64_t> node_stamp;  // acc holds the node's sum
    std::vector<uint64_t> in_u;        // the node frees a block of g_ (U)
    std::vector<uint64_t> reach;       // the node reaches U (W)
    std::vector<uint64_t> job_reach;   // the job has a potential victim on a node of U
    std::vector<double> acc;           // free GPUs with every accumulated potential victim evicted
    std::vector<std::vector<JobId>> node_jobs;   // jobs with potential victims on the node
    std::vector<std::vector<NodeId>> job_nodes;  // nodes of the job's potential victims
    std::vector<NodeId> touched_nodes;           // (the entries of node_jobs and job_nodes set)
    std::vector<JobId> touched_jobs;
  };
  static Store& SharedStore() {
    thread_local Store store;
    return store;
  }
  Store& store_ = SharedStore();
  uint64_t stamp_ = 0;
  std::vector<uint64_t>& node_stamp_ = store_.node_stamp;
  std::vector<uint64_t>& in_u_ = store_.in_u;
  std::vector<uint64_t>& reach_ = store_.reach;
  std::vector<uint64_t>& job_reach_ = store_.job_reach;
  std::vector<double>& acc_ = store_.acc;
  std::vector<std::vector<JobId>>& node_jobs_ = store_.node_jobs;
  std::vector<std::vector<NodeId>>& job_nodes_ = store_.job_nodes;
  std::vector<NodeId>& touched_nodes_ = store_.touched_nodes;
  std::vector<JobId>& touched_jobs_ = store_.touched_jobs;
};

}  // namespace gantry::victim_search
