#include "plugins/topology/representative.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gantry::topology {

bool RepresentativePods::Largest(const Session& s, std::span<const PodId> tasks, Pod& max) {
  const Cluster& c = s.cluster();
  max = Pod{};
  for (PodId p : tasks) {
    const Pod& pod = c.pods[p];
    max.request.cpu_millis = std::max(max.request.cpu_millis, pod.request.cpu_millis);
    max.request.memory_bytes = std::max(max.request.memory_bytes, pod.request.memory_bytes);
    for (int i = 0; i < c.resource_names.size(); ++i) {
      max.request.scalars[i] = std::max(max.request.scalars[i], pod.request.scalars[i]);
    }
    // GPUs: the pod with the most; fractions of different sizes cannot be combined.
    const double g = pod.RequestedGpus();
    const double mg = max.RequestedGpus();
    if (pod.IsSharedGpu() && max.IsSharedGpu() && pod.gpu_fraction != max.gpu_fraction) {
      return false;
    }
    if (g > mg) {
      max.gpu_kind = pod.gpu_kind;
      max.request.gpus = pod.request.gpus;
      max.gpu_fraction = pod.gpu_fraction;
      max.gpu_devices = pod.gpu_devices;
    }
    if (pod.gpu_memory_mib > max.gpu_memory_mib) {
      max.gpu_memory_mib = pod.gpu_memory_mib;
      if (max.gpu_kind == GpuRequestKind::kNoGpu) {
        max.gpu_kind = GpuRequestKind::kMemory;
        max.gpu_devices = 1;
      }
    }
  }
  max.request.pods = 0;
  return true;
}

bool RepresentativePods::AsksAnything(const Pod& max) {
  return max.request.cpu_millis > 0 || max.request.memory_bytes > 0 || max.RequestedGpus() > 0 ||
         max.gpu_memory_mib > 0 || max.request.HasScalars();
}

void RepresentativePods::Reset(size_t trees) {
  signatures_.clear();
  acc_cache_.clear();
  sig_counts_.clear();
  sig_counts_.resize(trees);
}

void RepresentativePods::Select(const Pod& max) {
  test_ = max;
  signature_ = SignatureOf(max);
}

bool RepresentativePods::AlikePods(const Session& s, std::span<const PodId> tasks) {
  const Cluster& c = s.cluster();
  size_t using_gpu = 0;
  std::vector<size_t> per_scalar(static_cast<size_t>(c.resource_names.size()), 0);
  for (PodId p : tasks) {
    const Pod& pod = c.pods[p];
    if (pod.RequestedGpus() > 0) ++using_gpu;
    for (int i = 0; i < c.resource_names.size(); ++i) {
      if (pod.request.scalars[i] > 0 && !IsMig(s, i)) ++per_scalar[static_cast<size_t>(i)];
    }
  }
  if (using_gpu != 0 && using_gpu != tasks.size()) return false;
  for (size_t n : per_scalar) {
    if (n != 0 && n != tasks.size()) return false;
  }
  return true;
}

bool RepresentativePods::IsMig(const Session& s, int slot) {
  for (const auto& m : s.mig_profiles()) {
    if (m.slot == slot) return true;
  }
  return false;
}

int RepresentativePods::SignatureOf(const Pod& max) {
  for (size_t i = 0; i < signatures_.size(); ++i) {
    const Pod& o = signatures_[i];
    if (o.request == max.request && o.gpu_kind == max.gpu_kind &&
        o.gpu_fraction == max.gpu_fraction && o.gpu_devices == max.gpu_devices &&
        o.gpu_memory_mib == max.gpu_memory_mib) {
      return static_cast<int>(i);
    }
  }
  signatures_.push_back(max);
  acc_cache_.emplace_back();
  return static_cast<int>(signatures_.size() - 1);
}

int RepresentativePods::Cached(Session& s, NodeId n, const Pod& max) {
  auto& cache = acc_cache_[static_cast<size_t>(signature_)];
  if (cache.empty()) cache.assign(s.cluster().nodes.size(), {~0U, 0});
  auto& entry = cache[static_cast<size_t>(n)];
  if (entry.first != s.node_version(n)) {
    entry = {s.node_version(n), Accommodation(s, n, max)};
  }
  return entry.second;
}

int RepresentativePods::Accommodation(Session& s, NodeId n, const Pod& max) {
  const NodeState& st = s.node(n);
  Resources avail = st.idle;
  avail += st.releasing;
  double bound = std::numeric_limits<double>::infinity();
  auto limit = [&](double want, double have) {
    if (want > 0) bound = std::min(bound, std::floor(have / want));
  };
  limit(max.request.cpu_millis, avail.cpu_millis);
  limit(max.request.memory_bytes, avail.memory_bytes);
  for (int i = 0; i < s.cluster().resource_names.size(); ++i) {
    bool mig = false;
    for (const auto& m : s.mig_profiles()) mig = mig || m.slot == i;
    if (!mig) limit(max.request.scalars[i], avail.scalars[i]);
  }
  if (max.IsSharedGpu()) {
    const int64_t memory = s.GpuMemoryOn(max, n);
    const auto device_memory = static_cast<int64_t>(s.cluster().nodes[n].gpu_memory_mib);
    const double devices =
        std::floor(avail.gpus) + s.shared_gpus(n).CountFitting(memory, device_memory, 1 << 30);
    limit(std::max(1, max.gpu_devices), devices);
  } else if (max.request.gpus > 0) {
    limit(max.request.gpus, std::floor(avail.gpus));
  }
  if (bound == std::numeric_limits<double>::infinity()) return 1 << 20;
  int k = static_cast<int>(std::max(0.0, bound)) + 1;
  while (k > 0) {
    test_.request = max.request;
    test_.request.cpu_millis *= k;
    test_.request.memory_bytes *= k;
    for (double& v : test_.request.scalars) v *= k;
    if (max.gpu_kind == GpuRequestKind::kWhole) test_.request.gpus = max.request.gpus * k;
    test_.gpu_devices = max.gpu_devices * k;
    if (s.RepresentativeFits(test_, n)) return k;
    --k;
  }
  return 0;
}

const std::vector<int64_t>& RepresentativePods::FollowCounts(Session& s, const Tree& tree,
                                                             size_t tree_number, const Pod& max) {
  auto& per_signature = sig_counts_[tree_number];
  if (per_signature.size() <= static_cast<size_t>(signature_)) {
    per_signature.resize(static_cast<size_t>(signature_) + 1);
  }
  SignatureCounts& sc = per_signature[static_cast<size_t>(signature_)];
  const std::vector<NodeId>& journal = s.node_journal();
  const std::vector<int32_t>& leaf_of = tree.node_domain.back();
  auto add = [&](NodeId n, int64_t delta) {
    for (int32_t d = leaf_of[static_cast<size_t>(n)]; d >= 0;
         d = tree.domains[static_cast<size_t>(d)].parent) {
      sc.domain_count[static_cast<size_t>(d)] += delta;
    }
  };
  if (!sc.valid || sc.journal_generation != s.node_journal_generation()) {
    sc.node_value.assign(s.cluster().nodes.size(), 0);
    sc.domain_count.assign(tree.domains.size(), 0);
    for (NodeId n : tree.domains[0].nodes) {
      const int v = Cached(s, n, max);
      sc.node_value[static_cast<size_t>(n)] = v;
      add(n, v);
    }
    sc.valid = true;
    sc.journal_generation = s.node_journal_generation();
  } else {
    for (size_t i = sc.journal_position; i < journal.size(); ++i) {
      const NodeId n = journal[i];
      if (!tree.in_topology[static_cast<size_t>(n)]) continue;
      const int v = Cached(s, n, max);
      int& seen = sc.node_value[static_cast<size_t>(n)];
      if (v == seen) continue;
      add(n, static_cast<int64_t>(v) - seen);
      seen = v;
    }
  }
  sc.journal_position = journal.size();
  return sc.domain_count;
}

}  // namespace gantry::topology
