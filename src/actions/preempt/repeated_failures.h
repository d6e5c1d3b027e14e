// Preempt's repeated failures (SchedulerParams::preempt_repeated_failures): a preempt search that
// ended unsolved with no scenario passing the scenario filters proves the same end for a later
// preemptor in the same session state, under the conditions below, which is then counted
// (SolverSpec::known_filtered_failure) instead of searched.
//
// Why it holds. Let A be the failed search and B the later one, with:
// - the same session (serial) and pod states (state version) at B's start as at A's start and
//   end (A changed nothing: no scenario passed the filters, so nothing was simulated; a search
//   or a commit in between that changed a pod's state gives a new version);
// - the same queue, priority and preemptibility, and the same victim jobs (the preemptible jobs of
//   the queue with a lower priority that have an evictable and an alive pod and pass the plugins'
//   victim filter: compared as lists, so a filter that reads the preemptor is covered too);
// - no job group with a required topology level in A or B, and no node selector or required
//   node affinity on the first pod of either (the first prefix's only pending pod);
// - B's first pod asks for at least as many GPUs (ScenarioGpus) as A's, and A's for more than 0.
// A search fails at its first unsolved prefix; with no scenario simulated, A's first prefix (its
// first task alone) was unsolved. B's first prefix pops the same victims queue (the same jobs in
// the same states; a pop's step, DecideStep, reads only the recorded victims, none in a first
// prefix), so it generates the same scenarios, one per pop that adds victims, after the one of no
// victims. The filters then read, of the pending pod, only its GPUs: node affinities and topology
// are off for both, and the idle-GPU filter matches the one pending pod against the most idle
// node, so it accepts exactly when that node's idle GPUs (a function of the states and the
// scenario's victims) reach the pod's GPUs, at least as many for B as for A. Every scenario A's
// filters refused, B's refuse too: B's first prefix is unsolved with as many scenarios filtered
// and none simulated, and B's search ends there, unsolved, its generators exhausted. A search
// that the time budget cut short (SolverResult::cut_by_budget) proves nothing and is not kept.
// What B's search would record is only those counters (a failed preempt search records no fit
// error, event or message), which SolveJob adds for it after the same budget checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "actions/victim_search/scenario_filters.h"
#include "actions/victim_search/solver.h"
#include "framework/session.h"

namespace gantry {

class PreemptRepeatedFailures {
 public:
  explicit PreemptRepeatedFailures(const Session& ssn) : ssn_(ssn) {}

  // The scenarios filtered by a kept failure that proves `job`'s search fails, if any: `tasks` are
  // its tasks to allocate (in order), `victims` its victim jobs.
  std::optional<int64_t> Known(JobId job, std::span<const PodId> tasks,
                               std::span<const JobId> victims) {
    if (!CurrentState()) return std::nullopt;
    double gpus = 0;
    if (!Eligible(job, tasks, gpus)) return std::nullopt;
    const Job& j = ssn_.cluster().jobs[job];
    for (const Failure& f : failures_) {
      if (f.queue == j.queue && f.priority == j.priority && f.preemptible == j.preemptible &&
          f.first_gpus <= gpus &&
          std::equal(f.victims.begin(), f.victims.end(), victims.begin(), victims.end())) {
        return f.filtered;
      }
    }
    return std::nullopt;
  }

  // A search of `job` (its tasks, its victim jobs) ended with `r`; `before_serial` and
  // `before_version` are the session's at its start.
  void Searched(JobId job, std::span<const PodId> tasks, std::span<const JobId> victims,
                const SolverResult& r, uint64_t before_serial, uint64_t before_version) {
    if (r.solved || r.cut_by_budget || r.end != SearchEnd::kGeneratorsExhausted ||
        r.scenarios_simulated != 0 || ssn_.serial() != before_serial ||
        ssn_.state_version() != before_version) {
      return;
    }
    double gpus = 0;
    if (!Eligible(job, tasks, gpus) || gpus <= 0) return;
    CurrentState();  // (drops the failures of another state)
    const Job& j = ssn_.cluster().jobs[job];
    for (Failure& f : failures_) {
      if (f.queue == j.queue && f.priority == j.priority && f.preemptible == j.preemptible &&
          std::equal(f.victims.begin(), f.victims.end(), victims.begin(), victims.end())) {
        // (The fewer GPUs, the more searches it proves; the same scenarios either way.)
        if (gpus < f.first_gpus) {
          f.first_gpus = gpus;
          f.filtered = r.scenarios_filtered;
        }
        return;
      }
    }
    failures_.push_back(Failure{j.queue,
                                j.priority,
                                j.preemptible,
                                gpus,
                                r.scenarios_filtered,
                                {victims.begin(), victims.end()}});
  }

 private:
  struct Failure {
    QueueId queue;
    int32_t priority;
    bool preemptible;
    double first_gpus;  // the failed search's first pod's GPUs
    int64_t filtered;   // its scenarios, all filtered
    std::vector<JobId> victims;
  };

  // Whether the kept failures are of the session's current state (else they are dropped and the
  // state noted).
  bool CurrentState() {
    if (serial_ == ssn_.serial() && version_ == ssn_.state_version()) return true;
    failures_.clear();
    serial_ = ssn_.serial();
    version_ = ssn_.state_version();
    return false;
  }

  // Whether the rule covers `job`: no required topology level in its groups, a first task
  // without node selector or required node affinity (its GPUs into `gpus`).
  bool Eligible(JobId job, std::span<const PodId> tasks, double& gpus) const {
    if (tasks.empty()) return false;
    const Cluster& c = ssn_.cluster();
    for (const SubGroup& g : c.jobs[job].groups) {
      if (g.topology && !g.topology->required_level.empty()) return false;
    }
    const Pod& first = c.pods[tasks.front()];
    if (!first.node_selector.items().empty() || !first.required_node_affinity.empty()) {
      return false;
    }
    gpus = ScenarioGpus(first);
    return true;
  }

  const Session& ssn_;
  uint64_t serial_ = 0;
  uint64_t version_ = 0;
  std::vector<Failure> failures_;
};

}  // namespace gantry
