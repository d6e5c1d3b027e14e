#include "plugins/topology/tree.h"

#include <algorithm>
#include <cmath>

namespace gantry::topology {
namespace {

constexpr double kRequiredResourceNotInDomainRatio = 1000.0;

}  // namespace

// The job's requests summed as KAI's Resource (whole and fractional GPUs in gpus, MIG counts in
// scalars, no pod slots).
Resources SumRequests(const Session& s, std::span<const PodId> tasks) {
  Resources sum;
  for (PodId p : tasks) {
    const Pod& pod = s.cluster().pods[p];
    Resources r = pod.request;
    r.pods = 0;
    r.gpus = pod.RequestedGpus();
    sum += r;
  }
  return sum;
}

// KAI's getJobRatioToFreeResources: the dominant ratio of requested to free resources.
double RatioToFree(const Session& s, const Resources& asked, const Domain& d) {
  const int nscalars = s.cluster().resource_names.size();
  bool any = asked.gpus > 0 || asked.cpu_millis > 0 || asked.memory_bytes > 0;
  for (int i = 0; i < nscalars; ++i) any = any || asked.scalars[i] > 0;
  if (!any) return 0;
  double ratio = 0;
  if (asked.gpus > 0) ratio = std::max(ratio, asked.gpus / d.free.gpus);
  // Kubernetes quantities as whole values (CPU in cores rounded up, scalars as milli-units).
  auto value_ratio = [&](double want, double have) {
    if (want == 0) return;
    ratio = std::max(ratio, have == 0 ? kRequiredResourceNotInDomainRatio : want / have);
  };
  value_ratio(std::ceil(asked.cpu_millis / 1000), std::ceil(d.free.cpu_millis / 1000));
  value_ratio(std::floor(asked.memory_bytes), std::floor(d.free.memory_bytes));
  for (int i = 0; i < nscalars; ++i) {
    value_ratio(std::ceil(asked.scalars[i] / 1000), std::ceil(d.free.scalars[i] / 1000));
  }
  return ratio;
}

Domain MakeDomain(std::string id, int level) {
  Domain d;
  d.id = std::move(id);
  d.level = level;
  return d;
}

void AddChild(Tree& tree, int32_t parent, int32_t child) {
  auto& ch = tree.domains[parent].children;
  if (std::find(ch.begin(), ch.end(), child) == ch.end()) ch.push_back(child);
}

void LevelDomains(const Tree& tree, int32_t d, int level, std::vector<int32_t>& out) {
  const Domain& dom = tree.domains[d];
  if (dom.level == level) {
    out.push_back(d);
    return;
  }
  for (int32_t child : dom.children) LevelDomains(tree, child, level, out);
}

std::vector<int32_t> DomainsAtLevel(const Tree& tree, int level) {
  if (level < 0) return {0};
  return tree.by_level[static_cast<size_t>(level)];
}

void MarkSubtree(const Tree& tree, int32_t d, std::vector<char>& marks) {
  marks[d] = 1;
  for (int32_t child : tree.domains[d].children) MarkSubtree(tree, child, marks);
}

std::vector<int32_t> ReverseLevelOrder(const Tree& tree) {
  std::vector<std::vector<int32_t>> levels;
  std::vector<int32_t> current{0};
  while (!current.empty()) {
    levels.push_back(current);
    std::vector<int32_t> next;
    for (int32_t d : current) {
      for (int32_t child : tree.domains[d].children) next.push_back(child);
    }
    current = std::move(next);
  }
  std::vector<int32_t> out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    out.insert(out.end(), it->begin(), it->end());
  }
  return out;
}

}  // namespace gantry::topology
