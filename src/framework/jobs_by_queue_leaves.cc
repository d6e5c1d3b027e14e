// JobsByQueue's victims queues built from per-leaf heaps kept between builds (LeafHeapCache,
// jobs_by_queue.h): reclaim builds one victims queue per reclaimer, and a leaf queue whose pods'
// states did not change gives the same entries again; in kept mode (SchedulerParams::
// reclaim_kept_leaves) a changed leaf is brought up to date by its changed jobs only.
#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry {

void LeafHeapCache::SiftUp(Leaf& leaf, size_t i) {
  const KeptEntry e = leaf.heap[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!(leaf.heap[parent].key < e.key)) break;
    Place(leaf, i, leaf.heap[parent]);
    i = parent;
  }
  Place(leaf, i, e);
}

void LeafHeapCache::SiftDown(Leaf& leaf, size_t i) {
  const KeptEntry e = leaf.heap[i];
  const size_t n = leaf.heap.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && leaf.heap[child].key < leaf.heap[child + 1].key) ++child;
    if (!(e.key < leaf.heap[child].key)) break;
    Place(leaf, i, leaf.heap[child]);
    i = child;
  }
  Place(leaf, i, e);
}

void JobsByQueue::InitializeFromLeaves(
    std::span<const QueueId> leaves,
    const std::function<void(QueueId, std::vector<JobId>&)>& eligible, LeafHeapCache* cache) {
  InitializeFromLeaves(leaves, eligible, cache, nullptr);
}

void JobsByQueue::InitializeFromLeaves(
    std::span<const QueueId> leaves,
    const std::function<void(QueueId, std::vector<JobId>&)>& eligible, LeafHeapCache* cache,
    const LeafJobs* per_job) {
  const auto& queues = ssn_.cluster().queues;
  std::vector<JobId> jobs;
  const bool reuse = cache != nullptr && options_.victim_queue && keyed_ &&
                     frozen_size_ + own_.size() == 0 && ssn_.params().solver_shortcuts &&
                     ssn_.JobTieBreakersDistinct();
  if (!reuse) {
    std::vector<JobId> all;
    for (QueueId q : leaves) {
      jobs.clear();
      eligible(q, jobs);
      all.insert(all.end(), jobs.begin(), jobs.end());
    }
    std::sort(all.begin(), all.end());
    InitializeWithJobs(all);
    return;
  }
  const bool kept = cache->kept_ && per_job != nullptr;
  if (cache->session_ != ssn_.serial() || cache->leaves_.size() != queues.size()) {
    cache->session_ = ssn_.serial();
    cache->leaves_.assign(queues.size(), {});
    cache->seen_version_.clear();
    cache->position_.clear();
  }
  if (kept && cache->seen_version_.size() != ssn_.cluster().jobs.size()) {
    // (Versions start at 1: no job is seen yet.)
    cache->seen_version_.assign(ssn_.cluster().jobs.size(), 0);
    cache->position_.assign(ssn_.cluster().jobs.size(), -1);
    for (auto& leaf : cache->leaves_) leaf = {};
  }
  // Every leaf's entries are the cache's, shared: they become this queue's frozen entries.
  auto frozen = std::make_shared<Frozen>();
  frozen->lists.reserve(leaves.size());
  frozen_ = frozen;
  struct Built {
    JobOrderKey key;
    JobId job;
    uint64_t key_version;
  };
  std::vector<Built> built;
  for (QueueId q : leaves) {
    if (!AcceptsQueue(q)) continue;
    LeafHeapCache::Leaf& leaf = cache->leaves_[q];
    const uint64_t version = ssn_.queue_version(q);
    if (kept && (!leaf.valid || leaf.version != version)) {
      // Kept mode: the candidates whose job version changed since they were last decided (all of
      // them for a leaf not built yet) are decided again, and their entries fixed in the heap.
      if (leaf.valid) ++cache->kept_updates_;
      for (JobId j : per_job->candidates(q)) {
        const size_t ji = static_cast<size_t>(j);
        const uint64_t jv = ssn_.job_version(j);
        if (cache->seen_version_[ji] == jv) continue;
        cache->seen_version_[ji] = jv;
        const bool in = ssn_.cluster().jobs[j].queue == q && per_job->job(j) && Eligible(j);
        const int32_t at = cache->position_[ji];
        if (in) {
          const LeafHeapCache::KeptEntry e{ssn_.JobOrderKeyOf(JobView{j, false, {}}), j, jv};
          if (at < 0) {
            leaf.heap.push_back(e);
            cache->SiftUp(leaf, leaf.heap.size() - 1);
          } else {
            cache->Place(leaf, static_cast<size_t>(at), e);
            cache->SiftUp(leaf, static_cast<size_t>(at));
            cache->SiftDown(leaf, static_cast<size_t>(cache->position_[ji]));
          }
        } else if (at >= 0) {
          cache->position_[ji] = -1;
          const size_t i = static_cast<size_t>(at);
          const LeafHeapCache::KeptEntry last = leaf.heap.back();
          leaf.heap.pop_back();
          if (i < leaf.heap.size()) {
            cache->Place(leaf, i, last);
            cache->SiftUp(leaf, i);
            cache->SiftDown(leaf,
                            static_cast<size_t>(cache->position_[static_cast<size_t>(last.job)]));
          }
        }
      }
      auto entries = std::make_shared<Items>();
      entries->Append(leaf.heap.size(), [&](Item& item, size_t k) {
        item.view.job = leaf.heap[k].job;
        item.key = leaf.heap[k].key;
        item.key_version = leaf.heap[k].key_version;
      });
      leaf.entries = std::move(entries);
      leaf.valid = true;
      leaf.version = version;
    } else if (!leaf.valid || leaf.version != version) {
      // Built again: its entries in the order std::make_heap gives their numbers under the
      // queue's comparison, which compares their keys (just computed, so current) in reverse
      // (victim mode).
      jobs.clear();
      eligible(q, jobs);
      built.clear();
      for (JobId j : jobs) {
        if (ssn_.cluster().jobs[j].queue == q && Eligible(j)) {
          const JobView view{j, false, {}};
          built.push_back(Built{ssn_.JobOrderKeyOf(view), j, ssn_.job_version(j)});
        }
      }
      // (With no two entries equivalent every pop takes the unique best entry: see
      // InitializeWithJobs.)
      std::make_heap(built.begin(), built.end(),
                     [](const Built& a, const Built& b) { return a.key < b.key; });
      auto entries = std::make_shared<Items>();
      entries->Append(built.size(), [&](Item& item, size_t k) {
        item.view.job = built[k].job;
        item.key = built[k].key;
        item.key_version = built[k].key_version;
      });
      leaf.entries = std::move(entries);
      leaf.valid = true;
      leaf.version = version;
    }
    // Otherwise the same pods' states: the same jobs pass, with the same keys (current now; an
    // entry's job version is that of its build: its key is current while it holds), in an
    // order that is a heap.
    const size_t n = leaf.entries->size();
    if (n == 0) continue;
    NoteKeysAddedNow();
    const auto first = static_cast<int32_t>(frozen_size_);
    frozen->Add(leaf.entries);
    frozen_size_ = frozen->numbers();
    auto& heap = heaps_[q];
    heap.resize(n);
    for (size_t k = 0; k < n; ++k) heap[k] = first + static_cast<int32_t>(k);
    RefreshFront(q);
    NoteAdded(q, n);
  }
  if (frozen_size_ == 0) frozen_.reset();
}

}  // namespace gantry
