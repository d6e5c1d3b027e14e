#include "plugins/proportion.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace proportion {

double ResourceShare::Requestable() const {
  return max_allowed == kUnlimited ? request : std::min(max_allowed, request);
}

double ResourceShare::Allocatable() const {
  if (deserved == kUnlimited) return max_allowed;
  double a = std::max(deserved, fair_share);
  if (max_allowed != kUnlimited) a = std::min(max_allowed, a);
  return a;
}

namespace {
template <typename F>
Quantities Map(const QueueShare& s, F f) {
  Quantities q;
  for (auto res : kQueueResources) q[res] = f(s[res]);
  return q;
}

// KAI's resource-quantity comparison, where -1 (unlimited) is larger than everything.
int CompareQuantity(double a, double b) {
  if (a == kUnlimited) return b == kUnlimited ? 0 : 1;
  if (b == kUnlimited) return -1;
  return a > b ? 1 : a < b ? -1 : 0;
}
bool LessEqual(const Quantities& a, const Quantities& b) {
  for (auto res : kQueueResources) {
    if (CompareQuantity(a[res], b[res]) > 0) return false;
  }
  return true;
}
// Strictly less in every resource.
bool Less(const Quantities& a, const Quantities& b) {
  for (auto res : kQueueResources) {
    if (a[res] >= b[res]) return false;
  }
  return true;
}
}  // namespace

Quantities QueueShare::FairShare() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.fair_share; });
}
Quantities QueueShare::Allocated() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.allocated; });
}
Quantities QueueShare::Deserved() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.deserved; });
}
Quantities QueueShare::AllocatableShare() const {
  return Map(*this, [](const ResourceShare& rs) { return rs.Allocatable(); });
}

double QueueShare::DominantShare(const Quantities& total) const {
  double dominant = 0;
  for (auto res : kQueueResources) {
    const ResourceShare& s = (*this)[res];
    double allocatable = s.Allocatable();
    if (allocatable == kUnlimited) allocatable = total[res];
    const double value = allocatable == 0 ? s.allocated * 1000 : s.allocated / allocatable;
    dominant = std::max(dominant, value);
  }
  return dominant;
}

namespace {

bool IsSatisfied(const ResourceShare& s) {
  if (s.request <= s.fair_share) return true;
  return s.max_allowed != kUnlimited && s.max_allowed <= s.fair_share;
}

double RemainingRequested(const ResourceShare& s) {
  const double requested = s.Requestable();
  return requested < s.fair_share ? 0 : requested - s.fair_share;
}

struct Remainder {
  QueueId queue;
  double amount;
};

// Over-quota division among queues of one priority, in rounds. Returns what is left; `remainders`
// collects queues whose share was rounded down.
double DivideUpToFairShare(const Cluster& cluster, double total, double k_value, QueueResource res,
                           const std::vector<QueueId>& queues, std::vector<QueueShare>& shares,
                           std::map<QueueId, double>& remainders) {
  for (;;) {
    bool another_round = false;
    const double to_give = total;
    double total_weights = 0;
    for (QueueId q : queues) {
      if (RemainingRequested(shares[q][res]) > 0) total_weights += shares[q][res].over_quota_weight;
    }
    if (total_weights == 0) break;
    std::map<QueueId, double> weights;
    double weights_sum = 0;
    for (QueueId q : queues) {
      const ResourceShare& s = shares[q][res];
      if (IsSatisfied(s)) continue;
      const double nw = s.over_quota_weight / total_weights;
      const double w = std::max(0.0, nw + k_value * (nw - s.usage));
      weights[q] = w;
      weights_sum += w;
    }
    if (weights_sum == 0) break;
    for (QueueId q : queues) {
      if (total == 0) break;
      ResourceShare& s = shares[q][res];
      if (IsSatisfied(s)) continue;
      const double requested = RemainingRequested(s);
      if (s.over_quota_weight == 0) continue;
      const double fair = to_give * (weights[q] / weights_sum);
      double give = 0;
      if (requested <= fair) {
        give = requested;
        remainders.erase(q);
      } else {
        const double rounded = std::floor(fair);
        if (rounded > 0) give = rounded;
        if (fair - give > 0) remainders[q] = fair - give;
      }
      if (give == 0) continue;
      s.fair_share += give;
      total -= give;
      another_round = another_round || requested < fair;
    }
    if (!another_round || total == 0) break;
  }
  (void)cluster;
  return total;
}

double DivideRemainder(const Cluster& cluster, double total, QueueResource res,
                       const std::map<QueueId, double>& remainders,
                       std::vector<QueueShare>& shares) {
  std::vector<std::pair<QueueId, double>> order(remainders.begin(), remainders.end());
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    const Queue& qa = cluster.queues[a.first];
    const Queue& qb = cluster.queues[b.first];
    if (qa.creation_ms != qb.creation_ms) return qa.creation_ms < qb.creation_ms;
    return qa.name < qb.name;
  });
  for (const auto& [q, _] : order) {
    if (total == 0) break;
    const double give = std::min(1.0, total);
    shares[q][res].fair_share += give;
    total -= give;
  }
  return total;
}

void DivideResource(const Cluster& cluster, double total, double k_value, QueueResource res,
                    const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares) {
  // Deserved phase.
  double remaining = total;
  for (QueueId q : siblings) {
    ResourceShare& s = shares[q][res];
    const double deserved = s.deserved == kUnlimited ? total : s.deserved;
    const double amount = std::min(deserved, s.Requestable());
    s.fair_share += amount;
    remaining -= amount;
  }
  if (remaining <= 0) return;
  // Over-quota phase, by priority (higher first).
  std::map<int, std::vector<QueueId>, std::greater<>> by_priority;
  for (QueueId q : siblings) by_priority[cluster.queues[q].priority].push_back(q);
  std::map<int, std::map<QueueId, double>, std::greater<>> remainders;
  for (auto& [priority, queues] : by_priority) {
    remaining =
        DivideUpToFairShare(cluster, remaining, k_value, res, queues, shares, remainders[priority]);
  }
  for (auto& [priority, rem] : remainders) {
    if (remaining <= 0) break;
    if (rem.empty()) continue;
    remaining = DivideRemainder(cluster, remaining, res, rem, shares);
  }
}

}  // namespace

void DivideAmongSiblings(const Cluster& cluster, const Quantities& total, double k_value,
                         const std::vector<QueueId>& siblings, std::vector<QueueShare>& shares) {
  for (auto res : kQueueResources) {
    DivideResource(cluster, total[res], k_value, res, siblings, shares);
  }
}

void ComputeFairShares(const Cluster& cluster, const Quantities& total, double k_value,
                       std::vector<QueueShare>& shares) {
  std::vector<QueueId> roots;
  for (QueueId q = 0; q < static_cast<QueueId>(cluster.queues.size()); ++q) {
    if (cluster.queues[q].parent == kNone) roots.push_back(q);
  }
  // Breadth-first: a parent's fair share is final before its children are divided.
  std::vector<std::pair<Quantities, std::vector<QueueId>>> work{{total, roots}};
  while (!work.empty()) {
    auto [amount, siblings] = std::move(work.back());
    work.pop_back();
    if (siblings.empty()) continue;
    DivideAmongSiblings(cluster, amount, k_value, siblings, shares);
    for (QueueId q : siblings) {
      if (!cluster.queues[q].children.empty()) {
        work.emplace_back(shares[q].FairShare(), cluster.queues[q].children);
      }
    }
  }
}

namespace {

constexpr double kMilliCpuToCores = 1000;
constexpr double kMemoryToGb = 1e9;

std::string OverLimitMessage(const std::string& queue, QueueResource r, double max_allowed,
                             double used, double requested) {
  std::string what, details;
  switch (r) {
    case QueueResource::kGpu:
      what = "GPUs";
      details = "Limit is " + Humanize(max_allowed, 1) + " GPUs, currently " + Humanize(used, 1) +
                " GPUs allocated and workload requested " + Humanize(requested, 1) + " GPUs";
      break;
    case QueueResource::kCpu:
      what = "CPU cores";
      details = "Limit is " + Humanize(max_allowed, kMilliCpuToCores) + " cores, currently " +
                Humanize(used, kMilliCpuToCores) + " cores allocated and workload requested " +
                Humanize(requested, kMilliCpuToCores) + " cores";
      break;
    case QueueResource::kMemory:
      what = "memory";
      details = "Limit is " + Humanize(max_allowed, kMemoryToGb) + " GB, currently " +
                Humanize(used, kMemoryToGb) + " GB allocated and workload requested " +
                Humanize(requested, kMemoryToGb) + " GB";
      break;
  }
  return queue + " quota has reached the allowable limit of " + what + ". " + details;
}

std::string NonPreemptibleOverQuotaMessage(const std::string& queue, QueueResource r,
                                           double deserved, double used,
                                           const Quantities& requested) {
  std::string details;
  switch (r) {
    case QueueResource::kGpu:
      details = "Workload requested " + FormatNumber(requested[r]) + " GPUs, but " + queue +
                " quota is " + Humanize(deserved, 1) + " GPUs, while " + Humanize(used, 1) +
                " GPUs are already allocated for non-preemptible pods.";
      break;
    case QueueResource::kCpu:
      details = "Workload requested " + Humanize(requested[r], kMilliCpuToCores) +
                " CPU cores, but " + queue + " quota is " + Humanize(deserved, kMilliCpuToCores) +
                " cores, while " + Humanize(used, kMilliCpuToCores) +
                " cores are already allocated for non-preemptible pods.";
      break;
    case QueueResource::kMemory:
      details = "Workload requested " + Humanize(requested[r], kMemoryToGb) + " GB memory, but " +
                queue + " quota is " + Humanize(deserved, kMemoryToGb) + " GB, while " +
                Humanize(used, kMemoryToGb) + " GB are already allocated for non-preemptible pods.";
      break;
  }
  return "Non-preemptible workload is over quota. " + details +
         " Use a preemptible workload to go over quota.";
}

class ProportionPlugin : public Plugin {
 public:
  bool NodeChecksDependOnlyOnShapeAndState() const override { return true; }
  ProportionPlugin(double k_value, double reclaimer_multiplier)
      : k_value_(k_value), reclaimer_multiplier_(reclaimer_multiplier) {}
  std::string_view name() const override { return "proportion"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    victim_facts_ = {};
    total_ = {};
    for (const Node& n : c.nodes) {
      total_[QueueResource::kCpu] += n.allocatable.cpu_millis;
      total_[QueueResource::kMemory] += n.allocatable.memory_bytes;
      total_[QueueResource::kGpu] += n.allocatable.gpus;
    }
    shares_.assign(c.queues.size(), {});
    for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
      for (auto res : kQueueResources) {
        const QueueQuota& quota = c.queues[q].quota(res);
        ResourceShare& s = shares_[q][res];
        s.deserved = quota.quota;
        s.max_allowed = quota.limit;
        s.over_quota_weight = quota.over_quota_weight;
      }
    }
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      const Pod& pod = c.pods[p];
      if (pod.job == kNone) continue;
      const Job& job = c.jobs[pod.job];
      const PodStatus st = ssn.pod(p).status;
      if (IsAllocatedLike(st)) {
        const Quantities q = ssn.AcceptedQuantities(p);
        ForAncestors(c, job.queue, [&](QueueShare& s) {
          for (auto res : kQueueResources) {
            s[res].allocated += q[res];
            s[res].request += q[res];
            if (!job.preemptible) s[res].allocated_non_preemptible += q[res];
          }
        });
      } else if (st == PodStatus::kPending) {
        const Quantities q = pod.InitQuantities(c.min_node_gpu_memory_mib);
        ForAncestors(c, job.queue, [&](QueueShare& s) {
          for (auto res : kQueueResources) s[res].request += q[res];
        });
      }
    }
    ComputeFairShares(c, total_, k_value_, shares_);
    // (Deserved, fair share and limit are fixed from here on, and so is what a queue may use.)
    allocatable_share_.clear();
    for (const QueueShare& sh : shares_) allocatable_share_.push_back(sh.AllocatableShare());
    dominant_den_ = allocatable_share_;
    for (Quantities& den : dominant_den_) {
      for (auto res : kQueueResources) {
        if (den[res] == kUnlimited) den[res] = total_[res];
      }
    }

    victim_sums_.assign(c.queues.size(), {});
    victim_sides_.assign(c.queues.size(), {});
    job_sides_.assign(c.queues.size(), {});
    // Queue shares are sums of pod quantities, added and taken away as pods come and go. With
    // whole numbers only (well inside a double's exact range) those sums are exact, so the
    // shares are a function of the statuses of the pods in the queue's subtree: so is the queue
    // order (its other inputs are the queues and the jobs' or victims' pods, of the same
    // subtrees, with their statuses and virtual flags).
    double magnitude = 0;
    bool whole = true;
    for (const Pod& pod : c.pods) {
      // What a shared-GPU pod is charged depends on the node it is placed on, not only on its
      // status.
      whole = whole && !pod.IsSharedGpu();
      const Quantities q = PodQuantities(c, pod);
      for (auto res : kQueueResources) {
        whole = whole && q[res] == std::floor(q[res]);
        magnitude += std::abs(q[res]);
      }
    }
    const bool pod_states_only = whole && magnitude < 0x1p52;
    exact_sums_ = pod_states_only;
    ssn.AddQueueOrderFn(
        [this](const Session& s, QueueId l, QueueId r, const JobView* lj, const JobView* rj,
               const VictimList& lv,
               const VictimList& rv) { return QueueOrder(s, l, r, lj, rj, lv, rv); },
        pod_states_only,
        [this](const Session& s, QueueId q, const VictimList& victims) {
          return VictimQueueKey(s, q, victims);
        },
        [this](const Session& s, QueueId q, const JobView& job) { return JobQueueKey(s, q, job); });
    ssn.AddJobCapacityFn([this](const Session& s, JobId j, std::span<const PodId> pods) {
      return CheckCapacity(s, j, RequestedQuota(s.cluster(), pods), /*check_limit=*/true);
    });
    ssn.AddTaskCapacityFn([this](const Session& s, PodId p, NodeId n) {
      const Pod& pod = s.cluster().pods[p];
      return CheckCapacity(s, pod.job, pod.WithGpus(s.RequiredInitGpusOn(p, n)),
                           /*check_limit=*/true);
    });
    ssn.AddEventHandler(EventHandler{
        [this](Session& s, PodId p) { OnPodEvent(s, p, +1); },
        [this](Session& s, PodId p) { OnPodEvent(s, p, -1); },
    });
    ssn.AddNonPreemptibleQuotaFn([this](const Session& s, JobId j, std::span<const PodId> pods) {
      return CheckCapacity(s, j, RequestedQuota(s.cluster(), pods), /*check_limit=*/false);
    });
    ssn.AddCanReclaimFn([this](const Session& s, JobId j) { return CanReclaim(s, j); });
    ssn.AddReclaimScenarioValidatorFn(
        [this](const Session& s, const ScenarioInfo& sc) { return Reclaimable(s, sc); });
    ssn.AddReclaimRejectionRulesFn(
        [this](const Session& s, JobId preemptor, std::span<const PodId> tasks,
               const EvictedVictims& evicted, std::vector<RejectionRule>& out) {
          RejectionRules(s, preemptor, tasks, evicted, out);
        });
    ssn.AddOnJobSolutionStartFn([this](const Session&) { simulation_shares_ = shares_; });
    ssn.SetQueueDeservedFn([this](const Session&, QueueId q) { return shares_[q].Deserved(); });
    ssn.SetQueueFairShareFn([this](const Session&, QueueId q) { return shares_[q].FairShare(); });
    ssn.SetQueueAllocatedFn([this](const Session&, QueueId q) { return shares_[q].Allocated(); });
  }

  void OnSessionClose(Session&) override { shares_.clear(); }

 private:
  // What allocating the pod is expected to cost its queue (GPU memory as device shares).
  static Quantities PodQuantities(const Cluster& c, const Pod& pod) {
    return pod.InitQuantities(c.min_node_gpu_memory_mib);
  }

  template <typename F>
  void ForAncestors(const Cluster& c, QueueId q, F f) {
    for (; q != kNone; q = c.queues[q].parent) f(shares_[q]);
  }

  void OnPodEvent(Session& s, PodId p, int sign) {
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    const Job& job = c.jobs[pod.job];
    const Quantities q = s.AcceptedQuantities(p);
    ForAncestors(c, job.queue, [&](QueueShare& sh) {
      for (auto res : kQueueResources) {
        sh[res].allocated += sign * q[res];
        if (!job.preemptible) sh[res].allocated_non_preemptible += sign * q[res];
      }
    });
  }

  SchedulableResult CheckCapacity(const Session& s, JobId j, const Quantities& requested,
                                  bool check_limit) const {
    const Cluster& c = s.cluster();
    const Job& job = c.jobs[j];
    if (check_limit) {
      for (QueueId q = job.queue; q != kNone; q = c.queues[q].parent) {
        const QueueShare& sh = shares_[q];
        for (auto res : kQueueResources) {
          const ResourceShare& r = sh[res];
          if (r.max_allowed == kUnlimited || requested[res] == 0) continue;
          if (r.max_allowed < r.allocated + requested[res]) {
            return {false, "OverLimit",
                    OverLimitMessage(c.queues[q].name, res, r.max_allowed, r.allocated,
                                     requested[res])};
          }
        }
      }
    }
    if (job.preemptible) return {};
    for (QueueId q = job.queue; q != kNone; q = c.queues[q].parent) {
      const QueueShare& sh = shares_[q];
      for (auto res : kQueueResources) {
        const ResourceShare& r = sh[res];
        if (r.deserved == kUnlimited || requested[res] == 0) continue;
        if (r.deserved < r.allocated_non_preemptible + requested[res]) {
          return {false, "NonPreemptibleOverQuota",
                  NonPreemptibleOverQuotaMessage(c.queues[q].name, res, r.deserved,
                                                 r.allocated_non_preemptible, requested)};
        }
      }
    }
    return {};
  }

  // Queue quantities of a set of pods, with GPU-memory requests as device fractions.
  static Quantities Requested(const Cluster& c, std::span<const PodId> pods) {
    Quantities q;
    for (PodId p : pods) q += PodQuantities(c, c.pods[p]);
    return q;
  }
  // The pods' requests as the capacity checks count them (GPU memory not converted).
  static Quantities RequestedQuota(const Cluster& c, std::span<const PodId> pods) {
    Quantities q;
    for (PodId p : pods) q += c.pods[p].RequestQuantities();
    return q;
  }

  // KAI's CanReclaimResources: the reclaimer's queue stays within its fair share with the job,
  // and a non-preemptible job within the deserved quota.
  bool CanReclaim(const Session& s, JobId j) const {
    const Cluster& c = s.cluster();
    std::vector<PodId> tasks;
    s.TasksToAllocate(j, tasks, /*real=*/false);
    const Quantities requested = Requested(c, tasks);
    const QueueShare& q = shares_[c.jobs[j].queue];
    Quantities with = q.Allocated();
    with += requested;
    if (!LessEqual(with, q.FairShare())) return false;
    if (c.jobs[j].preemptible) return true;
    Quantities np = Map(q, [](const ResourceShare& rs) { return rs.allocated_non_preemptible; });
    np += requested;
    return LessEqual(np, q.Deserved());
  }

  static std::vector<QueueId> PathFromRoot(const Cluster& c, QueueId q) {
    std::vector<QueueId> path;
    for (; q != kNone; q = c.queues[q].parent) path.insert(path.begin(), q);
    return path;
  }

  // The first queues on the two root paths that differ (or the deepest common level).
  static std::pair<QueueId, QueueId> Leveled(const Cluster& c, QueueId reclaimer,
                                             QueueId reclaimee) {
    const auto a = PathFromRoot(c, reclaimer);
    const auto b = PathFromRoot(c, reclaimee);
    QueueId ra = kNone, rb = kNone;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      ra = a[i];
      rb = b[i];
      if (ra != rb) break;
    }
    return {ra, rb};
  }

  static std::array<bool, 3> Involved(const Quantities& q) {
    return {q[QueueResource::kCpu] > 0, q[QueueResource::kMemory] > 0, q[QueueResource::kGpu] > 0};
  }

  // KAI's reclaim strategies: taking `remaining` down is allowed while the reclaimee stays above
  // its fair share, or when the reclaimer stays within its deserved quota and the reclaimee above
  // its own. (What does not depend on `remaining` is computed once per reclaimer / reclaimee.)
  struct ReclaimStrategy {
    ReclaimStrategy(const Quantities& required, const QueueShare& reclaimer,
                    const QueueShare& reclaimee)
        : allocatable(reclaimee.AllocatableShare()), deserved(reclaimee.Deserved()) {
      Quantities with = reclaimer.Allocated();
      with += required;
      reclaimer_within_deserved = LessEqual(with, reclaimer.Deserved());
    }
    bool Fits(const Quantities& remaining) const {
      if (!LessEqual(remaining, allocatable)) return true;
      if (!reclaimer_within_deserved) return false;
      return !LessEqual(remaining, deserved);
    }
    Quantities allocatable, deserved;
    bool reclaimer_within_deserved = false;
  };

  static double Saturation(double allocated, double fair) {
    if (fair == 0) return allocated > 0 ? std::numeric_limits<double>::infinity() : 0;
    if (fair == kUnlimited) return 0;
    return allocated / fair;
  }

  // Reclaimable's saturation checks, from the victims a consolidating-reclaim simulation
  // evicted (the only victims that can count: the others are still active): true when one of
  // them fails. With exact queue sums, each queue's remaining allocation is its allocation minus
  // the counted victims below it in any order, so the checks see the same numbers as
  // Reclaimable's (whose other checks can only add rejections).
  bool SaturationRejects(const Session& s, const ScenarioInfo& sc) const {
    const Cluster& c = s.cluster();
    const auto& queues = simulation_shares_;
    if (hit_.size() != c.queues.size()) {
      hit_.assign(c.queues.size(), 0);
      taken_sum_.assign(c.queues.size(), {});
    }
    if (pod_hit_.size() != c.pods.size()) pod_hit_.assign(c.pods.size(), 0);
    ++stamp_;
    auto visit = [&](std::span<const PodId> pods) {
      for (PodId p : pods) {
        if (pod_hit_[p] == stamp_ || IsActiveAllocated(s.pod(p).status)) continue;
        pod_hit_[p] = stamp_;
        const Quantities q = s.AcceptedQuantities(p);
        for (QueueId a = c.jobs[c.pods[p].job].queue; a != kNone; a = c.queues[a].parent) {
          if (hit_[a] != stamp_) {
            hit_[a] = stamp_;
            taken_sum_[a] = {};
          }
          taken_sum_[a] += q;
        }
      }
    };
    visit(sc.evicted_recorded);
    visit(sc.evicted_potential);
    const Quantities required = Requested(c, sc.preemptor_tasks);
    const auto reclaimer_involved = Involved(required);
    for (QueueId rq = c.jobs[sc.preemptor].queue; rq != kNone; rq = c.queues[rq].parent) {
      Quantities with = queues[rq].Allocated();
      if (hit_[rq] == stamp_) with -= taken_sum_[rq];
      with += required;
      const Quantities fair = queues[rq].FairShare();
      for (QueueId sib = 0; sib < static_cast<QueueId>(c.queues.size()); ++sib) {
        if (sib == rq || hit_[sib] != stamp_ || c.queues[sib].parent != c.queues[rq].parent) {
          continue;
        }
        Quantities sib_remaining = queues[sib].Allocated();
        sib_remaining -= taken_sum_[sib];
        const Quantities sib_fair = queues[sib].FairShare();
        for (auto res : kQueueResources) {
          if (!reclaimer_involved[static_cast<int>(res)] && !(taken_sum_[sib][res] > 0)) continue;
          if (fair[res] == kUnlimited && sib_fair[res] == kUnlimited) continue;
          const double ratio = Saturation(with[res], fair[res]);
          const double sib_ratio = Saturation(sib_remaining[res], sib_fair[res]);
          if (ratio > 1 && sib_fair[res] > 0 && ratio * reclaimer_multiplier_ >= sib_ratio) {
            return true;
          }
        }
      }
    }
    return false;
  }

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
  void RejectionRules(const Session& s, JobId preemptor, std::span<const PodId> tasks,
                      const EvictedVictims& evicted, std::vector<RejectionRule>& out) const {
    const Cluster& c = s.cluster();
    if (!s.params().solver_shortcuts || !exact_sums_ || !s.params().allow_consolidating_reclaim ||
        simulation_shares_.empty() || !(reclaimer_multiplier_ >= 0)) {
      return;
    }
    const auto& queues = simulation_shares_;
    if (pod_hit_.size() != c.pods.size()) pod_hit_.assign(c.pods.size(), 0);
    if (base_hit_.size() != c.pods.size()) base_hit_.assign(c.pods.size(), 0);
    if (path_stamp_.size() != c.queues.size()) {
      path_stamp_.assign(c.queues.size(), 0);
      common_of_.assign(c.queues.size(), 0);
      sib_of_.assign(c.queues.size(), kNone);
    }
    // What the call's stable victims give (see EvictedVictims) is kept with its key: the
    // reclaimer's root path, the required GPUs, and the stable victims' part of the sums below.
    RulesBase& base = rules_base_;
    if (evicted.stable_key == 0 || base.key != evicted.stable_key ||
        base.stable != evicted.stable) {
      base.key = evicted.stable_key;
      base.stable = evicted.stable;
      base.required = Requested(c, tasks)[QueueResource::kGpu];
      base.path = PathFromRoot(c, c.jobs[preemptor].queue);
      // lo is at most (allocated(rq) + required) / fair(rq): no rule unless that exceeds 1
      // somewhere.
      base.possible = false;
      for (QueueId q : base.path) {
        const double fair = queues[q].FairShare()[QueueResource::kGpu];
        base.possible =
            base.possible ||
            (fair > 0 && (queues[q].Allocated()[QueueResource::kGpu] + base.required) / fair > 1);
      }
      base.path_call = ++path_call_;
      base.hit = ++stamp_;
      base.below.assign(base.path.size(), 0.0);
      base.below_lists.resize(base.path.size());
      for (auto& list : base.below_lists) list.clear();
      base.parted.clear();
      if (base.required > 0 && base.possible) {
        AddEvicted(s, evicted.pods.first(evicted.stable), base, base_hit_, base.hit,
                   /*skip=*/0, base.below, &base.below_lists, base.parted);
        SortEntries(base.parted);
        GroupEntries(s, base.parted, base.groups);
      }
      base.pods.resize(base.parted.size());
      for (size_t k = 0; k < base.parted.size(); ++k) {
        base.pods[k] = static_cast<PodId>(base.parted[k] & 0xffffffffu);
      }
    }
    if (!(base.required > 0) || !base.possible) return;
    const double required = base.required;
    const std::vector<QueueId>& path = base.path;
    // Accepted GPUs of the distinct evicted victims below each queue of the reclaimer's path,
    // and each distinct victim's parting level and sibling queue: the stable victims' part plus
    // the others (those already among the stable ones skipped).
    std::vector<double>& below = below_scratch_;
    below = base.below;
    auto& extra_below = extra_below_scratch_;
    extra_below.resize(path.size());
    for (auto& list : extra_below) list.clear();
    // (Below lists only for rules a simulation follows.)
    std::vector<std::vector<PodId>>* extra_lists = evicted.follow_below ? &extra_below : nullptr;
    const uint64_t call_hit = ++stamp_;
    auto& extra = extra_scratch_;
    extra.clear();
    AddEvicted(s, evicted.pods.subspan(evicted.stable), base, pod_hit_, call_hit,
               /*skip=*/base.hit, below, extra_lists, extra);
    SortEntries(extra);
    GroupEntries(s, extra, extra_groups_scratch_);
    const auto& extra_groups = extra_groups_scratch_;
    // One rule per sibling queue with distinct victims: the stable victims' group and the
    // others' group of that queue (both sorted by queue), merged.
    auto pod_of_entry = [](uint64_t e) { return static_cast<PodId>(e & 0xffffffffu); };
    size_t bi = 0, ei = 0;
    while (bi < base.groups.size() || ei < extra_groups.size()) {
      const EntryGroup* bg = bi < base.groups.size() ? &base.groups[bi] : nullptr;
      const EntryGroup* eg = ei < extra_groups.size() ? &extra_groups[ei] : nullptr;
      if (bg && eg && bg->sib != eg->sib) (bg->sib < eg->sib ? eg : bg) = nullptr;
      if (bg) ++bi;
      if (eg) ++ei;
      const EntryGroup& any = bg ? *bg : *eg;
      const QueueId sib_queue = any.sib;
      const double sib_gpus = (bg ? bg->gpus : 0.0) + (eg ? eg->gpus : 0.0);
      // (The queue where the paths part is at the depth of the sibling.)
      const size_t level = any.level;
      const QueueShare& rq = queues[path[level]];
      const QueueShare& sib = queues[sib_queue];
      const double fair = rq.FairShare()[QueueResource::kGpu];
      const double sib_fair = sib.FairShare()[QueueResource::kGpu];
      const double sib_allocated = sib.Allocated()[QueueResource::kGpu];
      SaturationBound bound;
      bound.allocated = rq.Allocated()[QueueResource::kGpu];
      bound.required = required;
      bound.fair = fair;
      bound.sib_allocated = sib_allocated;
      bound.sib_fair = sib_fair;
      bound.multiplier = reclaimer_multiplier_;
      auto rejects = [&](double x) { return bound.Rejects(x, below[level]); };
      // (kUnlimited is negative.) A rule for every sibling queue the check can reject on: its
      // bound falls as victims below the reclaimer's queue there are placed again.
      if (fair > 0 && sib_fair > 0 && sib_gpus >= 1 &&
          (evicted.follow_below || rejects(sib_gpus))) {
        double min_gpus = std::numeric_limits<double>::infinity();
        if (rejects(sib_gpus)) {
          double low = 1, high = sib_gpus;  // rejects(high); find the least whole such x
          while (low < high) {
            const double mid = std::floor((low + high) / 2);
            if (rejects(mid)) {
              high = mid;
            } else {
              low = mid + 1;
            }
          }
          min_gpus = high;
        }
        RejectionRule& rule = out.emplace_back();
        rule.min_gpus = min_gpus;
        rule.has_saturation = evicted.follow_below;
        rule.saturation = bound;
        rule.below_held = base.below_lists[level];
        rule.below_more = extra_below[level];
        rule.sibling = sib_queue;
        rule.level = level;
        // The stable victims of the queue are held (in base.pods, kept until the key changes);
        // the others are listed.
        if (bg) {
          rule.held = std::span<const PodId>(base.pods).subspan(bg->begin, bg->end - bg->begin);
        }
        if (eg) {
          rule.pods.resize(eg->end - eg->begin);
          for (size_t k = 0; k < rule.pods.size(); ++k) {
            rule.pods[k] = pod_of_entry(extra[eg->begin + k]);
          }
        }
      }
    }
  }

  // A run of entries (sorted by sibling queue, then pod) of one sibling queue: where it is, its
  // victims' accepted GPUs and the level where the sibling's path parts from the reclaimer's.
  struct EntryGroup {
    QueueId sib = kNone;
    size_t begin = 0;
    size_t end = 0;
    double gpus = 0;
    size_t level = 0;
  };
  void GroupEntries(const Session& s, const std::vector<uint64_t>& entries,
                    std::vector<EntryGroup>& groups) const {
    groups.clear();
    const auto& briefs = s.pod_briefs();
    const Cluster& c = s.cluster();
    for (size_t begin = 0; begin < entries.size();) {
      EntryGroup g;
      g.sib = static_cast<QueueId>(entries[begin] >> 32);
      g.begin = begin;
      size_t end = begin;
      while (end < entries.size() && static_cast<QueueId>(entries[end] >> 32) == g.sib) {
        g.gpus += s.AcceptedGpus(static_cast<PodId>(entries[end] & 0xffffffffu));
        ++end;
      }
      g.end = end;
      g.level =
          common_of_[c.jobs[briefs[static_cast<PodId>(entries[begin] & 0xffffffffu)].job].queue];
      groups.push_back(g);
      begin = end;
    }
  }

  // What RejectionRules keeps of a call's stable victims (see EvictedVictims).
  struct RulesBase {
    uint64_t key = 0;
    size_t stable = 0;
    double required = 0;
    bool possible = false;
    std::vector<QueueId> path;  // the reclaimer's root path
    uint64_t path_call = 0;     // path_stamp_ value of the queue paths computed against `path`
    uint64_t hit = 0;           // base_hit_ value of the stable victims
    std::vector<double> below;
    std::vector<uint64_t> parted;                 // sorted
    std::vector<EntryGroup> groups;               // parted's runs by sibling queue
    std::vector<std::vector<PodId>> below_lists;  // per level: the victims `below` sums
    std::vector<PodId> pods;                      // parted's pods (what rules hold)
  };

  // Adds the distinct pods of `pods` (not yet marked `stamp` in `hit`, nor `skip` in
  // base_hit_: already among the stable victims) to the sums below the reclaimer's path and,
  // when their root path parts from it, to `parted`.
  void AddEvicted(const Session& s, std::span<const PodId> pods, const RulesBase& base,
                  std::vector<uint64_t>& hit, uint64_t stamp, uint64_t skip,
                  std::vector<double>& below, std::vector<std::vector<PodId>>* below_lists,
                  std::vector<uint64_t>& parted) const {
    const Cluster& c = s.cluster();
    const auto& briefs = s.pod_briefs();
    const std::vector<QueueId>& path = base.path;
    for (PodId p : pods) {
      if (hit[p] == stamp || (skip != 0 && base_hit_[p] == skip)) continue;
      hit[p] = stamp;
      const double gpus = s.AcceptedGpus(p);
      const QueueId vq = c.jobs[briefs[p].job].queue;
      // Per victim queue (kept while the path is the same): how many queues of the reclaimer's
      // root path are its ancestors or itself (in a tree, the common prefix of the two root
      // paths) and the queue where its path parts from the reclaimer's (kNone: they do not part).
      if (path_stamp_[vq] != base.path_call) {
        path_stamp_[vq] = base.path_call;
        std::vector<QueueId>& victim_path = victim_path_scratch_;  // (root first)
        victim_path.clear();
        for (QueueId a = vq; a != kNone; a = c.queues[a].parent) victim_path.push_back(a);
        std::reverse(victim_path.begin(), victim_path.end());
        size_t i = 0;
        while (i < path.size() && i < victim_path.size() && path[i] == victim_path[i]) ++i;
        common_of_[vq] = i;
        sib_of_[vq] = (i == path.size() || i == victim_path.size()) ? kNone : victim_path[i];
      }
      const size_t common = common_of_[vq];
      for (size_t i = 0; i < common; ++i) below[i] += gpus;
      if (below_lists != nullptr) {
        for (size_t i = 0; i < common; ++i) (*below_lists)[i].push_back(p);
      }
      const QueueId sib = sib_of_[vq];
      if (sib == kNone) continue;  // the paths do not part
      parted.push_back(static_cast<uint64_t>(static_cast<uint32_t>(sib)) << 32 |
                       static_cast<uint32_t>(p));
    }
  }

  // By sibling queue, then pod. (Victims usually come in pod order or its reverse.)
  static void SortEntries(std::vector<uint64_t>& entries) {
    if (std::is_sorted(entries.begin(), entries.end())) return;
    if (std::is_sorted(entries.begin(), entries.end(), std::greater<>())) {
      std::reverse(entries.begin(), entries.end());
    } else {
      std::sort(entries.begin(), entries.end());
    }
  }

  bool Reclaimable(const Session& s, const ScenarioInfo& sc) const {
    const Cluster& c = s.cluster();
    const auto& queues = simulation_shares_.empty() ? shares_ : simulation_shares_;
    const Job& reclaimer = c.jobs[sc.preemptor];
    const bool consolidating = s.params().allow_consolidating_reclaim;
    // (A shortcut: most rejections are decided from the few victims a simulation evicted.)
    if (s.params().solver_shortcuts && exact_sums_ && consolidating && sc.evicted_known &&
        !simulation_shares_.empty() && SaturationRejects(s, sc)) {
      return false;
    }
    const Quantities required = Requested(c, sc.preemptor_tasks);

    // Resources the scenario takes from each queue: one entry per elastic pod beyond a pod
    // set's minimum, one for the rest; pods placed again (consolidated) do not count.
    // (Scratch buffers, so a validation allocates nothing per victim.)
    std::vector<std::pair<QueueId, Quantities>>& taken = taken_scratch_;
    taken.clear();
    // (The pods' and jobs' facts from the compact copies: see VictimFacts.)
    const VictimFacts& facts = VictimFactsOf(c);
    auto counted = [&](std::span<const PodId> group, Quantities& q) {
      bool any = false;
      for (PodId p : group) {
        if (consolidating && IsActiveAllocated(s.pod(p).status)) continue;
        // (s.AcceptedQuantities(p).)
        Quantities accepted;
        accepted[QueueResource::kCpu] = facts.pods[p].cpu;
        accepted[QueueResource::kMemory] = facts.pods[p].memory;
        accepted[QueueResource::kGpu] = s.AcceptedGpus(p);
        q += accepted;
        any = true;
      }
      return any;
    };
    for (const auto& [victim_job, pods] : sc.victims) {
      const VictimFacts::Job& vj = facts.jobs[victim_job];
      const auto set_of = [&](PodId p) { return facts.pods[p].pod_set; };
      const auto min_of = [&](int32_t set) {
        return static_cast<size_t>(facts.set_min[vj.sets_at + static_cast<size_t>(set)]);
      };
      // The pods by pod set (ascending), in their order within a set; the first min_available
      // of a set are its core, the others elastic.
      std::span<const PodId> core;
      std::span<const PodId> elastic;
      bool one_set = true;
      for (PodId p : pods) one_set = one_set && set_of(p) == set_of(pods.front());
      if (one_set) {
        // (Usual: no reordering needed.)
        const size_t min = pods.empty() ? 0 : min_of(set_of(pods.front()));
        core = std::span<const PodId>(pods).first(std::min(min, pods.size()));
        elastic = std::span<const PodId>(pods).subspan(core.size());
      } else {
        std::vector<std::pair<int32_t, PodId>>& by_set = by_set_scratch_;
        by_set.clear();
        for (PodId p : pods) by_set.emplace_back(set_of(p), p);
        std::stable_sort(by_set.begin(), by_set.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<PodId>& core_list = core_scratch_;
        std::vector<PodId>& elastic_list = elastic_scratch_;
        core_list.clear();
        elastic_list.clear();
        for (size_t i = 0; i < by_set.size();) {
          const int32_t set = by_set[i].first;
          const size_t min = min_of(set);
          for (size_t k = 0; i < by_set.size() && by_set[i].first == set; ++i, ++k) {
            (k < min ? core_list : elastic_list).push_back(by_set[i].second);
          }
        }
        core = core_list;
        elastic = elastic_list;
      }
      for (const PodId& p : elastic) {
        Quantities q;
        if (counted(std::span<const PodId>(&p, 1), q)) taken.emplace_back(vj.queue, q);
      }
      if (Quantities q; counted(core, q)) taken.emplace_back(vj.queue, q);
    }
    // By queue (ascending), each queue's entries in the order they were taken.
    if (!std::is_sorted(taken.begin(), taken.end(),
                        [](const auto& a, const auto& b) { return a.first < b.first; })) {
      std::stable_sort(taken.begin(), taken.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }

    // Per queue touched: its allocation minus what was taken below it, and the resources
    // involved (flat arrays marked with this call's stamp; `present` lists the queues).
    const size_t num_queues = c.queues.size();
    if (rem_stamp_.size() != num_queues) {
      rem_stamp_.assign(num_queues, 0);
      inv_stamp_.assign(num_queues, 0);
      rem_.resize(num_queues);
      inv_.resize(num_queues);
    }
    const uint64_t stamp = ++validation_stamp_;
    std::vector<QueueId>& present = present_scratch_;
    present.clear();
    auto remaining_of = [&](QueueId q) -> Quantities& {
      if (rem_stamp_[q] != stamp) {
        rem_stamp_[q] = stamp;
        rem_[q] = queues[q].Allocated();
        present.push_back(q);
      }
      return rem_[q];
    };
    auto involved_of = [&](QueueId q) -> std::array<bool, 3>& {
      if (inv_stamp_[q] != stamp) {
        inv_stamp_[q] = stamp;
        inv_[q] = {};
      }
      return inv_[q];
    };
    for (size_t begin = 0; begin < taken.size();) {
      const QueueId reclaimee_leaf = taken[begin].first;
      size_t end = begin;
      while (end < taken.size() && taken[end].first == reclaimee_leaf) ++end;
      const auto [rq, eq] = Leveled(c, reclaimer.queue, reclaimee_leaf);
      std::array<bool, 3> inv{};
      for (size_t e = begin; e < end; ++e) {
        const auto i = Involved(taken[e].second);
        for (int k = 0; k < 3; ++k) inv[k] = inv[k] || i[k];
      }
      involved_of(reclaimee_leaf) = inv;
      // The leaf and its ancestors (eq among them) take the group's resources: their remaining
      // allocations are resolved once per group, and they all become involved in `inv` (only
      // read after every group).
      std::vector<Quantities*>& chain = chain_scratch_;
      chain.clear();
      for (QueueId a = reclaimee_leaf; a != kNone; a = c.queues[a].parent) {
        chain.push_back(&remaining_of(a));
        auto& ia = involved_of(a);
        for (int k = 0; k < 3; ++k) ia[k] = ia[k] || inv[k];
      }
      const Quantities& eq_remaining = remaining_of(eq);
      const ReclaimStrategy strategy(required, queues[rq], queues[eq]);
      for (size_t e = begin; e < end; ++e) {
        if (!strategy.Fits(eq_remaining)) return false;
        const Quantities& q = taken[e].second;
        for (Quantities* r : chain) *r -= q;
      }
      begin = end;
    }
    std::sort(present.begin(), present.end());  // (the queues in ascending order)

    const auto reclaimer_involved = Involved(required);
    for (QueueId rq = reclaimer.queue; rq != kNone; rq = c.queues[rq].parent) {
      Quantities with = rem_stamp_[rq] == stamp ? rem_[rq] : queues[rq].Allocated();
      with += required;
      const Quantities fair = queues[rq].FairShare();
      for (QueueId sib : present) {
        const Quantities& sib_remaining = rem_[sib];
        if (sib == rq || c.queues[sib].parent != c.queues[rq].parent) continue;
        auto inv = involved_of(sib);
        for (int k = 0; k < 3; ++k) inv[k] = inv[k] || reclaimer_involved[k];
        const Quantities sib_fair = queues[sib].FairShare();
        for (auto res : kQueueResources) {
          if (!inv[static_cast<int>(res)]) continue;
          if (fair[res] == kUnlimited && sib_fair[res] == kUnlimited) continue;
          const double ratio = Saturation(with[res], fair[res]);
          const double sib_ratio = Saturation(sib_remaining[res], sib_fair[res]);
          if (ratio > 1 && sib_fair[res] > 0 && ratio * reclaimer_multiplier_ >= sib_ratio) {
            return false;
          }
        }
      }
      if (reclaimer.preemptible) continue;
      Quantities np =
          Map(queues[rq], [](const ResourceShare& rs) { return rs.allocated_non_preemptible; });
      np += required;
      if (!LessEqual(np, queues[rq].Deserved())) return false;
    }
    return true;
  }

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
  VictimSum& VictimSumSlot(QueueId q, uint64_t list) const {
    VictimSums& sums = victim_sums_[q];
    if (sums.memos.empty()) sums.memos.resize(kVictimSumsPerQueue);
    // (In the place the list's name maps to: the lists of one victims queue are named by leaf,
    // so a parent's leaves take different places.)
    VictimSum& m = sums.memos[list % kVictimSumsPerQueue];
    if (m.list != list) m = VictimSum();
    return m;
  }

  // tmp.allocated = start - each victim's allocation, in order (KAI's queue share without the
  // victims). The part over the list's stable views is remembered per queue and list and continued
  // when the same list has grown: the same subtractions in the same order, so the same bits. So is
  // the result over all the views when the list's next candidate is the same entry (a list's
  // entries do not change while it has its name).
  Quantities AllocatedWithoutVictims(const Session& s, QueueId q, const Quantities& start,
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

  // What the victim order (no jobs) compares of one queue, from its share and victim list.
  struct VictimSide {
    bool over, starved, violates;
    double share, share0;
    double rules;  // over, starved and violates with the queue's priority (RulesOneToFour)
  };
  // Per queue and list name's place: the last VictimSide with what it was made of (the
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
    VictimSide side{};
    // With a tail: the queue's allocation without all the list's views, tail included (what
    // AllocatedWithoutVictims answered), so that the list grown by its tail continues from it.
    Quantities without;
  };

  static bool Violates(const QueueShare& sh, const Quantities& with) {
    for (auto res : kQueueResources) {
      if (sh[res].Allocatable() == 0 && with[res] > 0) return true;
    }
    return false;
  }

  // The inputs of rules (1), (2), (4), (5) and (6) for a queue in victim order, computed as
  // QueueOrder computes them.
  VictimSide MakeVictimSide(const Session& s, QueueId q, const VictimList& victims) const {
    const QueueShare& sh = shares_[q];
    VictimSide side;
    side.over = Less(sh.FairShare(), sh.Allocated());
    Quantities with = sh.Allocated();
    with += Quantities{};
    side.starved = LessEqual(with, sh.Deserved());
    side.violates = Violates(sh, with);
    side.share = VictimShare(s, q, victims);
    side.share0 = DominantShareOf(q, sh.Allocated());
    side.rules = RulesOneToFour(side, s.cluster().queues[q].priority);
    return side;
  }

  // QueueShare::DominantShare of queue q with `allocated` as its allocation: the same
  // operations on the same values (its denominators are fixed for the session), without a copy
  // of the share.
  double DominantShareOf(QueueId q, const Quantities& allocated) const {
    const Quantities& den = dominant_den_[q];
    double dominant = 0;
    for (auto res : kQueueResources) {
      const double value = den[res] == 0 ? allocated[res] * 1000 : allocated[res] / den[res];
      dominant = std::max(dominant, value);
    }
    return dominant;
  }

  // Rule (5)'s dominant share of queue q without its victims.
  double VictimShare(const Session& s, QueueId q, const VictimList& victims) const {
    const QueueShare& sh = shares_[q];
    Quantities start;
    for (auto res : kQueueResources) start[res] = sh[res].allocated + 0.0;
    return DominantShareOf(q, AllocatedWithoutVictims(s, q, start, victims));
  }
  // VictimShare, keeping the allocation without the victims in `memo` (see VictimSideMemo).
  double VictimShareKeeping(const Session& s, QueueId q, const VictimList& victims,
                            VictimSideMemo& memo) const {
    const QueueShare& sh = shares_[q];
    Quantities start;
    for (auto res : kQueueResources) start[res] = sh[res].allocated + 0.0;
    memo.without = AllocatedWithoutVictims(s, q, start, victims);
    return DominantShareOf(q, memo.without);
  }

  // MakeVictimSide, kept per queue while its inputs are the same (shortcuts on, named list).
  VictimSide VictimSideOf(const Session& s, QueueId q, const VictimList& victims) const {
    if (!s.params().solver_shortcuts || victims.list == 0) return MakeVictimSide(s, q, victims);
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
      memo.side = MakeVictimSide(s, q, victims);
      if (tail != nullptr) {
        // (Its memo answers at once: MakeVictimSide has just asked for the same.)
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

  // (Element by element: std::array's == compiles to a memcmp call.)
  static bool SameBits(const std::array<uint64_t, 3>& a, const std::array<uint64_t, 3>& b) {
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
  }

  // The inputs of rules (1), (2), (4), (5) and (6) for a queue in job order (no victims), with
  // `job` (nullptr: none) as the job it would allocate, computed as QueueOrder computes them.
  // (Out of line: JobSideOf's kept answer is the common case.)
  [[gnu::noinline]] VictimSide MakeJobSide(const Session& s, QueueId q, const JobView* job) const {
    const QueueShare& sh = shares_[q];
    VictimSide side;
    side.over = Less(sh.FairShare(), sh.Allocated());
    Quantities with = sh.Allocated();
    const Quantities req = job == nullptr ? Quantities{} : s.ViewTasksQuantities(*job);
    with += req;
    side.starved = LessEqual(with, sh.Deserved());
    side.violates = Violates(sh, with);
    side.share = DominantShareOf(q, with);
    side.share0 = DominantShareOf(q, sh.Allocated());
    side.rules = RulesOneToFour(side, s.cluster().queues[q].priority);
    return side;
  }

  // MakeJobSide of a whole job (not a partial view), kept per queue while its inputs are the
  // same: the job, the queue's allocation bits (deserved and fair shares are fixed for the
  // session) and the state version of the job's queue (its pods' statuses and virtual flags,
  // hence its tasks to allocate; the queue's own version too, as the job is normally in its
  // subtree). Queue versions survive a simulation's rollback where nothing changed, so a queue
  // no victim and no placement touched keeps its side from one simulation to the next (the
  // simulations' job order compares every pending job's queue).
  VictimSide JobSideOf(const Session& s, QueueId q, const JobView* job) const {
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
      if (memo.valid && memo.job == j && memo.version == version &&
          memo.job_version == job_version && SameBits(memo.allocated, allocated)) {
        return memo.side;
      }
    }
    const VictimSide side = MakeJobSide(s, q, job);
    memos.memos[memos.next] = {true, j, version, job_version, allocated, side};
    memos.next = (memos.next + 1) % kJobSidesPerQueue;
    return side;
  }
  struct JobSideMemo {
    bool valid = false;
    JobId job = kNone;
    uint64_t version = 0;
    uint64_t job_version = 0;
    std::array<uint64_t, 3> allocated{};
    VictimSide side{};
  };
  // A few per queue: a queue above the leaves is asked with the best jobs of its several
  // children in turn (the oldest gives way to a new one).
  static constexpr size_t kJobSidesPerQueue = 8;
  struct JobSideMemos {
    std::array<JobSideMemo, kJobSidesPerQueue> memos{};
    size_t next = 0;
  };

  // QueueOrder in victim order, from the two sides (the same rules in the same order).
  int VictimQueueOrder(const Session& s, QueueId l, QueueId r, const VictimSide& lv,
                       const VictimSide& rv) const {
    if (!lv.over && rv.over) return -1;
    if (lv.over && !rv.over) return 1;
    if (lv.starved && !rv.starved) return -1;
    if (rv.starved && !lv.starved) return 1;
    const int lp = s.cluster().queues[l].priority;
    const int rp = s.cluster().queues[r].priority;
    if (lp > rp) return -1;
    if (lp < rp) return 1;
    if (lv.violates && !rv.violates) return 1;
    if (!lv.violates && rv.violates) return -1;
    if (lv.share < rv.share) return -1;
    if (lv.share > rv.share) return 1;
    if (lv.share0 < rv.share0) return -1;
    if (lv.share0 > rv.share0) return 1;
    return QueueOrderTail(s, l, r);
  }

  // Rules (1) to (4) of a side as one key field: the rules' own fields (each smaller first)
  //   (1) over the fair share: last, (2) within the deserved quota: first,
  //   (3) higher queue priority first, (4) uses a resource without allocatable share: last
  // as the digits of one whole number, (1) the most significant. They are whole numbers without
  // NaNs, so the first rule where two sides differ decides as it would alone, and the number
  // (below 2^36) is exact in a double. (One field instead of four: the keys' comparisons, most
  // of which are decided by rule (5), look at two fields instead of five.)
  static double RulesOneToFour(const VictimSide& side, int priority) {
    const double high = (side.over ? 2.0 : 0.0) + (side.starved ? 0.0 : 1.0);
    // -priority + 2^31 is in [1, 2^32]: a digit below 2^33.
    const double rank = -static_cast<double>(priority) + 0x1p31;
    return (high * 0x1p33 + rank) * 2 + (side.violates ? 1.0 : 0.0);
  }

  // VictimQueueOrder's rules (1) to (6) as a key (Session's QueueOrderKey): rules (1) to (4) in
  // the first field (RulesOneToFour), then (5) and (6), smaller first, compared with < then > as
  // the rules do. Rules (7) (allocatable shares, a partial order of vectors) and (8) are no key:
  // equal keys leave them to QueueOrder.
  QueueOrderKey VictimQueueKey(const Session& s, QueueId q, const VictimList& victims) const {
    const VictimSide side = VictimSideOf(s, q, victims);
    QueueOrderKey key;
    key.k = {side.rules,   // (1) to (4)
             side.share,   // (5) dominant share without the victims
             side.share0,  // (6) dominant share
             0.0, 0.0, 0.0};
    return key;
  }

  // QueueOrder in job order, rules (1) to (6), as a key: VictimQueueKey's fields, from the side
  // QueueOrder computes for the queue and its job (kept per queue for whole jobs, as QueueOrder
  // keeps it with the shortcuts on; computed for partial views, as QueueOrder computes it).
  QueueOrderKey JobQueueKey(const Session& s, QueueId q, const JobView& job) const {
    const VictimSide side = job.partial ? MakeJobSide(s, q, &job) : JobSideOf(s, q, &job);
    QueueOrderKey key;
    key.k = {side.rules, side.share, side.share0, 0.0, 0.0, 0.0};
    return key;
  }

  // Rules (7) and (8).
  int QueueOrderTail(const Session& s, QueueId l, QueueId r) const {
    const Quantities& la = allocatable_share_[l];
    const Quantities& ra = allocatable_share_[r];
    if (!LessEqual(ra, la) && LessEqual(la, ra)) return -1;
    if (!LessEqual(la, ra) && LessEqual(ra, la)) return 1;
    const Queue& lq = s.cluster().queues[l];
    const Queue& rq = s.cluster().queues[r];
    if (lq.creation_ms < rq.creation_ms) return -1;
    return 1;
  }

  int QueueOrder(const Session& s, QueueId l, QueueId r, const JobView* lj, const JobView* rj,
                 const VictimList& lvictims, const VictimList& rvictims) const {
    if (lj == nullptr && rj == nullptr && !lvictims.empty() && !rvictims.empty()) {
      return VictimQueueOrder(s, l, r, VictimSideOf(s, l, lvictims), VictimSideOf(s, r, rvictims));
    }
    // Job order (no victims) with the shortcuts on: each side is computed once per queue, job
    // and state (the same rules in the same order as below).
    if (s.params().solver_shortcuts && lvictims.empty() && rvictims.empty() &&
        (lj == nullptr || !lj->partial) && (rj == nullptr || !rj->partial)) {
      return VictimQueueOrder(s, l, r, JobSideOf(s, l, lj), JobSideOf(s, r, rj));
    }
    const QueueShare& ls = shares_[l];
    const QueueShare& rs = shares_[r];
    // (1) Queues over their fair share in every resource go last.
    const bool lover = Less(ls.FairShare(), ls.Allocated());
    const bool rover = Less(rs.FairShare(), rs.Allocated());
    if (!lover && rover) return -1;
    if (lover && !rover) return 1;
    // (2) Queues staying within their deserved quota with the job go first.
    Quantities lwith = ls.Allocated();
    Quantities rwith = rs.Allocated();
    const Quantities lreq = lj == nullptr ? Quantities{} : s.ViewTasksQuantities(*lj);
    const Quantities rreq = rj == nullptr ? Quantities{} : s.ViewTasksQuantities(*rj);
    lwith += lreq;
    rwith += rreq;
    const bool lstarved = LessEqual(lwith, ls.Deserved());
    const bool rstarved = LessEqual(rwith, rs.Deserved());
    if (lstarved && !rstarved) return -1;
    if (rstarved && !lstarved) return 1;
    // (3) Higher queue priority first.
    const int lp = s.cluster().queues[l].priority;
    const int rp = s.cluster().queues[r].priority;
    if (lp > rp) return -1;
    if (lp < rp) return 1;
    // (4) Queues that would use a resource they have no allocatable share of go last.
    auto violates = [](const QueueShare& sh, const Quantities& with) {
      for (auto res : kQueueResources) {
        if (sh[res].Allocatable() == 0 && with[res] > 0) return true;
      }
      return false;
    };
    const bool lviol = violates(ls, lwith);
    const bool rviol = violates(rs, rwith);
    if (lviol && !rviol) return 1;
    if (!lviol && rviol) return -1;
    // (5) Smaller dominant share including the job (or without the victims, for victim order).
    auto share_with = [&](QueueId q, const QueueShare& sh, const Quantities& req,
                          const VictimList& victims) {
      QueueShare tmp = sh;
      for (auto res : kQueueResources) tmp[res].allocated += req[res];
      if (!victims.empty()) {
        Quantities start;
        for (auto res : kQueueResources) start[res] = tmp[res].allocated;
        const Quantities without = AllocatedWithoutVictims(s, q, start, victims);
        for (auto res : kQueueResources) tmp[res].allocated = without[res];
      }
      return tmp.DominantShare(total_);
    };
    const double lshare = share_with(l, ls, lreq, lvictims);
    const double rshare = share_with(r, rs, rreq, rvictims);
    if (lshare < rshare) return -1;
    if (lshare > rshare) return 1;
    // (6) Smaller dominant share without it.
    const double lshare0 = ls.DominantShare(total_);
    const double rshare0 = rs.DominantShare(total_);
    if (lshare0 < rshare0) return -1;
    if (lshare0 > rshare0) return 1;
    // (7) The queue with the smaller allocatable share (<= everywhere, < somewhere) first.
    const Quantities la = ls.AllocatableShare();
    const Quantities ra = rs.AllocatableShare();
    if (!LessEqual(ra, la) && LessEqual(la, ra)) return -1;
    if (!LessEqual(la, ra) && LessEqual(ra, la)) return 1;
    // (8) Earlier creation first.
    const Queue& lq = s.cluster().queues[l];
    const Queue& rq = s.cluster().queues[r];
    if (lq.creation_ms < rq.creation_ms) return -1;
    return 1;
  }

  // Reclaimable's facts of the pods and jobs in compact arrays: a validation reads them for
  // thousands of victims, whose own records (Pod, Job and its pod sets) are large and scattered.
  // Fixed fields only: built once per session, when first asked for.
  struct VictimFacts {
    struct Pod {
      double cpu = 0;     // its CPU and memory requests (as Pod::WithGpus takes them)
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
  const VictimFacts& VictimFactsOf(const Cluster& c) const {
    if (!victim_facts_.built) {
      VictimFacts& f = victim_facts_;
      f.pods.resize(c.pods.size());
      for (size_t p = 0; p < c.pods.size(); ++p) {
        const gantry::Pod& pod = c.pods[p];
        f.pods[p] = {pod.request.cpu_millis, pod.request.memory_bytes, pod.pod_set};
      }
      f.jobs.resize(c.jobs.size());
      f.set_min.clear();
      for (size_t j = 0; j < c.jobs.size(); ++j) {
        f.jobs[j] = {c.jobs[j].queue, f.set_min.size()};
        for (const PodSet& set : c.jobs[j].pod_sets) {
          f.set_min.push_back(std::max(0, set.min_available));
        }
      }
      f.built = true;
    }
    return victim_facts_;
  }
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
  // Per queue: the last victim-list sums QueueOrder computed for it (one per list).
  mutable std::vector<VictimSums> victim_sums_;
  mutable std::vector<std::vector<VictimSideMemo>> victim_sides_;
  mutable std::vector<JobSideMemos> job_sides_;
  // Queue shares frozen when a reclaim solution search starts (KAI validates against these).
  std::vector<QueueShare> simulation_shares_;
};

Result<double> ParseDouble(const std::map<std::string, std::string>& args, const std::string& key,
                           double fallback) {
  auto it = args.find(key);
  if (it == args.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0') {
    return Error{"argument \"" + key + "\": \"" + it->second + "\" is not a number"};
  }
  return v;
}

}  // namespace
}  // namespace proportion

void RegisterProportionPlugin(PluginRegistry& r) {
  r.Register("proportion", [](const auto& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(
            args, {"kValue", "reclaimerUtilizationMultiplier", "relcaimerSaturationMultiplier"});
        !ok.ok()) {
      return Error{ok.error()};
    }
    auto k = proportion::ParseDouble(args, "kValue", 1.0);
    if (!k.ok()) return Error{k.error()};
    if (k.value() < 0) return Error{"argument \"kValue\": must be >= 0"};
    const std::string key = args.count("reclaimerUtilizationMultiplier")
                                ? "reclaimerUtilizationMultiplier"
                                : "relcaimerSaturationMultiplier";
    auto m = proportion::ParseDouble(args, key, 1.0);
    if (!m.ok()) return Error{m.error()};
    if (m.value() < 1) return Error{"argument \"" + key + "\": must be >= 1"};
    return PluginPtr(std::make_unique<proportion::ProportionPlugin>(k.value(), m.value()));
  });
}

}  // namespace gantry
