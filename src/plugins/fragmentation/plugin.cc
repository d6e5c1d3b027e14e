// gpufragmentation: scores nodes by the expected GPU fragmentation a placement adds (see
// fragmentation.h). The distribution of typical pods is learned from the pods this scheduler has
// seen (every pod of every session, counted once by uid), so it follows the workload; it is
// rebuilt when the number of pods seen has grown by a tenth.
//
// A fractional pod goes to the device of the node where it adds the least fragmentation: the
// plugin orders a node's devices by that (a GPU order function outweighing gpupack's, which then
// only breaks ties), and scores the node with the same device.
//
// A node's score also counts the change of its stranded GPUs (fragmentation.h's fluid view: free
// GPUs its free CPU and memory cannot feed at the workload's CPU and memory per GPU), `stranding`
// times: a placement that leaves a node short of CPU for its free GPUs costs even while every
// typical shape still fits, and one that uses the GPUs of a CPU-starved node gains. On the openb
// default trace this moves the allocation more than any change to the shape view did
// (docs/simulation.md).
//
// With fit_cpu_memory false the two views see the typical shapes' GPU demand only (shapes merged
// by it) and CPU and memory are left to the stranded-GPU term: with them in the shapes, a pod that
// takes a node's CPU just below a typical pod's need counts every free GPU of the node as lost to
// that shape - a cliff that outweighs how well the pod fills a device. On the openb traces the
// GPU-only views with the fluid term allocate more (docs/simulation.md); on the unit tests' small
// trace, where CPU-heavy pods exhaust the CPU of GPU nodes, the cliff helps, so it stays the
// default.
//
// Gap values (gap_value > 0): fragmentation now is a myopic guide for fractions - it prefers any
// partly used device to an unused one, so a 0.32 fills a device with 0.53 free and leaves 0.21
// that hardly any pod fills, where an unused device would have been topped up to 0.97 by a 0.65.
// The plugin therefore learns what a device's free share ends as (frag::GapWaste: the typical
// shapes' GPU demands filling as many devices as the cluster has, once, each time the shapes are
// rebuilt) and costs a fraction's device by the final waste it adds, mixed with the fragmentation
// it adds (gap_value 1: the waste alone). Whole-GPU and CPU-only pods are scored as before. On the
// openb traces this is the largest single gain (docs/simulation.md); on the unit tests' small
// CPU-bound trace (60 devices, 47 pods) it loses a point (learning the values on 2,000 devices
// instead of 60 does not change that), so it is off by default.
//
// Arguments: weight (score per GPU of fragmentation avoided, default 1), max_shapes (typical
// shapes kept, default 256), measure (which view of fragmentation.h: "unusable" - the FGD paper's
// -, "unfilled", or "mean" of the two, the default), stranding (weight of a stranded GPU relative
// to a fragmented one, default 1; 0 leaves it out), fit_cpu_memory (whether the views count a
// shape the node's CPU or memory cannot host, default true), gap_value (the weight in [0, 1] of
// the final waste against the fragmentation added in a fraction's cost, default 0).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/fragmentation/fragmentation.h"
#include "plugins/fragmentation/register.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

constexpr double kEps = 1e-9;
// GPU order score per GPU of fragmentation (gpupack's scores are within [0, 1]).
constexpr double kDeviceWeight = 100;

class FragmentationPlugin : public Plugin {
 public:
  FragmentationPlugin(double weight, size_t max_shapes, frag::Measure measure, double stranding,
                      bool fit_cpu_memory, double gap_value)
      : weight_(weight),
        max_shapes_(max_shapes),
        measure_(measure),
        stranding_(stranding),
        fit_cpu_memory_(fit_cpu_memory),
        gap_value_(gap_value) {}
  std::string_view name() const override { return "gpufragmentation"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& cl = ssn.cluster();
    for (const Pod& pod : cl.pods) {
      if (!seen_.insert(pod.uid.empty() ? pod.namespace_ + "/" + pod.name : pod.uid).second) {
        continue;
      }
      int whole = 0;
      double fraction = 0;
      if (pod.gpu_kind == GpuRequestKind::kFraction) {
        fraction = pod.gpu_fraction;
      } else if (pod.gpu_kind == GpuRequestKind::kMemory) {
        fraction = std::min(1.0, pod.gpu_memory_mib / std::max(1.0, cl.min_node_gpu_memory_mib));
      } else {
        whole = static_cast<int>(pod.request.gpus);
      }
      counter_.Add(pod.request.cpu_millis, pod.request.memory_bytes, whole, fraction);
    }
    if (counter_.total() > 0 && (shapes_.empty() || counter_.total() * 10 >= built_from_ * 11)) {
      // The demand per GPU from the full shapes; the views from the GPU demands alone unless
      // fit_cpu_memory.
      per_gpu_ = frag::DemandPerGpu(counter_.Shapes(max_shapes_));
      shapes_ = counter_.Shapes(max_shapes_, !fit_cpu_memory_);
      if (gap_value_ > 0) {
        double gpus = 0;
        for (const Node& node : cl.nodes) gpus += std::max(0.0, node.allocatable.gpus);
        waste_ = frag::GapWaste(counter_.Shapes(max_shapes_, true),
                                static_cast<int>(std::clamp(gpus, 1.0, 16384.0)), 1);
      }
      built_from_ = counter_.total();
      memo_.clear();
      before_.clear();
    }
    if (memo_.size() > 1'000'000) {
      memo_.clear();
      before_.clear();
    }
    ssn.AddNodeOrderFn(
        [this](const Session& s, PodId p, NodeId n) { return Score(s, p, n); },
        {.batch =
             [this](const Session& s, PodId p, std::span<std::pair<double, NodeId>> scored) {
               for (auto& [score, n] : scored) score += Score(s, p, n);
             },
         .depends_on = NodeDependence::kShapeAndStateOnly});
    ssn.AddGpuOrderFn(
        [this](const Session& s, PodId p, NodeId n, const SharedGpu* d) -> std::optional<double> {
          return DeviceScore(s, p, n, d);
        },
        NodeDependence::kShapeAndStateOnly);
  }

 private:
  // The node's free resources in the session, into `f` (its vector reused); `groups_` gets the
  // device group of each entry of f.gpu_free (-1: a whole unused device).
  void Free(const Session& s, NodeId n, frag::NodeFree& f) {
    const Node& node = s.cluster().nodes[n];
    const NodeState& st = s.node(n);
    f.cpu_millis = st.idle.cpu_millis;
    f.memory_bytes = st.idle.memory_bytes;
    const int idle = static_cast<int>(std::floor(st.idle.gpus + kEps));
    f.gpu_free.assign(static_cast<size_t>(std::max(0, idle)), 1.0);
    groups_.assign(f.gpu_free.size(), -1);
    const double mem = node.gpu_memory_mib > 0 ? node.gpu_memory_mib : 1;
    for (const SharedGpu& d : s.shared_gpus(n).devices()) {
      if (d.allocated <= 0 && d.used <= 0) continue;
      f.gpu_free.push_back(std::max(0.0, (mem - static_cast<double>(d.allocated)) / mem));
      groups_.push_back(d.group);
    }
  }

  // The share of one device a shared-GPU pod takes on `node`.
  static double Share(const Pod& pod, const Node& node) {
    const double mem = node.gpu_memory_mib > 0 ? node.gpu_memory_mib : 1;
    return pod.gpu_kind == GpuRequestKind::kFraction ? pod.gpu_fraction
                                                     : std::min(1.0, pod.gpu_memory_mib / mem);
  }

  // Expected fragmentation of `f` after a shared pod's `share` is taken from entry i of
  // f.gpu_free, the CPU and memory already taken (f is restored).
  double AfterShare(frag::NodeFree& f, size_t i, double share) {
    const double was = f.gpu_free[i];
    f.gpu_free[i] = was - share;
    const double v = Expected(f);
    f.gpu_free[i] = was;
    return v;
  }

  // GPU order of a shared pod's devices: minus the fragmentation the node has after the pod is
  // placed on device `d` (nullptr: a whole unused device).
  std::optional<double> DeviceScore(const Session& s, PodId p, NodeId n, const SharedGpu* d) {
    if (shapes_.empty()) return 0.0;
    const Pod& pod = s.cluster().pods[p];
    const Node& node = s.cluster().nodes[n];
    if (!pod.IsSharedGpu()) return 0.0;
    frag::NodeFree& f = scratch_;
    Free(s, n, f);
    f.cpu_millis -= pod.request.cpu_millis;
    f.memory_bytes -= pod.request.memory_bytes;
    const double share = Share(pod, node);
    // The entry of `d`; a device holding nothing (not in Free's list) counts as an unused one.
    size_t entry = f.gpu_free.size();
    for (int pass = d == nullptr ? 1 : 0; pass < 2 && entry == f.gpu_free.size(); ++pass) {
      for (size_t i = 0; i < f.gpu_free.size(); ++i) {
        if (pass == 0 ? groups_[i] == d->group : groups_[i] < 0) {
          entry = i;
          break;
        }
      }
    }
    // (The session checks the fit itself.)
    if (entry == f.gpu_free.size() || f.gpu_free[entry] + kEps < share) return 0.0;
    return -kDeviceWeight * weight_ * FractionCost(f, entry, share, 0);
  }

  // What taking `share` from entry i of f.gpu_free costs (the CPU and memory already taken): the
  // expected fragmentation it adds (the node's is `before` without the pod), and with gap_value
  // the final waste it adds (frag::GapWaste), mixed.
  double FractionCost(frag::NodeFree& f, size_t i, double share, double before) {
    const double added = AfterShare(f, i, share) - before;
    if (gap_value_ <= 0 || waste_.size() != 101) return added;
    auto value = [this](double free_share) {
      const long g = std::clamp(std::lround(free_share * 100), 0L, 100L);
      return waste_[static_cast<size_t>(g)];
    };
    const double wasted = value(f.gpu_free[i] - share) - value(f.gpu_free[i]);
    return (1 - gap_value_) * added + gap_value_ * wasted;
  }

  static uint64_t Mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
  }

  // Expected fragmentation of a free state, memoised by a 64-bit digest of the state (CPU to the
  // millicore, memory to the MiB, device shares to the thousandth, devices in sorted order).
  double Expected(const frag::NodeFree& f) { return Expected(f, Digest(f)); }
  uint64_t Digest(const frag::NodeFree& f) {
    quantized_.clear();
    for (double x : f.gpu_free) quantized_.push_back(static_cast<uint16_t>(std::lround(x * 1000)));
    std::sort(quantized_.begin(), quantized_.end());
    uint64_t h = Mix(0, static_cast<uint64_t>(static_cast<int64_t>(f.cpu_millis)));
    h = Mix(h, static_cast<uint64_t>(static_cast<int64_t>(f.memory_bytes / 1048576)));
    for (uint16_t q : quantized_) h = Mix(h, q);
    return Mix(h, quantized_.size());
  }
  double Expected(const frag::NodeFree& f, uint64_t h) {
    auto it = memo_.find(h);
    if (it != memo_.end()) return it->second;
    const double v = frag::ExpectedFragmentation(f, shapes_, measure_);
    memo_.emplace(h, v);
    return v;
  }

  double Score(const Session& s, PodId p, NodeId n) {
    if (shapes_.empty()) return 0;
    const Pod& pod = s.cluster().pods[p];
    const Node& node = s.cluster().nodes[n];
    if (node.allocatable.gpus <= 0) return 0;  // no GPU to fragment
    frag::NodeFree& f = scratch_;
    Free(s, n, f);
    // The node's value before the placement, kept per node while its state digest holds.
    if (before_.size() != s.cluster().nodes.size()) before_.assign(s.cluster().nodes.size(), {});
    auto& cached = before_[static_cast<size_t>(n)];
    const uint64_t digest = Digest(f);
    if (!cached.valid || cached.digest != digest) cached = {true, digest, Expected(f, digest)};
    const double before = cached.value;
    const double stranded_before = Stranded(f);
    f.cpu_millis -= pod.request.cpu_millis;
    f.memory_bytes -= pod.request.memory_bytes;
    if (pod.IsSharedGpu()) {
      // The device the GPU order above takes: the one leaving the least fragmentation.
      if (f.cpu_millis < -kEps || f.memory_bytes < -kEps) return 0;
      const double share = Share(pod, node);
      double best = 0;
      size_t best_entry = f.gpu_free.size();
      for (size_t i = 0; i < f.gpu_free.size(); ++i) {
        if (f.gpu_free[i] + kEps < share) continue;
        const double v = FractionCost(f, i, share, before);
        if (best_entry == f.gpu_free.size() || v < best) {
          best = v;
          best_entry = i;
        }
      }
      if (best_entry == f.gpu_free.size()) return 0;
      f.gpu_free[best_entry] -= share;  // (the stranded GPUs do not depend on the device)
      return -weight_ * (best + stranding_ * (Stranded(f) - stranded_before));
    } else if (pod.request.gpus > 0) {
      int left = static_cast<int>(pod.request.gpus);
      // Unused devices come first in Free's order: drop `left` of them.
      size_t unused = 0;
      while (unused < f.gpu_free.size() && f.gpu_free[unused] >= 1 - kEps) ++unused;
      if (static_cast<size_t>(left) > unused) return 0;
      f.gpu_free.erase(f.gpu_free.begin(), f.gpu_free.begin() + left);
    }
    if (f.cpu_millis < -kEps || f.memory_bytes < -kEps) return 0;
    return -weight_ * (Expected(f) - before + stranding_ * (Stranded(f) - stranded_before));
  }

  double Stranded(const frag::NodeFree& f) const {
    return stranding_ > 0 ? frag::StrandedGpus(f, per_gpu_) : 0;
  }

  double weight_;
  size_t max_shapes_;
  frag::Measure measure_;
  double stranding_;
  bool fit_cpu_memory_;
  double gap_value_;
  std::vector<double> waste_;  // frag::GapWaste of the shapes, when gap_value > 0
  frag::PerGpu per_gpu_;
  std::unordered_set<std::string> seen_;
  frag::ShapeCounter counter_;
  int64_t built_from_ = 0;
  std::vector<frag::PodShape> shapes_;
  std::unordered_map<uint64_t, double> memo_;
  struct Before {
    bool valid = false;
    uint64_t digest = 0;
    double value = 0;
  };
  std::vector<Before> before_;  // per node
  frag::NodeFree scratch_;
  std::vector<uint16_t> quantized_;
  std::vector<int32_t> groups_;  // per entry of scratch_.gpu_free (Free)
};

}  // namespace

void RegisterFragmentationPlugin(PluginRegistry& r) {
  r.Register("gpufragmentation", [](const auto& args) -> Result<PluginPtr> {
    if (auto ok = plugin_util::CheckArgumentNames(
            args, {"weight", "max_shapes", "measure", "stranding", "fit_cpu_memory", "gap_value"});
        !ok.ok()) {
      return Error{ok.error()};
    }
    double weight = 1;
    long max_shapes = 256;
    double stranding = 1;
    double gap_value = 0;
    try {
      if (auto it = args.find("gap_value"); it != args.end()) gap_value = std::stod(it->second);
      if (auto it = args.find("weight"); it != args.end()) weight = std::stod(it->second);
      if (auto it = args.find("stranding"); it != args.end()) stranding = std::stod(it->second);
      if (auto it = args.find("max_shapes"); it != args.end()) max_shapes = std::stol(it->second);
    } catch (const std::exception&) {
      return Error{
          "arguments \"weight\", \"max_shapes\", \"stranding\" and \"gap_value\" must be numbers"};
    }
    if (!(gap_value >= 0 && gap_value <= 1)) {
      return Error{"argument \"gap_value\" must be between 0 and 1"};
    }
    if (!(weight >= 0) || max_shapes < 1 || !(stranding >= 0)) {
      return Error{"arguments \"weight\" and \"stranding\" must be >= 0 and \"max_shapes\" >= 1"};
    }
    bool fit_cpu_memory = true;
    if (auto it = args.find("fit_cpu_memory"); it != args.end()) {
      if (it->second != "true" && it->second != "false") {
        return Error{"argument \"fit_cpu_memory\" must be true or false"};
      }
      fit_cpu_memory = it->second == "true";
    }
    frag::Measure measure = frag::Measure::kMean;
    if (auto it = args.find("measure"); it != args.end()) {
      if (it->second == "unusable") {
        measure = frag::Measure::kUnusable;
      } else if (it->second == "unfilled") {
        measure = frag::Measure::kUnfilled;
      } else if (it->second != "mean") {
        return Error{"argument \"measure\": \"" + it->second +
                     "\" is not one of unusable, unfilled, mean"};
      }
    }
    return PluginPtr(std::make_unique<FragmentationPlugin>(
        weight, static_cast<size_t>(max_shapes), measure, stranding, fit_cpu_memory, gap_value));
  });
}

}  // namespace gantry
