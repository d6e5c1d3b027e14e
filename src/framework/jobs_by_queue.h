// The order in which an action visits jobs: KAI's JobsOrderByQueues.
//
// Jobs wait in their leaf queue, ordered by the session's job order. To pick the next job the
// queue tree is walked from the top: at every level the sibling queue whose best pending job
// ranks first under the session's queue order wins. Popping a job changes only its own queue's
// standing, so the walk re-evaluates siblings lazily.
#pragma once

#include <vector>

#include "model/cluster.h"

namespace gantry {

class Session;

struct JobsOrderOptions {
  bool filter_non_pending = true;  // skip jobs without pending pods
  bool filter_unready = true;      // skip jobs whose pod sets cannot reach their minimum
  bool filter_non_preemptible = false;
  bool filter_non_active_allocated = false;
};

class JobsByQueue {
 public:
  JobsByQueue(const Session& ssn, JobsOrderOptions options);

  // Adds every eligible job of the session.
  void InitializeWithAllJobs();
  // Adds a job (again). Jobs of missing or non-leaf queues are ignored.
  void Push(JobId j);
  // Removes and returns the next job, or kNone when empty.
  JobId PopNext();
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

 private:
  // Best pending job of a queue subtree, or kNone.
  JobId BestJob(QueueId q) const;
  QueueId BestChild(const std::vector<QueueId>& candidates) const;
  bool HasJobs(QueueId q) const { return active_jobs_[q] > 0; }

  const Session& ssn_;
  JobsOrderOptions options_;
  // Per leaf queue: a heap of jobs (front = best).
  std::vector<std::vector<JobId>> heaps_;
  // Per queue: number of queued jobs in its subtree.
  std::vector<int> active_jobs_;
  std::vector<QueueId> roots_;
  size_t size_ = 0;
};

}  // namespace gantry
