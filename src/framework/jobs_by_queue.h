// The order in which an action visits jobs: KAI's JobsOrderByQueues.
//
// Jobs wait in their leaf queue, ordered by the session's job order. To pick the next job the
// queue tree is walked from the top: at every level the sibling queue whose best pending job
// ranks first under the session's queue order wins. Popping a job changes only its own queue's
// standing, so the walk re-evaluates siblings lazily.
//
// In victim mode (used by reclaim / preempt / consolidation to pick whom to evict) both orders
// are reversed and a queue is represented by the victims already taken from it plus its next
// candidate. Entries are JobViews, so the remaining part of a partly-taken victim job can be
// pushed back.
#pragma once

#include <vector>

#include "framework/session.h"
#include "model/cluster.h"

namespace gantry {

struct JobsOrderOptions {
  bool filter_non_pending = true;  // skip jobs without pending pods
  bool filter_unready = true;      // skip jobs whose pod sets cannot reach their minimum
  bool filter_non_preemptible = false;
  bool filter_non_active_allocated = false;
  bool victim_queue = false;  // reversed orders, queues compared by their victims
};

class JobsByQueue {
 public:
  JobsByQueue(const Session& ssn, JobsOrderOptions options);

  // Adds every eligible job of the session.
  void InitializeWithAllJobs();
  // Adds the jobs of `jobs` that pass the options' filters.
  void InitializeWithJobs(const std::vector<JobId>& jobs);
  // Adds a job (again). Jobs of missing or non-leaf queues are ignored.
  void Push(JobId j) { PushView(JobView{j, false, {}}); }
  void PushView(JobView v);
  // Adds many jobs at once (one heap build per queue instead of one insertion each).
  void PushMany(const std::vector<JobId>& jobs);
  // Removes and returns the next job, or kNone when empty.
  JobId PopNext();
  // Removes and returns the next entry; empty() must be false.
  JobView PopNextView();
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

 private:
  bool Eligible(JobId j) const;
  // Best entry of a queue subtree, or nullptr.
  const JobView* Best(QueueId q) const;
  QueueId BestChild(const std::vector<QueueId>& candidates) const;
  QueueId NextLeaf() const;
  bool HasJobs(QueueId q) const { return active_jobs_[q] > 0; }
  bool EntryLess(const JobView& a, const JobView& b) const;
  // Victims that stand for leaf queue q: popped entries plus the next one.
  void VictimsOf(QueueId q, std::vector<const JobView*>& out) const;

  const Session& ssn_;
  JobsOrderOptions options_;
  // Per leaf queue: a heap of entries (front = next).
  std::vector<std::vector<JobView>> heaps_;
  // Per leaf queue, victim mode: entries popped so far.
  std::vector<std::vector<JobView>> popped_;
  // Per queue: number of queued entries in its subtree.
  std::vector<int> active_jobs_;
  std::vector<QueueId> roots_;
  size_t size_ = 0;
};

}  // namespace gantry
