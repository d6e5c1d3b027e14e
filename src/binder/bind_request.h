// KAI's BindRequest (scheduling.run.ai/v1alpha2) as the binder reads it: the scheduler's decision
// to put one pod on one node, and the status the binder reports back.
//
// Status, as Gantry writes it (KAI's phase names):
//   phase ""/Pending  not carried out yet; while retrying, failedAttempts counts the failed
//                     attempts so far and reason holds the last error
//   phase Succeeded   the pod is bound to selectedNode
//   phase Failed      given up, reason says why; failedAttempts = backoffLimit + 1: every retry
//                     failed too, or the failure is one retrying cannot fix (the pod is bound
//                     elsewhere or was replaced, the request is invalid), which forfeits the
//                     remaining attempts
// KAI's scheduler treats a request as failed when phase is Failed and failedAttempts >=
// backoffLimit (or backoffLimit is unset), so it reschedules the pod in both cases. An unset
// backoffLimit means no retries, as with KAI.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace gantry::binder {

inline constexpr const char* kPhasePending = "Pending";
inline constexpr const char* kPhaseSucceeded = "Succeeded";
inline constexpr const char* kPhaseFailed = "Failed";
// spec.receivedResourceType of a shared (fractional) GPU allocation.
inline constexpr const char* kReceivedTypeFraction = "Fraction";

struct BindRequestStatus {
  std::string phase;
  std::string reason;
  int failed_attempts = 0;
  friend bool operator==(const BindRequestStatus&, const BindRequestStatus&) = default;
};

struct BindRequest {
  std::string ns;
  std::string name;
  std::string resource_version;
  bool deleting = false;  // metadata.deletionTimestamp is set
  // spec
  std::string pod_name;
  std::string selected_node;
  std::string received_resource_type;  // "Regular", "Fraction", or empty
  int received_gpu_count = 0;
  std::string received_gpu_portion;  // decimal text, e.g. "0.50"
  std::vector<std::string> selected_gpu_groups;
  int resource_claim_allocations = 0;  // entries in spec.resourceClaimAllocations
  // spec.resourceClaimAllocations as written: [{name, allocation}] (DRA; see dra_step.h).
  nlohmann::json claim_allocations = nlohmann::json::array();
  // spec.extendedResourceClaimAllocation as written: {allocation, deviceRequests,
  // containerMappings} of the claim to create for the pod's DRA-backed extended resources
  // (KEP-5004; see dra_step.h); null when absent.
  nlohmann::json extended_claim_allocation = nullptr;
  std::optional<int> backoff_limit;
  // The uid of the pod in an ownerReference of kind Pod and name pod_name ("" when none): the
  // pod the scheduler decided about.
  std::string owner_pod_uid;
  BindRequestStatus status;

  // "namespace/name".
  std::string Key() const { return ns + "/" + name; }
  // Retries allowed after the first failed attempt.
  int Retries() const { return backoff_limit.value_or(0) > 0 ? *backoff_limit : 0; }
  // Succeeded, or Failed for good (KAI's rule: failedAttempts >= backoffLimit, or no limit):
  // nothing left to do.
  bool Finished() const;
};

// Reads a BindRequest object. Fails (naming the field) when podName or selectedNode is missing
// or a field has the wrong type.
Result<BindRequest> ParseBindRequest(const nlohmann::json& object);

// The JSON of a status, as written to the status subresource.
nlohmann::json StatusJson(const BindRequestStatus& status);

}  // namespace gantry::binder
