#include "podgrouper/controller.h"

#include "podgrouper/json_util.h"
#include "podgrouper/owners.h"

namespace gantry::podgrouper {

static bool Skips(const kube::Object& object) {
  return Annotation(object, kSkipPodGrouperAnnotation) == "true";
}

Result<std::optional<Metadata>> Reconciler::Plan(const kube::Object& pod) const {
  if (kube::StringAt(pod, {"spec", "schedulerName"}) != options_.scheduler_name) {
    return std::optional<Metadata>{};
  }
  if (Skips(pod)) return std::optional<Metadata>{};
  const kube::Object* refs = At(pod, {"metadata", "ownerReferences"});
  bool owned = refs != nullptr && refs->is_array() && !refs->empty();
  if (!owned && Annotation(pod, kPodGroupAnnotation)) return std::optional<Metadata>{};
  auto owners = ResolveOwners(hub_.cluster(), pod);
  if (!owners.ok()) {
    if (At(pod, {"metadata", "deletionTimestamp"}) != nullptr) return std::optional<Metadata>{};
    return Error{owners.error()};
  }
  for (const kube::Object& owner : owners.value().chain) {
    if (Skips(owner)) return std::optional<Metadata>{};
  }
  const kube::Object& top = owners.value().top;
  auto [group, version] = SplitApiVersion(kube::StringAt(top, {"apiVersion"}));
  std::shared_ptr<const Grouper> plugin = hub_.For(group, version, kube::StringAt(top, {"kind"}));
  auto md = plugin->Group(top, pod, owners.value().chain);
  if (!md.ok()) return Error{md.error()};
  Metadata& m = md.value();
  if (!options_.node_pool_label_key.empty() && m.labels.count(options_.node_pool_label_key) == 0) {
    if (auto pool = Label(pod, options_.node_pool_label_key)) {
      m.labels[options_.node_pool_label_key] = *pool;
    }
  }
  return std::optional<Metadata>{std::move(m)};
}

ReconcileResult Reconciler::Reconcile(kube::Object pod) const {
  if (!pod.contains("apiVersion")) pod["apiVersion"] = "v1";
  if (!pod.contains("kind")) pod["kind"] = "Pod";
  std::string where = kube::NamespaceOf(pod) + "/" + kube::NameOf(pod);
  auto plan = Plan(pod);
  if (!plan.ok()) return {Outcome::kFailed, plan.error(), ""};
  if (!plan.value()) return {Outcome::kSkipped, "", ""};
  const Metadata& md = *plan.value();
  if (md.name.empty()) {
    return {Outcome::kFailed, "the PodGroup name computed for pod " + where + " is empty", ""};
  }
  ReconcileResult result{Outcome::kUnchanged, "", md.name};
  // The PodGroup as the cluster view has it (an informer cache in the live process: a stale
  // answer makes the write below conflict, and the pod is retried).
  auto existing = hub_.cluster().Get("scheduling.run.ai/v2alpha2", "PodGroup", md.ns, md.name);
  if (!existing.ok()) {
    if (existing.error->kind != ReadError::Kind::kNotFound) {
      return {Outcome::kFailed,
              "reading PodGroup " + md.ns + "/" + md.name + ": " + existing.error->message,
              md.name};
    }
    auto created = client_->Create(kube::resources::kPodGroups, md.ns, PodGroupObject(md),
                                   &kube::FieldFilter::Nothing());
    if (!created.ok()) {
      if (created.error().IsAlreadyExists() || created.error().IsConflict()) {
        return {Outcome::kConflict, "", md.name};
      }
      return {Outcome::kFailed,
              "creating PodGroup " + md.ns + "/" + md.name + " for pod " + where + ": " +
                  created.error().ToString(),
              md.name};
    }
    result.outcome = Outcome::kCreated;
  } else if (Skips(*existing.value)) {
    // Created and owned by someone else: leave it as it is, only point the pod at it.
  } else if (auto update = PodGroupUpdate(*existing.value, md, options_.node_pool_label_key,
                                          options_.queue_label_key)) {
    if (!update->contains("apiVersion")) (*update)["apiVersion"] = "scheduling.run.ai/v2alpha2";
    if (!update->contains("kind")) (*update)["kind"] = "PodGroup";
    auto updated = client_->Update(kube::resources::kPodGroups, md.ns, *update);
    if (!updated.ok()) {
      if (updated.error().IsConflict()) return {Outcome::kConflict, "", md.name};
      return {Outcome::kFailed,
              "updating PodGroup " + md.ns + "/" + md.name + ": " + updated.error().ToString(),
              md.name};
    }
    result.outcome = Outcome::kUpdated;
  }

  // The pod's annotation and sub-group label.
  std::string current_pg = Annotation(pod, kPodGroupAnnotation).value_or("");
  std::string current_sg = Label(pod, kSubGroupLabel).value_or("");
  const SubGroupMetadata* sg = md.FindSubGroupForPod(kube::NamespaceOf(pod), kube::NameOf(pod));
  std::string expected_sg = sg != nullptr ? sg->name : "";
  if (current_pg != md.name || current_sg != expected_sg) {
    kube::Object patch = {{"metadata", {{"annotations", {{kPodGroupAnnotation, md.name}}}}}};
    if (!expected_sg.empty()) patch["metadata"]["labels"] = {{kSubGroupLabel, expected_sg}};
    auto patched =
        client_->Patch(kube::resources::kPods, kube::NamespaceOf(pod), kube::NameOf(pod),
                       kube::PatchType::kMerge, patch, "", &kube::FieldFilter::Nothing());
    if (!patched.ok()) {
      if (patched.error().IsNotFound()) return {Outcome::kSkipped, "", md.name};
      return {
          Outcome::kFailed,
          "assigning pod " + where + " to PodGroup " + md.name + ": " + patched.error().ToString(),
          md.name};
    }
    if (result.outcome == Outcome::kUnchanged) result.outcome = Outcome::kUpdated;
  }
  return result;
}

}  // namespace gantry::podgrouper
