#include <bit>

#include "framework/session.h"
#include "plugins/proportion/plugin.h"

namespace gantry::proportion {

ProportionPlugin::VictimSum& ProportionPlugin::VictimSumSlot(QueueId q, uint64_t list) const {
  VictimSums& sums = victim_sums_[q];
  if (sums.memos.empty()) sums.memos.resize(kVictimSumsPerQueue);
  // (In the place the list's name maps to: the lists of one victims queue are named by leaf,
  // so a parent's leaves take different places.)
  VictimSum& m = sums.memos[list % kVictimSumsPerQueue];
  if (m.list != list) m = VictimSum();
  return m;
}

Quantities ProportionPlugin::AllocatedWithoutVictims(const Session& s, QueueId q,
                                                     const Quantities& start,
                                                     const VictimList& victims) const {
  auto subtract = [&](Quantities& value, const JobView* v) {
    const Quantities va = s.ViewAllocated(*v);
    for (auto res : kQueueResources) value[res] -= va[res];
  };
  auto same_bits = [](const Quantities& a, const Quantities& b) {
    for (auto res : kQueueResources) {
      if (std::bit_cast<uint64_t>(a[res]) != std::bit_cast<uint64_t>(b[res])) return false;
    }
    return true;
  };
  Quantities value = start;
  size_t i = 0;
  if (victims.list == 0 || !s.params().solver_shortcuts) {
    for (const JobView* v : victims.views) subtract(value, v);
    return value;
  }
  VictimSum& memo = VictimSumSlot(q, victims.list);
  const bool same_list = memo.list == victims.list && memo.version == s.state_version() &&
                         same_bits(memo.start, start);
  const JobView* tail =
      victims.views.size() == victims.stable + 1 ? victims.views[victims.stable] : nullptr;
  if (same_list && memo.count == victims.stable && tail != nullptr && memo.tail == tail) {
    return memo.tail_value;
  }
  if (same_list && memo.tail != nullptr && memo.count < victims.stable &&
      victims.views[memo.count] == memo.tail) {
    // The kept next candidate has been taken since: its sum continues (the list has grown by
    // that entry, the usual step after a pop).
    value = memo.tail_value;
    i = memo.count + 1;
  } else if (same_list && memo.count <= victims.stable) {
    value = memo.value;
    i = memo.count;
  }
  for (; i < victims.stable; ++i) subtract(value, victims.views[i]);
  if (!same_list) {
    memo.list = victims.list;
    memo.version = s.state_version();
    memo.start = start;
  }
  memo.count = victims.stable;
  memo.value = value;
  memo.tail = nullptr;  // (tail_value is read only with a tail)
  for (; i < victims.views.size(); ++i) subtract(value, victims.views[i]);
  if (tail != nullptr) {
    memo.tail = tail;
    memo.tail_value = value;
  }
  return value;
}

double ProportionPlugin::VictimShareKeeping(const Session& s, QueueId q, const VictimList& victims,
                                            VictimSideMemo& memo) const {
  const QueueShare& sh = shares_[q];
  Quantities start;
  for (auto res : kQueueResources) start[res] = sh[res].allocated + 0.0;
  memo.without = AllocatedWithoutVictims(s, q, start, victims);
  return DominantShareOf(q, memo.without);
}

ProportionPlugin::QueueSide ProportionPlugin::VictimSideOf(const Session& s, QueueId q,
                                                           const VictimList& victims) const {
  if (!s.params().solver_shortcuts || victims.list == 0) return MakeSide(s, q, nullptr, victims);
  const QueueShare& sh = shares_[q];
  std::array<uint64_t, 3> allocated{};
  for (int k = 0; k < 3; ++k)
    allocated[static_cast<size_t>(k)] =
        std::bit_cast<uint64_t>(sh.r[static_cast<size_t>(k)].allocated);
  const JobView* tail =
      victims.views.size() == victims.stable + 1 ? victims.views[victims.stable] : nullptr;
  // (One per list name's place, as VictimSumSlot: a queue above the leaves is compared
  // through the lists of its leaves in turn.)
  std::vector<VictimSideMemo>& memos = victim_sides_[q];
  if (memos.empty()) memos.resize(kVictimSumsPerQueue);
  VictimSideMemo& memo = memos[victims.list % kVictimSumsPerQueue];
  const bool same_share = memo.valid && SameBits(memo.allocated, allocated);
  const bool same_list =
      same_share && memo.list == victims.list && memo.version == s.state_version();
  if (same_list && memo.stable == victims.stable && memo.size == victims.views.size() &&
      memo.tail == tail) {
    return memo.side;
  }
  if (same_list && tail != nullptr && memo.tail != nullptr && victims.stable == memo.size &&
      victims.views[memo.stable] == memo.tail) {
    // The list has grown by its kept tail, now taken, and has a new one (the usual step after
    // a pop): the allocation without the victims continues from the kept one, as
    // AllocatedWithoutVictims would continue it (the same subtractions in the same order from
    // the same start, so the same bits), without looking up its own memo.
    const Quantities va = s.ViewAllocated(*tail);
    for (auto res : kQueueResources) memo.without[res] -= va[res];
    memo.side.share = DominantShareOf(q, memo.without);
    memo.stable = victims.stable;
    memo.size = victims.views.size();
    memo.tail = tail;
    return memo.side;
  }
  // Rules (1), (2), (4) and (6) depend only on the queue's share, whose allocations are the
  // same (deserved and fair shares are fixed for the session): only rule (5)'s share is
  // computed again.
  if (same_share) {
    memo.side.share = VictimShareKeeping(s, q, victims, memo);
  } else {
    memo.side = MakeSide(s, q, nullptr, victims);
    if (tail != nullptr) {
      // (Its memo answers at once: MakeSide has just asked for the same.)
      Quantities start;
      for (auto res : kQueueResources) start[res] = sh[res].allocated + 0.0;
      memo.without = AllocatedWithoutVictims(s, q, start, victims);
    }
    memo.allocated = allocated;
    memo.valid = true;
  }
  memo.list = victims.list;
  memo.stable = victims.stable;
  memo.size = victims.views.size();
  memo.tail = tail;
  memo.version = s.state_version();
  return memo.side;
}

bool ProportionPlugin::SameBits(const std::array<uint64_t, 3>& a,
                                const std::array<uint64_t, 3>& b) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

ProportionPlugin::QueueSide ProportionPlugin::JobSideOf(const Session& s, QueueId q,
                                                        const JobView* job) const {
  const QueueShare& sh = shares_[q];
  std::array<uint64_t, 3> allocated{};
  for (int k = 0; k < 3; ++k)
    allocated[static_cast<size_t>(k)] =
        std::bit_cast<uint64_t>(sh.r[static_cast<size_t>(k)].allocated);
  const JobId j = job == nullptr ? kNone : job->job;
  const QueueId jq = j == kNone ? kNone : s.cluster().jobs[j].queue;
  const uint64_t version = s.queue_version(q);
  const uint64_t job_version = jq == kNone ? 0 : s.queue_version(jq);
  JobSideMemos& memos = job_sides_[q];
  for (const JobSideMemo& memo : memos.memos) {
    if (memo.valid && memo.job == j && memo.version == version && memo.job_version == job_version &&
        SameBits(memo.allocated, allocated)) {
      return memo.side;
    }
  }
  const QueueSide side = MakeSide(s, q, job, {});
  memos.memos[memos.next] = {true, j, version, job_version, allocated, side};
  memos.next = (memos.next + 1) % kJobSidesPerQueue;
  return side;
}

}  // namespace gantry::proportion
