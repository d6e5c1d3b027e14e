#include "actions/victim_search/victims.h"

#include <algorithm>
#include <numeric>

namespace gantry {

std::vector<NodeId> FeasibleNodesForJob(const Session& ssn, JobId job) {
  const auto& c = ssn.cluster();
  bool all = false;
  for (PodId p : c.jobs[job].pods) all = all || c.pods[p].IsCpuOnly();
  if (all) return {ssn.all_nodes().begin(), ssn.all_nodes().end()};
  // The nodes with GPUs to offer depend only on the pods' states: kept per thread with the
  // session and state version they were listed at (the searches of an action that commit
  // nothing see the same list).
  struct Kept {
    uint64_t session = 0;
    uint64_t version = 0;
    std::vector<NodeId> nodes;
  };
  thread_local Kept kept;
  if (kept.session != ssn.serial() || kept.version != ssn.state_version()) {
    kept.session = ssn.serial();
    kept.version = ssn.state_version();
    kept.nodes.clear();
    for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
      if (ssn.node(n).idle.gpus > 0 || ssn.node(n).releasing.gpus > 0 ||
          ssn.IdleGpuSum(n).first > 0 || ssn.ReleasingGpuSum(n).first > 0) {
        kept.nodes.push_back(n);
      }
    }
  }
  return kept.nodes;
}

std::vector<PodId> TasksToEvict(const Session& ssn, const JobView& view, bool& has_more) {
  std::vector<PodId> out;
  AppendTasksToEvict(ssn, view, has_more, out);
  return out;
}

void AppendTasksToEvict(const Session& ssn, const JobView& view, bool& has_more,
                        std::vector<PodId>& out) {
  if (const PodId p = ssn.single_pod(view.job); p != kNone && !view.partial) {
    // (The usual victim: one pod, evicted alone if active; read without the job's spec.)
    has_more = false;
    if (ssn.Evictable(p)) out.push_back(p);
    return;
  }
  const Job& job = ssn.cluster().jobs[view.job];
  const int32_t num_sets = static_cast<int32_t>(job.pod_sets.size());
  const std::vector<PodId>& pods = view.partial ? view.pods : job.pods;
  // One pod set when some pod set is above its minimum (elastic pods go one by one), else all.
  int max_sets = num_sets;
  for (int32_t s = 0; s < num_sets && num_sets > 1; ++s) {
    if (ssn.ViewCounters(view, s).active_allocated > job.pod_sets[s].min_available) {
      max_sets = 1;
      break;
    }
  }
  // Reverse pod-set order (the last to be allocated is the first to give up pods).
  // (Scratch lists reused between calls.)
  thread_local std::vector<int32_t> order;
  thread_local std::vector<PodId> active;
  order.resize(static_cast<size_t>(num_sets));
  std::iota(order.begin(), order.end(), 0);
  if (num_sets > 1) {
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return ssn.PodSetViewLess(view, b, a); });
  }
  const auto& briefs = ssn.pod_briefs();
  const size_t start = out.size();
  // Only pods without an eviction request are offered (a victim placed elsewhere by the search
  // that evicted it is pipelined, so active, but evicted already); the pod set's minimum is
  // compared with all its active pods, those included.
  int total_evictable = 0;
  for (PodId p : pods) total_evictable += ssn.Evictable(p);
  int taken_sets = 0;
  for (int32_t s : order) {
    if (taken_sets >= max_sets) break;
    active.clear();
    int allocated = 0;
    for (PodId p : pods) {
      if (briefs[p].pod_set != s || !IsActiveAllocated(ssn.pod(p).status)) continue;
      ++allocated;
      if (ssn.Evictable(p)) active.push_back(p);
    }
    // (A set whose active pods all have their eviction request gives none and is passed over.)
    if (allocated > 0 && active.empty()) continue;
    std::sort(active.begin(), active.end(), [&](PodId a, PodId b) { return ssn.TaskLess(b, a); });
    const size_t take = allocated > job.pod_sets[s].min_available ? 1 : active.size();
    for (size_t i = 0; i < take && i < active.size(); ++i) out.push_back(active[i]);
    ++taken_sets;
  }
  has_more = static_cast<int>(out.size() - start) < total_evictable;
}

std::span<const NodeId> NodesOfJob(const Session& ssn, JobId j, NodeId& single) {
  // (A job of one pod: that pod's node, without the kept lists.)
  if (const PodId p = ssn.single_pod(j); p != kNone) {
    single = ssn.pod(p).node;
    return std::span<const NodeId>(&single, 1);
  }
  struct Kept {
    uint64_t session = 0;
    std::vector<uint64_t> version;                     // per job; 0: not listed
    std::vector<std::pair<uint32_t, uint32_t>> range;  // per job: begin, end in `pool`
    std::vector<NodeId> pool;
  };
  thread_local Kept kept;
  const auto& c = ssn.cluster();
  if (kept.session != ssn.serial() || kept.pool.size() > 4 * c.pods.size() + 1024) {
    kept.session = ssn.serial();
    kept.version.assign(c.jobs.size(), 0);
    kept.range.assign(c.jobs.size(), {0, 0});
    kept.pool.clear();
  }
  const size_t i = static_cast<size_t>(j);
  auto& [begin, end] = kept.range[i];
  if (kept.version[i] != ssn.job_version(j)) {
    kept.version[i] = ssn.job_version(j);
    begin = static_cast<uint32_t>(kept.pool.size());
    for (PodId p : c.jobs[j].pods) kept.pool.push_back(ssn.pod(p).node);
    const auto first = kept.pool.begin() + begin;
    const auto& cluster_nodes = c.nodes;
    auto less = [&](NodeId a, NodeId b) {
      if (a == kNone || b == kNone) return a == kNone && b != kNone;
      return cluster_nodes[a].name_rank < cluster_nodes[b].name_rank;
    };
    std::sort(first, kept.pool.end(), less);
    kept.pool.erase(std::unique(first, kept.pool.end()), kept.pool.end());
    end = static_cast<uint32_t>(kept.pool.size());
  }
  return std::span<const NodeId>(kept.pool).subspan(begin, end - begin);
}

}  // namespace gantry
