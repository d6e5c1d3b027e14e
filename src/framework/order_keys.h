// Order keys: the job order and the queue order as keys of each side, so that a caller ordering
// many jobs or queues computes one key per entry instead of calling the comparators per pair.
// Plugins give key functions with their order functions (hooks.h: AddJobOrderKeyFn,
// AddQueueOrderFn); the session keeps whole-job keys per job version (Session::JobOrderKeyOf).
//
// Session's order methods (order_keys.cc):
// - JobViewLess, PodSetLess, PodSetViewLess: the orders, the plugins' functions in configuration
//   order with KAI's fallbacks. TaskLess: two pods of one pod set compare by their TaskRank (the
//   place of the pod among its pod set's pods in TaskLess order, ranked once per pod set and
//   session: the order is total on a job's pods, so the ranks answer as the task-order functions
//   would, without calling them again).
// - JobOrderKeyed: whether the job order can be evaluated as keys: then for any two views l and r,
//   JobViewLess(l, r) == (JobOrderKeyOf(l) < JobOrderKeyOf(r)), and a view's key changes only when
//   the status or virtual flag of one of its job's pods changes, i.e. not while job_version is the
//   same (whole-job keys are kept per job while it is).
// - JobTieBreakersDistinct: no two jobs share their creation time and name, the job order's last
//   tie-breakers, so views of two distinct jobs are never equivalent (computed on first use).
// - VictimQueueOrderKeyed: victim-mode queue order has keys (the solver shortcuts on, and the
//   first queue order function was given with a key): then for queues l, r with non-empty victim
//   lists, VictimQueueKeyOf(l) < VictimQueueKeyOf(r) implies QueueLess(l, r, ...) and > implies
//   !QueueLess(l, r, ...); on equal keys QueueLess must be asked. (QueueLess takes the first
//   non-zero answer of the functions in order, so the first function's key is what decides.)
// - JobQueueOrderKeyed: job-order queue order has keys (likewise, with a job key): for queues l,
//   r with jobs lj, rj, JobQueueKeyOf(l, lj) < JobQueueKeyOf(r, rj) implies QueueLess(l, r, &lj,
//   &rj, {}, {}) and > implies !QueueLess(...); on equal keys QueueLess must be asked.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gantry {

// The job order as a key (see Session::JobOrderKeyOf): views compare as their keys compare,
// lexicographically.
struct JobOrderKey {
  static constexpr size_t kMaxFns = 3;  // key functions a key can hold
  // The key functions' values in order, then the job's tie-breaker rank; unused slots are 0.
  std::array<int64_t, kMaxFns + 1> k{};
  bool operator<(const JobOrderKey& o) const {
    for (size_t i = 0; i < k.size(); ++i) {
      if (k[i] != o.k[i]) return k[i] < o.k[i];
    }
    return false;
  }
};

// A queue order in victim order (no jobs, both victim lists non-empty) as a key of each side, so
// that a caller comparing many queues computes one key per queue instead of calling the
// comparator per pair. For the QueueOrderFn `fn` it is given with, and any two queues l, r:
// key(l) < key(r) implies fn(l, r) < 0 (l goes first), key(l) > key(r) implies fn(l, r) > 0,
// and equal keys say nothing (the caller must ask the full comparison). Keys compare field by
// field: the first field where one side is < or > the other decides (so fields that are equal
// or unordered, such as NaNs, are skipped, as a comparator testing `<` then `>` does).
struct QueueOrderKey {
  static constexpr size_t kFields = 6;
  std::array<double, kFields> k{};
  // <0: this side goes first, >0: `o` goes first, 0: equal keys (no answer).
  int Compare(const QueueOrderKey& o) const {
    for (size_t i = 0; i < kFields; ++i) {
      if (k[i] < o.k[i]) return -1;
      if (k[i] > o.k[i]) return 1;
    }
    return 0;
  }
};

}  // namespace gantry
