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
#include "plugins/topology/tree.h"

namespace gantry {
namespace {

using topology::BuildTree;
using topology::Domain;
using topology::DomainHasNode;
using topology::DomainsAtLevel;
using topology::kAllocatablePodsNotSet;
using topology::LeafCache;
using topology::LevelDomains;
using topology::MarkSubtree;
using topology::RatioToFree;
using topology::ReverseLevelOrder;
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
    signatures_.clear();
    acc_cache_.clear();
    sig_counts_.clear();
    for (const Topology& t : c.topologies) Build(c, t);
    if (trees_.empty()) return;
    sig_counts_.resize(trees_.size());
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
    signatures_.clear();
    acc_cache_.clear();
    sig_counts_.clear();
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
      FollowChanges(s, tree);
    } else {
      for (Domain& d : tree.domains) {
        d.allocatable_pods = kAllocatablePodsNotSet;
        d.free = Resources{};
      }
      ComputeFree(s, tree, domain_index);
    }
    if (AlikePods(s, tasks)) {
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
      if (max_depth != -3) SortTreeFollowing(s, tree, domain_index, asked, max_depth);
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

  // The free resources of domain d and of the domains under it (the others stay zero). Inner
  // domains add their children's in the children's current order, as the reference does, so
  // the sums are the same to the bit with or without the leaf cache.
  void ComputeFree(const Session& s, Tree& tree, int32_t d) {
    Domain& dom = tree.domains[d];
    if (dom.children.empty()) {
      if (s.params().topology_incremental) {
        RefreshLeaf(s, tree, dom);
        dom.free = dom.leaf.free;
        return;
      }
      dom.free = LeafFree(s, dom);
      return;
    }
    uint64_t stamp = dom.order_stamp;
    for (int32_t child : dom.children) {
      ComputeFree(s, tree, child);
      dom.free += tree.domains[child].free;
      stamp = std::max(stamp, tree.domains[child].free_stamp);
    }
    dom.free_stamp = stamp;
  }

  static Resources LeafFree(const Session& s, const Domain& dom) {
    Resources free;
    for (NodeId n : dom.nodes) {
      const NodeState& st = s.node(n);
      free += st.idle;
      free += st.releasing;
    }
    free.pods = 0;
    return free;
  }

  // Sums a leaf's free resources again if one of its nodes changed since the last sum.
  static void RefreshLeaf(const Session& s, Tree& tree, Domain& dom) {
    LeafCache& leaf = dom.leaf;
    const uint64_t epoch = s.placement_epoch();
    if (leaf.valid && leaf.checked_epoch == epoch) return;
    bool changed = !leaf.valid;
    for (NodeId n : dom.nodes) {
      const uint32_t v = s.node_version(n);
      if (tree.seen_version[n] != v) {
        tree.seen_version[n] = v;
        changed = true;
      }
    }
    leaf.valid = true;
    leaf.checked_epoch = epoch;
    if (!changed) return;
    ++leaf.revision;
    leaf.free = LeafFree(s, dom);
    dom.free_stamp = ++tree.stamps;
  }

  // KAI's useRepresentorPodsAccounting: every pod or none uses GPUs, and every extended
  // resource is asked by every pod.
  static bool AlikePods(const Session& s, std::span<const PodId> tasks) {
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

  static bool IsMig(const Session& s, int slot) {
    for (const auto& m : s.mig_profiles()) {
      if (m.slot == slot) return true;
    }
    return false;
  }

  // Representative pods: how many copies of the largest pod each leaf node could hold.
  bool ComputeAllocatable(Session& s, Tree& tree, size_t tree_number, int32_t root,
                          std::span<const PodId> tasks) {
    const Cluster& c = s.cluster();
    Pod max;  // the largest request of each kind
    bool any_resource = false;
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
    any_resource = max.request.cpu_millis > 0 || max.request.memory_bytes > 0 ||
                   max.RequestedGpus() > 0 || max.gpu_memory_mib > 0 || max.request.HasScalars();
    const int all = static_cast<int>(tasks.size());
    test_ = max;
    signature_ = SignatureOf(max);
    if (follow_) {
      if (!any_resource) {
        alloc_mode_ = AllocMode::kAll;
        alloc_all_ = all;
        return true;
      }
      alloc_mode_ = AllocMode::kCounts;
      alloc_counts_ = &FollowCounts(s, tree, tree_number, max);
      return true;
    }
    Allocatable(s, tree, root, max, any_resource, all);
    return true;
  }

  // Follows the node journal since the last call: the leaves of the changed nodes summed again
  // (in their node order, as LeafFree), then every domain above them and every domain whose
  // children were reordered (SortTree), level by level upwards, each adding its children's sums
  // in their current order as ComputeFree does: the same sums to the bit. The first call, and
  // the first after the journal started again, sums every domain.
  static void FollowChanges(const Session& s, Tree& tree) {
    const std::vector<NodeId>& journal = s.node_journal();
    const std::vector<int32_t>& leaf_of = tree.node_domain.back();
    if (!tree.sums_valid || tree.journal_generation != s.node_journal_generation()) {
      tree.sum_dirty.assign(tree.domains.size(), 0);
      tree.dirty_at.assign(tree.topology->levels.size() + 1, {});
      for (int32_t d : tree.by_level.back()) MarkSumDirty(tree, d);
      tree.sums_valid = true;
      tree.journal_generation = s.node_journal_generation();
    } else {
      for (size_t i = tree.journal_position; i < journal.size(); ++i) {
        const int32_t leaf = leaf_of[static_cast<size_t>(journal[i])];
        if (leaf >= 0) MarkSumDirty(tree, leaf);
      }
    }
    tree.journal_position = journal.size();
    for (size_t at = tree.dirty_at.size(); at-- > 0;) {
      // (Marking a parent adds to the level above, not to this one.)
      for (int32_t d : tree.dirty_at[at]) {
        Domain& dom = tree.domains[static_cast<size_t>(d)];
        tree.sum_dirty[static_cast<size_t>(d)] = 0;
        if (dom.children.empty()) {
          dom.free = LeafFree(s, dom);
        } else {
          Resources sum;
          for (int32_t child : dom.children) sum += tree.domains[static_cast<size_t>(child)].free;
          dom.free = sum;
        }
        dom.free_stamp = ++tree.stamps;
        if (dom.parent >= 0) MarkSumDirty(tree, dom.parent);
      }
      tree.dirty_at[at].clear();
    }
  }

  static void MarkSumDirty(Tree& tree, int32_t d) {
    if (tree.sum_dirty[static_cast<size_t>(d)]) return;
    tree.sum_dirty[static_cast<size_t>(d)] = 1;
    const int at = tree.domains[static_cast<size_t>(d)].level + 1;  // (the root first)
    tree.dirty_at[static_cast<size_t>(at)].push_back(d);
  }

  // The representative pod's count per domain (how many copies its nodes hold), kept per tree and
  // signature and changed by the differences of the nodes the journal names since its last use.
  // Whole sums, so the order of the additions does not matter.
  const std::vector<int64_t>& FollowCounts(Session& s, const Tree& tree, size_t tree_number,
                                           const Pod& max) {
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
        const int v = CachedAccommodation(s, n, max);
        sc.node_value[static_cast<size_t>(n)] = v;
        add(n, v);
      }
      sc.valid = true;
      sc.journal_generation = s.node_journal_generation();
    } else {
      for (size_t i = sc.journal_position; i < journal.size(); ++i) {
        const NodeId n = journal[i];
        if (!tree.in_topology[static_cast<size_t>(n)]) continue;
        const int v = CachedAccommodation(s, n, max);
        int& seen = sc.node_value[static_cast<size_t>(n)];
        if (v == seen) continue;
        add(n, static_cast<int64_t>(v) - seen);
        seen = v;
      }
    }
    sc.journal_position = journal.size();
    return sc.domain_count;
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
        if (per_signature.size() <= static_cast<size_t>(signature_)) {
          per_signature.resize(static_cast<size_t>(signature_) + 1, {0, 0});
        }
        auto& entry = per_signature[static_cast<size_t>(signature_)];
        if (entry.first != dom.leaf.revision + 1) {
          int sum = 0;
          for (NodeId n : dom.nodes) sum += CachedAccommodation(s, n, max);
          entry = {dom.leaf.revision + 1, sum};
        }
        dom.allocatable_pods = entry.second;
        return dom.allocatable_pods;
      }
      for (NodeId n : dom.nodes) {
        dom.allocatable_pods += any_resource ? CachedAccommodation(s, n, max) : all;
      }
      return dom.allocatable_pods;
    }
    int sum = 0;
    for (int32_t child : dom.children) sum += Allocatable(s, tree, child, max, any_resource, all);
    tree.domains[d].allocatable_pods = sum;
    return sum;
  }

  // Accommodation per node and representative pod, kept while the node does not change (most
  // jobs look at every node of the tree, few nodes change between jobs).
  int CachedAccommodation(Session& s, NodeId n, const Pod& max) {
    auto& cache = acc_cache_[static_cast<size_t>(signature_)];
    if (cache.empty()) cache.assign(s.cluster().nodes.size(), {~0U, 0});
    auto& entry = cache[static_cast<size_t>(n)];
    if (entry.first != s.node_version(n)) {
      entry = {s.node_version(n), Accommodation(s, n, max)};
    }
    return entry.second;
  }

  // The index of the representative pod's shape among those seen this session.
  int SignatureOf(const Pod& max) {
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

  // The largest k such that k copies of `max` fit the node's idle and releasing resources. An
  // upper bound from the per-resource quotients is checked downwards (the fit is monotone in k).
  int Accommodation(Session& s, NodeId n, const Pod& max) {
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

  // Bin packing: children fullest first (by the job's ratio to their free resources), then by id.
  // The order is a function of the keys alone (ties broken by the unique ids), so children already
  // sorted under the same keys, position for position, are not sorted again.
  void SortTree(const Session& s, Tree& tree, int32_t d, const Resources& asked, int max_depth) {
    if (max_depth == -3) return;
    Domain& dom = tree.domains[d];
    const bool incremental = s.params().topology_incremental;
    bool same_keys = incremental && dom.sort_keys.size() == dom.children.size();
    uint64_t children_stamp = 0;
    for (int32_t child : dom.children) {
      children_stamp = std::max(children_stamp, tree.domains[child].free_stamp);
    }
    // The keys are a function of the request and the children's free resources: when neither
    // changed since they were computed, they are the same (and so is the order).
    const bool keys_known =
        same_keys && dom.keys_asked == tree.asked_serial && dom.keys_stamp == children_stamp;
    for (size_t i = 0; same_keys && !keys_known && i < dom.children.size(); ++i) {
      // (NaN keys compare unequal: sorted again.)
      same_keys = RatioToFree(s, asked, tree.domains[dom.children[i]].free) == dom.sort_keys[i];
    }
    if (incremental) {
      dom.keys_asked = tree.asked_serial;
      dom.keys_stamp = children_stamp;
    }
    if (same_keys) {
      if (dom.level == max_depth) return;
      for (size_t i = 0; i < dom.children.size(); ++i) {
        SortTree(s, tree, tree.domains[d].children[i], asked, max_depth);
      }
      return;
    }
    std::vector<std::pair<double, int32_t>> keyed;
    keyed.reserve(dom.children.size());
    for (int32_t child : dom.children) {
      keyed.emplace_back(RatioToFree(s, asked, tree.domains[child].free), child);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return tree.domains[a.second].id < tree.domains[b.second].id;
    });
    bool reordered = false;
    for (size_t i = 0; i < keyed.size(); ++i) {
      reordered = reordered || tree.domains[d].children[i] != keyed[i].second;
      tree.domains[d].children[i] = keyed[i].second;
    }
    if (incremental) {
      if (reordered) dom.order_stamp = ++tree.stamps;
      dom.sort_keys.resize(keyed.size());
      for (size_t i = 0; i < keyed.size(); ++i) dom.sort_keys[i] = keyed[i].first;
    }
    if (tree.domains[d].level == max_depth) return;
    const std::vector<int32_t> children = tree.domains[d].children;
    for (int32_t child : children) SortTree(s, tree, child, asked, max_depth);
  }

  // SortTree when following the changes: the same keys, order and stamps, each key computed once
  // (SortTree computes them again to sort after the first differs), the children walked in place
  // and scratch vectors kept between calls. The same stable sort on the same input: the same
  // order.
  void SortTreeFollowing(const Session& s, Tree& tree, int32_t d, const Resources& asked,
                         int max_depth) {
    Domain& dom = tree.domains[static_cast<size_t>(d)];
    const size_t n = dom.children.size();
    if (n == 0) return;
    uint64_t children_stamp = 0;
    for (int32_t child : dom.children) {
      children_stamp =
          std::max(children_stamp, tree.domains[static_cast<size_t>(child)].free_stamp);
    }
    const bool keys_known = dom.sort_keys.size() == n && dom.keys_asked == tree.asked_serial &&
                            dom.keys_stamp == children_stamp;
    dom.keys_asked = tree.asked_serial;
    dom.keys_stamp = children_stamp;
    if (!keys_known) {
      std::vector<double>& keys = sort_keys_scratch_;
      keys.resize(n);
      bool same_keys = dom.sort_keys.size() == n;
      for (size_t i = 0; i < n; ++i) {
        keys[i] = RatioToFree(s, asked, tree.domains[static_cast<size_t>(dom.children[i])].free);
        // (NaN keys compare unequal: sorted again.)
        same_keys = same_keys && keys[i] == dom.sort_keys[i];
      }
      if (!same_keys) {
        std::vector<std::pair<double, int32_t>>& keyed = keyed_scratch_;
        keyed.clear();
        for (size_t i = 0; i < n; ++i) keyed.emplace_back(keys[i], dom.children[i]);
        auto fuller_first = [&](const auto& a, const auto& b) {
          if (a.first != b.first) return a.first > b.first;
          return tree.domains[static_cast<size_t>(a.second)].id <
                 tree.domains[static_cast<size_t>(b.second)].id;
        };
        // (SchedulerParams::topology_sort_skip_sorted: children already in the order of their new
        // keys are left as they are, which is what the stable sort would leave. Without a NaN key
        // the comparison is a strict weak order - keys descending, then ids ascending - and a
        // stable sort leaves a sequence sorted under a strict weak order unchanged; consecutive
        // pairs in order make the whole sequence sorted. A NaN key compares equal to every key,
        // which is no strict weak order: then the sort runs. A request asking for another number
        // of the same pods, as consecutive victim gangs placed again do, mostly keeps the order.)
        const bool sorted = s.params().topology_sort_skip_sorted &&
                            std::none_of(keyed.begin(), keyed.end(),
                                         [](const auto& k) { return std::isnan(k.first); }) &&
                            std::is_sorted(keyed.begin(), keyed.end(), fuller_first);
        if (!sorted) std::stable_sort(keyed.begin(), keyed.end(), fuller_first);
        bool reordered = false;
        for (size_t i = 0; i < n; ++i) {
          reordered = reordered || dom.children[i] != keyed[i].second;
          dom.children[i] = keyed[i].second;
        }
        if (reordered) {
          dom.order_stamp = ++tree.stamps;
          MarkSumDirty(tree, d);  // its sum is added again in the new order at the next call
        }
        dom.sort_keys.resize(n);
        for (size_t i = 0; i < n; ++i) dom.sort_keys[i] = keyed[i].first;
      }
    }
    if (dom.level == max_depth) return;
    for (size_t i = 0; i < n; ++i) {
      SortTreeFollowing(s, tree, tree.domains[static_cast<size_t>(d)].children[i], asked,
                        max_depth);
    }
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
  // A representative pod's counts per domain, followed through the node journal (FollowCounts).
  struct SignatureCounts {
    bool valid = false;
    uint64_t journal_generation = 0;
    size_t journal_position = 0;
    std::vector<int> node_value;        // per node: its count when last added
    std::vector<int64_t> domain_count;  // per domain
  };
  enum class AllocMode { kNotSet, kAll, kCounts };

  std::vector<Tree> trees_;
  std::unordered_map<std::string, size_t> tree_index_;
  // RequiredDomains' answers, per (tree, level), made on first use.
  std::map<std::pair<size_t, int>, NodeDomains> required_domains_;
  Pod test_;  // scratch representative pod (no allocation per node)
  // Scratch of SubsetNodes, kept between calls: the candidate nodes in the topology, and the same
  // as flags per node (all zero between calls).
  std::vector<NodeId> valid_;
  std::vector<char> valid_flag_;
  std::vector<Pod> signatures_;
  int signature_ = 0;
  std::vector<std::vector<std::pair<uint32_t, int>>> acc_cache_;  // per signature, per node
  std::unordered_map<int64_t, PreferredScores> scores_;
  // Per tree, per signature (SubsetNodes following the changes).
  std::vector<std::vector<SignatureCounts>> sig_counts_;
  // This SubsetNodes call: whether it follows the changes, its lowest common domain, and how
  // AllocOf reads the representative-pod counts.
  bool follow_ = false;
  int32_t scope_ = 0;
  AllocMode alloc_mode_ = AllocMode::kNotSet;
  int alloc_all_ = 0;
  const std::vector<int64_t>* alloc_counts_ = nullptr;
  std::vector<int32_t> level_domains_;                     // scratch
  std::vector<double> sort_keys_scratch_;                  // SortTreeFollowing's
  std::vector<std::pair<double, int32_t>> keyed_scratch_;  // SortTreeFollowing's
};

}  // namespace

void RegisterTopologyPlugin(PluginRegistry& r) {
  r.Register("topology", plugin_util::NoArguments<TopologyPlugin>());
}

}  // namespace gantry
