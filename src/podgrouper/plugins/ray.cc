// ray.io RayCluster, RayJob and RayService (v1alpha1 and v1): one PodGroup per top owner with a
// "headgroup" sub-group (1 pod) and one per worker group (its minReplicas, else replicas, times
// numOfHosts; suspended or empty groups left out); minMember is their sum. RayJob and RayService
// read the RayCluster named in their status. Topology per sub-group comes from the group
// template's kai.scheduler/topology* annotations. The ray.io/priority-class-name label on the
// top owner names the priority class. A PodGroup created before sub-groups existed (one without
// them) keeps none, as KAI does.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

constexpr const char* kNodeGroupLabel = "ray.io/group";
constexpr const char* kHeadGroup = "headgroup";

Result<std::optional<TopologyConstraint>> TemplateTopology(const kube::Object& group_spec,
                                                           const std::string& group) {
  auto get = [&](const char* key) {
    return StringAtOpt(group_spec, {"template", "metadata", "annotations", key});
  };
  auto topology = get(kTopologyAnnotation);
  auto required = get(kTopologyRequiredAnnotation);
  auto preferred = get(kTopologyPreferredAnnotation);
  for (auto* r : {&topology, &required, &preferred}) {
    if (!r->ok()) return Error{group + ": " + r->error()};
  }
  std::string t = topology.value().value_or(""), req = required.value().value_or(""),
              pref = preferred.value().value_or("");
  if (req.empty() && pref.empty()) return std::optional<TopologyConstraint>{};
  if (t.empty()) {
    return Error{std::string("topology annotation (") + kTopologyAnnotation + ") is required for " +
                 group + " when topology placement annotations are set"};
  }
  return std::optional<TopologyConstraint>{TopologyConstraint{t, req, pref}};
}

Result<std::pair<int32_t, std::vector<SubGroupMetadata>>> MinAndSubGroups(
    const kube::Object& cluster) {
  int32_t min_replicas = 1;
  std::vector<SubGroupMetadata> sub_groups;
  std::optional<TopologyConstraint> head_topology;
  if (const kube::Object* head = At(cluster, {"spec", "headGroupSpec"}); head != nullptr) {
    auto t = TemplateTopology(*head, "headGroupSpec");
    if (!t.ok()) return Error{t.error()};
    head_topology = t.value();
  }
  sub_groups.push_back({.name = kHeadGroup, .min_available = 1, .topology = head_topology});
  const kube::Object* groups = At(cluster, {"spec", "workerGroupSpecs"});
  if (groups == nullptr || !groups->is_array()) return std::pair{min_replicas, sub_groups};
  for (size_t i = 0; i < groups->size(); ++i) {
    const kube::Object& g = (*groups)[i];
    if (const kube::Object* s = At(g, {"suspended"});
        s != nullptr && s->is_boolean() && s->get<bool>()) {
      continue;
    }
    auto desired = IntAt(g, {"replicas"});
    auto min = IntAt(g, {"minReplicas"});
    auto hosts = IntAt(g, {"numOfHosts"});
    for (auto* r : {&desired, &min, &hosts}) {
      if (!r->ok()) return Error{"spec.workerGroupSpecs[" + std::to_string(i) + "]." + r->error()};
    }
    int64_t want = desired.value().value_or(0), least = min.value().value_or(0);
    if (least > want) {
      return Error{
          "ray-cluster replicas for a workerGroupsSpec can't be less than minReplicas. "
          "Given " +
          std::to_string(want) + " replicas and " + std::to_string(least) +
          " minReplicas. Please fix the replicas field for group number " + std::to_string(i)};
    }
    if (least == 0 && want == 0) continue;
    int64_t num_hosts = hosts.value().value_or(1);
    auto group_min = static_cast<int32_t>((least > 0 ? least : want) * num_hosts);
    min_replicas += group_min;
    std::string name = kube::StringAt(g, {"groupName"});
    if (name.empty()) name = "worker-group-" + std::to_string(i);
    auto t = TemplateTopology(g, "workerGroupSpecs." + name);
    if (!t.ok()) return Error{t.error()};
    sub_groups.push_back({.name = name, .min_available = group_min, .topology = t.value()});
  }
  return std::pair{min_replicas, sub_groups};
}

class RayGrouper : public Grouper {
 public:
  // `cluster_name_paths`: where the RayCluster's name is in the top owner's status (empty: the
  // top owner is the RayCluster).
  RayGrouper(std::shared_ptr<const DefaultGrouper> d, std::string name,
             std::vector<std::vector<std::string>> cluster_name_paths)
      : d_(std::move(d)), name_(std::move(name)), paths_(std::move(cluster_name_paths)) {}
  std::string Name() const override { return name_; }

  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    ObjectPtr ray_cluster;
    if (!paths_.empty()) {
      std::string cluster_name;
      for (const auto& path : paths_) {
        const kube::Object* node = &top_owner;
        for (const auto& step : path) {
          node = node->is_object() && node->contains(step) ? &(*node)[step] : nullptr;
          if (node == nullptr) break;
        }
        if (node != nullptr && node->is_string()) {
          cluster_name = node->get<std::string>();
          break;
        }
      }
      if (cluster_name.empty()) {
        return Error{"failed to extract rayClusterName for " + kube::NamespaceOf(top_owner) + "/" +
                     kube::NameOf(top_owner) + " of kind " + kube::StringAt(top_owner, {"kind"}) +
                     ". Please make sure that the ray-operator is up and a rayCluster child-object "
                     "has been created"};
      }
      auto got = d_->cluster().Get(kube::StringAt(top_owner, {"apiVersion"}), "RayCluster",
                                   kube::NamespaceOf(top_owner), cluster_name);
      if (!got.ok()) return Error{got.error->message};
      ray_cluster = got.value;
    }
    const kube::Object& cluster = ray_cluster ? *ray_cluster : top_owner;
    auto md = d_->Group(top_owner, pod, {});
    if (!md.ok()) return md;
    auto counted = MinAndSubGroups(cluster);
    if (!counted.ok()) return Error{Describe(cluster) + ": " + counted.error()};
    md.value().min_available = counted.value().first;
    if (UseSubGroups(md.value().ns, md.value().name))
      md.value().sub_groups = counted.value().second;
    if (auto pc = Label(top_owner, "ray.io/priority-class-name")) md.value().priority_class = *pc;
    if (!md.value().sub_groups.empty()) {
      // A pod without its group label (or of an unknown group) joins no sub-group; KAI logs it.
      if (auto group = Label(pod, kNodeGroupLabel)) {
        for (auto& sg : md.value().sub_groups) {
          if (sg.name == *group) sg.pods.push_back(kube::NameOf(pod));
        }
      }
    }
    return md;
  }

 private:
  bool UseSubGroups(const std::string& ns, const std::string& name) const {
    auto existing = d_->cluster().Get("scheduling.run.ai/v2alpha2", "PodGroup", ns, name);
    if (!existing.ok()) return true;
    const kube::Object* sgs = At(*existing.value, {"spec", "subGroups"});
    return sgs != nullptr && sgs->is_array() && !sgs->empty();
  }

  std::shared_ptr<const DefaultGrouper> d_;
  std::string name_;
  std::vector<std::vector<std::string>> paths_;
};

}  // namespace

void RegisterRay(Hub& hub) {
  auto cluster = std::make_shared<RayGrouper>(hub.default_ptr(), "RayCluster Grouper",
                                              std::vector<std::vector<std::string>>{});
  auto job = std::make_shared<RayGrouper>(
      hub.default_ptr(), "RayJob Grouper",
      std::vector<std::vector<std::string>>{{"status", "rayClusterName"}});
  auto service = std::make_shared<RayGrouper>(
      hub.default_ptr(), "RayService Grouper",
      std::vector<std::vector<std::string>>{{"status", "activeServiceStatus", "rayClusterName"},
                                            {"status", "pendingServiceStatus", "rayClusterName"}});
  for (const char* version : {"v1alpha1", "v1"}) {
    hub.Register("ray.io", version, "RayCluster", cluster);
    hub.Register("ray.io", version, "RayJob", job);
    hub.Register("ray.io", version, "RayService", service);
  }
}

}  // namespace gantry::podgrouper
