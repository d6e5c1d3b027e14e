// Accelerator of the victim search: victims-queue pops recorded across prefixes.
//
// Every prefix pops a fresh copy of the same victims queue on the same clean session, and the
// queue's next entry depends only on the operations done on it. So the pops (entry, its victims,
// what went back to the queue) are recorded once per job and replayed by later prefixes as long
// as they push back the same rests; where a prefix's recorded victims change a push, the queue is
// rebuilt up to that point and continued live. New pops need the clean session: with the kept
// eviction base, cleaning costs re-evicting it, so they are taken in runs of a fixed size (about
// as costly as a few pops; extending by the record's size instead popped up to twice the entries
// a search needed). The records' victims are kept in one list for all records, not a vector each.
//
// The accelerator (accelerator.h) holds one only with the solver shortcuts on; without it each
// prefix pops its own copy of the victims queue, as KAI does.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "actions/victim_search/kept_base.h"
#include "actions/victim_search/scenario.h"
#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry::victim_search {

class PopReplay {
 public:
  // `base`: the victims queue every prefix starts from (frozen; outlives this). `kept_base`
  // (may be null) is discarded before the session is read for new pops. `pops_per_extension`:
  // new pops taken at once.
  PopReplay(const Session& ssn, const JobsByQueue& base, KeptEvictionBase* kept_base,
            size_t pops_per_extension)
      : ssn_(ssn), base_(base), kept_base_(kept_base), per_extension_(pops_per_extension) {}

  // A new prefix starts popping from the beginning of the record.
  void StartPrefix() { cursor_ = 0; }

  // Whether the current prefix's victims queue is empty.
  bool Empty() const {
    if (cursor_ < pops_.size()) return false;
    return live_ ? live_->empty() : base_.empty();
  }

  // The prefix's next pop, as DecideStep would take it given `scenario`'s recorded victims: the
  // entry (`view`), its victims and the step. False when the queue is empty.
  bool Next(const Scenario& scenario, PopStep& step, const JobView*& view,
            std::span<const PodId>& victims);

 private:
  // One pop as the previous prefixes saw it: the entry, its victims
  // (victims_[victims_begin, victims_end)) and what went back to the queue after it.
  struct Record {
    JobView view;
    size_t victims_begin = 0;
    size_t victims_end = 0;
    bool has_more = false;
    bool pushed = false;
    bool skipped = false;  // the prefix that made or last changed the record skipped the entry
    std::vector<PodId> rest;
  };
  std::span<const PodId> VictimsOf(const Record& r) const {
    return std::span<const PodId>(victims_).subspan(r.victims_begin,
                                                    r.victims_end - r.victims_begin);
  }
  // The live queue in the state after the first `i` records (their pops and pushes) and the pop
  // of record i.
  void RebuildLive(size_t i);
  void Clean() {
    if (kept_base_) kept_base_->Discard();
  }

  const Session& ssn_;
  const JobsByQueue& base_;
  KeptEvictionBase* kept_base_;
  size_t per_extension_;
  std::vector<Record> pops_;
  std::vector<PodId> victims_;         // every record's victims (see Record)
  std::unique_ptr<JobsByQueue> live_;  // the queue standing after the last record
  size_t cursor_ = 0;                  // the current prefix's position in pops_
};

}  // namespace gantry::victim_search
