// grove.io/v1alpha1 PodCliqueSet (and its older name PodGangSet): Grove's operator writes a
// scheduler.grove.io/v1alpha1 PodGang per gang and labels each pod with it (grove.io/podgang);
// the PodGroup follows the PodGang:
// - metadata from the default grouper applied to the PodGang (name pg-<podgang>-<uid>), its
//   spec.priorityClassName when set, then the top owner's labels and annotations where the
//   PodGang has none of its own (Dynamo's DynamoGraphDeployment -> PodCliqueSet metadata does
//   not reach the PodGang otherwise), and priority class / preemptibility / preemption delay /
//   topology read back from those labels and annotations;
// - a leaf sub-group per spec.podgroups[] (minMember: minReplicas, the pods it references, its
//   topologyConstraint.packConstraint), minMember the sum of the leaves';
// - a parent sub-group per spec.topologyConstraintGroupConfigs[] naming pod groups
//   (minSubGroup: how many it names), the named leaves under it;
// - the topology name from the PodGang's grove.io/topology-name (else kai.scheduler/topology)
//   annotation; a pack constraint without a topology name is an error.
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper {
namespace {

constexpr const char* kPodGangLabel = "grove.io/podgang";

// A pack constraint at `object`.topologyConstraint.packConstraint: nullopt when it sets neither
// level.
Result<std::optional<TopologyConstraint>> PackConstraint(const kube::Object& object,
                                                         const std::string& topology) {
  auto preferred = StringAtOpt(object, {"topologyConstraint", "packConstraint", "preferred"});
  if (!preferred.ok()) return Error{preferred.error()};
  auto required = StringAtOpt(object, {"topologyConstraint", "packConstraint", "required"});
  if (!required.ok()) return Error{required.error()};
  if (!preferred.value() && !required.value()) return std::optional<TopologyConstraint>{};
  if (topology.empty()) {
    return Error{"topology name cannot be empty when topology constraints are defined"};
  }
  return std::optional<TopologyConstraint>{
      TopologyConstraint{topology, required.value().value_or(""), preferred.value().value_or("")}};
}

// spec.podgroups[index] of the PodGang `gang` ("ns/name") as a leaf sub-group.
Result<SubGroupMetadata> Leaf(const kube::Object& pg, size_t index, const std::string& ns,
                              const std::string& gang, const std::string& topology) {
  auto name = StringAtOpt(pg, {"name"});
  if (!name.ok()) return Error{"failed to parse 'name' field. Err: " + name.error()};
  if (!name.value()) return Error{"missing required 'name' field"};
  auto min = IntAt(pg, {"minReplicas"});
  if (!min.ok()) return Error{"failed to parse 'minReplicas' field. Err: " + min.error()};
  if (!min.value()) return Error{"missing required 'minReplicas' field"};
  if (*min.value() <= 0) return Error{"invalid 'minReplicas' field. Must be greater than 0"};
  const kube::Object* refs = At(pg, {"podReferences"});
  if (refs == nullptr) return Error{"missing required 'podReferences' field"};
  if (!refs->is_array()) {
    return Error{"failed to parse 'podReferences' field. Err: podReferences is not a list"};
  }
  SubGroupMetadata sg{.name = *name.value(), .min_available = static_cast<int32_t>(*min.value())};
  for (size_t i = 0; i < refs->size(); ++i) {
    const kube::Object& ref = (*refs)[i];
    std::string at = std::to_string(index) + "].podReferences[" + std::to_string(i) + "]";
    if (!ref.is_object()) {
      std::string message = "invalid spec.podgroup[";
      message.append(at).append(" in PodGang ").append(gang);
      return Error{message};
    }
    auto ref_ns = StringAtOpt(ref, {"namespace"});
    auto ref_name = StringAtOpt(ref, {"name"});
    std::string failed = "failed to parse spec.podgroups[" + std::to_string(index) +
                         "].podreferences[" + std::to_string(i) + "] from PodGang " + gang +
                         ". Err: ";
    if (!ref_ns.ok()) return Error{failed + ref_ns.error()};
    if (!ref_ns.value()) return Error{failed + "missing required 'namespace' field"};
    if (!ref_name.ok()) return Error{failed + ref_name.error()};
    if (!ref_name.value()) return Error{failed + "missing required 'name' field"};
    if (*ref_ns.value() != ns) {
      return Error{"cross-namespace pod reference not allowed: pod " + *ref_ns.value() + "/" +
                   *ref_name.value() + " cannot be referenced from PodGang in namespace " + ns};
    }
    sg.pods.push_back(*ref_name.value());
  }
  auto topo = PackConstraint(pg, topology);
  if (!topo.ok()) {
    return Error{"failed to parse topology constraint from PodGang " + gang +
                 ". Err: " + topo.error()};
  }
  sg.topology = topo.value();
  return sg;
}

class GroveGrouper : public Grouper {
 public:
  explicit GroveGrouper(std::shared_ptr<const DefaultGrouper> d) : d_(std::move(d)) {}
  std::string Name() const override { return "Grove Grouper"; }

  Result<Metadata> Group(const kube::Object& top_owner, const kube::Object& pod,
                         const std::vector<kube::Object>&) const override {
    std::string ns = kube::NamespaceOf(pod);
    auto gang_name = Label(pod, kPodGangLabel);
    if (!gang_name) {
      return Error{std::string("label for podgang name (key: ") + kPodGangLabel +
                   ") not found in pod " + ns + "/" + kube::NameOf(pod)};
    }
    std::string where = "PodGang " + ns + "/" + *gang_name;
    auto got = d_->cluster().Get("scheduler.grove.io/v1alpha1", "PodGang", ns, *gang_name);
    if (!got.ok()) return Error{"failed to get " + where + ". Err: " + got.error->message};
    const kube::Object& gang = *got.value;

    auto md_or = d_->Group(gang, pod, {});
    if (!md_or.ok()) {
      return Error{"failed to get DefaultGrouper metadata for " + where +
                   ". Err: " + md_or.error()};
    }
    Metadata md = std::move(md_or).value();
    std::string topology;
    if (auto t = Annotation(gang, "grove.io/topology-name")) {
      topology = *t;
    } else if (auto k = Annotation(gang, kTopologyAnnotation)) {
      topology = *k;
    }
    auto gang_spec = At(gang, {"spec"});
    const kube::Object no_spec = kube::Object::object();
    const kube::Object& spec =
        gang_spec != nullptr && gang_spec->is_object() ? *gang_spec : no_spec;
    auto gang_topology = PackConstraint(spec, topology);
    if (!gang_topology.ok()) {
      return Error{"failed to apply topology constraints from " + where +
                   ". Err: failed to parse topology from PodGang, Err: " + gang_topology.error()};
    }
    if (gang_topology.value()) md.topology = *gang_topology.value();
    auto priority = StringAtOpt(gang, {"spec", "priorityClassName"});
    if (!priority.ok()) {
      return Error{"failed to get spec.priorityClassName from " + where +
                   ". Err: " + priority.error()};
    }
    if (priority.value()) md.priority_class = *priority.value();

    for (const auto& [k, v] : LabelsOf(top_owner)) md.labels.emplace(k, v);
    for (const auto& [k, v] : AnnotationsOf(top_owner)) md.annotations.emplace(k, v);
    auto from_owner = FromTopOwnerMetadata(md);
    if (!from_owner.ok()) {
      return Error{"failed to get metadata from top owner " + ns + "/" + *gang_name +
                   ". Err: " + from_owner.error()};
    }

    std::map<std::string, std::string> parent_of;
    std::vector<SubGroupMetadata> parents;
    if (const kube::Object* configs = At(gang, {"spec", "topologyConstraintGroupConfigs"})) {
      if (!configs->is_array()) {
        return Error{"failed to parse 'topologyConstraintGroupConfigs' field. Err: " + where +
                     ": spec.topologyConstraintGroupConfigs is not a list"};
      }
      for (size_t i = 0; i < configs->size(); ++i) {
        const kube::Object& config = (*configs)[i];
        if (!config.is_object()) {
          return Error{"invalid structure of spec.topologyConstraintGroupConfigs[" +
                       std::to_string(i) + "] in " + where};
        }
        auto parent = Parent(config, parent_of, topology);
        if (!parent.ok()) {
          return Error{"failed to parse topologyConstraintGroupConfig[" + std::to_string(i) +
                       "]: " + parent.error()};
        }
        if (parent.value()) parents.push_back(std::move(*parent.value()));
      }
    }

    std::vector<SubGroupMetadata> leaves;
    int32_t min_available = 0;
    if (const kube::Object* pgs = At(gang, {"spec", "podgroups"})) {
      if (!pgs->is_array()) {
        return Error{"failed to get spec.podgroups from " + where + ". Err: not a list"};
      }
      for (size_t i = 0; i < pgs->size(); ++i) {
        const kube::Object& pg = (*pgs)[i];
        if (!pg.is_object()) {
          return Error{"invalid structure of spec.podgroup[" + std::to_string(i) + "] in " + where};
        }
        auto leaf = Leaf(pg, i, ns, ns + "/" + *gang_name, topology);
        if (!leaf.ok()) {
          return Error{"failed to parse spec.podgroups[" + std::to_string(i) + "] from " + where +
                       ". Err: " + leaf.error()};
        }
        SubGroupMetadata sg = std::move(leaf).value();
        if (auto it = parent_of.find(sg.name); it != parent_of.end()) sg.parent = it->second;
        min_available += sg.min_available;
        leaves.push_back(std::move(sg));
      }
    }
    md.sub_groups = std::move(parents);
    for (auto& leaf : leaves) md.sub_groups.push_back(std::move(leaf));
    md.min_available = min_available;
    return md;
  }

 private:
  // KAI reads these back from the merged labels / annotations (a label on the top owner thus
  // overrides what the default grouper chose for the PodGang).
  static Result<bool> FromTopOwnerMetadata(Metadata& md) {
    if (auto it = md.labels.find(kPriorityLabel); it != md.labels.end()) {
      md.priority_class = it->second;
    }
    if (auto it = md.labels.find(kPreemptibilityLabel); it != md.labels.end()) {
      const std::string& p = it->second;
      if (p != "preemptible" && p != "non-preemptible" && !p.empty()) {
        return Error{"invalid preemptibility value: " + p};
      }
      md.preemptibility = p;
    }
    if (auto it = md.annotations.find(kPreemptionDelayAnnotation); it != md.annotations.end()) {
      // An invalid delay is only logged by KAI; the PodGroup keeps what it had.
      auto ns = ParseGoDuration(it->second);
      if (ns.ok() && ns.value() >= 0) md.preemption_delay = FormatGoDuration(ns.value());
    }
    auto annotation = [&](const char* key) {
      auto it = md.annotations.find(key);
      return it == md.annotations.end() ? std::string() : it->second;
    };
    if (md.topology.preferred.empty())
      md.topology.preferred = annotation(kTopologyPreferredAnnotation);
    if (md.topology.required.empty())
      md.topology.required = annotation(kTopologyRequiredAnnotation);
    if (md.topology.topology.empty()) md.topology.topology = annotation(kTopologyAnnotation);
    return true;
  }

  // A topologyConstraintGroupConfigs entry as a parent sub-group; nullopt when it names no pod
  // groups.
  static Result<std::optional<SubGroupMetadata>> Parent(
      const kube::Object& config, std::map<std::string, std::string>& parent_of,
      const std::string& topology) {
    auto name = StringAtOpt(config, {"name"});
    if (!name.ok()) return Error{"failed to parse 'name' field. Err: " + name.error()};
    if (!name.value()) return Error{"missing required 'name' field"};
    const kube::Object* names = At(config, {"podGroupNames"});
    if (names == nullptr) return std::optional<SubGroupMetadata>{};
    if (!names->is_array()) {
      return Error{"failed to parse 'podGroupNames' field. Err: podGroupNames is not a list"};
    }
    if (names->empty()) return std::optional<SubGroupMetadata>{};
    for (const auto& n : *names) {
      if (!n.is_string()) {
        return Error{"failed to parse 'podGroupNames' field. Err: an entry is not a string"};
      }
    }
    for (const auto& n : *names) parent_of[n.get<std::string>()] = *name.value();
    auto topo = PackConstraint(config, topology);
    if (!topo.ok()) {
      return Error{"failed to parse topology from topologyConstraintGroupConfig " + *name.value() +
                   ". Err: " + topo.error()};
    }
    return std::optional<SubGroupMetadata>{
        SubGroupMetadata{.name = *name.value(),
                         .min_sub_group = static_cast<int32_t>(names->size()),
                         .topology = topo.value()}};
  }

  std::shared_ptr<const DefaultGrouper> d_;
};

}  // namespace

void RegisterGrove(Hub& hub) {
  auto g = std::make_shared<GroveGrouper>(hub.default_ptr());
  hub.Register("grove.io", "v1alpha1", "PodGangSet", g);
  hub.Register("grove.io", "v1alpha1", "PodCliqueSet", g);
}

}  // namespace gantry::podgrouper
