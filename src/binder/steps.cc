#include "binder/steps.h"

#include <cstdlib>
#include <set>

#include "binder/node_fit.h"

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
  if (auto why = NodeFitError(attempt.pod, attempt.node, pods)) return StepError{*why};
  return std::nullopt;
}

std::optional<StepError> GpuSharingStep::PreBind(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  if (br.received_resource_type != kReceivedTypeFraction) return std::nullopt;
  auto invalid = [](std::string message) { return StepError{std::move(message), false}; };
  if (br.selected_gpu_groups.empty()) {
    return invalid("a fractional GPU allocation without spec.selectedGPUGroups");
  }
  std::set<std::string> seen;
  for (const auto& g : br.selected_gpu_groups) {
    if (g.empty()) return invalid("an empty name in spec.selectedGPUGroups");
    if (!seen.insert(g).second) return invalid("GPU group " + g + " selected twice");
  }
  if (br.received_gpu_count > 0 &&
      static_cast<size_t>(br.received_gpu_count) != br.selected_gpu_groups.size()) {
    return invalid("spec.receivedGPU.count is " + std::to_string(br.received_gpu_count) + " but " +
                   std::to_string(br.selected_gpu_groups.size()) + " GPU groups are selected");
  }
  const std::string& portion = br.received_gpu_portion;
  char* end = nullptr;
  double p = portion.empty() ? 0 : std::strtod(portion.c_str(), &end);
  if (portion.empty() || end != portion.c_str() + portion.size() || !(p > 0 && p <= 1)) {
    return invalid("spec.receivedGPU.portion \"" + portion + "\" is not a number in (0, 1]");
  }
  return std::nullopt;
}

std::optional<StepError> DynamicResourcesStep::PreBind(BindAttempt& attempt) {
  if (attempt.request.resource_claim_allocations == 0) return std::nullopt;
  return StepError{"writing resource claim allocations is not supported yet", false};
}

BindSteps DefaultSteps(std::shared_ptr<kube::Client> /*client*/, const BinderCache& cache) {
  BindSteps steps;
  steps.Add(std::make_shared<GpuSharingStep>());
  steps.Add(std::make_shared<DynamicResourcesStep>());
  steps.Add(std::make_shared<NodeResourcesStep>(cache));
  return steps;
}

}  // namespace gantry::binder
