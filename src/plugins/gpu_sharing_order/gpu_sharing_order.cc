// Device and node order for shared (fractional / GPU-memory) pods:
//   gpusharingorder - nodes with a shared device the pod fits on score kGpuSharing, so fractions
//                     fill devices already shared before opening a new one;
//   gpupack         - among a node's devices, the fullest shared device first (free whole
//                     devices last);
//   gpuspread       - the emptiest first (free whole devices first).
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"

namespace gantry {
namespace {

// Share of a device in use; nullopt when the node's GPU memory is unknown (KAI skips the device).
std::optional<double> UsedPortion(const Session& s, NodeId n, const SharedGpu& d) {
  const double device_memory = s.cluster().nodes[n].gpu_memory_mib;
  if (device_memory < 100) return std::nullopt;
  return static_cast<double>(d.used) / device_memory;
}

class GpuSharingOrderPlugin : public Plugin {
 public:
  std::string_view name() const override { return "gpusharingorder"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn(
        [](const Session& s, PodId p, NodeId n) {
          if (!s.cluster().pods[p].IsSharedGpu()) {
            // KAI scores every pod; only shared-GPU pods can fit a shared device.
            return 0.0;
          }
          const int64_t memory = s.PodGpuMemoryOn(p, n);
          const auto device_memory = static_cast<int64_t>(s.cluster().nodes[n].gpu_memory_mib);
          for (const SharedGpu& d : s.shared_gpus(n).devices()) {
            if (NodeSharedGpus::FitsOnGroup(d, memory, device_memory)) return scores::kGpuSharing;
          }
          return 0.0;
        },
        {.scores_pod = [](const Cluster&, const Pod& pod) { return pod.IsSharedGpu(); },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }
};

class GpuPackPlugin : public Plugin {
 public:
  explicit GpuPackPlugin(bool spread) : spread_(spread) {}
  std::string_view name() const override { return spread_ ? "gpuspread" : "gpupack"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddGpuOrderFn(
        [spread = spread_](const Session& s, PodId, NodeId n,
                           const SharedGpu* d) -> std::optional<double> {
          if (d == nullptr) return spread ? 1.0 : 0.0;
          auto used = UsedPortion(s, n, *d);
          if (!used) return std::nullopt;
          return spread ? 1 - *used : *used;
        },
        NodeDependence::kShapeAndStateOnly);
  }

 private:
  bool spread_;
};

}  // namespace

void RegisterGpuSharingPlugins(PluginRegistry& r) {
  r.Register("gpusharingorder", plugin_util::NoArguments<GpuSharingOrderPlugin>());
  for (const auto& [name, spread] : {std::pair{"gpupack", false}, std::pair{"gpuspread", true}}) {
    r.Register(name, [spread](const std::map<std::string, std::string>& args) -> Result<PluginPtr> {
      if (auto ok = plugin_util::CheckArgumentNames(args, {}); !ok.ok()) return Error{ok.error()};
      return PluginPtr(std::make_unique<GpuPackPlugin>(spread));
    });
  }
}

}  // namespace gantry
