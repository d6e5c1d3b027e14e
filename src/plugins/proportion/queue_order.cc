// KAI's queue order (queue_order package): the rules once, over QueueSide values (plugin.h).
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/proportion/plugin.h"

namespace gantry::proportion {

namespace {

// Whether a queue holding `with` uses a resource it has no allocatable share of.
bool Violates(const QueueShare& sh, const Quantities& with) {
  for (auto res : kQueueResources) {
    if (sh[res].Allocatable() == 0 && with[res] > 0) return true;
  }
  return false;
}

}  // namespace

std::array<double, ProportionPlugin::kOrderFields> ProportionPlugin::OrderFields(
    const QueueSide& side) {
  // (1) to (4) as mixed-radix digits, (1) the most significant.
  // (1) Over the fair share: last.
  double rules = side.over ? 1 : 0;
  // (2) Within the deserved quota with the job: first.
  rules = rules * 2 + (side.starved ? 0 : 1);
  // (3) Higher queue priority first: -priority + 2^31, in [1, 2^32], a digit below 2^33.
  rules = rules * 0x1p33 + (-static_cast<double>(side.priority) + 0x1p31);
  // (4) Using a resource without allocatable share: last.
  rules = rules * 2 + (side.violates ? 1 : 0);
  // (5) Smaller dominant share with the job (victim order: without the victims) first, then
  // (6) smaller dominant share as it is.
  return {rules, side.share, side.share0};
}

int ProportionPlugin::CompareSides(const Session& s, QueueId l, QueueId r, const QueueSide& ls,
                                   const QueueSide& rs) const {
  const auto lf = OrderFields(ls);
  const auto rf = OrderFields(rs);
  for (size_t i = 0; i < kOrderFields; ++i) {
    if (lf[i] < rf[i]) return -1;
    if (lf[i] > rf[i]) return 1;
  }
  // (7) The queue with the smaller allocatable share (<= everywhere, < somewhere) first.
  const Quantities& la = allocatable_share_[l];
  const Quantities& ra = allocatable_share_[r];
  if (!LessEqual(ra, la) && LessEqual(la, ra)) return -1;
  if (!LessEqual(la, ra) && LessEqual(ra, la)) return 1;
  // (8) Earlier creation first.
  const Queue& lq = s.cluster().queues[l];
  const Queue& rq = s.cluster().queues[r];
  if (lq.creation_ms < rq.creation_ms) return -1;
  return 1;
}

bool ProportionPlugin::SiblingOrderTotal(const Cluster& c) const {
  // Sibling groups: the roots, and the children of each queue. (Pairs within a group only.)
  std::vector<std::vector<QueueId>> groups(c.queues.size() + 1);
  for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
    const QueueId parent = c.queues[q].parent;
    groups[parent == kNone ? 0 : static_cast<size_t>(parent) + 1].push_back(q);
  }
  // (Pairs are checked one by one: past this many siblings the answer is no, not worth it.)
  constexpr size_t kMaxSiblings = 2048;
  for (const std::vector<QueueId>& group : groups) {
    if (group.size() > kMaxSiblings) return false;
    for (size_t i = 0; i < group.size(); ++i) {
      for (size_t k = i + 1; k < group.size(); ++k) {
        QueueId l = group[i];
        QueueId r = group[k];
        if (c.queues[l].creation_ms == c.queues[r].creation_ms) return false;
        if (c.queues[r].creation_ms < c.queues[l].creation_ms) std::swap(l, r);
        // l is created first: rule (7) must not put r first.
        const Quantities& la = allocatable_share_[l];
        const Quantities& ra = allocatable_share_[r];
        if (!LessEqual(la, ra) && LessEqual(ra, la)) return false;
      }
    }
  }
  return true;
}

ProportionPlugin::QueueSide ProportionPlugin::MakeSide(const Session& s, QueueId q,
                                                       const JobView* job,
                                                       const VictimList& victims) const {
  const QueueShare& sh = shares_[q];
  QueueSide side;
  side.over = Less(sh.FairShare(), sh.Allocated());
  Quantities with = sh.Allocated();
  with += job == nullptr ? Quantities{} : s.ViewTasksQuantities(*job);
  side.starved = LessEqual(with, sh.Deserved());
  side.priority = s.cluster().queues[q].priority;
  side.violates = Violates(sh, with);
  side.share =
      DominantShareOf(q, victims.empty() ? with : AllocatedWithoutVictims(s, q, with, victims));
  side.share0 = DominantShareOf(q, sh.Allocated());
  return side;
}

double ProportionPlugin::DominantShareOf(QueueId q, const Quantities& allocated) const {
  const Quantities& den = dominant_den_[q];
  double dominant = 0;
  for (auto res : kQueueResources) {
    const double value = den[res] == 0 ? allocated[res] * 1000 : allocated[res] / den[res];
    dominant = std::max(dominant, value);
  }
  return dominant;
}

int ProportionPlugin::QueueOrder(const Session& s, QueueId l, QueueId r, const JobView* lj,
                                 const JobView* rj, const VictimList& lvictims,
                                 const VictimList& rvictims) const {
  if (lj == nullptr && rj == nullptr && !lvictims.empty() && !rvictims.empty()) {
    return CompareSides(s, l, r, VictimSideOf(s, l, lvictims), VictimSideOf(s, r, rvictims));
  }
  // Job order (no victims) with the shortcuts on: each side is kept per queue, job and state.
  if (s.params().solver_shortcuts && lvictims.empty() && rvictims.empty() &&
      (lj == nullptr || !lj->partial) && (rj == nullptr || !rj->partial)) {
    return CompareSides(s, l, r, JobSideOf(s, l, lj), JobSideOf(s, r, rj));
  }
  return CompareSides(s, l, r, MakeSide(s, l, lj, lvictims), MakeSide(s, r, rj, rvictims));
}

QueueOrderKey ProportionPlugin::KeyOf(const QueueSide& side) {
  const auto fields = OrderFields(side);
  QueueOrderKey key;
  for (size_t i = 0; i < kOrderFields; ++i) key.k[i] = fields[i];
  return key;
}

QueueOrderKey ProportionPlugin::VictimQueueKey(const Session& s, QueueId q,
                                               const VictimList& victims) const {
  return KeyOf(VictimSideOf(s, q, victims));
}

QueueOrderKey ProportionPlugin::JobQueueKey(const Session& s, QueueId q, const JobView& job) const {
  return KeyOf(job.partial ? MakeSide(s, q, &job, {}) : JobSideOf(s, q, &job));
}

}  // namespace gantry::proportion
