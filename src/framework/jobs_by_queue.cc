#include "framework/jobs_by_queue.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "framework/preemption_delay.h"

namespace gantry {

namespace {
uint64_t NextSerial() {
  static std::atomic<uint64_t> serial{0};
  return ++serial;
}
}  // namespace

JobsByQueue::JobsByQueue(const Session& ssn, JobsOrderOptions options)
    : ssn_(ssn), options_(options), serial_(NextSerial()) {
  const auto& queues = ssn.cluster().queues;
  heaps_.resize(queues.size());
  popped_.resize(queues.size());
  changes_.assign(queues.size() + 1, 0);
  last_child_.assign(queues.size() + 1, kNone);
  child_at_.assign(queues.size(), 0);
  best_memo_.assign(queues.size() + 1, {});
  // (Every queue is the candidate of one scan: its parent's, or the roots'.)
  steps_.assign(queues.size(), {});
  if (options_.victim_queue) {
    victims_.resize(queues.size());
    has_front_.assign(queues.size(), 0);
  }
  active_jobs_.assign(queues.size(), 0);
  for (QueueId q = 0; q < static_cast<QueueId>(queues.size()); ++q) {
    if (queues[q].parent == kNone) {
      child_at_[q] = static_cast<int32_t>(roots_.size());
      roots_.push_back(q);
    }
    const auto& children = queues[q].children;
    for (size_t k = 0; k < children.size(); ++k) child_at_[children[k]] = static_cast<int32_t>(k);
  }
  size_t offset = roots_.size();
  for (QueueId q = 0; q < static_cast<QueueId>(queues.size()); ++q) {
    best_memo_[static_cast<size_t>(q) + 1].steps_at = offset;
    offset += queues[q].children.size();
  }
  keyed_ = ssn.params().solver_shortcuts && ssn.JobOrderKeyed();
  vkeyed_ = options_.victim_queue && ssn.params().solver_shortcuts &&
            ssn.QueueOrderDependsOnlyOnPodStates() && ssn.VictimQueueOrderKeyed();
  jkeyed_ = !options_.victim_queue && ssn.params().solver_shortcuts &&
            ssn.QueueOrderDependsOnlyOnPodStates() && ssn.JobQueueOrderKeyed();
  lazy_ = options_.lazy_heaps && !options_.victim_queue && ssn.params().solver_shortcuts &&
          ssn.JobOrderDependsOnlyOnOwnPods() && ssn.JobTieBreakersDistinct();
  if (lazy_) {
    unbuilt_.assign(queues.size(), 0);
    lazy_best_.assign(queues.size(), -1);
  }
}

bool JobsByQueue::Eligible(JobId j) const {
  const auto& cluster = ssn_.cluster();
  if (options_.filter_unready && !ssn_.IsReadyForScheduling(j)) return false;
  if (options_.filter_non_pending && !ssn_.HasPendingPods(j)) return false;
  if (options_.filter_non_preemptible && !cluster.jobs[j].preemptible) return false;
  if (options_.filter_non_active_allocated && ssn_.NumActiveAllocated(j) == 0) return false;
  if (options_.filter_within_preemption_delay && WithinPreemptionDelay(ssn_, j)) return false;
  return true;
}

JobsOrderOptions AllocateJobsOrderOptions(const Session& ssn) {
  JobsOrderOptions options;
  options.filter_non_pending = true;
  options.filter_unready = true;
  options.max_jobs_per_queue = ssn.config().QueueDepth("allocate");
  return options;
}

void JobsByQueue::InitializeWithAllJobs() {
  if (options_.max_jobs_per_queue >= 0) {
    // The depth limit: pop every eligible job from an unlimited queue of the same options (within
    // a leaf queue, pops come in the job order) and keep the first ones of each leaf.
    std::vector<JobId> eligible;
    const std::vector<JobId>& candidates = ssn_.jobs_pending_at_open();
    if (options_.filter_non_pending) {
      for (JobId j : candidates) {
        if (Eligible(j)) eligible.push_back(j);
      }
    } else {
      for (JobId j = 0; j < static_cast<JobId>(ssn_.cluster().jobs.size()); ++j) {
        if (Eligible(j)) eligible.push_back(j);
      }
    }
    JobsOrderOptions unlimited = options_;
    unlimited.max_jobs_per_queue = -1;
    JobsByQueue all(ssn_, unlimited);
    all.InitializeWithJobs(eligible);
    std::vector<int> taken(ssn_.cluster().queues.size(), 0);
    std::vector<JobId> kept;
    while (!all.empty()) {
      const JobId j = all.PopNext();
      if (j == kNone) break;
      const QueueId q = ssn_.cluster().jobs[j].queue;
      if (taken[q]++ < options_.max_jobs_per_queue) kept.push_back(j);
    }
    std::sort(kept.begin(), kept.end());
    for (JobId j : kept) Push(j);
    return;
  }
  if (options_.filter_non_pending) {
    // Only jobs pending at the session's opening can have pending pods now: the same jobs, in
    // the same (increasing) order, without a look at every job of the cluster.
    for (JobId j : ssn_.jobs_pending_at_open()) {
      if (Eligible(j)) Push(j);
    }
    return;
  }
  for (JobId j = 0; j < static_cast<JobId>(ssn_.cluster().jobs.size()); ++j) {
    if (Eligible(j)) Push(j);
  }
}

void JobsByQueue::InitializeWithJobs(const std::vector<JobId>& jobs) {
  std::vector<JobId> eligible;
  eligible.reserve(jobs.size());
  for (JobId j : jobs) {
    if (Eligible(j)) eligible.push_back(j);
  }
  // With no two entries equivalent, every pop takes the unique best entry, whatever the heap's
  // layout: one heap build per queue pops the same entries in the same order as pushing them one
  // by one (which costs a sift to the top for each job that ranks before the earlier ones).
  if (ssn_.params().solver_shortcuts && ssn_.JobTieBreakersDistinct()) {
    PushMany(eligible);
    return;
  }
  for (JobId j : eligible) Push(j);
}

bool JobsByQueue::EntryLessSlow(const Item& a, const Item& b) const {
  return options_.victim_queue ? ssn_.JobViewLess(b.view, a.view)
                               : ssn_.JobViewLess(a.view, b.view);
}

// (The copy is AssignFrom on a new queue: one list of the members copied, for both.)
JobsByQueue::JobsByQueue(const JobsByQueue& other) : ssn_(other.ssn_) { AssignFrom(other); }

void JobsByQueue::AssignFrom(const JobsByQueue& other) {
  // (Member by member; vectors assigned keep their storage. The copy constructor is this on a
  // new queue.)
  options_ = other.options_;
  keyed_ = other.keyed_;
  keys_at_state_ = other.keys_at_state_;
  keys_state_ = other.keys_state_;
  vkeyed_ = other.vkeyed_;
  jkeyed_ = other.jkeyed_;
  frozen_ = other.frozen_;
  frozen_size_ = other.frozen_size_;
  own_.AssignFrom(other.own_);
  heaps_ = other.heaps_;
  popped_ = other.popped_;
  victims_.clear();
  has_front_.clear();
  active_jobs_ = other.active_jobs_;
  roots_ = other.roots_;
  size_ = other.size_;
  serial_ = NextSerial();
  changes_ = other.changes_;
  last_child_ = other.last_child_;
  child_at_ = other.child_at_;
  best_memo_ = other.best_memo_;
  steps_ = other.steps_;
  lazy_ = other.lazy_;
  unbuilt_ = other.unbuilt_;
  lazy_best_ = other.lazy_best_;
  RebuildVictimViews();
}

void JobsByQueue::NotePopped(QueueId leaf) {
  const auto& queues = ssn_.cluster().queues;
  for (QueueId a = leaf; a != kNone;) {
    --active_jobs_[a];
    ++changes_[static_cast<size_t>(a) + 1];
    const QueueId up = queues[a].parent;
    last_child_[up == kNone ? 0 : static_cast<size_t>(up) + 1] = a;
    a = up;
  }
  ++changes_[0];
}

QueueId JobsByQueue::BestChildOf(QueueId parent) const {
  const auto& queues = ssn_.cluster().queues;
  const std::vector<QueueId>& candidates = parent == kNone ? roots_ : queues[parent].children;
  if (!ssn_.params().solver_shortcuts || !ssn_.QueueOrderDependsOnlyOnPodStates()) {
    return BestChild(candidates);
  }
  const size_t slot = parent == kNone ? 0 : static_cast<size_t>(parent) + 1;
  // The answer depends only on the pods of the parent's subtree.
  const uint64_t version = parent == kNone ? ssn_.state_version() : ssn_.queue_version(parent);
  BestMemo& memo = best_memo_[slot];
  if (memo.valid && memo.changes == changes_[slot] && memo.version == version) {
    return memo.best;
  }
  ScanStep* const steps = steps_.data() + memo.steps_at;
  if ((vkeyed_ || jkeyed_) && memo.valid && memo.has_steps && memo.version == version) {
    // The subtree's pods have the same states, so every candidate's state version is the one
    // recorded. When the pushes and pops since the last scan are all in the subtree of one
    // candidate (the one changed last: the parent's count grew by as much as that candidate's,
    // and the parent's count is the sum of its candidates'), the others are unchanged: the scan
    // resumes at that candidate and compares the others' kept keys without checking them.
    const QueueId c = last_child_[slot];
    if (c != kNone) {
      const auto at = static_cast<size_t>(child_at_[c]);
      if (changes_[slot] - memo.changes ==
          changes_[static_cast<size_t>(c) + 1] - steps[at].changes) {
        const QueueId best = options_.victim_queue
                                 ? ScanKeyedFromIn<true>(candidates, at, steps, true)
                                 : ScanKeyedFromIn<false>(candidates, at, steps, true);
        BestMemo& m = best_memo_[slot];
        m.valid = true;
        m.changes = changes_[slot];
        m.version = version;
        m.best = best;
        return best;
      }
    }
  }
  // (A single queue with jobs needs no comparison: no scan.)
  int with_jobs = 0;
  for (QueueId q : candidates) {
    if (HasJobs(q) && ++with_jobs > 1) break;
  }
  if (with_jobs <= 1) {
    const QueueId best = BestChild(candidates);
    memo.valid = true;
    memo.changes = changes_[slot];
    memo.version = version;
    memo.best = best;
    memo.has_steps = false;
    return best;
  }
  size_t from = 0;
  if (memo.valid && memo.has_steps) {
    while (from < candidates.size()) {
      const QueueId q = candidates[from];
      const ScanStep& step = steps[from];
      if (step.changes != changes_[static_cast<size_t>(q) + 1] ||
          step.version != ssn_.queue_version(q)) {
        break;
      }
      ++from;
    }
  } else {
    std::fill(steps, steps + candidates.size(), ScanStep{});
  }
  const QueueId start = from == 0 ? kNone : steps[from - 1].best;
  // (ScanFrom may answer BestChildOf for queues below: it writes only their memos and steps.)
  const QueueId best = vkeyed_ || jkeyed_ ? ScanKeyedFrom(candidates, from, steps)
                                          : ScanFrom(candidates, from, start, steps);
  BestMemo& m = best_memo_[slot];
  m.valid = true;
  m.changes = changes_[slot];
  m.version = version;
  m.best = best;
  m.has_steps = true;
  return best;
}

QueueId JobsByQueue::ScanFrom(const std::vector<QueueId>& candidates, size_t from, QueueId best,
                              ScanStep* steps) const {
  // The same comparisons as BestChild's, in the same order.
  const JobView* best_job = nullptr;
  VictimList best_victims;
  if (best != kNone) {
    if (options_.victim_queue) {
      best_victims = VictimsOf(best);
    } else {
      best_job = Best(best);
    }
  }
  for (size_t i = from; i < candidates.size(); ++i) {
    const QueueId q = candidates[i];
    if (HasJobs(q)) {
      if (options_.victim_queue) {
        const VictimList victims = VictimsOf(q);
        if (!victims.empty() &&
            (best == kNone || !ssn_.QueueLess(q, best, nullptr, nullptr, victims, best_victims))) {
          best = q;
          best_victims = victims;
        }
      } else if (const JobView* job = Best(q); job != nullptr) {
        if (best == kNone || ssn_.QueueLess(q, best, job, best_job, {}, {})) {
          best = q;
          best_job = job;
        }
      }
    }
    steps[i].changes = changes_[static_cast<size_t>(q) + 1];
    steps[i].version = ssn_.queue_version(q);
    steps[i].best = best;
  }
  return best;
}

QueueId JobsByQueue::ScanKeyedFrom(const std::vector<QueueId>& candidates, size_t from,
                                   ScanStep* steps) const {
  return options_.victim_queue ? ScanKeyedFromIn<true>(candidates, from, steps, false)
                               : ScanKeyedFromIn<false>(candidates, from, steps, false);
}

template <bool kVictims>
QueueId JobsByQueue::ScanKeyedFromIn(const std::vector<QueueId>& candidates, size_t from,
                                     ScanStep* steps, bool only_from) const {
  // ScanFrom's comparisons in the same order, each answered by the keys when they differ
  // (Session::VictimQueueOrderKeyed, JobQueueOrderKeyed). In victim mode q is taken over best
  // when !QueueLess(q, best), i.e. when q's key is greater, or on equal keys when the full
  // comparison says so; in job order when QueueLess(q, best): a smaller key, or on equal keys the
  // full comparison.
  int32_t best_at = from == 0 ? -1 : steps[from - 1].best_at;
  QueueId best = best_at < 0 ? kNone : candidates[static_cast<size_t>(best_at)];
  // (best's step is before `from`: unchanged, its key is current.)
  // Brings candidate i's step up to date: its key kept, or computed again when its pushes and
  // pops or its state version differ.
  auto refresh = [&](size_t i) {
    const QueueId q = candidates[i];
    ScanStep& step = steps[i];
    const uint64_t changes = changes_[static_cast<size_t>(q) + 1];
    const uint64_t version = ssn_.queue_version(q);
    if (step.has_key && step.changes == changes && step.version == version) return;
    step.has_key = false;
    if (HasJobs(q)) {
      if constexpr (kVictims) {
        const VictimList victims = VictimsOf(q);
        if (!victims.empty()) {
          step.key = ssn_.VictimQueueKeyOf(q, victims);
          step.has_key = true;
        }
      } else if (const JobView* job = Best(q); job != nullptr) {
        step.key = ssn_.JobQueueKeyOf(q, *job);
        step.has_key = true;
      }
    }
    step.changes = changes;
    step.version = version;
  };
  // Candidate i's comparison with the best so far, from its (current) step.
  // (The best's key, kept at hand: read once per change of the best, not per comparison.)
  const QueueOrderKey* best_key = best_at < 0 ? nullptr : &steps[best_at].key;
  auto compare = [&](size_t i) {
    ScanStep& step = steps[i];
    if (step.has_key) {
      const QueueId q = candidates[i];
      bool take = best == kNone;
      if (!take) {
        const int c = step.key.Compare(*best_key);
        if constexpr (kVictims) {
          take = c > 0 || (c == 0 && !ssn_.QueueLess(q, best, nullptr, nullptr, VictimsOf(q),
                                                     VictimsOf(best)));
        } else {
          take = c < 0 || (c == 0 && ssn_.QueueLess(q, best, Best(q), Best(best), {}, {}));
        }
      }
      if (take) {
        best = q;
        best_at = static_cast<int32_t>(i);
        best_key = &step.key;
      }
    }
    step.best = best;
    step.best_at = best_at;
  };
  if (only_from) {
    // (The candidates after `from` are unchanged: their steps are current.)
    refresh(from);
    for (size_t i = from; i < candidates.size(); ++i) compare(i);
  } else {
    for (size_t i = from; i < candidates.size(); ++i) {
      refresh(i);
      compare(i);
    }
  }
  return best;
}

void JobsByQueue::RebuildVictimViews() {
  if (!options_.victim_queue) return;
  victims_.assign(heaps_.size(), {});
  has_front_.assign(heaps_.size(), 0);
  for (size_t q = 0; q < heaps_.size(); ++q) {
    for (int32_t e : popped_[q]) victims_[q].push_back(&Entry(e));
    RefreshFront(static_cast<QueueId>(q));
  }
}

void JobsByQueue::RefreshFront(QueueId q) {
  if (!options_.victim_queue) return;
  auto& views = victims_[q];
  if (has_front_[q]) views.pop_back();
  has_front_[q] = !heaps_[q].empty();
  if (has_front_[q]) views.push_back(&Entry(heaps_[q].front()));
}

int32_t JobsByQueue::AddEntry(JobView v) {
  NoteKeysAddedNow();
  Item& item = own_.emplace_back();
  item.view = std::move(v);
  SetKey(item);
  return static_cast<int32_t>(frozen_size_ + own_.size() - 1);
}

void JobsByQueue::Freeze() {
  if (own_.empty()) return;
  // (The entries' chunks are handed over as they are, after the frozen ones: entries keep their
  // numbers and places.)
  auto all = frozen_ ? std::make_shared<Frozen>(*frozen_) : std::make_shared<Frozen>();
  all->Add(std::make_shared<const Items>(std::move(own_)));
  own_.clear();
  frozen_size_ = all->numbers();
  frozen_ = std::move(all);
  RebuildVictimViews();
  // With job-order queue keys, the scans are done once here, so that copies start from them and
  // scan again only the queues whose entries or states differ.
  if (jkeyed_) NextLeaf();
}

void JobsByQueue::PushView(JobView v) {
  const QueueId q = ssn_.cluster().jobs[v.job].queue;
  if (!AcceptsQueue(q)) return;
  auto& heap = heaps_[q];
  heap.push_back(AddEntry(std::move(v)));
  if (lazy_ && unbuilt_[q]) {
    // (Not ordered yet: the best entry so far is kept if known.)
    int32_t& best = lazy_best_[q];
    if (best >= 0 && HeapLess(heap[static_cast<size_t>(best)], heap.back())) {
      best = static_cast<int32_t>(heap.size() - 1);
    }
  } else {
    // std heaps keep the *largest* at the front: "greater" means "goes later".
    WithHeapLess([&](const auto& less) { std::push_heap(heap.begin(), heap.end(), less); });
  }
  RefreshFront(q);
  NoteAdded(q, 1);
}

bool JobsByQueue::AcceptsQueue(QueueId q) const {
  const auto& queues = ssn_.cluster().queues;
  if (q == kNone || !queues[q].IsLeaf()) return false;
  // A queue whose named parent does not exist is not schedulable.
  return queues[q].parent_name.empty() || queues[q].parent != kNone;
}

void JobsByQueue::NoteAdded(QueueId leaf, size_t count) {
  const auto& queues = ssn_.cluster().queues;
  for (QueueId a = leaf; a != kNone;) {
    active_jobs_[a] += static_cast<int>(count);
    changes_[static_cast<size_t>(a) + 1] += count;
    const QueueId up = queues[a].parent;
    last_child_[up == kNone ? 0 : static_cast<size_t>(up) + 1] = a;
    a = up;
  }
  changes_[0] += count;
  size_ += count;
}

void JobsByQueue::Mute(QueueId leaf) {
  const int count = active_jobs_[leaf];
  if (count == 0) return;
  // The entries leave the leaf's heap (they stay numbered, unused). The counts above it drop as
  // for `count` pops, the change counters rise as for one.
  heaps_[leaf].clear();
  if (lazy_) lazy_best_[leaf] = -1;  // (an empty list is ordered, built or not)
  RefreshFront(leaf);
  const auto& queues = ssn_.cluster().queues;
  for (QueueId a = leaf; a != kNone;) {
    active_jobs_[a] -= count;
    ++changes_[static_cast<size_t>(a) + 1];
    const QueueId up = queues[a].parent;
    last_child_[up == kNone ? 0 : static_cast<size_t>(up) + 1] = a;
    a = up;
  }
  ++changes_[0];
  size_ -= static_cast<size_t>(count);
}

void JobsByQueue::PushMany(const std::vector<JobId>& jobs) {
  const auto& cluster = ssn_.cluster();
  // Leaf queues receiving entries, with how many each; the counters above them are raised once
  // per queue (nothing reads them in between).
  // (In the order first reached; `slot` maps a queue to its place in `touched`, -1: none. The
  // jobs are counted first so that each heap grows once.)
  std::vector<std::pair<QueueId, size_t>> touched;
  std::vector<int32_t> slot(cluster.queues.size(), -1);
  auto accepted = [&](JobId j) {
    const QueueId q = cluster.jobs[j].queue;
    return AcceptsQueue(q) ? q : kNone;
  };
  // (The accepted jobs with their queues, in order: their entries are added a chunk at a time,
  // numbered as AddEntry would number them one by one.)
  std::vector<std::pair<JobId, QueueId>> added;
  added.reserve(jobs.size());
  for (JobId j : jobs) {
    const QueueId q = accepted(j);
    if (q == kNone) continue;
    added.emplace_back(j, q);
    if (slot[q] < 0) {
      slot[q] = static_cast<int32_t>(touched.size());
      touched.emplace_back(q, 0);
    }
    ++touched[static_cast<size_t>(slot[q])].second;
  }
  for (const auto& [q, count] : touched) heaps_[q].reserve(heaps_[q].size() + count);
  const auto first = static_cast<int32_t>(frozen_size_ + own_.size());
  if (!added.empty()) NoteKeysAddedNow();
  own_.Append(added.size(), [&](Item& item, size_t k) {
    item.view.job = added[k].first;
    SetKey(item);
  });
  for (size_t k = 0; k < added.size(); ++k) {
    heaps_[added[k].second].push_back(first + static_cast<int32_t>(k));
  }
  for (const auto& [q, count] : touched) {
    if (lazy_) {
      // Ordered when first popped; until then Best scans for the best entry.
      unbuilt_[q] = 1;
      lazy_best_[q] = -1;
    } else {
      WithHeapLess(
          [&](const auto& less) { std::make_heap(heaps_[q].begin(), heaps_[q].end(), less); });
    }
    RefreshFront(q);
    NoteAdded(q, count);
  }
}

const JobView* JobsByQueue::Best(QueueId q) const {
  const auto& queues = ssn_.cluster().queues;
  while (!queues[q].IsLeaf()) {
    q = BestChildOf(q);
    if (q == kNone) return nullptr;
  }
  const auto& heap = heaps_[q];
  if (heap.empty()) return nullptr;
  if (lazy_ && unbuilt_[q]) {
    int32_t& best = lazy_best_[q];
    if (best < 0) {
      best = 0;
      for (size_t i = 1; i < heap.size(); ++i) {
        if (HeapLess(heap[static_cast<size_t>(best)], heap[i])) best = static_cast<int32_t>(i);
      }
    }
    return &Entry(heap[static_cast<size_t>(best)]);
  }
  return &Entry(heap.front());
}

VictimList JobsByQueue::VictimsOf(QueueId q) const {
  const auto& queues = ssn_.cluster().queues;
  while (!queues[q].IsLeaf()) {
    q = BestChildOf(q);
    if (q == kNone) return {};
  }
  // Popped entries only grow, so (serial, leaf) names an append-only list.
  return VictimList{victims_[q], serial_ * (queues.size() + 1) + static_cast<uint64_t>(q) + 1,
                    popped_[q].size()};
}

QueueId JobsByQueue::BestChild(const std::vector<QueueId>& candidates) const {
  // A single queue with jobs needs no comparison (which can be costly in victim mode).
  QueueId only = kNone;
  int with_jobs = 0;
  for (QueueId q : candidates) {
    if (HasJobs(q)) {
      only = q;
      if (++with_jobs > 1) break;
    }
  }
  if (with_jobs <= 1) return only;
  QueueId best = kNone;
  const JobView* best_job = nullptr;
  VictimList best_victims;
  for (QueueId q : candidates) {
    if (!HasJobs(q)) continue;
    if (options_.victim_queue) {
      const VictimList victims = VictimsOf(q);
      if (victims.empty()) continue;
      // Reversed queue order: the queue that would go last in allocation order goes first.
      if (best == kNone || !ssn_.QueueLess(q, best, nullptr, nullptr, victims, best_victims)) {
        best = q;
        best_victims = victims;
      }
      continue;
    }
    const JobView* job = Best(q);
    if (job == nullptr) continue;
    if (best == kNone || ssn_.QueueLess(q, best, job, best_job, {}, {})) {
      best = q;
      best_job = job;
    }
  }
  return best;
}

QueueId JobsByQueue::NextLeaf() const {
  const auto& queues = ssn_.cluster().queues;
  QueueId q = BestChildOf(kNone);
  while (q != kNone && !queues[q].IsLeaf()) q = BestChildOf(q);
  return q;
}

JobView JobsByQueue::PopNextView() {
  const QueueId q = NextLeaf();
  auto& heap = heaps_[q];
  if (lazy_ && unbuilt_[q]) {
    WithHeapLess([&](const auto& less) { std::make_heap(heap.begin(), heap.end(), less); });
    unbuilt_[q] = 0;
  }
  WithHeapLess([&](const auto& less) { std::pop_heap(heap.begin(), heap.end(), less); });
  const int32_t e = heap.back();
  heap.pop_back();
  JobView v = Entry(e);
  if (options_.victim_queue) {
    // The front was the popped entry: it stays, as the last popped one.
    has_front_[q] = 0;
    popped_[q].push_back(e);
    RefreshFront(q);
  }
  NotePopped(q);
  --size_;
  return v;
}

JobId JobsByQueue::PopNext() {
  if (size_ == 0 || NextLeaf() == kNone) return kNone;
  return PopNextView().job;
}

}  // namespace gantry
