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
// pushed back. With queue order keys (Session::VictimQueueOrderKeyed in victim mode,
// Session::JobQueueOrderKeyed in job order) siblings are compared by their keys, each computed
// once per change of its queue's subtree, and the full queue order is asked only when two keys
// are equal: the same pops.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "framework/chunk_pool.h"
#include "framework/session.h"
#include "model/cluster.h"

namespace gantry {

struct JobsOrderOptions {
  bool filter_non_pending = true;  // skip jobs without pending pods
  bool filter_unready = true;      // skip jobs whose pod sets cannot reach their minimum
  bool filter_non_preemptible = false;
  bool filter_non_active_allocated = false;
  // skip jobs still inside their preemption delay (for the actions that evict)
  bool filter_within_preemption_delay = false;
  bool victim_queue = false;  // reversed orders, queues compared by their victims
  // The caller queues at most one entry per job at a time. Then, with the solver shortcuts on,
  // a job order that depends only on each job's own pods and distinct tie-breakers (see
  // Session::JobTieBreakersDistinct), no two entries are equivalent and none changes rank while
  // queued, so every pop takes the unique best entry whatever the heap's layout: entries added
  // by PushMany are heap-ordered only when their queue is first popped, and a queue's best
  // entry is found by a scan until then (cheaper when only the front is looked at). Not for
  // victim queues.
  bool lazy_heaps = false;
  // KAI's queueDepthPerAction: InitializeWithAllJobs queues at most this many jobs of each leaf
  // queue, the first ones by the job order; -1: all.
  int max_jobs_per_queue = -1;
};

// The options allocate visits jobs with (KAI's allocate: jobs with pending pods that are ready
// for scheduling, at most the configuration's queue depth of "allocate" per leaf queue). Shared
// with the reflectjoborder plugin, which reports that order.
JobsOrderOptions AllocateJobsOrderOptions(const Session& ssn);

class LeafHeapCache;

class JobsByQueue {
 public:
  JobsByQueue(const Session& ssn, JobsOrderOptions options);
  // A copy continues independently (its victim lists get new names, see VictimList), from the
  // scans `other` kept (see BestChildOf: they are checked against the copy's own changes).
  JobsByQueue(const JobsByQueue& other);
  JobsByQueue& operator=(const JobsByQueue&) = delete;
  // Makes this queue what the copy constructor would make of `other` (a queue of the same
  // session), keeping this queue's storage: for a queue copied again and again from one frozen
  // queue, the copies then allocate nothing once their lists have grown.
  void AssignFrom(const JobsByQueue& other);

  // Adds every eligible job of the session.
  void InitializeWithAllJobs();
  // Adds the jobs of `jobs` that pass the options' filters. With the solver shortcuts on and no
  // two of them tied on the job order's last tie-breakers (creation time, name), the heaps are
  // built at once (PushMany): pops then come in the same order as after pushing one by one,
  // provided the job order does not change while the jobs are queued (a victims queue is used on
  // one session state).
  void InitializeWithJobs(const std::vector<JobId>& jobs);
  // Victim mode: adds, for every queue of `leaves` (each at most once), the jobs that
  // `eligible(q, out)` writes to `out` (jobs of queue q, in increasing id order) and that pass
  // the options' filters: the same pops as InitializeWithJobs on all of them. With `cache`, the
  // solver shortcuts on, a keyed job order and no two jobs tied on its last tie-breakers, a leaf
  // whose pods have the same states as when `cache` last received its entries (the same queue
  // version; the job order keys are then the same too) takes them from there, already
  // heap-ordered, without asking `eligible`: its answer for q must then depend only on fixed
  // fields and the states of the pods of q's jobs. A cache serves one session. The entries
  // are the cache's, shared (this queue's frozen entries, see Freeze), not copied.
  void InitializeFromLeaves(std::span<const QueueId> leaves,
                            const std::function<void(QueueId, std::vector<JobId>&)>& eligible,
                            LeafHeapCache* cache);
  // The per-job form of `eligible` for a LeafHeapCache in kept mode: the candidate jobs of a
  // leaf queue (in increasing id order), and whether one of them is eligible. `eligible(q, out)`
  // must write exactly the candidates of q for which `job(j)` holds, and `job(j)` must depend
  // only on fixed fields and the states of j's own pods (so on j's job version).
  struct LeafJobs {
    std::function<std::span<const JobId>(QueueId)> candidates;
    std::function<bool(JobId)> job;
  };
  // InitializeFromLeaves with a cache in kept mode (LeafHeapCache(true)) and `per_job`: a leaf
  // whose state version changed since the cache received its entries is brought up to date from
  // them instead of built again: only the candidates whose job version changed are asked again
  // (their eligibility, their key), and their entries leave, join or move in the kept heap. The
  // same pops: no two entries are equivalent (the precondition of the cache), so any heap of the
  // same entries pops them in the same order.
  void InitializeFromLeaves(std::span<const QueueId> leaves,
                            const std::function<void(QueueId, std::vector<JobId>&)>& eligible,
                            LeafHeapCache* cache, const LeafJobs* per_job);
  // Adds a job (again). Jobs of missing or non-leaf queues are ignored.
  void Push(JobId j) { PushView(JobView{j, false, {}}); }
  void PushView(JobView v);
  // Adds many jobs at once (one heap build per queue instead of one insertion each).
  void PushMany(const std::vector<JobId>& jobs);
  // Leaves the entries queued in leaf queue `leaf` out of the order from now on: they are never
  // popped, and size() and empty() no longer count them (for the victim search's idle queues,
  // victim_search/idle_queues.h). Entries pushed to it later count as usual.
  void Mute(QueueId leaf);
  // Removes and returns the next job, or kNone when empty.
  JobId PopNext();
  // Removes and returns the next entry; empty() must be false.
  JobView PopNextView();
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Makes the entries pushed so far shared and immutable, so copies of this queue share them
  // instead of copying them (a copy then costs one integer per queued entry). With job-order
  // queue keys (Session::JobQueueOrderKeyed) also finds the next leaf once, so that copies start
  // from kept scans and compute keys only for the queues whose entries or pods' states differ.
  void Freeze();

  // Whether job j passes the options' filters (would be queued).
  bool Eligible(JobId j) const;

 private:
  friend class LeafHeapCache;
  // Best entry of a queue subtree, or nullptr.
  const JobView* Best(QueueId q) const;
  QueueId BestChild(const std::vector<QueueId>& candidates) const;
  // BestChild over the children of `parent` (kNone: the roots). With the solver shortcuts on,
  // when the queue order depends only on pod states, the answer is kept while nothing in the
  // parent's subtree was pushed or popped and the states of the pods of its jobs are the same
  // (the session's state version of that subtree): the heaps' fronts and every input of the queue
  // order (shares and jobs of the subtree's queues) are then the same.
  //
  // When something in the subtree did change, the comparisons of the scan that only involve
  // unchanged candidates are not repeated: the scan is resumed after the longest run of leading
  // candidates whose own subtrees are unchanged (same pushes and pops, same state version), from
  // the best candidate found among them (the queue order compares two queues from their own
  // subtrees, so those comparisons would give the same answers).
  QueueId BestChildOf(QueueId parent) const;
  // Lowers the entry counts of `leaf` and its ancestors by one, raising their change counters.
  void NotePopped(QueueId leaf);
  // Whether entries of jobs of queue q are queued: a leaf whose named parent, if any, exists.
  bool AcceptsQueue(QueueId q) const;
  // Raises the entry counts of `leaf` and its ancestors (and their change counters) by `count`.
  void NoteAdded(QueueId leaf, size_t count);
  QueueId NextLeaf() const;
  bool HasJobs(QueueId q) const { return active_jobs_[q] > 0; }
  // An entry: the view, and with job order keys (keyed_) its key and the job version it was
  // computed at (0: not known; the key is then known current only at keys_state_, see
  // KeysCurrent).
  struct Item {
    JobView view;
    JobOrderKey key;
    uint64_t key_version = 0;
  };
  // With job order keys (keyed_): gives an entry its view's key and the job version it holds at.
  void SetKey(Item& item) const {
    if (!keyed_) return;
    item.key_version = ssn_.job_version(item.view.job);
    item.key = ssn_.JobOrderKeyOf(item.view);
  }
  // With job order keys (keyed_), before entries whose keys are current now are added: notes
  // whether every entry's key is current at the session's state version now.
  void NoteKeysAddedNow() {
    if (!keyed_) return;
    const uint64_t version = ssn_.state_version();
    if (frozen_size_ + own_.size() == 0) {
      keys_at_state_ = true;
      keys_state_ = version;
    } else if (keys_state_ != version) {
      keys_at_state_ = false;
    }
  }
  // Whether every entry's key is its view's key now without asking the job versions: the keys
  // were all current at the session's state version of now. (A view's key depends only on the
  // statuses and virtual flags of its job's pods, and two moments with the same state version
  // have the same ones; a rollback gives the version back, while the job versions only grow.)
  bool KeysCurrent() const {
    return keyed_ && keys_at_state_ && keys_state_ == ssn_.state_version();
  }
  bool EntryLess(const Item& a, const Item& b) const {
    // A kept key is the view's key now while its job's version is the same (see
    // Session::JobOrderKeyed), and keys compare as JobViewLess does: the same answer.
    if (keyed_ && a.key_version == ssn_.job_version(a.view.job) &&
        b.key_version == ssn_.job_version(b.view.job)) {
      return options_.victim_queue ? b.key < a.key : a.key < b.key;
    }
    return EntryLessSlow(a, b);
  }
  bool EntryLessSlow(const Item& a, const Item& b) const;
  // Victims that stand for queue q (its best leaf queue): popped entries plus the next one.
  VictimList VictimsOf(QueueId q) const;
  // Victim mode: keeps victims_[q] = popped entries + the heap's front.
  void RefreshFront(QueueId q);
  void RebuildVictimViews();
  // Entries are numbered first the frozen (shared) ones (see Frozen), then this queue's own in
  // push order. Entries in chunks of a fixed size: views of entries stay where they are while
  // entries are added, and an index is a shift and a mask.
  class Items {
   public:
    static constexpr size_t kBits = 6;
    static constexpr size_t kChunk = size_t{1} << kBits;

    Items() = default;
    Items(const Items&) = delete;
    Items(Items&& other) noexcept : chunks_(std::move(other.chunks_)), size_(other.size_) {
      other.chunks_.clear();
      other.size_ = 0;
    }
    Items& operator=(const Items&) = delete;
    ~Items() { Release(); }
    // Becomes a copy of `other`, keeping its chunks (entries past the end are left over: see
    // Reset).
    void AssignFrom(const Items& other) {
      while (chunks_.size() < other.chunks_.size()) {
        chunks_.push_back(Pool::Take());
      }
      for (size_t i = 0; i < other.size_; ++i) (*this)[i] = other[i];
      size_ = other.size_;
    }
    // Appends a default entry.
    Item& emplace_back() {
      if (size_ == chunks_.size() * kChunk) chunks_.push_back(Pool::Take());
      Item& item = (*this)[size_];
      Reset(item);
      ++size_;
      return item;
    }
    // Appends n entries, `fill(item, k)` writing the k-th (0 <= k < n) into a default one.
    template <typename Fill>
    void Append(size_t n, const Fill& fill) {
      chunks_.reserve((size_ + n + kChunk - 1) / kChunk);
      for (size_t k = 0; k < n;) {
        if (size_ == chunks_.size() * kChunk) chunks_.push_back(Pool::Take());
        Item* chunk = chunks_[size_ >> kBits].get();  // (chunks past it are kept: AssignFrom)
        const size_t at = size_ & (kChunk - 1);
        const size_t m = std::min(kChunk - at, n - k);
        for (size_t i = 0; i < m; ++i) {
          Reset(chunk[at + i]);
          fill(chunk[at + i], k + i);
        }
        size_ += m;
        k += m;
      }
    }
    Item& operator[](size_t i) { return chunks_[i >> kBits][i & (kChunk - 1)]; }
    const Item& operator[](size_t i) const { return chunks_[i >> kBits][i & (kChunk - 1)]; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void clear() { Release(); }
    // The c-th chunk: entries c * kChunk on (those past size() unused).
    size_t chunk_count() const { return chunks_.size(); }
    const Item* chunk(size_t c) const { return chunks_[c].get(); }

   private:
    // The chunks come from and go back to a per-thread pool: victims queues are built and dropped
    // for every reclaim, preempt and consolidation job, with the same few hundred chunks.
    using Pool = ChunkPool<Item, kChunk, 2048>;
    // Makes a left-over entry a default one, keeping its list's storage. (Entries past size_,
    // in chunks kept by AssignFrom or taken from the pool, hold whatever they held: each is reset
    // when appended, while its memory is being written anyway.)
    static void Reset(Item& item) {
      item.view.job = kNone;
      item.view.partial = false;
      item.view.pods.clear();
      item.key = {};
      item.key_version = 0;
    }
    // Gives every chunk back to the pool.
    void Release() {
      for (auto& chunk : chunks_) Pool::Give(std::move(chunk));
      chunks_.clear();
      size_ = 0;
    }
    std::vector<std::unique_ptr<Item[]>> chunks_;
    size_t size_ = 0;
  };
  // Shared, immutable entries: whole chunks of lists of entries, entry i in chunk i / kChunk
  // (entries past the end of their list are never numbered), and the lists that own them.
  struct Frozen {
    std::vector<const Item*> chunks;
    std::vector<std::shared_ptr<const Items>> lists;
    // Appends the chunks of `list` (not empty), whose entries are then numbered from the first
    // number past the chunks so far.
    void Add(std::shared_ptr<const Items> list) {
      for (size_t c = 0; c < list->chunk_count(); ++c) chunks.push_back(list->chunk(c));
      lists.push_back(std::move(list));
    }
    size_t numbers() const { return chunks.size() * Items::kChunk; }
  };
  const Item& ItemAt(int32_t e) const {
    const size_t i = static_cast<size_t>(e);
    return i < frozen_size_ ? frozen_->chunks[i >> Items::kBits][i & (Items::kChunk - 1)]
                            : own_[i - frozen_size_];
  }
  const JobView& Entry(int32_t e) const { return ItemAt(e).view; }
  int32_t AddEntry(JobView v);
  bool HeapLess(int32_t a, int32_t b) const { return EntryLess(ItemAt(b), ItemAt(a)); }
  // HeapLess with job order keys (keyed_) in victim mode (kVictims) or not: the same answers,
  // the mode known at compile time. kCurrent: every entry's key is known current (KeysCurrent),
  // so the job versions are not read.
  template <bool kVictims, bool kCurrent>
  bool KeyedHeapLess(int32_t a, int32_t b) const {
    const Item& x = ItemAt(b);
    const Item& y = ItemAt(a);
    if (kCurrent || (x.key_version == ssn_.job_version(x.view.job) &&
                     y.key_version == ssn_.job_version(y.view.job))) {
      return kVictims ? y.key < x.key : x.key < y.key;
    }
    return EntryLessSlow(x, y);
  }
  // Calls f with HeapLess, or with the KeyedHeapLess of this queue's mode when keyed_ (the same
  // answers).
  template <typename F>
  void WithHeapLess(const F& f) const {
    // (Victims queues, used on one session state, are the ones whose keys are known current.)
    if (keyed_ && options_.victim_queue && KeysCurrent()) {
      f([this](int32_t a, int32_t b) { return KeyedHeapLess<true, true>(a, b); });
    } else if (keyed_ && options_.victim_queue) {
      f([this](int32_t a, int32_t b) { return KeyedHeapLess<true, false>(a, b); });
    } else if (keyed_) {
      f([this](int32_t a, int32_t b) { return KeyedHeapLess<false, false>(a, b); });
    } else {
      f([this](int32_t a, int32_t b) { return HeapLess(a, b); });
    }
  }

  const Session& ssn_;
  JobsOrderOptions options_;
  // With the solver shortcuts on and a keyed job order (Session::JobOrderKeyed), entries carry
  // their job order keys and are compared by them while their jobs' versions are unchanged.
  bool keyed_ = false;
  // With keyed_: every entry's key was current at the session's state version keys_state_ (see
  // NoteKeysAddedNow, KeysCurrent).
  bool keys_at_state_ = false;
  uint64_t keys_state_ = 0;
  // Victim mode with the shortcuts on, a queue order depending only on pod states and keyed
  // (Session::VictimQueueOrderKeyed): sibling queues are compared by their keys, kept per
  // candidate in BestChildOf's scan steps.
  bool vkeyed_ = false;
  // Job order (not victim mode) with the shortcuts on, a queue order depending only on pod
  // states and keyed in job order (Session::JobQueueOrderKeyed): the same, with each candidate's
  // key computed from its best entry.
  bool jkeyed_ = false;
  std::shared_ptr<const Frozen> frozen_;
  size_t frozen_size_ = 0;  // frozen_'s numbers (0: none); own entries are numbered from it
  Items own_;
  // Per leaf queue: a heap of entry numbers (front = next).
  std::vector<std::vector<int32_t>> heaps_;
  // Per leaf queue, victim mode: entries popped so far; the same entries then the heap's front
  // as views (what VictimsOf returns), and whether that front is present.
  std::vector<std::vector<int32_t>> popped_;
  std::vector<std::vector<const JobView*>> victims_;
  std::vector<char> has_front_;
  // Per queue: number of queued entries in its subtree.
  std::vector<int> active_jobs_;
  std::vector<QueueId> roots_;
  size_t size_ = 0;
  uint64_t serial_ = 0;  // names this queue's victim lists
  // Per queue (index + 1; 0: the roots): pushes and pops in its subtree so far, and the last
  // BestChildOf answer with the counter and the state version it was computed at.
  //
  // With queue order keys (vkeyed_, jkeyed_) a step also keeps the candidate's key: it is the
  // candidate's key now while its pushes and pops and its state version are the ones recorded
  // (its victim list, or its best entry, and every input of its key are then the same), so a
  // later scan compares it without computing it again.
  struct ScanStep {
    uint64_t changes = 0;  // the candidate's pushes and pops when scanned
    uint64_t version = 0;  // its subtree's state version when scanned
    QueueId best = kNone;  // best candidate among the scan's first ones, up to this one
    int32_t best_at = -1;  // best's place among the candidates (vkeyed_, jkeyed_)
    // The candidate had victims (a best entry, in job order) and `key` is theirs (its).
    bool has_key = false;
    QueueOrderKey key;
  };
  struct BestMemo {
    bool valid = false;
    bool has_steps = false;  // the last answer came from a scan: its steps are kept
    uint64_t changes = 0;
    uint64_t version = 0;
    QueueId best = kNone;
    size_t steps_at = 0;  // where the steps of its candidates start in steps_ (fixed)
  };
  // BestChild's scan from candidate `from` on, starting from `best` (the best of the earlier
  // candidates), recording each candidate's step into `steps`.
  QueueId ScanFrom(const std::vector<QueueId>& candidates, size_t from, QueueId best,
                   ScanStep* steps) const;
  // ScanFrom with queue order keys (victim mode or job order): the same answers, from the
  // candidates' keys (kept ones for unchanged candidates), asking Session::QueueLess only on
  // equal keys.
  QueueId ScanKeyedFrom(const std::vector<QueueId>& candidates, size_t from, ScanStep* steps) const;
  // ScanKeyedFrom in victim mode (kVictims) or in job order. `only_from`: the candidates other
  // than candidates[from] are known to be unchanged since `steps` were recorded (same pushes and
  // pops, same state version), so their kept keys are used without checking.
  template <bool kVictims>
  QueueId ScanKeyedFromIn(const std::vector<QueueId>& candidates, size_t from, ScanStep* steps,
                          bool only_from) const;
  std::vector<uint64_t> changes_;
  // Per queue slot (as changes_): the child (root, for slot 0) through which the last push or
  // pop in its subtree came, or kNone.
  std::vector<QueueId> last_child_;
  // Per queue: its place among its parent's children (among the roots for a root).
  std::vector<int32_t> child_at_;
  mutable std::vector<BestMemo> best_memo_;
  // The scans' steps, one per candidate, each scan's in one run (see BestMemo::steps_at; its
  // size is fixed, so a scan's steps stay in place while scans below it run). Flat, so that a
  // copy of the queue copies them at once.
  mutable std::vector<ScanStep> steps_;
  // lazy_heaps in effect; per leaf queue: its heap holds entries not heap-ordered yet, and the
  // index (in the heap's vector) of their best entry, or -1 when not known.
  bool lazy_ = false;
  std::vector<char> unbuilt_;
  mutable std::vector<int32_t> lazy_best_;
};

// The leaf queues' entries of the victims queues built one after another on one session (see
// JobsByQueue::InitializeFromLeaves): per leaf queue, its entries in heap order with their job
// order keys, and the leaf's queue version they were built at. The entries are shared with the
// queues built from them (immutable, like a frozen queue's).
//
// Kept mode (SchedulerParams::reclaim_kept_leaves; JobsByQueue::InitializeFromLeaves with
// LeafJobs): each leaf's heap is also kept as a list with each job's position in it and the job
// version its entry (or its absence) was decided at, so that a changed leaf is updated by its
// changed jobs only.
class LeafHeapCache {
 public:
  LeafHeapCache() = default;
  explicit LeafHeapCache(bool kept) : kept_(kept) {}
  bool kept() const { return kept_; }
  // Kept mode: the leaves brought up to date from their kept heaps since the last call.
  uint64_t TakeKeptUpdates() { return std::exchange(kept_updates_, 0); }

 private:
  friend class JobsByQueue;
  struct KeptEntry {
    JobOrderKey key;
    JobId job;
    uint64_t key_version;
  };
  struct Leaf {
    bool valid = false;
    uint64_t version = 0;
    std::shared_ptr<const JobsByQueue::Items> entries;
    std::vector<KeptEntry> heap;  // kept mode: the entries, a max-heap by key
  };
  // Kept mode: fixes the heap of `leaf` at index i after its key changed or it moved there.
  void SiftUp(Leaf& leaf, size_t i);
  void SiftDown(Leaf& leaf, size_t i);
  void Place(Leaf& leaf, size_t i, const KeptEntry& e) {
    leaf.heap[i] = e;
    position_[static_cast<size_t>(e.job)] = static_cast<int32_t>(i);
  }
  bool kept_ = false;
  uint64_t kept_updates_ = 0;
  uint64_t session_ = 0;  // the session's serial (0: none yet)
  std::vector<Leaf> leaves_;
  std::vector<uint64_t> seen_version_;  // kept mode, per job: the version last decided at (0: none)
  std::vector<int32_t> position_;       // kept mode, per job: its index in its leaf's heap, or -1
};

}  // namespace gantry
