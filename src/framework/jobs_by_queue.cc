#include "framework/jobs_by_queue.h"

#include <algorithm>

#include "framework/session.h"

namespace gantry {

JobsByQueue::JobsByQueue(const Session& ssn, JobsOrderOptions options)
    : ssn_(ssn), options_(options) {
  const auto& queues = ssn.cluster().queues;
  heaps_.resize(queues.size());
  active_jobs_.assign(queues.size(), 0);
  for (QueueId q = 0; q < static_cast<QueueId>(queues.size()); ++q) {
    if (queues[q].parent == kNone) roots_.push_back(q);
  }
}

void JobsByQueue::InitializeWithAllJobs() {
  const auto& cluster = ssn_.cluster();
  for (JobId j = 0; j < static_cast<JobId>(cluster.jobs.size()); ++j) {
    if (options_.filter_unready && !ssn_.IsReadyForScheduling(j)) continue;
    if (options_.filter_non_pending && !ssn_.HasPendingPods(j)) continue;
    if (options_.filter_non_preemptible && !cluster.jobs[j].preemptible) continue;
    if (options_.filter_non_active_allocated && ssn_.NumActiveAllocated(j) == 0) continue;
    Push(j);
  }
}

void JobsByQueue::Push(JobId j) {
  const auto& cluster = ssn_.cluster();
  const QueueId q = cluster.jobs[j].queue;
  if (q == kNone || !cluster.queues[q].IsLeaf()) return;
  // A queue whose named parent does not exist is not schedulable.
  if (!cluster.queues[q].parent_name.empty() && cluster.queues[q].parent == kNone) return;
  auto& heap = heaps_[q];
  heap.push_back(j);
  // std heaps keep the *largest* at the front: "greater" means "goes later".
  std::push_heap(heap.begin(), heap.end(), [&](JobId a, JobId b) { return ssn_.JobLess(b, a); });
  for (QueueId a = q; a != kNone; a = cluster.queues[a].parent) ++active_jobs_[a];
  ++size_;
}

JobId JobsByQueue::BestJob(QueueId q) const {
  const auto& queues = ssn_.cluster().queues;
  while (!queues[q].IsLeaf()) {
    q = BestChild(queues[q].children);
    if (q == kNone) return kNone;
  }
  return heaps_[q].empty() ? kNone : heaps_[q].front();
}

QueueId JobsByQueue::BestChild(const std::vector<QueueId>& candidates) const {
  QueueId best = kNone;
  JobId best_job = kNone;
  for (QueueId q : candidates) {
    if (!HasJobs(q)) continue;
    const JobId job = BestJob(q);
    if (job == kNone) continue;
    if (best == kNone || ssn_.QueueLess(q, best, job, best_job)) {
      best = q;
      best_job = job;
    }
  }
  return best;
}

JobId JobsByQueue::PopNext() {
  if (size_ == 0) return kNone;
  const auto& queues = ssn_.cluster().queues;
  QueueId q = BestChild(roots_);
  if (q == kNone) return kNone;
  while (!queues[q].IsLeaf()) {
    q = BestChild(queues[q].children);
    if (q == kNone) return kNone;
  }
  auto& heap = heaps_[q];
  std::pop_heap(heap.begin(), heap.end(), [&](JobId a, JobId b) { return ssn_.JobLess(b, a); });
  const JobId j = heap.back();
  heap.pop_back();
  for (QueueId a = q; a != kNone; a = queues[a].parent) --active_jobs_[a];
  --size_;
  return j;
}

}  // namespace gantry
