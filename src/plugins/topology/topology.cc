// topology: topology-aware placement (KAI's plugins/topology).
//
// Each Topology object becomes a tree of domains: the root, then one domain per distinct value
// path of the level labels (zone "a" -> block "a.b1" -> rack "a.b1.r3"). A sub-group (the whole
// job, a group or a pod set) with a topology constraint is placed through node sets, one per
// domain that could hold all of its pods:
//  - the domains considered span from the preferred level (if any) up to the required level (or
//    up to the root without one); a domain qualifies when it can accommodate the pods - counted
//    with "representative pods" (k copies of the largest pod) when the pods are alike, by the
//    ratio of requested to free resources otherwise;
//  - domains are tried innermost level first, and within a level fullest first (bin packing);
//  - with a preferred level, nodes are scored by the rank of their preferred-level domain, so the
//    pods gather in one such domain when they can;
//  - pods of a job already running inside a required-level domain keep the rest in that domain.
// A constraint naming an unknown topology or level fails the sub-group with a job fit error that
// says so; the rest of the cycle goes on.
//
// Beside this file: tree.h (the domains), free_sums.h (their free resources, summed again or
// followed through the node journal), representative.h (representative pods and their counts),
// domain_order.h (the bin-packing order of domains).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"
#include "plugins/topology/domain_order.h"
#include "plugins/topology/free_sums.h"
#include "plugins/topology/representative.h"
#include "plugins/topology/tree.h"

namespace gantry {
namespace {

using topology::BuildTree;
using topology::ComputeFree;
using topology::Domain;
using topology::DomainHasNode;
using topology::DomainsAtLevel;
using topology::FollowFreeSums;
using topology::kAllocatablePodsNotSet;
using topology::LevelDomains;
using topology::MarkSubtree;
using topology::RatioToFree;
using topology::RefreshLeaf;
using topology::RepresentativePods;
using topology::ReverseLevelOrder;
using topology::SortScratch;
using topology::SortTree;
using topology::SortTreeFollowing;
using topology::SumRequests;
using topology::Tree;

std::string FormatG3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

class TopologyPlugin : public Plugin {
 public:
  std::string_view name() const override { return "topology"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    trees_.clear();
    tree_index_.clear();
    required_domains_.clear();
    scores_.clear();
    for (const Topology& t : c.topologies) Build(c, t);
    reps_.Reset(trees_.size());
    if (trees_.empty()) return;
    if (FollowsChanges(ssn)) ssn.EnableNodeJournal();
    // Both node callbacks read the node's domains, so they depend on more than its shape and
    // state; they apply only to the pods of constrained sub-groups, which the filters name (the
    // other pods may rank by node class).
    ssn.AddSubsetNodesFn(
        [this](Session& s, const SubGroupRef& ref, std::span<const PodId> tasks,
               std::span<const NodeId> nodes, bool record, std::vector<std::vector<NodeId>>& out) {
          return SubsetNodes(s, ref, tasks, nodes, record, out);
        },
        NodeDependence::kAnything, &UnderConstraint);
    ssn.AddRequiredDomainsFn([this](const Session& s, const SubGroupRef& ref) {
      return RequiredDomains(s.cluster(), ref);
    });
    ssn.AddPreJobAllocationFn([this](Session&, JobId) { scores_.clear(); });
    ssn.AddNodeOrderFn([this](const Session& s, PodId p, NodeId n) { return Score(s, p, n); },
                       {.scores_pod = &UnderPreferredLevel});
  }

  void OnSessionClose(Session&) override {
    trees_.clear();
    required_domains_.clear();
    scores_.clear();
    reps_.Reset(0);
  }

 private:
  static bool FollowsChanges(const Session& s) {
    return s.params().topology_incremental && s.params().topology_follow_changes;
  }

  void Build(const Cluster& c, const Topology& t) {
    Tree tree = BuildTree(c, t);
    tree_index_.emplace(t.name, trees_.size());
    trees_.push_back(std::move(tree));
  }

  // The constraint of a sub-group, if any.
  static const std::optional<TopologyConstraint>& ConstraintOf(const Cluster& c,
                                                               const SubGroupRef& ref) {
    const Job& job = c.jobs[ref.job];
    return ref.pod_set ? job.pod_sets[ref.index].topology : job.groups[ref.index].topology;
  }
  static std::string NameOf(const Cluster& c, const SubGroupRef& ref) {
    const Job& job = c.jobs[ref.job];
    return ref.pod_set ? job.pod_sets[ref.index].name : job.groups[ref.index].name;
  }

  static std::string NoMatch(const Cluster& c, const SubGroupRef& ref, const Tree& tree,
                             const std::string& suffix) {
    const Job& job = c.jobs[ref.job];
    const TopologyConstraint& tc = *ConstraintOf(c, ref);
    std::string what = "job <" + job.namespace_ + "/" + job.name + ">";
    const std::string name = NameOf(c, ref);
    if (!name.empty() && name != "default") what += ", subgroup " + name;
    std::string msg = "topology " + tree.topology->name + ", requirement " + tc.required_level +
                      " couldn't be satisfied for " + what;
    if (!suffix.empty()) msg += ": " + suffix;
    return msg;
  }

  static void AddSimpleError(Session& s, JobId j, std::string message) {
    s.AddJobFitError(j, JobFitError{std::string(kPodSchedulingErrors), {std::move(message)}, ""});
  }

  bool SubsetNodes(Session& s, const SubGroupRef& ref, std::span<const PodId> tasks,
                   std::span<const NodeId> nodes, bool record,
                   std::vector<std::vector<NodeId>>& out) {
    const Cluster& c = s.cluster();
    const auto& constraint = ConstraintOf(c, ref);
    if (!constraint || constraint->topology.empty()) return false;
    auto found = tree_index_.find(constraint->topology);
    if (found == tree_index_.end()) {
      if (record) {
        AddSimpleError(s, ref.job,
                       "Requested topology " + constraint->topology + " does not exist");
      }
      out.clear();
      return true;
    }
    if (tasks.empty()) return false;
    const size_t tree_number = found->second;
    Tree& tree = trees_[tree_number];
    // Following the node journal: the sums are kept between calls, and domains outside the
    // subtree of the candidates' lowest common domain read as the reference's reset ones.
    follow_ = FollowsChanges(s) && !tree.topology->levels.empty();
    alloc_mode_ = AllocMode::kNotSet;
    // A candidate list of every node (allocate's) needs no filter: its nodes in the topology are
    // the root's.
    const bool all_candidates = follow_ && !tree.empty_label_value &&
                                nodes.data() == s.all_nodes().data() &&
                                nodes.size() == s.all_nodes().size();

    // The lowest domain holding every candidate node (down to the preferred level at most).
    std::vector<NodeId>& valid = valid_;
    valid.clear();
    int32_t domain_index = 0;
    if (all_candidates) {
      auto [it, inserted] = tree.all_nodes_common.try_emplace(constraint->preferred_level, 0);
      if (inserted) {
        it->second = LowestCommonDomainByIndex(tree, tree.domains[0].nodes, *constraint);
      }
      domain_index = it->second;
    } else {
      for (NodeId n : nodes) {
        if (tree.in_topology[n]) valid.push_back(n);
      }
      domain_index = s.params().topology_incremental && !tree.empty_label_value
                         ? LowestCommonDomainByIndex(tree, valid, *constraint)
                         : LowestCommonDomain(c, tree, valid, *constraint);
    }
    Domain& domain = tree.domains[domain_index];
    scope_ = domain_index;

    if (follow_) {
      FollowFreeSums(s, tree);
    } else {
      for (Domain& d : tree.domains) {
        d.allocatable_pods = kAllocatablePodsNotSet;
        d.free = Resources{};
      }
      ComputeFree(s, tree, domain_index);
    }
    if (RepresentativePods::AlikePods(s, tasks)) {
      if (!ComputeAllocatable(s, tree, tree_number, domain_index, tasks)) {
        out.clear();
        return true;  // pods of different fractions cannot be represented together
      }
    }
    const Resources asked = SumRequests(s, tasks);
    const int count = static_cast<int>(tasks.size());
    if (!DomainFits(s, tree, asked, count, domain_index)) {
      if (record) {
        AddSimpleError(
            s, ref.job,
            NoMatch(c, ref, tree,
                    domain_index == 0
                        ? "not enough resources in the cluster to allocate the job"
                        : "not enough resources in " + domain.id + " to allocate the job"));
      }
      out.clear();
      return true;
    }

    const int preferred =
        constraint->preferred_level.empty() ? -3 : tree.LevelIndex(constraint->preferred_level);
    const int required =
        constraint->required_level.empty() ? -3 : tree.LevelIndex(constraint->required_level);
    if (preferred == -2 || required == -2) {
      if (record) {
        const std::string name = NameOf(c, ref);
        const std::string who =
            name.empty() || name == "default" ? "workload" : "sub-group " + name;
        const bool bad_required = required == -2;
        AddSimpleError(
            s, ref.job,
            "topology constraint error: " + who + " specified '" +
                (bad_required ? constraint->required_level : constraint->preferred_level) +
                "' as the " + (bad_required ? "required" : "preferred") +
                " topology constraint level, but the topology tree '" + tree.topology->name +
                "' does not contain a level with this name");
      }
      out.clear();
      return true;
    }
    const int max_depth = preferred != -3 ? preferred : required;
    if (s.params().topology_incremental && !(asked == tree.asked)) {
      tree.asked = asked;
      ++tree.asked_serial;
    }
    if (follow_) {
      if (max_depth != -3)
        SortTreeFollowing(s, tree, domain_index, asked, max_depth, sort_scratch_);
    } else {
      SortTree(s, tree, domain_index, asked, max_depth);
    }
    if (preferred != -3) {
      PreferredScores& sc = scores_[Key(ref)];
      // Per domain of the preferred level when following the changes (a node reads its domain's),
      // else per node.
      const bool per_domain = follow_ && preferred >= 0;
      sc.node_domain = per_domain ? &tree.node_domain[static_cast<size_t>(preferred)] : nullptr;
      sc.values.assign(per_domain ? tree.domains.size() : c.nodes.size(), 0);
      std::vector<int32_t>& level_domains = level_domains_;
      level_domains.clear();
      LevelDomains(tree, domain_index, preferred, level_domains);
      for (size_t i = 0; i < level_domains.size(); ++i) {
        const double score = std::floor(static_cast<double>(i + 1) /
                                        static_cast<double>(level_domains.size()) * 10) *
                             scores::kTopology;
        if (per_domain) {
          sc.values[static_cast<size_t>(level_domains[i])] = score;
          continue;
        }
        for (NodeId n : tree.domains[level_domains[i]].nodes) sc.values[n] = score;
      }
    }

    // Candidate domains: levels from the preferred one up to the required one (or the root).
    std::vector<int> levels;
    {
      bool started = false;
      for (int li = static_cast<int>(tree.topology->levels.size()) - 1; li >= -1; --li) {
        if (li == preferred || li == required) started = true;
        if (started) levels.push_back(li);
        if (li == required) break;
      }
    }
    // Pods of the job already placed pin the required-level domain.
    std::vector<char> allowed;
    if (required != -3 && HasActiveAllocated(s, ref)) {
      allowed.assign(tree.domains.size(), 0);
      for (int32_t d : DomainsAtLevel(tree, required)) {
        if (!HasActivePodIn(s, ref, tree, d)) continue;
        MarkSubtree(tree, d, allowed);
      }
    }
    std::vector<int32_t> fitting;
    std::vector<JobFitError> top_errors;
    for (size_t k = 0; k < levels.size(); ++k) {
      for (int32_t d : DomainsAtLevel(tree, levels[k])) {
        if (!allowed.empty() && !allowed[d]) continue;
        if (!DomainFits(s, tree, asked, count, d)) {
          if (record && k + 1 == levels.size()) {
            top_errors.push_back(DomainError(s, ref, asked, count, tree.domains[d],
                                             AllocOf(tree, d), FreeOf(tree, d)));
          }
          continue;
        }
        fitting.push_back(d);
      }
    }
    out.clear();
    if (fitting.empty()) {
      if (record) {
        for (auto& e : top_errors) s.AddJobFitError(ref.job, std::move(e));
        AddSimpleError(s, ref.job, NoMatch(c, ref, tree, ""));
      }
      return true;
    }
    // In the (sorted) tree's reverse level order: innermost level first.
    std::vector<char> chosen(tree.domains.size(), 0);
    for (int32_t d : fitting) chosen[d] = 1;
    if (all_candidates) {
      // Every node of a domain is a candidate.
      for (int32_t d : ReverseLevelOrder(tree)) {
        if (chosen[d]) out.push_back(tree.domains[d].nodes);
      }
      return true;
    }
    std::vector<char>& valid_flag = valid_flag_;
    valid_flag.resize(c.nodes.size(), 0);
    for (NodeId n : valid) valid_flag[n] = 1;
    for (int32_t d : ReverseLevelOrder(tree)) {
      if (!chosen[d]) continue;
      std::vector<NodeId> set;
      for (NodeId n : tree.domains[d].nodes) {
        if (valid_flag[n]) set.push_back(n);
      }
      out.push_back(std::move(set));
    }
    for (NodeId n : valid) valid_flag[n] = 0;  // all zero again for the next call
    return true;
  }

  // The domains of a sub-group's required level, as the victim search's pre-check reads them
  // (RequiredDomainsFn). SubsetNodes gives such a sub-group only node sets of domains from its
  // preferred level up to its required one, and a domain of those levels lies inside one domain
  // of the required level (a domain's id is its label path from the top level). Null without a
  // required level of a known topology (the root is no confinement).
  const NodeDomains* RequiredDomains(const Cluster& c, const SubGroupRef& ref) {
    const auto& constraint = ConstraintOf(c, ref);
    if (!constraint || constraint->topology.empty() || constraint->required_level.empty()) {
      return nullptr;
    }
    const auto found = tree_index_.find(constraint->topology);
    if (found == tree_index_.end()) return nullptr;
    const Tree& tree = trees_[found->second];
    const int level = tree.LevelIndex(constraint->required_level);
    if (level < 0) return nullptr;
    auto [it, inserted] = required_domains_.try_emplace({found->second, level});
    NodeDomains& nd = it->second;
    if (inserted) {
      nd.of_node.assign(c.nodes.size(), -1);
      for (int32_t d : tree.by_level[static_cast<size_t>(level)]) {
        for (NodeId n : tree.domains[d].nodes) nd.of_node[n] = nd.count;
        ++nd.count;
      }
    }
    return &nd;
  }

  // LowestCommonDomain from the nodes' domain indices: a level's domains are the distinct value
  // paths down to it, so nodes that agree on the levels above agree on this level's value exactly
  // when they share its domain. (Not with empty label values, which the label comparison
  // treats specially.)
  static int32_t LowestCommonDomainByIndex(const Tree& tree, const std::vector<NodeId>& valid,
                                           const TopologyConstraint& tc) {
    if (valid.empty()) return 0;
    int32_t found = 0;
    for (size_t li = 0; li < tree.topology->levels.size(); ++li) {
      const std::vector<int32_t>& of_node = tree.node_domain[li];
      const int32_t d = of_node[valid.front()];
      for (NodeId n : valid) {
        if (of_node[n] != d) return found;
      }
      found = d;
      if (tc.preferred_level == tree.topology->levels[li]) break;
    }
    return found;
  }

  // KAI's lowestCommonDomainID.
  static int32_t LowestCommonDomain(const Cluster& c, const Tree& tree,
                                    const std::vector<NodeId>& valid,
                                    const TopologyConstraint& tc) {
    int depth = -1;
    std::string id;
    for (size_t li = 0; li < tree.topology->levels.size(); ++li) {
      const std::string& key = tree.topology->levels[li];
      std::string value;
      bool all_match = true;
      for (NodeId n : valid) {
        const std::string& v = *c.nodes[n].labels.Get(key);
        if (value.empty()) value = v;
        if (v != value) {
          all_match = false;
          break;
        }
      }
      if (!all_match || value.empty()) break;
      if (!id.empty()) id += '.';
      id += value;
      depth = static_cast<int>(li);
      if (tc.preferred_level == key) break;
    }
    if (depth < 0) return 0;
    auto it = tree.by_id[static_cast<size_t>(depth)].find(id);
    return it == tree.by_id[static_cast<size_t>(depth)].end() ? 0 : it->second;
  }

  // Representative pods: how many copies of the largest pod each leaf node could hold.
  bool ComputeAllocatable(Session& s, Tree& tree, size_t tree_number, int32_t root,
                          std::span<const PodId> tasks) {
    Pod max;
    if (!RepresentativePods::Largest(s, tasks, max)) return false;
    const bool any_resource = RepresentativePods::AsksAnything(max);
    const int all = static_cast<int>(tasks.size());
    reps_.Select(max);
    if (follow_) {
      if (!any_resource) {
        alloc_mode_ = AllocMode::kAll;
        alloc_all_ = all;
        return true;
      }
      alloc_mode_ = AllocMode::kCounts;
      alloc_counts_ = &reps_.FollowCounts(s, tree, tree_number, max);
      return true;
    }
    Allocatable(s, tree, root, max, any_resource, all);
    return true;
  }

  // Whether domain d lies in the subtree of this call's lowest common domain (the domains the
  // reference computes; the others read as reset).
  bool InScope(const Tree& tree, int32_t d) const {
    if (scope_ == 0) return true;
    const Domain& top = tree.domains[static_cast<size_t>(scope_)];
    const Domain& dom = tree.domains[static_cast<size_t>(d)];
    if (dom.level < top.level) return false;
    return tree.node_domain[static_cast<size_t>(top.level)]
                           [static_cast<size_t>(dom.nodes.front())] == scope_;
  }

  // A domain's free resources and representative-pod count as this call reads them.
  const Resources& FreeOf(const Tree& tree, int32_t d) const {
    static const Resources nothing_free;
    if (follow_ && !InScope(tree, d)) return nothing_free;
    return tree.domains[static_cast<size_t>(d)].free;
  }
  int AllocOf(const Tree& tree, int32_t d) const {
    if (!follow_) return tree.domains[static_cast<size_t>(d)].allocatable_pods;
    if (alloc_mode_ == AllocMode::kNotSet || !InScope(tree, d)) return kAllocatablePodsNotSet;
    if (alloc_mode_ == AllocMode::kAll) {
      return alloc_all_ * static_cast<int>(tree.domains[static_cast<size_t>(d)].nodes.size());
    }
    return static_cast<int>((*alloc_counts_)[static_cast<size_t>(d)]);
  }

  int Allocatable(Session& s, Tree& tree, int32_t d, const Pod& max, bool any_resource, int all) {
    Domain& dom = tree.domains[d];
    dom.allocatable_pods = 0;
    if (dom.children.empty()) {
      if (any_resource && s.params().topology_incremental) {
        RefreshLeaf(s, tree, dom);
        auto& per_signature = dom.leaf.allocatable;
        const auto signature = static_cast<size_t>(reps_.signature());
        if (per_signature.size() <= signature) per_signature.resize(signature + 1, {0, 0});
        auto& entry = per_signature[signature];
        if (entry.first != dom.leaf.revision + 1) {
          int sum = 0;
          for (NodeId n : dom.nodes) sum += reps_.Cached(s, n, max);
          entry = {dom.leaf.revision + 1, sum};
        }
        dom.allocatable_pods = entry.second;
        return dom.allocatable_pods;
      }
      for (NodeId n : dom.nodes) {
        dom.allocatable_pods += any_resource ? reps_.Cached(s, n, max) : all;
      }
      return dom.allocatable_pods;
    }
    int sum = 0;
    for (int32_t child : dom.children) sum += Allocatable(s, tree, child, max, any_resource, all);
    tree.domains[d].allocatable_pods = sum;
    return sum;
  }

  // KAI's checkJobDomainFit: enough representative pods, or else a requested-to-free ratio of at
  // most 1.
  bool DomainFits(const Session& s, const Tree& tree, const Resources& asked, int count,
                  int32_t d) const {
    const int allocatable = AllocOf(tree, d);
    if (allocatable != kAllocatablePodsNotSet) return allocatable >= count;
    return RatioToFree(s, asked, FreeOf(tree, d)) <= 1;
  }

  // The fit error of a domain that does not fit (built only when it is recorded).
  static JobFitError DomainError(const Session& s, const SubGroupRef& ref, const Resources& asked,
                                 int count, const Domain& d, int allocatable,
                                 const Resources& free) {
    const Cluster& c = s.cluster();
    const std::string sub = NameOf(c, ref);
    if (allocatable != kAllocatablePodsNotSet) {
      JobFitError e{"Not enough resources for the workload",
                    {"node-group " + d.id + " can allocate only " + std::to_string(allocatable) +
                     " of " + std::to_string(count) + " required pods"},
                    sub};
      e.domain = d.id;
      return e;
    }
    JobFitError e{"Not enough resources for the workload", {}, sub};
    e.domain = d.id;
    if (asked.gpus > free.gpus) {
      e.detailed.push_back(d.id + " didn't have enough resource: GPUs, requested: " +
                           FormatG3(asked.gpus) + ", available: " + FormatG3(free.gpus));
      e.messages.push_back("node-group(s) didn't have enough resources: GPUs");
    }
    if (static_cast<int64_t>(asked.cpu_millis) > static_cast<int64_t>(free.cpu_millis)) {
      e.detailed.push_back(d.id + " didn't have enough resources: CPU cores, requested: " +
                           Humanize(asked.cpu_millis / 1000, 3) +
                           ", available: " + Humanize(free.cpu_millis / 1000, 3));
      e.messages.push_back("node-group(s) didn't have enough resources: CPU cores");
    }
    if (asked.memory_bytes > free.memory_bytes) {
      e.detailed.push_back(d.id + " didn't have enough resources: memory, requested: " +
                           Humanize(asked.memory_bytes / 1e9, 3) +
                           ", available: " + Humanize(free.memory_bytes / 1e9, 3));
      e.messages.push_back("node-group(s) didn't have enough resources: memory");
    }
    return e;
  }

  // The pod sets under a sub-group.
  static void PodSetsOf(const Cluster& c, const SubGroupRef& ref, std::vector<int32_t>& out) {
    const Job& job = c.jobs[ref.job];
    if (ref.pod_set) {
      out.push_back(ref.index);
      return;
    }
    for (size_t s = 0; s < job.pod_sets.size(); ++s) {
      int32_t g = job.pod_sets[s].parent_group;
      while (g != kNone && g != ref.index) g = job.groups[g].parent;
      if (g == ref.index) out.push_back(static_cast<int32_t>(s));
    }
  }

  static bool HasActiveAllocated(const Session& s, const SubGroupRef& ref) {
    std::vector<int32_t> sets;
    PodSetsOf(s.cluster(), ref, sets);
    for (int32_t set : sets) {
      if (s.counters(ref.job, set).active_allocated > 0) return true;
    }
    return false;
  }

  static bool HasActivePodIn(const Session& s, const SubGroupRef& ref, const Tree& tree,
                             int32_t d) {
    std::vector<int32_t> sets;
    PodSetsOf(s.cluster(), ref, sets);
    for (int32_t set : sets) {
      for (PodId p : s.cluster().jobs[ref.job].pod_sets[set].pods) {
        const PodState& st = s.pod(p);
        if (IsActiveAllocated(st.status) && st.node != kNone && DomainHasNode(tree, d, st.node))
          return true;
      }
    }
    return false;
  }

  // Whether the pod's pod set or a group above it has a constraint `matching`: the sub-groups
  // SubsetNodes may split the nodes of, for the first; those Score reads, for the second.
  template <bool (*matching)(const TopologyConstraint&)>
  static bool AnyConstraintAbove(const Cluster& c, const Pod& pod) {
    if (pod.job == kNone) return true;  // (not expected: say yes, the safe answer)
    const Job& job = c.jobs[pod.job];
    const PodSet& ps = job.pod_sets[pod.pod_set];
    if (ps.topology && matching(*ps.topology)) return true;
    for (int32_t g = ps.parent_group; g != kNone; g = job.groups[g].parent) {
      if (job.groups[g].topology && matching(*job.groups[g].topology)) return true;
    }
    return false;
  }
  static bool NamesTopology(const TopologyConstraint& tc) { return !tc.topology.empty(); }
  static bool NamesPreferredLevel(const TopologyConstraint& tc) {
    return !tc.topology.empty() && !tc.preferred_level.empty();
  }
  static bool UnderConstraint(const Cluster& c, const Pod& pod) {
    return AnyConstraintAbove<&NamesTopology>(c, pod);
  }
  static bool UnderPreferredLevel(const Cluster& c, const Pod& pod) {
    return AnyConstraintAbove<&NamesPreferredLevel>(c, pod);
  }

  static int64_t Key(const SubGroupRef& ref) {
    return (static_cast<int64_t>(ref.job) << 32) | (static_cast<int64_t>(ref.index) << 1) |
           (ref.pod_set ? 1 : 0);
  }

  // The preferred-level score of the pod's pod set, or of its nearest ancestor that has one.
  double Score(const Session& s, PodId p, NodeId n) const {
    if (scores_.empty()) return 0;
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    const Job& job = c.jobs[pod.job];
    auto it = scores_.find(Key(SubGroupRef{pod.job, true, pod.pod_set}));
    if (it != scores_.end()) return it->second.Of(n);
    for (int32_t g = job.pod_sets[pod.pod_set].parent_group; g != kNone; g = job.groups[g].parent) {
      it = scores_.find(Key(SubGroupRef{pod.job, false, g}));
      if (it != scores_.end()) return it->second.Of(n);
    }
    return 0;
  }

  // A sub-group's preferred-level scores: per node, or per domain of the preferred level (a node
  // outside the tree scores 0).
  struct PreferredScores {
    const std::vector<int32_t>* node_domain = nullptr;  // null: `values` per node
    std::vector<double> values;
    double Of(NodeId n) const {
      if (node_domain == nullptr) return values[static_cast<size_t>(n)];
      const int32_t d = (*node_domain)[static_cast<size_t>(n)];
      return d < 0 ? 0 : values[static_cast<size_t>(d)];
    }
  };
  enum class AllocMode { kNotSet, kAll, kCounts };

  std::vector<Tree> trees_;
  std::unordered_map<std::string, size_t> tree_index_;
  // RequiredDomains' answers, per (tree, level), made on first use.
  std::map<std::pair<size_t, int>, NodeDomains> required_domains_;
  // Scratch of SubsetNodes, kept between calls: the candidate nodes in the topology, and the same
  // as flags per node (all zero between calls).
  std::vector<NodeId> valid_;
  std::vector<char> valid_flag_;
  RepresentativePods reps_;
  std::unordered_map<int64_t, PreferredScores> scores_;
  // This SubsetNodes call: whether it follows the changes, its lowest common domain, and how
  // AllocOf reads the representative-pod counts.
  bool follow_ = false;
  int32_t scope_ = 0;
  AllocMode alloc_mode_ = AllocMode::kNotSet;
  int alloc_all_ = 0;
  const std::vector<int64_t>* alloc_counts_ = nullptr;
  std::vector<int32_t> level_domains_;  // scratch
  SortScratch sort_scratch_;
};

}  // namespace

void RegisterTopologyPlugin(PluginRegistry& r) {
  r.Register("topology", plugin_util::NoArguments<TopologyPlugin>());
}

}  // namespace gantry
