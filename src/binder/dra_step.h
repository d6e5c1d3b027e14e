// "dynamicresources": the binder step for DRA resource claims, KAI's way.
//
// The scheduler writes into a BindRequest, per resource claim of the pod, the devices it chose:
// spec.resourceClaimAllocations[] = {name: the pod's name for the claim
// (spec.resourceClaims[].name), allocation: a resource.k8s.io/v1 AllocationResult}. Before the
// pod is bound, for each entry:
//   - the claim is found through the pod (spec.resourceClaims[].resourceClaimName, or for a
//     template the claim status.resourceClaimStatuses names);
//   - its status gets the allocation, unless it already has one (a claim shared with pods that
//     run already keeps its devices), and the pod in status.reservedFor ({resource: pods, name,
//     uid}; not added twice);
//   - written with the status subresource, conditional on the resourceVersion read (a conflict
//     reads it again, a few times).
// A claim that already holds both is left untouched, so a repeated attempt is harmless.
//
// Rollback undoes only what this attempt wrote: it takes the pod out of reservedFor where it
// added it, and clears the allocation it set when no one else holds the claim by then.
//
// An entry without an allocation, or naming a claim the pod does not have, fails the request
// without retries; a claim not generated from its template yet, or missing, is a failed attempt
// (retried).
//
// DRA-backed extended resources (KEP-5004): spec.extendedResourceClaimAllocation = {allocation,
// deviceRequests, containerMappings} is the scheduler's "special claim" for the pod's extended
// resources that device classes back. After the claims above, the step
//   - finds the pod's claim of a previous attempt (annotated
//     resource.kubernetes.io/extended-resource-claim: "true", controlled by the pod: same name
//     and uid) or creates it: generateName <pod>-extended-resources-, that annotation, the
//     resource.kubernetes.io/delete-protection finalizer, the pod as controlling owner (blocking
//     its deletion), spec.devices.requests = deviceRequests;
//   - writes its status as for the claims above (allocation unless it has one, the pod in
//     reservedFor);
//   - sets the pod's status.extendedResourceClaimStatus = {resourceClaimName, requestMappings:
//     containerMappings}, which the kubelet reads to hand the devices to the containers.
// Rollback deletes that claim and clears the pod's extendedResourceClaimStatus. An entry without
// an allocation fails the request without retries.
#pragma once

#include <memory>
#include <string>

#include "binder/steps.h"
#include "kube/client.h"

namespace gantry::binder {

class DynamicResourcesStep : public BindStep {
 public:
  explicit DynamicResourcesStep(std::shared_ptr<kube::Client> client)
      : client_(std::move(client)) {}
  std::string Name() const override { return "dynamicresources"; }
  std::optional<StepError> PreBind(BindAttempt& attempt) override;
  std::optional<std::string> Rollback(BindAttempt& attempt) override;

 private:
  std::optional<StepError> BindExtendedClaim(BindAttempt& attempt);
  std::optional<std::string> RollbackExtendedClaim(BindAttempt& attempt);

  std::shared_ptr<kube::Client> client_;
};

}  // namespace gantry::binder
