// Accelerator of the victim search: the simulations' job order built from a base.
//
// When the job order depends only on each job's own pods and its tie-breakers are distinct (no two
// entries equivalent, so the pops do not depend on the heaps' layout), a search orders the pending
// jobs with no active pod once (their pods are the same in every simulation) and each simulation
// copies that order (`JobsByQueue::Freeze`) and adds its victims, the pending jobs that may be
// victims, and the preemptor. The pending jobs are taken from those pending when the session was
// built (`Session::jobs_pending_at_open`: a pod turns pending again only when an undo gives it back
// a status it had), not from every job.
//
// The accelerator (accelerator.h) holds one only with the solver shortcuts on and where it applies
// (Applies); without it every simulation orders its jobs in a fresh JobsByQueue, as KAI does.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry::victim_search {

class SimulationOrderBase {
 public:
  // The job order depends only on each job's own pods and no two entries are equivalent.
  static bool Applies(const Session& ssn) {
    return ssn.JobOrderDependsOnlyOnOwnPods() && ssn.JobTieBreakersDistinct();
  }

  // Orders, once, the jobs of `pending_jobs` with no active pod that are not flagged in
  // `is_victim_job` (the first simulation's victims). `scratch` is a reusable list.
  SimulationOrderBase(const Session& ssn, const JobsOrderOptions& options,
                      std::span<const JobId> pending_jobs, const std::vector<char>& is_victim_job,
                      std::vector<JobId>& scratch) {
    const auto& jobs = ssn.cluster().jobs;
    in_base_.assign(jobs.size(), 0);
    scratch.clear();
    for (JobId j : pending_jobs) {
      bool active = false;
      for (PodId p : jobs[j].pods) active = active || IsActiveAllocated(ssn.pod(p).status);
      // (A victim's pods are active in the clean session; evicted ones here are releasing.)
      if (!active && !is_victim_job[j]) {
        scratch.push_back(j);
        in_base_[j] = 1;
      }
    }
    base_ = std::make_unique<JobsByQueue>(ssn, options);
    base_->PushMany(scratch);
    base_->Freeze();  // copies share its entries
  }

  // Whether the base holds job j's entry (a simulation must not push it again).
  bool Holds(JobId j) const { return in_base_[j] != 0; }

  // The order of the next simulation: a copy of the base (the previous simulation's order is
  // overwritten: its lists' storage is reused).
  JobsByQueue& NextOrder() {
    if (order_) {
      order_->AssignFrom(*base_);
    } else {
      order_ = std::make_unique<JobsByQueue>(*base_);
    }
    return *order_;
  }

 private:
  std::vector<char> in_base_;  // per job: its entry is in base_
  std::unique_ptr<JobsByQueue> base_;
  std::unique_ptr<JobsByQueue> order_;  // the last simulation's order
};

}  // namespace gantry::victim_search
