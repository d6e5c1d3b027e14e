#include "plugins/topology/tree.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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
double RatioToFree(const Session& s, const Resources& asked, const Resources& free) {
  const int nscalars = s.cluster().resource_names.size();
  bool any = asked.gpus > 0 || asked.cpu_millis > 0 || asked.memory_bytes > 0;
  for (int i = 0; i < nscalars; ++i) any = any || asked.scalars[i] > 0;
  if (!any) return 0;
  double ratio = 0;
  if (asked.gpus > 0) ratio = std::max(ratio, asked.gpus / free.gpus);
  // Kubernetes quantities as whole values (CPU in cores rounded up, scalars as milli-units).
  auto value_ratio = [&](double want, double have) {
    if (want == 0) return;
    ratio = std::max(ratio, have == 0 ? kRequiredResourceNotInDomainRatio : want / have);
  };
  value_ratio(std::ceil(asked.cpu_millis / 1000), std::ceil(free.cpu_millis / 1000));
  value_ratio(std::floor(asked.memory_bytes), std::floor(free.memory_bytes));
  for (int i = 0; i < nscalars; ++i) {
    value_ratio(std::ceil(asked.scalars[i] / 1000), std::ceil(free.scalars[i] / 1000));
  }
  return ratio;
}

Tree BuildTree(const Cluster& c, const Topology& t) {
  Tree tree;
  tree.topology = &t;
  tree.domains.push_back(MakeDomain("root", -1));
  tree.by_id.resize(t.levels.size());
  tree.by_level.resize(t.levels.size());
  tree.in_topology.assign(c.nodes.size(), 0);
  tree.seen_version.assign(c.nodes.size(), 0);
  tree.node_domain.assign(t.levels.size(), std::vector<int32_t>(c.nodes.size(), -1));
  std::vector<NodeId> order(c.nodes.size());
  for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
    order[static_cast<size_t>(c.nodes[n].name_rank)] = n;
  }
  for (NodeId n : order) {
    const Node& node = c.nodes[n];
    bool member = true;
    for (const auto& level : t.levels) member = member && node.labels.Has(level);
    if (!member) continue;
    tree.in_topology[n] = 1;
    int32_t child = -1;
    for (int li = static_cast<int>(t.levels.size()) - 1; li >= 0; --li) {
      std::string id;
      for (int k = 0; k <= li; ++k) {
        if (k > 0) id += '.';
        id += *node.labels.Get(t.levels[static_cast<size_t>(k)]);
      }
      auto [it, inserted] = tree.by_id[li].emplace(id, static_cast<int32_t>(tree.domains.size()));
      if (inserted) {
        tree.domains.push_back(MakeDomain(id, li));
        tree.by_level[li].push_back(it->second);
      }
      Domain& d = tree.domains[it->second];
      d.nodes.push_back(n);
      tree.node_domain[static_cast<size_t>(li)][n] = it->second;
      tree.empty_label_value =
          tree.empty_label_value || node.labels.Get(t.levels[static_cast<size_t>(li)])->empty();
      if (child >= 0) AddChild(tree, it->second, child);
      child = it->second;
    }
    AddChild(tree, 0, child);
    tree.domains[0].nodes.push_back(n);
  }
  return tree;
}

bool DomainHasNode(const Tree& tree, int32_t d, NodeId n) {
  const int level = tree.domains[static_cast<size_t>(d)].level;
  if (level < 0) return tree.in_topology[static_cast<size_t>(n)] != 0;
  return tree.node_domain[static_cast<size_t>(level)][static_cast<size_t>(n)] == d;
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
  tree.domains[child].parent = parent;
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
