#include "plugins/proportion/proportion.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/proportion/plugin.h"

namespace gantry::proportion {

void ProportionPlugin::OnSessionOpen(Session& ssn) {
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
    const QueueUsage usage = ssn.queue_usage(q);
    for (auto res : kQueueResources) {
      const QueueQuota& quota = c.queues[q].quota(res);
      ResourceShare& s = shares_[q][res];
      s.deserved = quota.quota;
      s.max_allowed = quota.limit;
      s.over_quota_weight = quota.over_quota_weight;
      s.usage = usage[res];
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
  // whole numbers only, well inside a double's exact range, those sums are exact, so the shares
  // are a function of the statuses of the pods in the queue's subtree: so is the queue order (its
  // other inputs are the queues and the jobs' or victims' pods, of the same subtrees, with their
  // statuses and virtual flags). Per resource: when every quantity of a resource is a multiple
  // of 2^k, so is every sum of them, and a double holds such sums exactly up to 2^(53+k); any sum
  // of some of the quantities, added or taken away, stays within the sum of their magnitudes,
  // which must stay below 2^(52+k) (a bit of margin). (Memory in bytes is a multiple of a large
  // power of two: 64 GB = 2^15 * 5^9, 1 GiB = 2^30. Without the factor, the busy benchmark shape
  // passed the bound already at 1,000 nodes: 4.6e15 bytes of pod memory in all.)
  std::array<double, kQueueResources.size()> magnitude{};
  std::array<int, kQueueResources.size()> zero_bits{};
  zero_bits.fill(64);
  bool whole = true;
  for (const Pod& pod : c.pods) {
    // What a shared-GPU pod is charged depends on the node it is placed on, not only on its
    // status.
    whole = whole && !pod.IsSharedGpu();
    const Quantities q = PodQuantities(c, pod);
    for (auto res : kQueueResources) {
      const double v = std::abs(q[res]);
      whole = whole && v == std::floor(v) && v < 0x1p63;
      if (!whole) break;
      const auto i = static_cast<size_t>(res);
      magnitude[i] += v;
      if (const auto bits = static_cast<uint64_t>(v); bits != 0) {
        zero_bits[i] = std::min(zero_bits[i], std::countr_zero(bits));
      }
    }
  }
  bool within = true;
  for (auto res : kQueueResources) {
    const auto i = static_cast<size_t>(res);
    within = within && magnitude[i] < std::ldexp(1.0, 52 + zero_bits[i]);
  }
  const bool pod_states_only = whole && within;
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
  ssn.SetQueueOrderTotalOnSiblings(SiblingOrderTotal(c));
  // (JobQueueKey of a whole job: MakeSide reads the job through ViewTasksQuantities alone, and
  // JobSideOf keeps what MakeSide gave for the same inputs.)
  ssn.SetJobQueueKeyByRequest(true);
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
  ssn.AddReclaimRejectionRulesFn([this](const Session& s, JobId preemptor,
                                        std::span<const PodId> tasks, const EvictedVictims& evicted,
                                        std::vector<RejectionRule>& out) {
    RejectionRules(s, preemptor, tasks, evicted, out);
  });
  ssn.AddOnJobSolutionStartFn([this](const Session&) {
    simulation_shares_ = shares_;
    ++shares_frozen_;
  });
  ssn.SetQueueDeservedFn([this](const Session&, QueueId q) { return shares_[q].Deserved(); });
  ssn.SetQueueFairShareFn([this](const Session&, QueueId q) { return shares_[q].FairShare(); });
  ssn.SetQueueAllocatedFn([this](const Session&, QueueId q) { return shares_[q].Allocated(); });
}

void ProportionPlugin::OnPodEvent(Session& s, PodId p, int sign) {
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

Quantities ProportionPlugin::PodQuantities(const Cluster& c, const Pod& pod) {
  return pod.InitQuantities(c.min_node_gpu_memory_mib);
}

namespace {

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
}  // namespace gantry::proportion

namespace gantry {

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
