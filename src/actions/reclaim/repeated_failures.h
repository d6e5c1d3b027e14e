// Reclaim's repeated failures (SchedulerParams::reclaim_repeated_failures): a reclaim search of a
// one-pod job that ended unsolved proves the same end, with the same scenarios simulated and
// filtered, for a later reclaimer of the same queue with a pod alike, in the same session state,
// under the conditions below; that search is then counted (SolverSpec::known_filtered_failure and
// known_failure_simulated) instead of run. (Issue 24: on the busy shape at 5,000 nodes, 491 of
// the 742 failed reclaim searches repeat an earlier failure of their queue so, most of the
// reclaim action's time.)
//
// Why it holds. Let A be the failed search and B the later one, with:
// - the same session (serial) and pod states (state version) at B's start as at A's start and
//   end (a failed search leaves the states as it found them: every statement is discarded; a
//   commit in between gives a new version);
// - A and B jobs of one pod each, pending (their only task), in the same leaf queue Q, of the
//   same priority, preemptibility, namespace and minimum, with no topology constraint; the two
//   pods alike: the same requests (whole and shared GPUs, scalars), annotations, tolerations,
//   config maps and host ports, and neither with a node selector, node affinity, pod
//   (anti-)affinity or DRA claim; the same labels too, unless no pod of the cluster has a pod
//   (anti-)affinity term, required or preferred (then only the task order functions read a pod's
//   labels, to order a job's own pods: one here); the pre-predicates pass for B's pod (they read
//   the pod and the cluster, not the pod states: the predicates plugin's largest node and config
//   maps);
// - no reclaim victim filter, and KAI 72de64fc's search (not v0.16+'s);
// - the setting of the acting-runs rule (victim_search/acting_runs.h): every leaf queue's proper
//   ancestors each the only queue of their level (LoneChainLeaves), a queue order that depends on
//   pod states only, is total on siblings and has job-order keys that are the whole comparison
//   (Session::JobQueueOrderKeyed: with the solver shortcuts);
// - the largest key in Q (Session::JobQueueKeyOf, in the current state) over Q's entries up to
//   the preemptor in A's simulations (the pending jobs of Q ranked before A's preemptor view, as
//   whole views, and that view) equal to the same over B's.
// A search of one task has one prefix. Its victims queue is built from the other leaves' running
// jobs (no victim filter: their pod states alone decide), the same for A and B; the pops read
// only the recorded victims (none), so B generates A's scenarios in A's order, and the scenario
// filters read of the pending pod only what is alike, so they pass and refuse the same ones.
// Each scenario's simulations evict the same victims and then take, in the order of queues and
// jobs, the pending jobs (skipped), the victim jobs (pipelined back where they fit) and the
// preemptor, the acting entries. By the lemma of acting_runs.h an acting entry x of leaf L goes
// before one of another leaf exactly when the largest pair (L, key) over L's entries up to x does;
// keys read their own leaf's pod states, which only that leaf's acting entries change. Q's only
// acting entry is the preemptor (victims are of other leaves), so Q's keys up to it are those of
// the current state, and its largest pair is the same in A's and B's simulations: the same
// victim jobs act before it, in the same order and states, and B's pod, alike, is placed as A's
// was (or not at all: the same "not placed"). After it, Q holds no acting entry, and entries of
// such a leaf never reorder the acting ones (same lemma): the same victims are pipelined back in
// the same order. The validator (proportion's fair-share checks, minruntime) reads the
// preemptor's queue and requests and the victims' states, the same. So
// every simulation ends as A's did, B's prefix is unsolved after the same scenarios, and B's
// search ends unsolved, its generators exhausted, with the same scenarios simulated and
// filtered. A failed reclaim search records no fit error, event or message (its simulations
// place pipelined pods only, which record nothing; the pre-predicates, which would, pass), so
// what B's search would record is only those counters, which SolveJob adds for it after the same
// budget checks. A search that the time budget cut short (SolverResult::cut_by_budget) proves
// nothing and is not kept.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "actions/victim_search/idle_queues.h"
#include "actions/victim_search/solver.h"
#include "framework/session.h"

namespace gantry {

class ReclaimRepeatedFailures {
 public:
  explicit ReclaimRepeatedFailures(const Session& ssn) : ssn_(ssn) {
    bool lone = true;
    const std::vector<uint8_t> chain = victim_search::LoneChainLeaves(ssn);
    for (QueueId q = 0; q < static_cast<QueueId>(chain.size()); ++q) {
      if (ssn.cluster().queues[q].IsLeaf() && chain[q] == 0) lone = false;
    }
    for (const Pod& p : ssn.cluster().pods) {
      if (!p.pod_affinity.empty() || !p.pod_anti_affinity.empty() || p.HasPreferredPodAffinity()) {
        labels_read_ = true;
        break;
      }
    }
    applies_ = ssn.params().reclaim_repeated_failures && !ssn.params().victim_search_v017 &&
               !ssn.HasReclaimVictimFilters() && ssn.JobQueueOrderKeyed() &&
               ssn.QueueOrderDependsOnlyOnPodStates() && ssn.QueueOrderTotalOnSiblings() && lone;
  }

  // A kept failure's (scenarios filtered, simulated) that proves `job`'s search fails, if any:
  // `tasks` are its tasks to allocate.
  std::optional<std::pair<int64_t, int64_t>> Known(Session& ssn, JobId job,
                                                   std::span<const PodId> tasks) {
    if (!applies_ || !CurrentState() || !Eligible(job, tasks)) return std::nullopt;
    const QueueId queue = ssn_.cluster().jobs[job].queue;
    std::optional<QueueOrderKey> largest;  // (RunMax of `job`, once)
    for (const Failure& f : failures_) {
      if (f.queue != queue || !Alike(f.job, job)) continue;
      if (!largest) largest = RunMax(job);
      if (largest->Compare(f.largest) != 0) continue;
      // (The pre-predicates would record a fit error for B's pod: searched.)
      if (ssn.PrePredicate(tasks.front())) return std::nullopt;
      return std::make_pair(f.filtered, f.simulated);
    }
    return std::nullopt;
  }

  // A search of `job` (its tasks) ended with `r`; `before_serial` and `before_version` are the
  // session's at its start.
  void Searched(JobId job, std::span<const PodId> tasks, const SolverResult& r,
                uint64_t before_serial, uint64_t before_version) {
    if (!applies_ || r.solved || r.cut_by_budget || r.end != SearchEnd::kGeneratorsExhausted ||
        ssn_.serial() != before_serial || ssn_.state_version() != before_version ||
        !Eligible(job, tasks)) {
      return;
    }
    CurrentState();  // (drops the failures of another state)
    failures_.push_back(Failure{job, ssn_.cluster().jobs[job].queue, r.scenarios_filtered,
                                r.scenarios_simulated, RunMax(job)});
  }

 private:
  struct Failure {
    JobId job;
    QueueId queue;
    int64_t filtered;       // its scenarios refused by the scenario filters
    int64_t simulated;      // and passed
    QueueOrderKey largest;  // RunMax of the job
  };

  // Whether the kept failures are of the session's current state (else they are dropped and the
  // state noted, with the lists of pending jobs per queue).
  bool CurrentState() {
    if (serial_ == ssn_.serial() && version_ == ssn_.state_version()) return true;
    failures_.clear();
    pending_.clear();
    serial_ = ssn_.serial();
    version_ = ssn_.state_version();
    return false;
  }

  // Whether the rule covers `job`: one pod, pending (its only task), no topology constraint, a
  // pod with no node selector, node or pod affinity or DRA claim.
  bool Eligible(JobId job, std::span<const PodId> tasks) const {
    const Cluster& c = ssn_.cluster();
    const Job& j = c.jobs[job];
    if (j.queue == kNone || j.pods.size() != 1 || tasks.size() != 1 || tasks.front() != j.pods[0] ||
        j.pod_sets.size() != 1) {
      return false;
    }
    for (const SubGroup& g : j.groups) {
      if (g.topology) return false;
    }
    const Pod& p = c.pods[j.pods[0]];
    return p.node_selector.empty() && p.required_node_affinity.empty() && p.pod_affinity.empty() &&
           p.pod_anti_affinity.empty() && !p.HasPreferredPodAffinity() && p.claims.empty() &&
           p.dra_gpus == 0 && p.dra_extended.empty() && p.nominated_node == kNone;
  }

  // Whether the eligible jobs `a` and `b` and their pods are alike (see the file comment).
  bool Alike(JobId a, JobId b) const {
    const Cluster& c = ssn_.cluster();
    const Job& ja = c.jobs[a];
    const Job& jb = c.jobs[b];
    if (ja.queue != jb.queue || ja.priority != jb.priority || ja.preemptible != jb.preemptible ||
        ja.namespace_ != jb.namespace_ ||
        ja.pod_sets[0].min_available != jb.pod_sets[0].min_available) {
      return false;
    }
    const Pod& pa = c.pods[ja.pods[0]];
    const Pod& pb = c.pods[jb.pods[0]];
    return pa.request == pb.request && pa.gpu_kind == pb.gpu_kind &&
           pa.legacy_mig == pb.legacy_mig && pa.gpu_devices == pb.gpu_devices &&
           pa.gpu_fraction == pb.gpu_fraction && pa.gpu_memory_mib == pb.gpu_memory_mib &&
           pa.mig_gpus == pb.mig_gpus && pa.namespace_ == pb.namespace_ &&
           (!labels_read_ || pa.labels.items() == pb.labels.items()) &&
           pa.annotations.items() == pb.annotations.items() &&
           pa.tolerations.items() == pb.tolerations.items() &&
           pa.config_maps.items() == pb.config_maps.items() && pa.host_ports == pb.host_ports;
  }

  // The largest key, in `job`'s queue Q and the current state, over Q's entries up to `job`'s
  // preemptor view in its simulations: the pending jobs of Q ranked before that view (whole
  // views, as the simulations queue them) and the view itself.
  QueueOrderKey RunMax(JobId job) {
    const Cluster& c = ssn_.cluster();
    const QueueId q = c.jobs[job].queue;
    const JobView pre{job, true, {c.jobs[job].pods[0]}};
    QueueOrderKey largest = ssn_.JobQueueKeyOf(q, pre);
    JobView whole{kNone, false, {}};
    for (JobId j : PendingOf(q)) {
      if (j == job) continue;
      whole.job = j;
      if (!ssn_.JobViewLess(whole, pre)) continue;
      const QueueOrderKey k = ssn_.JobQueueKeyOf(q, whole);
      if (k.Compare(largest) > 0) largest = k;
    }
    return largest;
  }

  // The jobs of queue `q` the simulations order as pending (those pending at the session's open
  // that have pending pods), listed once per state.
  const std::vector<JobId>& PendingOf(QueueId q) {
    if (pending_.empty()) {
      pending_.resize(ssn_.cluster().queues.size());
      for (JobId j : ssn_.jobs_pending_at_open()) {
        const QueueId jq = ssn_.cluster().jobs[j].queue;
        if (jq != kNone && ssn_.HasPendingPods(j)) pending_[jq].push_back(j);
      }
    }
    return pending_[q];
  }

  const Session& ssn_;
  bool applies_ = false;
  bool labels_read_ = false;  // some pod has a pod (anti-)affinity term: labels are compared
  uint64_t serial_ = 0;
  uint64_t version_ = 0;
  std::vector<Failure> failures_;
  std::vector<std::vector<JobId>> pending_;  // per queue (PendingOf), of the current state
};

}  // namespace gantry
