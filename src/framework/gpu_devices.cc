// The session's GPU devices: shared-GPU groups, accepted and required GPUs of a pod on a node,
// and the choice of devices for a shared-GPU pod (KAI's FittingGPUs).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/session.h"
#include "framework/session_internal.h"

namespace gantry {

// --- Shared GPUs ----------------------------------------------------------------------------

int32_t Session::InternGroup(const std::string& name) {
  auto [it, inserted] = group_ids_.emplace(name, static_cast<int32_t>(group_names_.size()));
  if (inserted) group_names_.push_back(name);
  return it->second;
}

int32_t Session::NewGroup() {
  // A UUID-shaped id from a counter mixed with the session clock: deterministic for a given
  // session, and checked against every id already known.
  for (;;) {
    uint64_t a = static_cast<uint64_t>(now_ms_) * 0x9E3779B97F4A7C15ULL + (++group_seq_);
    auto mix = [](uint64_t z) {
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return z ^ (z >> 31);
    };
    const uint64_t hi = mix(a);
    const uint64_t lo = mix(a ^ 0xD1B54A32D192ED03ULL);
    char buf[37];
    std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFF),
                  static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3FFF)),
                  static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
    if (group_ids_.count(buf) == 0) return InternGroup(buf);
  }
}

std::vector<std::string> Session::GroupNames(PodId p) const {
  std::vector<std::string> names;
  names.reserve(pod_groups_[p].size());
  for (int32_t g : pod_groups_[p]) names.push_back(group_names_[g]);
  return names;
}

int64_t Session::GpuMemoryOn(const Pod& pod, NodeId n) const {
  if (pod.gpu_memory_mib > 0) return static_cast<int64_t>(pod.gpu_memory_mib);
  return static_cast<int64_t>(pod.gpu_fraction * cluster_.nodes[n].gpu_memory_mib);
}

namespace {
// KAI's getGpuMemoryFractionalOnNode: a memory amount as a device share, rounded up to hundredths.
double MemoryAsPortion(int64_t memory, double device_memory) {
  return std::ceil(static_cast<double>(memory) / device_memory * 100) / 100;
}
// KAI's fixed-point GPU count of `devices` devices of `portion` each.
double FixedPointGpus(double portion, int devices) {
  return static_cast<double>(std::llround(portion * 100) * devices) / 100;
}
}  // namespace

double Session::AcceptedGpusOn(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  switch (pod.gpu_kind) {
    case GpuRequestKind::kMig:
      return pod.mig_gpus;
    case GpuRequestKind::kFraction:
    case GpuRequestKind::kMemory: {
      const double portion =
          pod.gpu_memory_mib > 0
              ? MemoryAsPortion(PodGpuMemoryOn(p, n), cluster_.nodes[n].gpu_memory_mib)
              : pod.gpu_fraction;
      return FixedPointGpus(portion, std::max(1, pod.gpu_devices));
    }
    default:
      return pod.request.gpus + pod.dra_gpus;
  }
}

std::pair<double, int64_t> Session::IdleGpuSum(NodeId n) const {
  const NodeState& st = nodes_[n];
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  double shared = 0;
  int64_t shared_memory = 0;
  for (const SharedGpu& d : shared_[n].devices()) {
    if (d.allocated <= 0) continue;
    shared += 1 - MemoryAsPortion(d.allocated, device_memory);
    shared_memory += static_cast<int64_t>(device_memory) - d.allocated;
  }
  double whole = st.idle.gpus;
  for (const MigProfile& m : mig_profiles_) whole += m.gpus * st.idle.scalars[m.slot];
  return {shared + whole,
          shared_memory + static_cast<int64_t>(whole) * static_cast<int64_t>(device_memory)};
}

std::pair<double, int64_t> Session::ReleasingGpuSum(NodeId n) const {
  const NodeState& st = nodes_[n];
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  double shared = 0;
  int64_t shared_memory = 0;
  for (const SharedGpu& d : shared_[n].devices()) {
    const bool wholly_releasing = d.used != 0 && d.releasing == d.used;
    if (d.releasing <= 0 || wholly_releasing) continue;
    shared += MemoryAsPortion(d.releasing, device_memory);
    shared_memory += d.releasing;
  }
  double whole = st.releasing.gpus;
  for (const MigProfile& m : mig_profiles_) whole += m.gpus * st.releasing.scalars[m.slot];
  return {shared + whole,
          shared_memory + static_cast<int64_t>(whole) * static_cast<int64_t>(device_memory)};
}

double Session::RequiredInitGpusOn(PodId p, NodeId n) const {
  const Pod& pod = cluster_.pods[p];
  if (pod.gpu_kind == GpuRequestKind::kMig) return pod.RequestGpuQuota();
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  int64_t memory = 0;
  if (pod.IsSharedGpu()) {
    memory = PodGpuMemoryOn(p, n);
  } else if (pod.request.gpus > 0) {
    memory = static_cast<int64_t>(device_memory);  // one device, whatever the count (as KAI)
  }
  return MemoryAsPortion(memory, device_memory);
}

bool Session::FitsDevices(const Pod& pod, const Resources& base, NodeId n, bool with_releasing,
                          int devices, int64_t memory) const {
  const NodeState& ns = nodes_[n];
  static const Resources kZero{};
  Resources avail = ns.idle;
  if (with_releasing) avail += ns.releasing;
  const double free_gpus = avail.gpus;
  avail.gpus = 0;
  if (!base.FitsInSum(avail, kZero, cluster_.resource_names.size())) return false;
  const double device_memory = cluster_.nodes[n].gpu_memory_mib;
  if (pod.IsSharedGpu() && pod.gpu_memory_mib > 0) {
    const double portion = MemoryAsPortion(memory, device_memory);
    if (portion > 1 && portion != std::floor(portion)) return false;
  }
  const int whole = static_cast<int>(std::floor(free_gpus));
  if (whole >= devices) return true;
  return whole + shared_[n].CountFitting(memory, static_cast<int64_t>(device_memory), devices) >=
         devices;
}

bool Session::SharedFits(PodId p, NodeId n, bool with_releasing) const {
  const Pod& pod = cluster_.pods[p];
  Resources base = pod.request;
  base.gpus = 0;
  return FitsDevices(pod, base, n, with_releasing, std::max(1, pod.gpu_devices),
                     PodGpuMemoryOn(p, n));
}

bool Session::RepresentativeFits(const Pod& pod, NodeId n) const {
  Resources base = pod.request;
  base.gpus = 0;
  base.pods = 0;
  for (const MigProfile& m : mig_profiles_) base.scalars[m.slot] = 0;
  int devices = 0;
  int64_t memory = 0;
  if (pod.IsSharedGpu()) {
    devices = std::max(1, pod.gpu_devices);
    memory = GpuMemoryOn(pod, n);
  } else if (pod.request.gpus > 0) {
    devices = static_cast<int>(pod.request.gpus);
    memory = static_cast<int64_t>(cluster_.nodes[n].gpu_memory_mib);
  }
  return FitsDevices(pod, base, n, /*with_releasing=*/true, devices, memory);
}

bool Session::SelectSharedGpus(PodId p, NodeId n, bool pipeline_only, std::vector<int32_t>& groups,
                               bool& needs_releasing) {
  const Pod& pod = cluster_.pods[p];
  const NodeState& ns = nodes_[n];
  const int64_t device_memory = static_cast<int64_t>(cluster_.nodes[n].gpu_memory_mib);
  const int64_t memory = PodGpuMemoryOn(p, n);
  auto score = [&](const SharedGpu* d) -> std::optional<double> {
    double total = 0;
    for (const auto& fn : gpu_order_fns_) {
      auto v = fn(*this, p, n, d);
      if (!v) return std::nullopt;
      total += *v;
    }
    return total;
  };
  gpu_candidates_.clear();
  for (const SharedGpu& d : shared_[n].devices()) {
    if (!NodeSharedGpus::FitsOnGroup(d, memory, device_memory)) continue;
    if (auto v = score(&d)) gpu_candidates_.push_back({*v, d.group});
  }
  if (ns.idle.gpus > 0 || ns.releasing.gpus > 0) {
    const int whole = static_cast<int>(ns.idle.gpus) + static_cast<int>(ns.releasing.gpus);
    if (auto v = score(nullptr)) {
      for (int i = 0; i < whole; ++i) gpu_candidates_.push_back({*v, -1});
    }
  }
  // Best score first; equal scores keep their order (shared devices before whole ones).
  std::stable_sort(gpu_candidates_.begin(), gpu_candidates_.end(),
                   [](const GpuCandidate& a, const GpuCandidate& b) { return a.score > b.score; });
  const int devices = std::max(1, pod.gpu_devices);
  const bool fits_idle = FitsIdle(p, n);
  groups.clear();
  needs_releasing = false;
  for (const GpuCandidate& c : gpu_candidates_) {
    if (c.group < 0) {
      needs_releasing = needs_releasing || pipeline_only || !fits_idle;
      groups.push_back(NewGroup());
    } else {
      const SharedGpu* d = shared_[n].Find(c.group);
      needs_releasing = needs_releasing ||
                        !NodeSharedGpus::FitsIdleOnGroup(*d, memory, device_memory) || !fits_idle;
      groups.push_back(c.group);
    }
    if (static_cast<int>(groups.size()) == devices) return true;
  }
  groups.clear();
  return false;
}

}  // namespace gantry
