// predicates: per-node feasibility beyond resource fit, with Kubernetes' reasons:
//  - the pod does not ask for more than the largest node offers (pre-predicate);
//  - the queue's capacity for this pod on this node;
//  - node-type rules (legacy MIG, MIG strategies);
//  - free pod slots;
//  - node unschedulable;
//  - taints and tolerations (NoSchedule, NoExecute);
//  - node selector and required node affinity;
//  - host ports (Kubernetes' NodePorts): none of the pod's host ports used on the node by a pod
//    placed there, counting placements made so far in the session;
//  - the ConfigMaps the pod needs exist in its namespace (pre-predicate);
//  - required inter-pod affinity and anti-affinity, counting every pod placed on a node so far
//    in the session (including uncommitted placements) and existing pods' anti-affinity.
#include <algorithm>
#include <unordered_set>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"

namespace gantry {
namespace {

constexpr std::string_view kPodNumberExceeded = "node(s) pod number exceeded";
constexpr std::string_view kUnschedulable = "node(s) were unschedulable";
constexpr std::string_view kNodeAffinity = "node(s) didn't match Pod's node affinity/selector";
constexpr std::string_view kAffinity = "node(s) didn't match pod affinity rules";
constexpr std::string_view kAntiAffinity = "node(s) didn't match pod anti-affinity rules";
constexpr std::string_view kExistingAntiAffinity =
    "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr std::string_view kHostPorts =
    "node(s) didn't have free ports for the requested pod ports";

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (t.op == "Exists") return t.key.empty() || t.key == taint.key;
  return t.key == taint.key && t.value == taint.value;
}

bool MatchesTerm(const NodeSelectorTerm& term, const Labels& labels) {
  LabelSelector selector;
  selector.expressions = term.requirements;
  return selector.Matches(labels);
}

bool NamespaceMatches(const PodAffinityTerm& term, const Pod& owner, const Pod& other) {
  if (term.namespaces.empty()) return other.namespace_ == owner.namespace_;
  return std::find(term.namespaces.begin(), term.namespaces.end(), other.namespace_) !=
         term.namespaces.end();
}

// Topology values that pass or fail inter-pod (anti-)affinity for one pod, from the pods on nodes.
struct AffinityView {
  PodId pod = kNone;
  uint64_t epoch = ~0ULL;
  // For each affinity term: values of its key where a matching pod runs.
  std::vector<std::unordered_set<std::string>> affinity_domains;
  bool any_affinity_match = false;
  // For each anti-affinity term: values of its key where a matching pod runs.
  std::vector<std::unordered_set<std::string>> anti_domains;
  // (key, value) pairs forbidden by existing pods' anti-affinity that match this pod.
  std::vector<std::pair<std::string, std::string>> existing_forbidden;
};

enum class MigKind : uint8_t { kNone, kSingle, kMixed };

class PredicatesPlugin : public Plugin {
 public:
  std::string_view name() const override { return "predicates"; }

  void OnSessionOpen(Session& ssn) override {
    max_node_ = {};
    for (const Node& n : ssn.cluster().nodes) {
      max_node_.cpu_millis = std::max(max_node_.cpu_millis, n.allocatable.cpu_millis);
      max_node_.memory_bytes = std::max(max_node_.memory_bytes, n.allocatable.memory_bytes);
      max_node_.gpus = std::max(max_node_.gpus, n.allocatable.gpus);
      for (int i = 0; i < kMaxScalarResources; ++i) {
        max_node_.scalars[i] = std::max(max_node_.scalars[i], n.allocatable.scalars[i]);
      }
    }
    view_ = {};
    port_pods_.clear();
    for (PodId p = 0; p < static_cast<PodId>(ssn.cluster().pods.size()); ++p) {
      if (!ssn.cluster().pods[p].host_ports.empty()) port_pods_.push_back(p);
    }
    node_port_pods_.assign(ssn.cluster().nodes.size(), {});
    port_nodes_.clear();
    ports_epoch_ = ~0ULL;
    capacity_pod_ = kNone;
    plain_pod_ = kNone;
    has_anti_affinity_known_ = false;
    has_any_anti_affinity_ = false;
    const Cluster& cl = ssn.cluster();
    mig_.assign(cl.nodes.size(), MigKind::kNone);
    mig_enabled_.assign(cl.nodes.size(), 0);
    plain_node_.assign(cl.nodes.size(), 0);
    legacy_mig_pods_.assign(cl.nodes.size(), std::string());
    for (size_t n = 0; n < cl.nodes.size(); ++n) {
      const Node& node = cl.nodes[n];
      mig_enabled_[n] = IsMigEnabled(cl, node);
      const std::string& m = node.mig_strategy;
      if (mig_enabled_[n]) {
        mig_[n] = m == "mixed"    ? MigKind::kMixed
                  : m == "single" ? MigKind::kSingle
                                  : MigKind::kNone;
      }
      plain_node_[n] = !mig_enabled_[n] && node.dra_gpus <= 0 && !node.unschedulable &&
                       std::none_of(node.taints.begin(), node.taints.end(), [](const Taint& t) {
                         return t.effect == "NoSchedule" || t.effect == "NoExecute";
                       });
    }
    // Legacy MIG pods mark their node for the whole session (KAI never unmarks it).
    for (PodId p = 0; p < static_cast<PodId>(cl.pods.size()); ++p) {
      const Pod& pod = cl.pods[p];
      const PodState& st = ssn.pod(p);
      if (!pod.legacy_mig || !IsActiveUsed(st.status) || st.node == kNone) continue;
      std::string& list = legacy_mig_pods_[st.node];
      list += (list.empty() ? "" : " ") + pod.namespace_ + "/" + pod.name;
    }
    ssn.AddPrePredicateFn([this](Session& s, PodId p) { return PrePredicate(s, p); });
    ssn.AddPredicateFn(
        [this](Session& s, PodId p, NodeId n) { return Predicate(s, p, n); },
        {.batch = [this](Session& s, PodId p, std::vector<NodeId>& nodes) { Filter(s, p, nodes); },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }

 private:
  // KAI's pre-predicates that can fail here, each failing one as a line "<key>: <message>.\n"
  // under one heading. The key is that of KAI's predicate map (MaxNodePoolResources, ConfigMap),
  // not the session predicate's name.
  std::optional<std::string> PrePredicate(Session& s, PodId p) const {
    const Pod& pod = s.cluster().pods[p];
    std::string failures;
    if (auto message = MaxNodeResources(s, pod)) {
      failures += "MaxNodePoolResources: " + *message + ".\n";
    }
    if (!pod.config_maps.empty()) {
      if (auto message = MissingConfigMaps(s.cluster(), pod)) {
        failures += "ConfigMap: " + *message + ".\n";
      }
    }
    if (failures.empty()) return std::nullopt;
    return "Scheduling conditions were not met for pod " + pod.namespace_ + "/" + pod.name + ":\n" +
           failures;
  }

  // The pod asks for more of a resource than the largest node has.
  std::optional<std::string> MaxNodeResources(const Session& s, const Pod& pod) const {
    std::string what;
    double max = 0;
    std::string units;
    if (pod.request.gpus > max_node_.gpus) {
      what = "GPU", max = max_node_.gpus;
    } else if (pod.request.cpu_millis > max_node_.cpu_millis) {
      what = "CPU", max = max_node_.cpu_millis / 1000, units = "cores";
    } else if (pod.request.memory_bytes > max_node_.memory_bytes) {
      what = "memory", max = max_node_.memory_bytes / 1e9, units = "GB";
    } else {
      for (int i = 0; i < s.cluster().resource_names.size(); ++i) {
        if (pod.request.scalars[i] > max_node_.scalars[i]) {
          what = s.cluster().resource_names.Name(i);
          break;
        }
      }
    }
    if (what.empty()) return std::nullopt;
    std::string message = "The pod " + pod.namespace_ + "/" + pod.name +
                          " requires GPU: " + Humanize(pod.RequestedGpus(), 1) +
                          ", CPU: " + Humanize(pod.request.cpu_millis, 1000) +
                          " (cores), memory: " + Humanize(pod.request.memory_bytes, 1e9) +
                          " (GB). ";
    if (max == 0) {
      message += "No node in the default node-pool has " + what + " resources";
    } else {
      message += "Max " + what + " resources available in a single node in the default " +
                 "node-pool is topped at " + Humanize(max, 1);
      if (!units.empty()) message += " " + units;
    }
    return message;
  }

  // KAI's ConfigMap predicate: the pod's required ConfigMaps (Pod::config_maps) that do not
  // exist in its namespace, listed as Go prints a list of strings ("[a b]").
  static std::optional<std::string> MissingConfigMaps(const Cluster& c, const Pod& pod) {
    std::string missing;
    for (const std::string& name : pod.config_maps) {
      if (c.HasConfigMap(pod.namespace_, name)) continue;
      missing += (missing.empty() ? "" : " ") + name;
    }
    if (missing.empty()) return std::nullopt;
    return "Missing required configmaps: [" + missing + "]";
  }

  // Predicate on every node of `nodes`, removing those it gives a reason for. For a plain pod
  // (IsPlainPod) the queue capacity is the same on every node and, on plain nodes, only the pod
  // slots are left to check: both are read here without the rest of Predicate.
  void Filter(Session& s, PodId p, std::vector<NodeId>& nodes) {
    const Cluster& c = s.cluster();
    if (nodes.empty()) return;
    if (!IsPlainPod(c, p)) {
      std::erase_if(nodes, [&](NodeId n) { return Predicate(s, p, n).has_value(); });
      return;
    }
    RefreshCapacity(s, c.pods[p], p, nodes.front());
    if (!capacity_.schedulable) {
      nodes.clear();
      return;
    }
    std::erase_if(nodes, [&](NodeId n) {
      return plain_node_[n] ? NoPodSlot(s.node(n)) : Predicate(s, p, n).has_value();
    });
  }

  // No free pod slot on the node, counting those of releasing pods.
  static bool NoPodSlot(const NodeState& st) { return st.idle.pods + st.releasing.pods <= 0; }

  // The queue capacity for a pod changes only when something is placed or removed (and, for
  // GPU-memory requests, with the node's device memory).
  void RefreshCapacity(const Session& s, const Pod& pod, PodId p, NodeId n) {
    if (capacity_pod_ != p || capacity_epoch_ != s.placement_epoch() ||
        pod.gpu_kind == GpuRequestKind::kMemory) {
      capacity_pod_ = p;
      capacity_epoch_ = s.placement_epoch();
      capacity_ = s.IsTaskAllocationOverCapacity(p, n);
    }
  }

  std::optional<std::string> Predicate(Session& s, PodId p, NodeId n) {
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    const Node& node = c.nodes[n];

    RefreshCapacity(s, pod, p, n);
    if (!capacity_.schedulable) {
      return "node does not have enough capacity. Reason: " + capacity_.reason +
             ", Details: " + capacity_.message;
    }
    if (plain_node_[n] && IsPlainPod(c, p)) {
      // Of the checks below only the pod slots can fail (see IsPlainPod and plain_node_).
      if (NoPodSlot(s.node(n))) return std::string(kPodNumberExceeded);
      return std::nullopt;
    }
    if (auto reason = NodeTypeReason(c, pod, n)) return reason;
    if (pod.gpu_kind == GpuRequestKind::kMemory && node.gpu_memory_mib <= 0) {
      return std::string(
          "node is not a gpu node or the gpu memory count on the node was not "
          "synced yet");
    }
    if (NoPodSlot(s.node(n))) return std::string(kPodNumberExceeded);
    if (node.unschedulable) return std::string(kUnschedulable);
    for (const Taint& taint : node.taints) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
      bool tolerated = false;
      for (const Toleration& t : pod.tolerations) tolerated = tolerated || Tolerates(t, taint);
      if (!tolerated)
        return "node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}";
    }
    for (const auto& [key, value] : pod.node_selector.items()) {
      const std::string* have = node.labels.Get(key);
      if (!have || *have != value) return std::string(kNodeAffinity);
    }
    if (!pod.required_node_affinity.empty()) {
      bool any = false;
      for (const auto& term : pod.required_node_affinity)
        any = any || MatchesTerm(term, node.labels);
      if (!any) return std::string(kNodeAffinity);
    }
    if (!pod.host_ports.empty() && HostPortsTaken(s, p, n)) return std::string(kHostPorts);
    return InterPodAffinity(s, p, n);
  }

  // Files the pods with host ports (port_pods_) under the nodes they are placed on, when a
  // placement changed since the last time.
  void RefreshPorts(const Session& s) {
    if (ports_epoch_ == s.placement_epoch()) return;
    ports_epoch_ = s.placement_epoch();
    for (NodeId n : port_nodes_) node_port_pods_[n].clear();
    port_nodes_.clear();
    for (PodId o : port_pods_) {
      const PodState& st = s.pod(o);
      if (!IsActiveUsed(st.status) || st.node == kNone) continue;
      std::vector<PodId>& on_node = node_port_pods_[st.node];
      if (on_node.empty()) port_nodes_.push_back(st.node);
      on_node.push_back(o);
    }
  }

  // Kubernetes' NodePorts filter: a pod placed on the node (as KAI's node info counts them:
  // every active-used status, releasing and pipelined included) uses one of p's host ports.
  bool HostPortsTaken(const Session& s, PodId p, NodeId n) {
    RefreshPorts(s);
    const Cluster& c = s.cluster();
    for (PodId o : node_port_pods_[n]) {
      if (o == p) continue;
      for (const HostPort& used : c.pods[o].host_ports) {
        for (const HostPort& want : c.pods[p].host_ports) {
          if (want.ConflictsWith(used)) return true;
        }
      }
    }
    return false;
  }

  void RefreshView(const Session& s, PodId p) {
    if (view_.pod == p && view_.epoch == s.placement_epoch()) return;
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    view_ = {};
    view_.pod = p;
    view_.epoch = s.placement_epoch();
    view_.affinity_domains.resize(pod.pod_affinity.size());
    view_.anti_domains.resize(pod.pod_anti_affinity.size());
    for (PodId o = 0; o < static_cast<PodId>(c.pods.size()); ++o) {
      const PodState& ost = s.pod(o);
      if (o == p || !IsActiveUsed(ost.status) || ost.node == kNone) continue;
      const Pod& other = c.pods[o];
      const Labels& node_labels = c.nodes[ost.node].labels;
      // As Kubernetes: an existing pod counts for affinity only if it matches every term, and
      // only in the domains its node has labels for.
      bool matches_all = !pod.pod_affinity.empty();
      for (const auto& term : pod.pod_affinity) {
        matches_all = matches_all && NamespaceMatches(term, pod, other) &&
                      term.selector.Matches(other.labels);
      }
      if (matches_all) {
        for (size_t t = 0; t < pod.pod_affinity.size(); ++t) {
          if (const std::string* v = node_labels.Get(pod.pod_affinity[t].topology_key)) {
            view_.affinity_domains[t].insert(*v);
            view_.any_affinity_match = true;
          }
        }
      }
      for (size_t t = 0; t < pod.pod_anti_affinity.size(); ++t) {
        const auto& term = pod.pod_anti_affinity[t];
        if (!NamespaceMatches(term, pod, other) || !term.selector.Matches(other.labels)) continue;
        if (const std::string* v = node_labels.Get(term.topology_key)) {
          view_.anti_domains[t].insert(*v);
        }
      }
      for (const auto& term : other.pod_anti_affinity) {
        if (!NamespaceMatches(term, other, pod) || !term.selector.Matches(pod.labels)) continue;
        if (const std::string* v = node_labels.Get(term.topology_key)) {
          view_.existing_forbidden.emplace_back(term.topology_key, *v);
        }
      }
    }
  }

  std::optional<std::string> InterPodAffinity(const Session& s, PodId p, NodeId n) {
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    if (pod.pod_affinity.empty() && pod.pod_anti_affinity.empty()) {
      // Only existing pods' anti-affinity can reject this pod; skip the scan when nobody has any.
      if (!AnyAntiAffinity(c)) return std::nullopt;
    }
    RefreshView(s, p);
    const Labels& labels = c.nodes[n].labels;
    for (const auto& [key, value] : view_.existing_forbidden) {
      const std::string* v = labels.Get(key);
      if (v && *v == value) return std::string(kExistingAntiAffinity);
    }
    if (!pod.pod_affinity.empty()) {
      if (!view_.any_affinity_match) {
        // First pod of a self-affine group: allowed where the keys exist, if it matches itself.
        for (const auto& term : pod.pod_affinity) {
          if (!term.selector.Matches(pod.labels) || !labels.Has(term.topology_key)) {
            return std::string(kAffinity);
          }
        }
      } else {
        for (size_t t = 0; t < pod.pod_affinity.size(); ++t) {
          const std::string* v = labels.Get(pod.pod_affinity[t].topology_key);
          if (!v || !view_.affinity_domains[t].count(*v)) return std::string(kAffinity);
        }
      }
    }
    for (size_t t = 0; t < pod.pod_anti_affinity.size(); ++t) {
      const std::string* v = labels.Get(pod.pod_anti_affinity[t].topology_key);
      if (v && view_.anti_domains[t].count(*v)) return std::string(kAntiAffinity);
    }
    return std::nullopt;
  }

  // Whether any pod of the cluster has anti-affinity terms (computed on first use).
  bool AnyAntiAffinity(const Cluster& c) {
    if (!has_anti_affinity_known_) {
      has_anti_affinity_known_ = true;
      for (const Pod& o : c.pods)
        has_any_anti_affinity_ = has_any_anti_affinity_ || !o.pod_anti_affinity.empty();
    }
    return has_any_anti_affinity_;
  }

  // Whether pod p passes every check of Predicate after the capacity one on any plain node
  // (plain_node_) with a free pod slot: not legacy MIG, no MIG or GPU-memory request (the
  // node-type and GPU-memory rules), no node selector or affinity, no host ports, no inter-pod
  // affinity terms and no pod with anti-affinity. Kept for the last pod asked about (specs are
  // fixed in a session).
  bool IsPlainPod(const Cluster& c, PodId p) {
    if (plain_pod_ != p) {
      const Pod& pod = c.pods[p];
      plain_pod_ = p;
      plain_pod_answer_ = !pod.legacy_mig && pod.gpu_kind != GpuRequestKind::kMig &&
                          pod.gpu_kind != GpuRequestKind::kMemory && pod.node_selector.empty() &&
                          pod.required_node_affinity.empty() && pod.host_ports.empty() &&
                          pod.pod_affinity.empty() && pod.pod_anti_affinity.empty() &&
                          !AnyAntiAffinity(c);
    }
    return plain_pod_answer_;
  }

  Resources max_node_;
  std::vector<MigKind> mig_;
  // Per node: not MIG-enabled, no DRA GPUs, schedulable and without NoSchedule / NoExecute
  // taints (the node-type, unschedulable and taint checks pass there for a plain pod).
  std::vector<char> plain_node_;
  PodId plain_pod_ = kNone;
  bool plain_pod_answer_ = false;
  std::vector<char> mig_enabled_;
  std::vector<std::string> legacy_mig_pods_;  // per node, space-separated "ns/name"

  // KAI's MIG enablement: the mig-enabled label when present, else any MIG resource.
  static bool IsMigEnabled(const Cluster& c, const Node& node) {
    if (const std::string* v = node.labels.Get("node-role.kubernetes.io/mig-enabled")) {
      return *v == "true" || *v == "1" || *v == "True" || *v == "TRUE" || *v == "t" || *v == "T";
    }
    for (int s = 0; s < c.resource_names.size(); ++s) {
      if (node.allocatable.scalars[s] > 0 &&
          c.resource_names.Name(s).rfind("nvidia.com/mig-", 0) == 0) {
        return true;
      }
    }
    return false;
  }

  // KAI's node-type rules (NodeInfo.PredicateByNodeResourcesType).
  std::optional<std::string> NodeTypeReason(const Cluster& c, const Pod& pod, NodeId n) const {
    if (pod.legacy_mig) {
      return "Legacy MIG jobs cannot be scheduled on node " + c.nodes[n].name;
    }
    if (pod.IsCpuOnly()) return std::nullopt;
    // KAI v0.17 (KEP-5004) lets whole-GPU requests onto DRA nodes; shared GPUs stay off them.
    if (pod.IsSharedGpu() && c.nodes[n].dra_gpus > 0) {
      return std::string("fractional/shared GPU pods are not yet supported on DRA-only nodes");
    }
    const bool mig_pod = pod.gpu_kind == GpuRequestKind::kMig;
    if (!mig_enabled_[n]) {
      if (mig_pod) return std::string("MIG job cannot be scheduled on non-MIG node");
      return std::nullopt;
    }
    if (mig_pod && !legacy_mig_pods_[n].empty()) {
      return "MIG job cannot be scheduled on node with legacy MIG jobs: <[" + legacy_mig_pods_[n] +
             "]>";
    }
    const bool regular = pod.gpu_kind == GpuRequestKind::kWhole;
    if (mig_[n] == MigKind::kSingle && !regular) {
      return std::string("only whole gpu jobs can run on a node with MigStrategy='single'");
    }
    if (mig_[n] == MigKind::kMixed && !mig_pod) {
      return std::string("non MIG jobs cant run on a node with MigStrategy='mixed'");
    }
    return std::nullopt;
  }
  AffinityView view_;
  // Pods with host ports, and per node those placed there as of ports_epoch_ (RefreshPorts);
  // port_nodes_: the nodes with a non-empty entry.
  std::vector<PodId> port_pods_;
  std::vector<std::vector<PodId>> node_port_pods_;
  std::vector<NodeId> port_nodes_;
  uint64_t ports_epoch_ = ~0ULL;
  PodId capacity_pod_ = kNone;
  uint64_t capacity_epoch_ = 0;
  SchedulableResult capacity_;
  bool has_anti_affinity_known_ = false;
  bool has_any_anti_affinity_ = false;
};

}  // namespace

void RegisterPredicatesPlugin(PluginRegistry& r) {
  r.Register("predicates", plugin_util::NoArguments<PredicatesPlugin>());
}

}  // namespace gantry
