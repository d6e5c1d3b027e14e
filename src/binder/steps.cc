#include "binder/steps.h"

#include <set>

#include "binder/dra_step.h"
#include "binder/gpu_sharing_step.h"
#include "binder/node_fit.h"
#include "util/json_fields.h"

namespace gantry::binder {

std::optional<StepError> BindSteps::PreBind(BindAttempt& attempt, size_t& completed,
                                            std::vector<std::string>& rollback_errors) const {
  completed = 0;
  for (const auto& step : steps_) {
    if (auto err = step->PreBind(attempt)) {
      rollback_errors = Rollback(attempt, completed);
      err->message = step->Name() + ": " + err->message;
      return err;
    }
    ++completed;
  }
  return std::nullopt;
}

void BindSteps::PostBind(BindAttempt& attempt) const {
  for (const auto& step : steps_) step->PostBind(attempt);
}

std::vector<std::string> BindSteps::Rollback(BindAttempt& attempt, size_t completed) const {
  std::vector<std::string> errors;
  for (size_t i = std::min(completed, steps_.size()); i-- > 0;) {
    if (auto err = steps_[i]->Rollback(attempt)) {
      errors.push_back(steps_[i]->Name() + ": " + *err);
    }
  }
  return errors;
}

std::optional<StepError> NodeResourcesStep::PreBind(BindAttempt& attempt) {
  std::vector<kube::ObjectPtr> pods = cache_.PodsOnNode(attempt.request.selected_node);
  // The extended resources the scheduler gave DRA devices for (KEP-5004).
  std::set<std::string> dra_backed;
  const nlohmann::json& ext = attempt.request.extended_claim_allocation;
  if (ext.is_object() && ext.contains("containerMappings") && ext["containerMappings"].is_array()) {
    for (const nlohmann::json& m : ext["containerMappings"]) {
      if (m.is_object()) dra_backed.insert(StringOr(m, "resourceName"));
    }
  }
  if (auto why = NodeFitError(attempt.pod, attempt.node, pods, &memo_, dra_backed)) {
    return StepError{*why};
  }
  return std::nullopt;
}

BindSteps DefaultSteps(std::shared_ptr<kube::Client> client, const BinderCache& cache,
                       std::shared_ptr<ReservationSync> sync, GpuSharingOptions gpu_sharing) {
  BindSteps steps;
  steps.Add(std::make_shared<GpuSharingStep>(client, std::move(gpu_sharing), std::move(sync)));
  steps.Add(std::make_shared<DynamicResourcesStep>(std::move(client)));
  steps.Add(std::make_shared<NodeResourcesStep>(cache));
  return steps;
}

BindSteps DefaultSteps(std::shared_ptr<kube::Client> client, const BinderCache& cache) {
  return DefaultSteps(std::move(client), cache, nullptr, GpuSharingOptions{});
}

}  // namespace gantry::binder
