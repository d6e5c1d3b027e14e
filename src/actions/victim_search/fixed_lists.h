// The acting runs' fixed pending entries (acting_runs.h), per leaf: the pending jobs with no
// active pod, in job order, each with its request's group. Listed once per search, or kept
// between the searches of a session and brought up to date by job versions (KeptPending).
//
// KeptPending (switch `SchedulerParams::solver_acting_runs_kept`): a search lists the pending
// jobs (Session::HasPendingPods over the jobs pending at the session's open) and sorts each acting
// leaf's fixed ones when it first simulates; at 1,000 nodes of the busy shape that is ten thousand
// jobs per search, for searches that simulate a few scenarios. What the listing reads of a job,
// whether it has pending and active pods, its job-order key and its request, depends only on the
// statuses (and virtual flags) of its own pods, and those change only with a new job version
// (Session::job_version: it never goes back). So the lists are kept per thread and session
// (Session::serial), and each search, at the same moment as the listing (its first simulation),
// looks again only at the jobs whose version changed since they were last looked at: a job whose
// kind, key and request are the same stays where it is; another one leaves its place and, when
// fixed, is inserted at its key's place (keys are distinct: Session::JobTieBreakersDistinct). The
// kept lists hold every pending job, the preemptor too: the search passes over those that are not
// its fixed entries (the preemptor, a first-simulation victim), as the listing left them out.
// Hence each search sees the same fixed entries in the same order, with the same keys and
// requests, as it would have listed; the pending entries with active pods (the others) likewise.
// Differential test: tests/unit/solver_acting_runs_test.cc (this rule alone off, too).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "framework/session.h"

namespace gantry::victim_search {

struct FixedEntry {
  JobOrderKey key;
  JobId job = kNone;
  uint8_t group = 0;  // its request's place in its leaf's FixedLeaf::requests (when grouped)
};

// One leaf's fixed entries by job order, and their distinct requests (acting_runs.h: the maxima
// by request), bit for bit; `grouped` false past kMaxRequests of them (then not used).
struct FixedLeaf {
  static constexpr size_t kMaxRequests = 32;
  std::vector<FixedEntry> entries;
  bool sorted = false;
  bool grouped = false;
  std::vector<std::array<uint64_t, 3>> requests;
};

inline std::array<uint64_t, 3> RequestBitsOf(const Session& ssn, JobId j) {
  const Quantities want = ssn.ViewTasksQuantities(JobView{j, false, {}});
  std::array<uint64_t, 3> bits{};
  for (size_t k = 0; k < bits.size(); ++k) bits[k] = std::bit_cast<uint64_t>(want.v[k]);
  return bits;
}

// The group of `bits` among the leaf's requests, added when new; false past kMaxRequests.
inline bool GroupOf(FixedLeaf& leaf, const std::array<uint64_t, 3>& bits, uint8_t& group) {
  size_t c = 0;
  while (c < leaf.requests.size() && leaf.requests[c] != bits) ++c;
  if (c == leaf.requests.size()) {
    if (c == FixedLeaf::kMaxRequests) return false;
    leaf.requests.push_back(bits);
  }
  group = static_cast<uint8_t>(c);
  return true;
}

// Orders a leaf's entries by their job-order keys (computed now) and, with `by_request`, groups
// them by request; once (`sorted`).
inline void SortFixedLeaf(const Session& ssn, FixedLeaf& leaf, bool by_request) {
  if (leaf.sorted) return;
  leaf.sorted = true;
  for (FixedEntry& f : leaf.entries) f.key = ssn.JobOrderKeyOf(JobView{f.job, false, {}});
  std::sort(leaf.entries.begin(), leaf.entries.end(),
            [](const FixedEntry& a, const FixedEntry& b) { return a.key < b.key; });
  leaf.requests.clear();
  leaf.grouped = by_request;
  for (FixedEntry& f : leaf.entries) {
    if (leaf.grouped) leaf.grouped = GroupOf(leaf, RequestBitsOf(ssn, f.job), f.group);
  }
}

// The pending jobs of a session, classified and kept between its searches (see the file comment).
class KeptPending {
 public:
  enum Kind : uint8_t {
    kNotPending = 0,  // no pending pod
    kFixed,           // pending, no active pod, in a lone-chain leaf: in its leaf's list
    kFixedElsewhere,  // pending, no active pod, elsewhere (never looked at)
    kOther,           // pending with an active pod
  };

  // This thread's kept lists, brought up to date with the session's state now (`lone`: the
  // lone-chain leaves, LoneChainLeaves; `by_request`: lists grouped by request).
  static KeptPending& Refreshed(const Session& ssn, const std::vector<uint8_t>& lone,
                                bool by_request) {
    thread_local KeptPending kept;
    kept.Refresh(ssn, lone, by_request);
    return kept;
  }

  Kind kind(JobId j) const { return static_cast<Kind>(kind_[j]); }
  std::vector<FixedLeaf>& leaves() { return leaves_; }
  // Sorts leaf q's list (SortFixedLeaf) unless it is, noting its entries' requests.
  void Sort(const Session& ssn, QueueId q) {
    FixedLeaf& leaf = leaves_[q];
    if (leaf.sorted) return;
    SortFixedLeaf(ssn, leaf, by_request_);
    if (!by_request_) return;
    for (const FixedEntry& f : leaf.entries) bits_[f.job] = RequestBitsOf(ssn, f.job);
  }
  // The pending jobs with an active pod, in the order of Session::jobs_pending_at_open.
  const std::vector<JobId>& others() const { return others_; }

 private:
  Kind Classify(const Session& ssn, JobId j, const std::vector<uint8_t>& lone) const {
    if (!ssn.HasPendingPods(j)) return kNotPending;
    const Job& job = ssn.cluster().jobs[j];
    bool active = false;
    for (PodId p : job.pods) active = active || IsActiveAllocated(ssn.pod(p).status);
    if (active) return kOther;
    return job.queue != kNone && lone[job.queue] ? kFixed : kFixedElsewhere;
  }

  void Refresh(const Session& ssn, const std::vector<uint8_t>& lone, bool by_request) {
    const Cluster& c = ssn.cluster();
    const std::vector<JobId>& pending = ssn.jobs_pending_at_open();
    if (serial_ != ssn.serial() || by_request_ != by_request || seen_.size() != c.jobs.size()) {
      // (A session not seen last on this thread: everything listed again.)
      serial_ = ssn.serial();
      by_request_ = by_request;
      seen_.assign(c.jobs.size(), 0);
      kind_.assign(c.jobs.size(), kNotPending);
      bits_.assign(c.jobs.size(), {});
      leaves_.assign(c.queues.size(), FixedLeaf{});
      others_.clear();
      for (JobId j : pending) {
        seen_[j] = ssn.job_version(j);
        kind_[j] = Classify(ssn, j, lone);
        if (kind_[j] == kOther) others_.push_back(j);
        if (kind_[j] != kFixed) continue;
        leaves_[c.jobs[j].queue].entries.push_back({JobOrderKey{}, j, 0});
      }
      return;
    }
    bool others_changed = false;
    for (JobId j : pending) {
      const uint64_t version = ssn.job_version(j);
      if (seen_[j] == version) continue;
      seen_[j] = version;
      const auto was = static_cast<Kind>(kind_[j]);
      const Kind now = Classify(ssn, j, lone);
      kind_[j] = now;
      others_changed = others_changed || ((was == kOther) != (now == kOther));
      if (was != kFixed && now != kFixed) continue;
      FixedLeaf& leaf = leaves_[c.jobs[j].queue];
      if (!leaf.sorted) {
        // (Its keys are taken when it is sorted: only the members count.)
        if (was == kFixed && now == kFixed) continue;
        if (now == kFixed) {
          leaf.entries.push_back({JobOrderKey{}, j, 0});
        } else {
          leaf.entries.erase(std::find_if(leaf.entries.begin(), leaf.entries.end(),
                                          [j](const FixedEntry& f) { return f.job == j; }));
        }
        continue;
      }
      const std::array<uint64_t, 3> bits =
          by_request_ && now == kFixed ? RequestBitsOf(ssn, j) : std::array<uint64_t, 3>{};
      const JobOrderKey key =
          now == kFixed ? ssn.JobOrderKeyOf(JobView{j, false, {}}) : JobOrderKey{};
      if (was == kFixed) {
        auto at = std::find_if(leaf.entries.begin(), leaf.entries.end(),
                               [j](const FixedEntry& f) { return f.job == j; });
        if (now == kFixed && !(at->key < key) && !(key < at->key) && bits == bits_[j]) continue;
        leaf.entries.erase(at);
      }
      if (now != kFixed) continue;
      bits_[j] = bits;
      FixedEntry entry{key, j, 0};
      if (leaf.grouped) leaf.grouped = GroupOf(leaf, bits, entry.group);
      const auto at =
          std::lower_bound(leaf.entries.begin(), leaf.entries.end(), key,
                           [](const FixedEntry& f, const JobOrderKey& k) { return f.key < k; });
      leaf.entries.insert(at, entry);
    }
    if (others_changed) {
      others_.clear();
      for (JobId j : pending) {
        if (kind_[j] == kOther) others_.push_back(j);
      }
    }
  }

  uint64_t serial_ = 0;
  bool by_request_ = false;
  std::vector<uint64_t> seen_;                 // per job: the version it was classified at
  std::vector<uint8_t> kind_;                  // per job: its Kind then
  std::vector<std::array<uint64_t, 3>> bits_;  // per fixed job: its request's bits then
  std::vector<FixedLeaf> leaves_;              // per queue
  std::vector<JobId> others_;
};

}  // namespace gantry::victim_search
