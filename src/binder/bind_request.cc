#include "binder/bind_request.h"

#include "kube/client.h"
#include "util/json_fields.h"

namespace gantry::binder {

bool BindRequest::Finished() const {
  if (status.phase == kPhaseSucceeded) return true;
  if (status.phase != kPhaseFailed) return false;
  return !backoff_limit.has_value() || status.failed_attempts >= *backoff_limit;
}

namespace {

Result<std::string> OptionalString(const nlohmann::json& o, const char* key, const char* path) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return std::string();
  if (!o[key].is_string()) return Error{std::string(path) + ": not a string"};
  return o[key].get<std::string>();
}

Result<std::optional<int>> OptionalInt(const nlohmann::json& o, const char* key, const char* path) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return std::optional<int>();
  if (!o[key].is_number_integer()) return Error{std::string(path) + ": not an integer"};
  return std::optional<int>(o[key].get<int>());
}

}  // namespace

Result<BindRequest> ParseBindRequest(const nlohmann::json& object) {
  BindRequest br;
  br.ns = kube::NamespaceOf(object);
  br.name = kube::NameOf(object);
  br.resource_version = kube::ResourceVersionOf(object);
  br.deleting = !kube::StringAt(object, {"metadata", "deletionTimestamp"}).empty();
  const std::string where = "BindRequest " + br.Key() + ": ";
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& spec =
      object.contains("spec") && object["spec"].is_object() ? object["spec"] : empty;
  const nlohmann::json& status =
      object.contains("status") && object["status"].is_object() ? object["status"] : empty;

#define GANTRY_TAKE(var, expr)                      \
  do {                                              \
    auto r_ = (expr);                               \
    if (!r_.ok()) return Error{where + r_.error()}; \
    (var) = std::move(r_).value();                  \
  } while (false)
  GANTRY_TAKE(br.pod_name, OptionalString(spec, "podName", "spec.podName"));
  GANTRY_TAKE(br.selected_node, OptionalString(spec, "selectedNode", "spec.selectedNode"));
  GANTRY_TAKE(br.received_resource_type,
              OptionalString(spec, "receivedResourceType", "spec.receivedResourceType"));
  GANTRY_TAKE(br.backoff_limit, OptionalInt(spec, "backoffLimit", "spec.backoffLimit"));
  if (spec.contains("receivedGPU") && spec["receivedGPU"].is_object()) {
    std::optional<int> count;
    GANTRY_TAKE(count, OptionalInt(spec["receivedGPU"], "count", "spec.receivedGPU.count"));
    br.received_gpu_count = count.value_or(0);
    GANTRY_TAKE(br.received_gpu_portion,
                OptionalString(spec["receivedGPU"], "portion", "spec.receivedGPU.portion"));
  }
  GANTRY_TAKE(br.status.phase, OptionalString(status, "phase", "status.phase"));
  GANTRY_TAKE(br.status.reason, OptionalString(status, "reason", "status.reason"));
  std::optional<int> failed;
  GANTRY_TAKE(failed, OptionalInt(status, "failedAttempts", "status.failedAttempts"));
  br.status.failed_attempts = failed.value_or(0);
#undef GANTRY_TAKE

  if (spec.contains("selectedGPUGroups")) {
    const auto& groups = spec["selectedGPUGroups"];
    if (!groups.is_array()) return Error{where + "spec.selectedGPUGroups: not a list"};
    for (const auto& g : groups) {
      if (!g.is_string()) return Error{where + "spec.selectedGPUGroups: not a list of strings"};
      br.selected_gpu_groups.push_back(g.get<std::string>());
    }
  }
  if (spec.contains("resourceClaimAllocations") && spec["resourceClaimAllocations"].is_array()) {
    br.resource_claim_allocations = static_cast<int>(spec["resourceClaimAllocations"].size());
    br.claim_allocations = spec["resourceClaimAllocations"];
  }
  if (spec.contains("extendedResourceClaimAllocation") &&
      !spec["extendedResourceClaimAllocation"].is_null()) {
    const auto& ext = spec["extendedResourceClaimAllocation"];
    if (!ext.is_object())
      return Error{where + "spec.extendedResourceClaimAllocation: not an object"};
    for (const char* list : {"deviceRequests", "containerMappings"}) {
      if (ext.contains(list) && !ext[list].is_null() && !ext[list].is_array()) {
        return Error{where + "spec.extendedResourceClaimAllocation." + list + ": not a list"};
      }
    }
    br.extended_claim_allocation = ext;
  }
  const auto& meta = object.contains("metadata") ? object["metadata"] : empty;
  if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array()) {
    for (const auto& ref : meta["ownerReferences"]) {
      if (ref.is_object() && StringOr(ref, "kind") == "Pod" &&
          StringOr(ref, "name") == br.pod_name && ref.contains("uid") && ref["uid"].is_string()) {
        br.owner_pod_uid = ref["uid"].get<std::string>();
      }
    }
  }
  if (br.pod_name.empty()) return Error{where + "spec.podName is missing"};
  if (br.selected_node.empty()) return Error{where + "spec.selectedNode is missing"};
  return br;
}

nlohmann::json StatusJson(const BindRequestStatus& status) {
  nlohmann::json s = nlohmann::json::object();
  if (!status.phase.empty()) s["phase"] = status.phase;
  if (!status.reason.empty()) s["reason"] = status.reason;
  if (status.failed_attempts != 0) s["failedAttempts"] = status.failed_attempts;
  return s;
}

}  // namespace gantry::binder
