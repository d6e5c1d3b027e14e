// KAI's generic Karta fallback (`--generic-karta-fallback`, on by default): a top owner of a kind
// no plugin knows is grouped by the run.ai/v1alpha1 `Karta` that describes that kind — the
// cluster-scoped Karta labelled run.ai/karta-group / -version / -kind with the kind's
// group/version/kind, whose structureDefinition.rootComponent.kind names it, and whose
// instructions.gangScheduling says how to gang its pods.
//
// The Karta's component tree (rootComponent, childComponents linked by ownerRef) gives the
// sizes: a component's scale is scaleDefinition.minReplicasPath (when > 0) else replicasPath,
// read from the top owner; a subtree's scale is the children's sum times the parent's scale
// (when both are set). Without any scale definition in the Karta, a subtree counts its leaf
// components (those with a specDefinition pod path). Pods are matched to components by
// podSelector.componentTypeSelector (keyPath on the pod, equal to `value` or present).
//
// gangScheduling.podGroup (preferred when set): one PodGroup "pg-<owner uid>-<name>" with a
// sub-group per listed component (minMember: its subtree's scale; the pod referenced when it
// matches a component in that subtree) and minSubGroup the number of sub-groups; without
// sub-groups, minMember is the root subtree's scale. Topology constraints are copied.
// gangScheduling.podGroups (KAI's earlier form): the pod's component (the only leaf, or the
// leaf whose selector it matches), the first member definition naming it or an ancestor whose
// filters the pod passes, the PodGroup named "pg-<owner uid>-<groupByKeyPaths values>" and
// minMember the member component's subtree scale.
//
// Not carried over (the Karta is rejected as invalid, or the grouping errors, naming it):
// components with instanceIdPath (several instances of one component) and JQ beyond the
// path subset of karta_path.h.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "podgrouper/grouper.h"

namespace gantry::podgrouper::karta {

inline constexpr const char* kGroupLabel = "run.ai/karta-group";
inline constexpr const char* kKindLabel = "run.ai/karta-kind";
inline constexpr const char* kVersionLabel = "run.ai/karta-version";

struct Component {
  std::string name;
  std::optional<std::string> owner_ref;
  std::string group, version, kind;  // the root's kind
  bool has_pod_definition = false;   // specDefinition with a pod template / spec path
  bool has_scale = false;
  std::optional<std::string> replicas_path, min_replicas_path;
  std::optional<std::string> instance_id_path;
  std::optional<std::string> type_key_path;  // podSelector.componentTypeSelector
  std::optional<std::string> type_value;
};

struct TopologySpec {
  std::string topology, required, preferred;
};

struct SubGroupMapping {
  std::string component;
  std::optional<TopologySpec> topology;
};

struct MemberDefinition {
  std::string component;
  std::vector<std::string> filters;
  std::vector<std::string> group_by_key_paths;
};

struct PodGroupDefinition {
  std::string name;
  std::vector<MemberDefinition> members;
};

// A Karta as the grouper reads it.
struct Karta {
  std::string name;
  bool deleting = false;
  std::vector<Component> components;  // the root first
  bool has_gang_scheduling = false;
  // gangScheduling.podGroup
  std::optional<std::string> pod_group_name;
  std::optional<TopologySpec> pod_group_topology;
  std::vector<SubGroupMapping> sub_groups;
  // gangScheduling.podGroups
  std::vector<PodGroupDefinition> pod_groups;

  // Parses a Karta object; errors name the Karta and the field.
  static Result<Karta> FromObject(const kube::Object& object);
  // What Karta's validator checks that matters here: unique component names, owner references
  // to known components, every path parses. The error names the Karta and the path.
  std::optional<std::string> Validate() const;
  const Component* Find(const std::string& name) const;
  std::vector<const Component*> ChildrenOf(const std::string& name) const;
  bool AnyScaleDefinition() const;
};

class KartaGrouper : public Grouper {
 public:
  KartaGrouper(Karta karta, std::shared_ptr<const DefaultGrouper> defaults)
      : karta_(std::move(karta)), defaults_(std::move(defaults)) {}
  std::string Name() const override { return "Karta Grouper"; }
  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>& owners) const override;

 private:
  Result<Metadata> GroupV2(const kube::Object& top_owner, const kube::Object& pod) const;
  Result<Metadata> GroupAlpha(const kube::Object& top_owner, const kube::Object& pod) const;
  Result<int32_t> SubtreeScale(const std::string& component, const kube::Object& top) const;
  Result<int32_t> ScaleByDefinition(const std::string& component, const kube::Object& top) const;
  Result<int32_t> ScaleByLeaves(const std::string& component) const;
  Result<bool> PodMatches(const Component& component, const kube::Object& pod) const;
  Result<bool> PodMatchesSubtree(const std::string& component, const kube::Object& pod) const;

  Karta karta_;
  std::shared_ptr<const DefaultGrouper> defaults_;
};

// The hub's fallback: the Karta grouper for a group/version/kind, or null (no Karta, several,
// the Karta CRD missing — then not asked again for a minute, as KAI). Not cached otherwise: a
// Karta edited or deleted takes effect on the next pod.
class KartaFallback {
 public:
  KartaFallback(Cluster& cluster, std::shared_ptr<const DefaultGrouper> defaults)
      : cluster_(cluster), defaults_(std::move(defaults)) {}
  std::shared_ptr<const Grouper> For(const std::string& group, const std::string& version,
                                     const std::string& kind) const;
  // The one valid Karta with gang-scheduling instructions for the kind; nullopt when none; an
  // error when several, or the list failed.
  Result<std::optional<Karta>> KartaFor(const std::string& group, const std::string& version,
                                        const std::string& kind) const;
  bool crd_missing() const;
  void ForgetMissingCrd() { retry_after_ns_.store(0); }

 private:
  Cluster& cluster_;
  std::shared_ptr<const DefaultGrouper> defaults_;
  mutable std::atomic<int64_t> retry_after_ns_{0};
};

}  // namespace gantry::podgrouper::karta
