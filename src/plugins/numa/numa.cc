// numa: NUMA-aware placement (KAI's numa plugin). For nodes whose NodeResourceTopology reports a
// Topology Manager policy, the plugin keeps a per-zone ledger through the session:
//  - at session open, each placed pod's zones come from its recorded placement (the observed
//    placement annotation); with reconstructAvailable (default true) the zones' available
//    amounts of best-effort / restricted / single-numa-node nodes are rebuilt as allocatable
//    minus the placements of the node's active-allocated pods;
//  - predicate: on single-numa-node and restricted nodes, a NUMA-constrained pod (Guaranteed QoS,
//    or asking for a NUMA-aware device) must be alignable;
//  - node order: 100 / (zones the pod would span) - fewer zones is better; a node without a
//    topology counts as spanning the largest zone count of the cluster;
//  - allocate / pipeline charge the chosen zones, eviction and rollback give them back.
// Arguments: ignoreList (comma-separated resource names never aligned), reconstructAvailable.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "framework/numa_view.h"
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/numa/numa_solver.h"

namespace gantry {
namespace {

constexpr double kNumaScore = 100;
constexpr const char* kNotAligned =
    "node cannot NUMA-align the pod's resources under its Topology Manager policy";

bool IsQosGated(const std::string& name) {
  return name == "cpu" || name == "memory" || name.rfind("hugepages-", 0) == 0;
}
bool IsModeled(NumaPolicy p) {
  return p == NumaPolicy::kSingleNumaNode || p == NumaPolicy::kRestricted;
}
bool IsScored(NumaPolicy p) { return IsModeled(p) || p == NumaPolicy::kBestEffort; }

struct Placement {
  NodeId node = kNone;
  numa::ZoneAllocation zones;
};

class NumaPlugin : public Plugin, public NumaView {
 public:
  NumaPlugin(std::set<std::string> ignore, bool reconstruct)
      : ignore_(std::move(ignore)), reconstruct_(reconstruct) {}
  std::string_view name() const override { return "numa"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    ledgers_.assign(c.nodes.size(), std::nullopt);
    placement_.clear();
    previous_.clear();
    charged_.clear();
    max_zones_ = 0;
    aware_devices_.clear();
    for (size_t n = 0; n < c.nodes.size(); ++n) {
      if (!c.nodes[n].numa) continue;
      ledgers_[n] = numa::ZoneLedger::From(*c.nodes[n].numa);
      max_zones_ = std::max(max_zones_, static_cast<int>(ledgers_[n]->zone_ids.size()));
      if (!IsScored(ledgers_[n]->policy)) continue;
      for (const std::string& r : ledgers_[n]->resources) {
        if (!IsQosGated(r) && !ignore_.count(r)) aware_devices_.insert(r);
      }
    }
    Seed(ssn);
    ssn.SetNumaView(this);
    ssn.AddPredicateFn([this](Session& s, PodId p, NodeId n) -> std::optional<std::string> {
      if (!ShouldFilter(s, p, n)) return std::nullopt;
      if (Solve(s, p, n, nullptr)) return std::nullopt;
      return std::string(kNotAligned);
    });
    ssn.AddNodeOrderFn([this](const Session& s, PodId p, NodeId n) { return Score(s, p, n); });
    ssn.AddEventHandler({[this](Session& s, PodId p) { OnAllocate(s, p); },
                         [this](Session& s, PodId p) { OnDeallocate(s, p); }});
  }

  void OnSessionClose(Session& ssn) override { ssn.SetNumaView(nullptr); }

  // --- NumaView ---
  const std::vector<ResourceAmounts>* ZonesAvailable(NodeId n) const override {
    if (!ledgers_[n]) return nullptr;
    const numa::ZoneLedger& l = *ledgers_[n];
    auto& out = view_cache_[n];
    out.assign(l.available.size(), {});
    for (size_t z = 0; z < l.available.size(); ++z) {
      for (size_t r = 0; r < l.resources.size(); ++r) out[z][l.resources[r]] = l.available[z][r];
    }
    return &out;
  }
  std::vector<int> ZonesOf(PodId p) const override {
    std::vector<int> zones;
    if (auto it = placement_.find(p); it != placement_.end()) {
      for (const auto& [z, amounts] : it->second.zones) zones.push_back(z);
    }
    return zones;
  }

 private:
  static bool Guaranteed(const Session& s, PodId p) {
    const Pod& pod = s.cluster().pods[p];
    return pod.job != kNone && s.cluster().jobs[pod.job].qos_class == "Guaranteed";
  }

  // The pod's request per ledger resource. CPU is aligned only for a Guaranteed pod's whole-CPU
  // request (the kubelet's static CPU manager pins only those).
  static std::vector<double> Request(const Session& s, PodId p, const numa::ZoneLedger& l) {
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    std::vector<double> req(l.resources.size(), 0);
    for (size_t r = 0; r < l.resources.size(); ++r) {
      const std::string& name = l.resources[r];
      if (name == "cpu") {
        const double cpu = pod.request.cpu_millis;
        const bool whole = cpu == static_cast<double>(static_cast<int64_t>(cpu / 1000)) * 1000;
        req[r] = Guaranteed(s, p) && whole ? cpu : 0;
      } else if (name == "memory") {
        req[r] = pod.request.memory_bytes;
      } else if (name == "nvidia.com/gpu") {
        req[r] = pod.request.gpus;
      } else if (name == "pods") {
        req[r] = 0;
      } else {
        for (int slot = 0; slot < c.resource_names.size(); ++slot) {
          if (c.resource_names.Name(slot) == name) req[r] = pod.request.scalars[slot];
        }
      }
    }
    return req;
  }

  std::vector<bool> Aligned(const Session& s, PodId p, const numa::ZoneLedger& l) const {
    const bool guaranteed = Guaranteed(s, p);
    std::vector<bool> aligned(l.resources.size(), false);
    for (size_t r = 0; r < l.resources.size(); ++r) {
      const std::string& name = l.resources[r];
      aligned[r] = !ignore_.count(name) && (guaranteed || !IsQosGated(name));
    }
    return aligned;
  }

  bool RequestsAlignedDevice(const Session& s, PodId p, const numa::ZoneLedger& l) const {
    const std::vector<double> req = Request(s, p, l);
    for (size_t r = 0; r < l.resources.size(); ++r) {
      if (!IsQosGated(l.resources[r]) && !ignore_.count(l.resources[r]) && req[r] > 0) return true;
    }
    return false;
  }

  bool ShouldFilter(const Session& s, PodId p, NodeId n) const {
    if (!ledgers_[n] || !IsModeled(ledgers_[n]->policy)) return false;
    return Guaranteed(s, p) || RequestsAlignedDevice(s, p, *ledgers_[n]);
  }
  bool ShouldScore(const Session& s, PodId p, NodeId n) const {
    if (!ledgers_[n] || !IsScored(ledgers_[n]->policy)) return false;
    return Guaranteed(s, p) || RequestsAlignedDevice(s, p, *ledgers_[n]);
  }
  bool WantsNuma(const Session& s, PodId p) const {
    if (Guaranteed(s, p)) return true;
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    for (const std::string& r : aware_devices_) {
      if (r == "nvidia.com/gpu" && pod.request.gpus > 0) return true;
      for (int slot = 0; slot < c.resource_names.size(); ++slot) {
        if (c.resource_names.Name(slot) == r && pod.request.scalars[slot] > 0) return true;
      }
    }
    return false;
  }

  bool Solve(const Session& s, PodId p, NodeId n, numa::ZoneAllocation* alloc) const {
    const numa::ZoneLedger& l = *ledgers_[n];
    // One container per pod here: the container and the pod scope ask for the same amounts.
    return numa::Solve(l, Aligned(s, p, l), Request(s, p, l), alloc);
  }

  double Score(const Session& s, PodId p, NodeId n) const {
    if (max_zones_ == 0 || !WantsNuma(s, p)) return 0;
    int span = 0;
    if (!ledgers_[n] || ledgers_[n]->zone_ids.empty()) {
      span = max_zones_;
    } else if (ledgers_[n]->policy == NumaPolicy::kNone || !ShouldScore(s, p, n)) {
      span = static_cast<int>(ledgers_[n]->zone_ids.size());
    } else {
      numa::ZoneAllocation alloc;
      if (!Solve(s, p, n, &alloc)) return 0;
      span = alloc.empty() ? 1 : static_cast<int>(alloc.size());
    }
    return kNumaScore / span;
  }

  void Charge(const Placement& pl, double sign) {
    if (pl.node == kNone || !ledgers_[pl.node]) return;
    numa::ZoneLedger& l = *ledgers_[pl.node];
    for (const auto& [z, amounts] : pl.zones) {
      if (z < 0 || z >= static_cast<int>(l.available.size())) continue;
      for (size_t r = 0; r < amounts.size() && r < l.resources.size(); ++r) {
        l.available[static_cast<size_t>(z)][r] -= sign * amounts[r];
      }
    }
  }
  void Release(PodId p) {
    if (auto it = charged_.find(p); it != charged_.end()) {
      Charge(it->second, -1);
      charged_.erase(it);
    }
  }
  void ChargeAs(PodId p, const Placement& pl) {
    Release(p);
    if (pl.zones.empty()) return;
    Charge(pl, +1);
    charged_[p] = pl;
  }

  // The recorded placement of a pod (its observed placement annotation) on node n, as zone
  // indices of n's ledger; empty when there is none or it names a zone the node lacks.
  static Placement Recorded(const Pod& pod, NodeId n, const numa::ZoneLedger& l) {
    Placement pl;
    pl.node = n;
    for (const NumaZonePlacement& z : pod.numa_observed) {
      const int zi = l.ZoneIndex(z.zone);
      if (zi < 0) return Placement{n, {}};
      auto& amounts = pl.zones[zi];
      amounts.resize(l.resources.size(), 0);
      for (const auto& [name, amount] : z.amount) {
        if (const int r = l.ResourceIndex(name); r >= 0) amounts[static_cast<size_t>(r)] += amount;
      }
    }
    return pl;
  }

  void Seed(const Session& s) {
    const Cluster& c = s.cluster();
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      const NodeId n = s.pod(p).node;
      if (n == kNone || !ledgers_[n] || c.pods[p].numa_observed.empty()) continue;
      Placement pl = Recorded(c.pods[p], n, *ledgers_[n]);
      if (ShouldScore(s, p, n) && !pl.zones.empty()) placement_[p] = pl;
    }
    for (size_t n = 0; n < ledgers_.size(); ++n) {
      if (!ledgers_[n] || !IsScored(ledgers_[n]->policy)) continue;
      if (reconstruct_) ledgers_[n]->available = ledgers_[n]->allocatable;
    }
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      const NodeId n = s.pod(p).node;
      if (n == kNone || !ledgers_[n] || !IsActiveAllocated(s.pod(p).status)) continue;
      if (!IsScored(ledgers_[n]->policy)) continue;
      Placement pl = Recorded(c.pods[p], n, *ledgers_[n]);
      if (pl.zones.empty()) continue;
      if (reconstruct_) {
        ChargeAs(p, pl);
      } else {
        charged_[p] = pl;  // already counted in the reported available amounts
      }
    }
  }

  void OnAllocate(Session& s, PodId p) {
    const NodeId n = s.pod(p).node;
    const PodStatus st = s.pod(p).status;
    auto kept = placement_.find(p);
    Placement pl;
    pl.node = n;
    if (st != PodStatus::kAllocated && st != PodStatus::kPipelined && kept != placement_.end() &&
        kept->second.node == n) {
      pl = kept->second;  // an eviction undone: the pod keeps its zones
    } else if (n != kNone && ledgers_[n] && ShouldScore(s, p, n)) {
      Solve(s, p, n, &pl.zones);
    }
    if (kept != placement_.end()) previous_[p] = kept->second;
    if (pl.zones.empty()) {
      placement_.erase(p);
      Release(p);
      return;
    }
    placement_[p] = pl;
    ChargeAs(p, pl);
  }

  void OnDeallocate(Session& s, PodId p) {
    Release(p);
    const PodStatus st = s.pod(p).status;
    const NodeId n = s.pod(p).node;
    if (st == PodStatus::kReleasing) return;  // evicted: keeps its placement, frees its zones
    if (IsActiveAllocated(st) && n != kNone) {
      // A move rolled back: the pod is where it was, with the zones it had there.
      if (auto prev = previous_.find(p); prev != previous_.end() && prev->second.node == n) {
        placement_[p] = prev->second;
        ChargeAs(p, prev->second);
        return;
      }
    }
    placement_.erase(p);
  }

  std::set<std::string> ignore_;
  bool reconstruct_ = true;
  std::vector<std::optional<numa::ZoneLedger>> ledgers_;
  std::map<PodId, Placement> placement_;  // what numa_zones reports
  std::map<PodId, Placement> previous_;   // the placement before the last allocation
  std::map<PodId, Placement> charged_;    // what is subtracted from a ledger now
  mutable std::map<NodeId, std::vector<ResourceAmounts>> view_cache_;
  int max_zones_ = 0;
  std::set<std::string> aware_devices_;
};

}  // namespace

void RegisterNumaPlugin(PluginRegistry& r) {
  r.Register("numa", [](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
    std::set<std::string> ignore;
    bool reconstruct = true;
    for (const auto& [key, value] : args) {
      if (key == "ignoreList") {
        std::stringstream in(value);
        std::string item;
        while (std::getline(in, item, ',')) {
          const auto b = item.find_first_not_of(" \t");
          const auto e = item.find_last_not_of(" \t");
          if (b != std::string::npos) ignore.insert(item.substr(b, e - b + 1));
        }
      } else if (key == "reconstructAvailable") {
        if (value != "true" && value != "false") {
          return Error{"numa: argument reconstructAvailable must be true or false (got \"" + value +
                       "\")"};
        }
        reconstruct = value == "true";
      } else {
        return Error{"numa: unknown argument \"" + key + "\""};
      }
    }
    return PluginPtr(std::make_unique<NumaPlugin>(std::move(ignore), reconstruct));
  });
}

}  // namespace gantry
