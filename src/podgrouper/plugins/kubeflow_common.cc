#include "podgrouper/plugins/kubeflow_common.h"

#include "podgrouper/json_util.h"

namespace gantry::podgrouper {

Result<Metadata> KubeflowGroup(const DefaultGrouper& d, const kube::Object& top_owner,
                               const kube::Object& pod, const std::string& replica_specs,
                               const std::vector<std::string>& mandatory) {
  auto md = d.Group(top_owner, pod, {});
  if (!md.ok()) return md;
  auto min_available = IntAt(top_owner, {"spec", "runPolicy", "schedulingPolicy", "minAvailable"});
  if (!min_available.ok()) return Error{Describe(top_owner) + ": " + min_available.error()};
  if (min_available.value()) {
    md.value().min_available = static_cast<int32_t>(*min_available.value());
    return md;
  }
  std::string name = kube::NameOf(top_owner);
  const kube::Object* specs = At(top_owner, {"spec", replica_specs});
  if (specs == nullptr || !specs->is_object()) {
    return Error{"the type of the job " + name + " doesn't have a " + replica_specs +
                 " field. Please fix the replica field"};
  }
  for (const std::string& type : mandatory) {
    if (!specs->contains(type)) {
      return Error{"the type of the job " + name + " doesn't have a " + type +
                   " replica spec which is required. Please fix the replica field"};
    }
  }
  int64_t total = 0;
  for (auto it = specs->begin(); it != specs->end(); ++it) {
    auto replicas = IntAt(it.value(), {"replicas"});
    if (!replicas.ok()) {
      return Error{Describe(top_owner) + ": spec." + replica_specs + "." + it.key() + "." +
                   replicas.error()};
    }
    if (!replicas.value() || *replicas.value() == 0) {
      return Error{"the type of the job " + name + " doesn't allow for 0 " + it.key() +
                   " pods. Please fix the replica field"};
    }
    total += *replicas.value();
  }
  if (total <= 0) {
    return Error{"failed calculate number of pods for a distributed job " + name +
                 ". Must be greater than 0, but got " + std::to_string(total)};
  }
  md.value().min_available = static_cast<int32_t>(total);
  return md;
}

}  // namespace gantry::podgrouper
