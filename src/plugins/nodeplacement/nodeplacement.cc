// nodeplacement: binpack (prefer the fullest node) or spread (prefer the emptiest) for GPU pods and
// CPU-only pods separately. Arguments: gpu, cpu = binpack | spread (default binpack).
#include <limits>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"

namespace gantry {
namespace {

enum class Strategy { kBinpack, kSpread };

bool IsMigEnabled(const Node& node) {
  if (const std::string* v = node.labels.Get("node-role.kubernetes.io/mig-enabled")) {
    return *v == "true" || *v == "1" || *v == "True" || *v == "TRUE" || *v == "t" || *v == "T";
  }
  return false;
}

// The amount of the placement resource a node has not allocated, and its total.
double NonAllocated(const Session& s, NodeId n, bool gpu) {
  if (gpu) return s.non_allocated_gpus()[n];
  const NodeState& st = s.node(n);
  return st.idle.cpu_millis + st.releasing.cpu_millis;
}
double Allocatable(const Session& s, NodeId n, bool gpu) {
  const Node& node = s.cluster().nodes[n];
  return gpu ? node.allocatable.gpus : node.allocatable.cpu_millis;
}

class NodePlacementPlugin : public Plugin {
 public:
  NodePlacementPlugin(Strategy gpu, Strategy cpu) : gpu_(gpu), cpu_(cpu) {}
  std::string_view name() const override { return "nodeplacement"; }

  void OnSessionOpen(Session& ssn) override {
    // (Per node, fixed for the session: whether it has allocatable GPUs and CPU. Every ranking
    // asks for its candidates, whose large Node records would be read for that one field.)
    const auto num_nodes = static_cast<NodeId>(ssn.cluster().nodes.size());
    allocatable_.resize(static_cast<size_t>(num_nodes));
    for (NodeId n = 0; n < num_nodes; ++n) {
      allocatable_[static_cast<size_t>(n)] = {Allocatable(ssn, n, true) != 0,
                                              Allocatable(ssn, n, false) != 0};
    }
    ssn.AddNodePreOrderFn(
        [this](Session& s, PodId p, std::span<const NodeId> nodes) {
          const bool gpu = !s.cluster().pods[p].IsCpuOnly();
          if ((gpu ? gpu_ : cpu_) != Strategy::kBinpack) return;
          double lo = std::numeric_limits<double>::max();
          double hi = 0;
          if (gpu) {
            const auto free = s.non_allocated_gpus();
            for (NodeId n : nodes) {
              if (!HasAllocatable(n, true)) continue;
              lo = std::min(lo, free[n]);
              hi = std::max(hi, free[n]);
            }
          } else {
            for (NodeId n : nodes) {
              if (!HasAllocatable(n, gpu)) continue;
              const double cur = NonAllocated(s, n, gpu);
              lo = std::min(lo, cur);
              hi = std::max(hi, cur);
            }
          }
          range_pod_ = p;
          min_ = lo;
          max_ = hi;
        },
        NodeDependence::kShapeStateAndSharedFit,
        // (What Pack reads for the pod: its range, when the pod's kind packs.)
        [this](const Session& s, PodId p, std::vector<double>& out) {
          const bool gpu = !s.cluster().pods[p].IsCpuOnly();
          if ((gpu ? gpu_ : cpu_) != Strategy::kBinpack) return;
          out.push_back(range_pod_ == p ? min_ : 0);
          out.push_back(range_pod_ == p ? max_ : 0);
        });
    ssn.AddNodeOrderFn(
        [this](const Session& s, PodId p, NodeId n) {
          return Score(s, p, n, !s.cluster().pods[p].IsCpuOnly());
        },
        {.batch =
             [this](const Session& s, PodId p, std::span<std::pair<double, NodeId>> scored) {
               const bool gpu = !s.cluster().pods[p].IsCpuOnly();
               for (auto& [score, n] : scored) score += Score(s, p, n, gpu);
             },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }

 private:
  // The pod's score on node n by the strategy for its kind (GPU or CPU-only pods).
  double Score(const Session& s, PodId p, NodeId n, bool gpu) const {
    return (gpu ? gpu_ : cpu_) == Strategy::kBinpack ? Pack(s, p, n, gpu) : Spread(s, n, gpu);
  }

  double Pack(const Session& s, PodId p, NodeId n, bool gpu) const {
    const double lo = range_pod_ == p ? min_ : 0;
    const double hi = range_pod_ == p ? max_ : 0;
    if (!HasAllocatable(n, gpu) || hi == 0) return 0;
    if (lo == hi) return scores::kMaxHighDensity;
    return scores::kMaxHighDensity * (1 - (NonAllocated(s, n, gpu) - lo) / (hi - lo));
  }
  static double Spread(const Session& s, NodeId n, bool gpu) {
    const Node& node = s.cluster().nodes[n];
    const double count =
        gpu ? (node.gpu_count > 0 ? node.gpu_count : static_cast<int64_t>(node.allocatable.gpus))
            : node.allocatable.cpu_millis;
    if (count == 0) return 0;
    return NonAllocated(s, n, gpu) / count;
  }

  // Allocatable(s, n, gpu) != 0.
  bool HasAllocatable(NodeId n, bool gpu) const {
    const auto& a = allocatable_[static_cast<size_t>(n)];
    return gpu ? a.first : a.second;
  }

  Strategy gpu_;
  Strategy cpu_;
  std::vector<std::pair<bool, bool>> allocatable_;  // per node: GPUs, CPU allocatable (not 0)
  PodId range_pod_ = kNone;
  double min_ = 0;
  double max_ = 0;
};

Result<Strategy> ParseStrategy(const std::map<std::string, std::string>& args,
                               const std::string& key) {
  auto it = args.find(key);
  if (it == args.end() || it->second == "binpack") return Strategy::kBinpack;
  if (it->second == "spread") return Strategy::kSpread;
  return Error{"argument \"" + key + "\": \"" + it->second +
               "\" is not a placement strategy (binpack or spread)"};
}

}  // namespace

void RegisterNodePlacementPlugin(PluginRegistry& r) {
  r.Register("nodeplacement", [](const auto& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(args, {"gpu", "cpu"}); !ok.ok()) {
      return Error{ok.error()};
    }
    auto gpu = ParseStrategy(args, "gpu");
    if (!gpu.ok()) return Error{gpu.error()};
    auto cpu = ParseStrategy(args, "cpu");
    if (!cpu.ok()) return Error{cpu.error()};
    return PluginPtr(std::make_unique<NodePlacementPlugin>(gpu.value(), cpu.value()));
  });
}

// Shared with resourcetype: a node with no GPUs and no MIG.
// (The GPU count first: it spares the label lookup on GPU nodes, and both are pure tests.)
bool IsCpuOnlyNode(const Node& node) { return node.allocatable.gpus <= 0 && !IsMigEnabled(node); }

}  // namespace gantry
