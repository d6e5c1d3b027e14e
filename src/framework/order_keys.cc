// Job, task and pod-set order (the hooks' evaluation in configuration order) and the job order
// keys (order_keys.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/session.h"
#include "framework/session_internal.h"

namespace gantry {

bool Session::JobTieBreakersDistinct() const {
  if (job_tie_breakers_distinct_ < 0) RankJobTieBreakers();
  return job_tie_breakers_distinct_ > 0;
}

void Session::RankJobTieBreakers() const {
  // Jobs by (creation time, name), each name's first 16 bytes as two big-endian numbers (zero
  // bytes past its end) beside the time: unequal numbers order two names as their first
  // difference does (a byte, or the end of the shorter name, which is then a prefix of the
  // other and goes first), so the names themselves are compared only when their first 16 bytes
  // are the same. (The sort read both jobs' names for every comparison.)
  struct Entry {
    int64_t creation_ms;
    uint64_t hi, lo;
    JobId job;
  };
  auto prefix = [](const std::string& name, size_t from) {
    unsigned char bytes[8] = {};
    if (from < name.size()) {
      std::memcpy(bytes, name.data() + from, std::min<size_t>(8, name.size() - from));
    }
    uint64_t v = 0;
    for (unsigned char b : bytes) v = (v << 8) | b;
    return v;
  };
  std::vector<Entry> order;
  order.reserve(cluster_.jobs.size());
  for (JobId j = 0; j < static_cast<JobId>(cluster_.jobs.size()); ++j) {
    const Job& job = cluster_.jobs[j];
    order.push_back({job.creation_ms, prefix(job.name, 0), prefix(job.name, 8), j});
  }
  // Negative, zero or positive as a goes before, with or after b.
  auto compare = [this](const Entry& a, const Entry& b) {
    if (a.creation_ms != b.creation_ms) return a.creation_ms < b.creation_ms ? -1 : 1;
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return cluster_.jobs[a.job].name.compare(cluster_.jobs[b.job].name);
  };
  std::sort(order.begin(), order.end(),
            [&](const Entry& a, const Entry& b) { return compare(a, b) < 0; });
  job_tie_rank_.assign(cluster_.jobs.size(), 0);
  int64_t rank = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && compare(order[i - 1], order[i]) < 0) ++rank;
    job_tie_rank_[order[i].job] = rank;
  }
  // Distinct pairs have distinct ranks.
  job_tie_breakers_distinct_ = order.empty() || rank == static_cast<int64_t>(order.size()) - 1;
}

// Exactness: JobViewLess asks the functions in order and the first non-zero answer decides,
// then creation time, then name. Each function is sign(key(l) - key(r)), so that is the
// lexicographic order of the functions' keys, then of the (creation, name) rank, which orders
// jobs as their (creation, name) pairs (equal pairs, equal ranks). Unused slots are 0 on both
// sides.
JobOrderKey Session::ComputeJobOrderKey(const JobView& v) const {
  if (job_key_cache_.empty() && !cluster_.jobs.empty()) {
    if (job_tie_breakers_distinct_ < 0) RankJobTieBreakers();
    job_key_cache_.assign(cluster_.jobs.size(), {0, JobOrderKey{}});
  }
  auto compute = [&] {
    JobOrderKey key;
    for (size_t i = 0; i < job_order_keys_.size(); ++i) key.k[i] = job_order_keys_[i](*this, v);
    key.k[JobOrderKey::kMaxFns] = job_tie_rank_[v.job];
    return key;
  };
  if (v.partial) return compute();
  // (Job versions start at 1 and only grow: 0 marks no kept key.)
  auto& cached = job_key_cache_[v.job];
  if (cached.first != job_version_[v.job]) cached = {job_version_[v.job], compute()};
  return cached.second;
}

bool Session::JobViewLess(const JobView& lv, const JobView& rv) const {
  for (const auto& fn : job_order_fns_) {
    if (int c = fn(*this, lv, rv); c != 0) return c < 0;
  }
  const Job& lj = cluster_.jobs[lv.job];
  const Job& rj = cluster_.jobs[rv.job];
  if (lj.creation_ms != rj.creation_ms) return lj.creation_ms < rj.creation_ms;
  return lj.name < rj.name;
}

bool Session::TaskLessByFunctions(PodId l, PodId r) const {
  for (const auto& fn : task_order_fns_) {
    if (int c = fn(*this, l, r); c != 0) return c < 0;
  }
  return cluster_.pods[l].name < cluster_.pods[r].name;
}

int32_t Session::RankPodSetOf(PodId p) const {
  if (task_rank_.size() != cluster_.pods.size()) task_rank_.assign(cluster_.pods.size(), -1);
  if (task_rank_[p] < 0) {
    // Rank the pod's whole set at once (task order is total on a job's pods: its last tie-break
    // is the pod's name, unique in a namespace).
    const Pod& pod = cluster_.pods[p];
    std::vector<PodId> sorted = cluster_.jobs[pod.job].pod_sets[pod.pod_set].pods;
    std::sort(sorted.begin(), sorted.end(),
              [&](PodId a, PodId b) { return TaskLessByFunctions(a, b); });
    for (size_t i = 0; i < sorted.size(); ++i) task_rank_[sorted[i]] = static_cast<int32_t>(i);
  }
  return task_rank_[p];
}

bool Session::PodSetLess(JobId j, int32_t l, int32_t r) const {
  return PodSetViewLess(JobView{j, false, {}}, l, r);
}

bool Session::PodSetViewLess(const JobView& v, int32_t l, int32_t r) const {
  for (const auto& fn : pod_set_order_fns_) {
    if (int c = fn(*this, v, l, r); c != 0) return c < 0;
  }
  const Job& job = cluster_.jobs[v.job];
  return job.pod_sets[l].name < job.pod_sets[r].name;
}

}  // namespace gantry
