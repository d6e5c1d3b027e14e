// The proportion plugin's class (see proportion.h): one section per file of this folder.
// Internal to the plugin: the session sees only the callbacks it registers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/plugin.h"
#include "framework/session.h"
#include "plugins/proportion/resource_share.h"

namespace gantry::proportion {

class ProportionPlugin : public Plugin {
 public:
  ProportionPlugin(double k_value, double reclaimer_multiplier)
      : k_value_(k_value), reclaimer_multiplier_(reclaimer_multiplier) {}
  std::string_view name() const override { return "proportion"; }
  // Divides the cluster among the queues and registers the callbacks.
  void OnSessionOpen(Session& ssn) override;
  void OnSessionClose(Session&) override { shares_.clear(); }

 private:
  // --- Session open and pod events (proportion.cc) -----------------------------------------------
  // What allocating the pod is expected to cost its queue (GPU memory as device shares).
  static Quantities PodQuantities(const Cluster& c, const Pod& pod);
  template <typename F>
  void ForAncestors(const Cluster& c, QueueId q, F f) {
    for (; q != kNone; q = c.queues[q].parent) f(shares_[q]);
  }
  void OnPodEvent(Session& s, PodId p, int sign);
  // --- Capacity checks (capacity_policy.cc) ------------------------------------------------------
  SchedulableResult CheckCapacity(const Session& s, JobId j, const Quantities& requested,
                                  bool check_limit) const;
  // Queue quantities of a set of pods, with GPU-memory requests as device fractions.
  static Quantities Requested(const Cluster& c, std::span<const PodId> pods);
  // The pods' requests as the capacity checks count them (GPU memory not converted).
  static Quantities RequestedQuota(const Cluster& c, std::span<const PodId> pods);
  // --- Reclaim (reclaimable.cc) ------------------------------------------------------------------
  // KAI's CanReclaimResources: the reclaimer's queue stays within its fair share with the job,
  // and a non-preemptible job within the deserved quota.
  bool CanReclaim(const Session& s, JobId j) const;
  static std::vector<QueueId> PathFromRoot(const Cluster& c, QueueId q);
  // The first queues on the two root paths that differ (or the deepest common level).
  static std::pair<QueueId, QueueId> Leveled(const Cluster& c, QueueId reclaimer,
                                             QueueId reclaimee);
  static std::array<bool, 3> Involved(const Quantities& q);
  // Reclaimable's saturation checks, from the victims a consolidating-reclaim simulation
  // evicted (the only victims that can count: the others are still active): true when one of
  // them fails. With exact queue sums, each queue's remaining allocation is its allocation minus
  // the counted victims below it in any order, so the checks see the same numbers as
  // Reclaimable's (whose other checks can only add rejections).
  bool SaturationRejects(const Session& s, const ScenarioInfo& sc) const;
  // Reclaimable's strategy check, from the victims a consolidating-reclaim simulation evicted:
  // true when one of them was left evicted below a reclaimee queue whose whole frozen
  // allocation already fails the check (ReclaimStrategy::Fits, up-closed: Reclaimable then
  // refuses at that victim's entry, whatever was taken before it). Needs no exact sums; see
  // reclaimable.cc.
  bool StrategyRefuses(const Session& s, const ScenarioInfo& sc, const Quantities& required) const;
  bool Reclaimable(const Session& s, const ScenarioInfo& sc) const;
  // Reclaimable's checks after its shortcuts (`required`: the preemptor's pods' requests).
  bool ReclaimableChecks(const Session& s, const ScenarioInfo& sc,
                         const Quantities& required) const;
  // Reclaimable's facts of the pods and jobs in compact arrays: a validation reads them for
  // thousands of victims, whose own records (Pod, Job and its pod sets) are large and scattered.
  // Fixed fields only: built once per session, when first asked for.
  struct VictimFacts {
    struct Pod {
      double cpu = 0;  // its CPU and memory requests (as Pod::WithGpus takes them)
      double memory = 0;
      int32_t pod_set = 0;
    };
    struct Job {
      QueueId queue = kNone;
      size_t sets_at = 0;  // where its pod sets' minimums start in set_min
    };
    bool built = false;
    std::vector<Pod> pods;
    std::vector<Job> jobs;
    std::vector<int32_t> set_min;  // per pod set: max(0, min_available)
  };
  const VictimFacts& VictimFactsOf(const Cluster& c) const;
  // --- Rejection rules (rejection_rules.cc) ------------------------------------------------------
  // A run of entries (sorted by sibling queue, then pod) of one sibling queue: where it is, its
  // victims' accepted GPUs and the level where the sibling's path parts from the reclaimer's.
  struct EntryGroup {
    QueueId sib = kNone;
    size_t begin = 0;
    size_t end = 0;
    double gpus = 0;
    size_t level = 0;
  };
  // What RejectionRules keeps of a call's stable victims (see EvictedVictims).
  struct RulesBase {
    uint64_t key = 0;
    size_t stable = 0;
    double required = 0;
    Quantities required_all;  // every resource the pending pods ask for
    bool possible = false;    // a saturation rule is possible
    // Per queue: 1 when it is a sibling of a queue of the reclaimer's root path whose whole
    // allocation already fails the strategy check (ReclaimStrategy::Fits), so that any of its
    // victims left evicted makes Reclaimable refuse; `any_bad`: some queue is.
    std::vector<uint8_t> strategy_bad;
    bool any_bad = false;
    std::vector<QueueId> path;  // the reclaimer's root path
    uint64_t path_call = 0;     // path_stamp_ value of the queue paths computed against `path`
    uint64_t hit = 0;           // base_hit_ value of the stable victims
    std::vector<double> below;
    std::vector<uint64_t> parted;                 // sorted
    std::vector<EntryGroup> groups;               // parted's runs by sibling queue
    std::vector<std::vector<PodId>> below_lists;  // per level: the victims `below` sums
    std::vector<PodId> pods;                      // parted's pods (what rules hold)
  };
  // Rules under which SaturationRejects (so Reclaimable) rejects a simulation's outcome (a
  // RejectionRulesFn), one per sibling queue `sib` that evicted victims belong to, where the
  // reclaimer's root path and theirs part (rq on the reclaimer's path, sib on theirs). If victims
  // of sib stay evicted, sib is hit and SaturationRejects compares, on GPUs (the reclaimer asks
  // for GPUs, so they are involved):
  //   ratio     = (allocated(rq) - taken(rq) + required) / fair(rq)
  //   sib_ratio = (allocated(sib) - taken(sib)) / fair(sib)
  // and rejects when ratio > 1 and ratio * multiplier >= sib_ratio (fair(sib) > 0). taken(q)
  // sums the accepted GPUs of the victims below q left evicted: at most those of all evicted
  // victims below rq. With exact (whole-number) sums both quotients are monotone, so with
  // lo = (allocated(rq) - all evicted below rq + required) / fair(rq) the check rejects whenever
  // taken(sib) >= x for the least whole x with lo > 1 and lo * multiplier >= (allocated(sib) - x)
  // / fair(sib): the rule's min_gpus.
  // Strategy rules (reclaim_strategy.h; SchedulerParams::solver_strategy_rules): when
  // sib's whole allocation already fails Reclaimable's strategy check against rq, the check
  // refuses at the first victim below sib that is counted, whatever the sums: sib's rule is then
  // min_gpus 1 instead (one GPU of its victims left evicted), with a saturation form that always
  // holds.
  void RejectionRules(const Session& s, JobId preemptor, std::span<const PodId> tasks,
                      const EvictedVictims& evicted, std::vector<RejectionRule>& out) const;
  void GroupEntries(const Session& s, const std::vector<uint64_t>& entries,
                    std::vector<EntryGroup>& groups) const;
  // Adds the distinct pods of `pods` (not yet marked `stamp` in `hit`, nor `skip` in
  // base_hit_: already among the stable victims) to the sums below the reclaimer's path and,
  // when their root path parts from it, to `parted`.
  void AddEvicted(const Session& s, std::span<const PodId> pods, const RulesBase& base,
                  std::vector<uint64_t>& hit, uint64_t stamp, uint64_t skip,
                  std::vector<double>& below, std::vector<std::vector<PodId>>* below_lists,
                  std::vector<uint64_t>& parted) const;
  // By sibling queue, then pod. (Victims usually come in pod order or its reverse.)
  static void SortEntries(std::vector<uint64_t>& entries);
  // --- Queue order (queue_order.cc) -----------------------------------------------------------
  // One queue as KAI's queue order sees it when compared with another: its share with the job it
  // would allocate next (job order) or without the victims taken from it so far (victim order).
  // Every input of rules (1) to (6) is a field here. (A Queue field that changes the order
  // becomes a field of the side, set in MakeSide, and a rule in OrderFields: the full order, its
  // keys and the kept sides all follow.)
  struct QueueSide {
    bool over = false;      // (1) holds more than its fair share in every resource
    bool starved = false;   // (2) stays within its deserved quota with the job
    int priority = 0;       // (3) the queue's priority
    bool violates = false;  // (4) would use a resource it has no allocatable share of
    double share = 0;       // (5) dominant share with the job (without the victims)
    double share0 = 0;      // (6) dominant share as it is
  };
  // KAI's queue order, rules (1) to (6), as fields compared in order, smaller first (the first
  // field where two sides differ decides; NaNs decide nothing):
  //   (1) over the fair share: last, (2) within the deserved quota: first,
  //   (3) higher queue priority first, (4) uses a resource without allocatable share: last,
  //   (5) smaller dominant share with the job (victim order: without the victims) first,
  //   (6) smaller dominant share first.
  // Rules (1) to (4) are whole numbers, packed as the digits of one number ((1) the most
  // significant, below 2^36 so exact in a double): the first of them where two sides differ
  // decides as it would alone, and comparing sides looks at three fields instead of six.
  static constexpr size_t kOrderFields = 3;
  static std::array<double, kOrderFields> OrderFields(const QueueSide& side);
  // The whole queue order of two sides: OrderFields, then rule (7) (the queue with the smaller
  // allocatable share, <= everywhere and < somewhere, first) and rule (8) (earlier creation
  // first). Rules (7) and (8) depend only on the queues, fixed for the session.
  int CompareSides(const Session& s, QueueId l, QueueId r, const QueueSide& ls,
                   const QueueSide& rs) const;
  // Whether rules (7) and (8) order every two sibling queues (children of one queue, or two
  // roots) as a strict total order: creation times differ, and where rule (7) decides it agrees
  // with rule (8). Then CompareSides is a strict total order on siblings (rules (1) to (6) are
  // finite numbers compared in turn), what Session::QueueOrderTotalOnSiblings promises. Its keys
  // (KeyOf: the fields of rules (1) to (6)) are the whole comparison of the sides, so equal keys
  // leave the order to the queues alone, what the victim search's acting runs rely on
  // (victim_search/acting_runs.h).
  bool SiblingOrderTotal(const Cluster& c) const;
  // The side of queue q with `job` (nullptr: none) to allocate and without `victims`, computed
  // from the queue's share. (Out of line: the kept sides are the common case.)
  [[gnu::noinline]] QueueSide MakeSide(const Session& s, QueueId q, const JobView* job,
                                       const VictimList& victims) const;
  // QueueShare::DominantShare of queue q with `allocated` as its allocation: the same
  // operations on the same values (its denominators are fixed for the session), without a copy
  // of the share.
  double DominantShareOf(QueueId q, const Quantities& allocated) const;
  // The registered QueueOrderFn: sides kept per queue where the shortcuts allow (VictimSideOf,
  // JobSideOf), else made afresh; compared by CompareSides either way.
  int QueueOrder(const Session& s, QueueId l, QueueId r, const JobView* lj, const JobView* rj,
                 const VictimList& lvictims, const VictimList& rvictims) const;
  // The order as keys (Session's QueueOrderKey): OrderFields of the side QueueOrder compares,
  // so that equal keys leave only rules (7) and (8) to QueueOrder. In victim order from the kept
  // victim side; in job order from the kept job side (whole jobs) or a fresh one (partial views).
  QueueOrderKey VictimQueueKey(const Session& s, QueueId q, const VictimList& victims) const;
  QueueOrderKey JobQueueKey(const Session& s, QueueId q, const JobView& job) const;
  static QueueOrderKey KeyOf(const QueueSide& side);
  // --- Queue order caches (queue_order_caches.cc) ------------------------------------------------
  // A queue's allocation minus the allocation of a victim list's first `count` views, subtracted
  // one view at a time in list order, from `start`.
  struct VictimSum {
    uint64_t list = 0;
    uint64_t version = 0;
    size_t count = 0;
    Quantities start;
    Quantities value;
    // The same continued over one more view (the list's next candidate), when there is one.
    const JobView* tail = nullptr;
    Quantities tail_value;
  };
  struct VictimSums {
    std::vector<VictimSum> memos;  // kVictimSumsPerQueue once used
  };
  // The memo of queue q for victim list `list`: a queue above the leaves is compared through
  // the lists of its several leaves in turn, so a few lists are kept per queue (each in the
  // place its name maps to, where it replaces the list kept there).
  static constexpr size_t kVictimSumsPerQueue = 16;
  VictimSum& VictimSumSlot(QueueId q, uint64_t list) const;
  // tmp.allocated = start - each victim's allocation, in order (KAI's queue share without the
  // victims). The part over the list's stable views is remembered per queue and list and continued
  // when the same list has grown: the same subtractions in the same order, so the same bits. So is
  // the result over all the views when the list's next candidate is the same entry (a list's
  // entries do not change while it has its name).
  Quantities AllocatedWithoutVictims(const Session& s, QueueId q, const Quantities& start,
                                     const VictimList& victims) const;
  // Per queue and list name's place: the last QueueSide with what it was made of (the
  // allocation bits and the victim list as AllocatedWithoutVictims keeps it: name, stable part,
  // next entry, state version).
  struct VictimSideMemo {
    bool valid = false;
    uint64_t list = 0;
    size_t stable = 0;
    size_t size = 0;
    const JobView* tail = nullptr;
    uint64_t version = 0;
    std::array<uint64_t, 3> allocated{};
    QueueSide side{};
    // With a tail: the queue's allocation without all the list's views, tail included (what
    // AllocatedWithoutVictims answered), so that the list grown by its tail continues from it.
    Quantities without;
  };
  // Rule (5)'s dominant share of queue q without its victims, keeping the allocation without the
  // victims in `memo` (see VictimSideMemo).
  double VictimShareKeeping(const Session& s, QueueId q, const VictimList& victims,
                            VictimSideMemo& memo) const;
  // MakeSide in victim order, kept per queue while its inputs are the same (shortcuts on, named
  // list).
  QueueSide VictimSideOf(const Session& s, QueueId q, const VictimList& victims) const;
  // (Element by element: std::array's == compiles to a memcmp call.)
  static bool SameBits(const std::array<uint64_t, 3>& a, const std::array<uint64_t, 3>& b);
  struct JobSideMemo {
    bool valid = false;
    JobId job = kNone;
    uint64_t version = 0;
    uint64_t job_version = 0;
    std::array<uint64_t, 3> allocated{};
    QueueSide side{};
  };
  // A few per queue: a queue above the leaves is asked with the best jobs of its several
  // children in turn (the oldest gives way to a new one).
  static constexpr size_t kJobSidesPerQueue = 8;
  struct JobSideMemos {
    std::array<JobSideMemo, kJobSidesPerQueue> memos{};
    size_t next = 0;
  };
  // MakeSide in job order for a whole job (not a partial view), kept per queue while its inputs are
  // the same: the job, the queue's allocation bits (deserved and fair shares are fixed for the
  // session) and the state version of the job's queue (its pods' statuses and virtual flags,
  // hence its tasks to allocate; the queue's own version too, as the job is normally in its
  // subtree). Queue versions survive a simulation's rollback where nothing changed, so a queue
  // no victim and no placement touched keeps its side from one simulation to the next (the
  // simulations' job order compares every pending job's queue).
  QueueSide JobSideOf(const Session& s, QueueId q, const JobView* job) const;

  // --- State ------------------------------------------------------------------------------
  mutable VictimFacts victim_facts_;
  double k_value_;
  double reclaimer_multiplier_;
  Quantities total_;
  std::vector<QueueShare> shares_;
  // Per queue: its AllocatableShare, fixed once the fair shares are computed.
  std::vector<Quantities> allocatable_share_;
  // Per queue: DominantShare's denominators (the allocatable share, the total where unlimited).
  std::vector<Quantities> dominant_den_;
  // Queue sums are exact (whole numbers; see OnSessionOpen).
  bool exact_sums_ = false;
  // SaturationRejects' marks (queues and pods seen in the current call) and per-queue sums.
  mutable std::vector<uint64_t> hit_, pod_hit_;
  mutable std::vector<double> below_scratch_;
  mutable std::vector<QueueId> victim_path_scratch_;
  mutable std::vector<uint64_t> extra_scratch_;
  mutable std::vector<std::vector<PodId>> extra_below_scratch_;
  mutable std::vector<EntryGroup> extra_groups_scratch_;
  mutable std::vector<uint64_t> base_hit_;
  mutable RulesBase rules_base_;
  // RejectionRules' per-queue cache of root-path comparisons (valid where the stamp is the
  // call's).
  mutable std::vector<uint64_t> path_stamp_;
  mutable std::vector<size_t> common_of_;
  mutable std::vector<QueueId> sib_of_;
  mutable uint64_t path_call_ = 0;
  mutable std::vector<Quantities> taken_sum_;
  mutable uint64_t stamp_ = 0;
  // Scratch buffers of Reclaimable.
  mutable std::vector<std::pair<QueueId, Quantities>> taken_scratch_;
  mutable std::vector<std::pair<int32_t, PodId>> by_set_scratch_;
  mutable std::vector<PodId> core_scratch_, elastic_scratch_;
  // Reclaimable's per-queue remaining allocations and involved resources, valid where the
  // stamp is the call's; the queues they hold.
  mutable std::vector<uint64_t> rem_stamp_, inv_stamp_;
  mutable std::vector<Quantities> rem_;
  mutable std::vector<std::array<bool, 3>> inv_;
  mutable std::vector<QueueId> present_scratch_;
  mutable std::vector<Quantities*> chain_scratch_;
  mutable uint64_t validation_stamp_ = 0;
  // StrategyRefuses' answers per victim leaf queue (-1 not known yet, 0 the reclaimee queue
  // Leveled pairs it with passes the strategy check with its whole frozen allocation, 1 fails),
  // valid for one frozen copy of the shares, reclaimer queue and request.
  struct StrategyMemo {
    uint64_t shares = 0;  // shares_frozen_ it was computed for
    QueueId reclaimer = kNone;
    Quantities required;
    std::vector<int8_t> bad_leaf;
  };
  mutable StrategyMemo strategy_memo_;
  uint64_t shares_frozen_ = 0;  // counts the copies into simulation_shares_
  // Per queue: the last victim-list sums QueueOrder computed for it (one per list).
  mutable std::vector<VictimSums> victim_sums_;
  mutable std::vector<std::vector<VictimSideMemo>> victim_sides_;
  mutable std::vector<JobSideMemos> job_sides_;
  // Queue shares frozen when a reclaim solution search starts (KAI validates against these).
  std::vector<QueueShare> simulation_shares_;
};

}  // namespace gantry::proportion
