#include "binder/dra_step.h"

#include "util/json_fields.h"

namespace gantry::binder {

namespace {

using nlohmann::json;

constexpr int kConflictRetries = 5;
constexpr const char* kExtendedClaimAnnotation = "resource.kubernetes.io/extended-resource-claim";
constexpr const char* kDeleteProtectionFinalizer = "resource.kubernetes.io/delete-protection";
// attempt.state key of the special claim this attempt created or found: {claim}.
constexpr const char* kExtendedState = "dynamicresources/extended";

// Whether `claim` is the special claim of the pod (name, uid): annotated and controlled by it,
// and not being deleted.
bool IsExtendedClaimOf(const json& claim, const std::string& pod, const std::string& uid) {
  const json* meta = claim.is_object() && claim.contains("metadata") ? &claim["metadata"] : nullptr;
  if (meta == nullptr || !meta->contains("annotations") || !(*meta)["annotations"].is_object() ||
      StringOr((*meta)["annotations"], kExtendedClaimAnnotation) != "true" ||
      !meta->contains("ownerReferences") || !(*meta)["ownerReferences"].is_array() ||
      !StringOr(*meta, "deletionTimestamp").empty()) {  // one being deleted (rolled back)
    return false;
  }
  for (const json& ref : (*meta)["ownerReferences"]) {
    if (ref.is_object() && StringOr(ref, "name") == pod && StringOr(ref, "uid") == uid &&
        BoolOr(ref, "controller")) {
      return true;
    }
  }
  return false;
}

bool IsPodRef(const json& ref, const std::string& name, const std::string& uid) {
  return ref.is_object() && StringOr(ref, "resource") == "pods" &&
         StringOr(ref, "apiGroup") == "" && StringOr(ref, "name") == name &&
         StringOr(ref, "uid") == uid;
}

// The ResourceClaim behind the pod's claim `pod_claim`; "" with `why` set when there is none.
std::string ClaimName(const json& pod, const std::string& pod_claim, std::string& why,
                      bool& retryable) {
  const json empty = json::array();
  const json& claims = pod.contains("spec") && pod["spec"].contains("resourceClaims")
                           ? pod["spec"]["resourceClaims"]
                           : empty;
  for (const json& c : claims) {
    if (!c.is_object() || StringOr(c, "name") != pod_claim) continue;
    if (c.contains("resourceClaimName") && c["resourceClaimName"].is_string()) {
      return c["resourceClaimName"];
    }
    if (pod.contains("status") && pod["status"].contains("resourceClaimStatuses") &&
        pod["status"]["resourceClaimStatuses"].is_array()) {
      for (const json& st : pod["status"]["resourceClaimStatuses"]) {
        if (st.is_object() && StringOr(st, "name") == pod_claim &&
            st.contains("resourceClaimName") && st["resourceClaimName"].is_string()) {
          return st["resourceClaimName"];
        }
      }
    }
    why = "no resource claim generated yet for claim " + pod_claim + " of the pod";
    retryable = true;
    return "";
  }
  why = "claim " + pod_claim + " from bind request not found in the pod";
  retryable = false;
  return "";
}

}  // namespace

std::optional<StepError> DynamicResourcesStep::PreBind(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  const bool extended = !br.extended_claim_allocation.is_null();
  if ((!br.claim_allocations.is_array() || br.claim_allocations.empty()) && !extended) {
    return std::nullopt;
  }
  const std::string pod_key = br.ns + "/" + br.pod_name;
  const std::string uid = kube::UidOf(attempt.pod);
  json& state = attempt.state[Name()];
  state = json::array();  // [{claim, reserved: bool, allocated: bool}]
  auto fail = [&](StepError err) -> std::optional<StepError> {
    if (auto r = Rollback(attempt)) err.message += "; cleaning up: " + *r;
    return err;
  };

  for (const json& entry : br.claim_allocations) {
    const std::string pod_claim = entry.is_object() ? StringOr(entry, "name") : "";
    if (!entry.is_object() || !entry.contains("allocation") || !entry["allocation"].is_object()) {
      std::string message = "empty status for claim ";
      message += pod_claim;
      message += " in bind request for pod ";
      message += pod_key;
      return fail(StepError{std::move(message), false});
    }
    std::string why;
    bool retryable = true;
    const std::string claim = ClaimName(attempt.pod, pod_claim, why, retryable);
    if (claim.empty()) {
      why += " ";
      why += pod_key;
      return fail(StepError{std::move(why), retryable});
    }

    bool done = false;
    for (int tries = 0; !done; ++tries) {
      auto got = client_->Get(kube::resources::kResourceClaims, br.ns, claim);
      if (!got.ok()) {
        return fail(StepError{"reading resource claim " + br.ns + "/" + claim + ": " +
                              got.error().ToString()});
      }
      json object = std::move(got).value();
      json& status = object["status"];
      if (!status.is_object()) status = json::object();
      bool allocated = false;
      bool reserved = false;
      if (!status.contains("allocation") || status["allocation"].is_null()) {
        status["allocation"] = entry["allocation"];
        allocated = true;
      }
      if (!status.contains("reservedFor") || !status["reservedFor"].is_array()) {
        status["reservedFor"] = json::array();
      }
      bool present = false;
      for (const json& ref : status["reservedFor"])
        present = present || IsPodRef(ref, br.pod_name, uid);
      if (!present) {
        status["reservedFor"].push_back(
            {{"resource", "pods"}, {"name", br.pod_name}, {"uid", uid}});
        reserved = true;
      }
      if (!allocated && !reserved) break;  // already as wanted
      auto written = client_->UpdateStatus(kube::resources::kResourceClaims, br.ns, object);
      if (written.ok()) {
        state.push_back({{"claim", claim}, {"reserved", reserved}, {"allocated", allocated}});
        done = true;
      } else if (!written.error().IsConflict() || tries + 1 >= kConflictRetries) {
        std::string message = "failed to update claim ";
        message += claim;
        message += " for pod ";
        message += pod_key;
        message += ": ";
        message += written.error().ToString();
        return fail(StepError{std::move(message)});
      }
    }
  }
  if (extended) {
    if (auto err = BindExtendedClaim(attempt)) return fail(std::move(*err));
  }
  return std::nullopt;
}

std::optional<StepError> DynamicResourcesStep::BindExtendedClaim(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  const json& alloc = br.extended_claim_allocation;
  const std::string pod_key = br.ns + "/" + br.pod_name;
  const std::string uid = kube::UidOf(attempt.pod);
  if (!alloc.is_object() || !alloc.contains("allocation") || !alloc["allocation"].is_object()) {
    return StepError{"empty allocation in extended resource bind request for pod " + pod_key,
                     false};
  }
  // A claim of an earlier attempt of this pod is taken over, not made twice.
  std::string claim;
  auto listed = client_->List(kube::resources::kResourceClaims, br.ns);
  if (!listed.ok()) {
    return StepError{"failed to check for existing extended resource claim for pod " + pod_key +
                     ": " + listed.error().ToString()};
  }
  const json& items = listed.value().contains("items") ? listed.value()["items"] : json();
  if (items.is_array()) {
    for (const json& c : items) {
      if (IsExtendedClaimOf(c, br.pod_name, uid)) claim = kube::NameOf(c);
    }
  }
  if (claim.empty()) {
    json requests = alloc.contains("deviceRequests") && alloc["deviceRequests"].is_array()
                        ? alloc["deviceRequests"]
                        : json::array();
    json object = {{"apiVersion", "resource.k8s.io/v1"},
                   {"kind", "ResourceClaim"},
                   {"metadata",
                    {{"generateName", br.pod_name + "-extended-resources-"},
                     {"namespace", br.ns},
                     {"finalizers", json::array({kDeleteProtectionFinalizer})},
                     {"annotations", {{kExtendedClaimAnnotation, "true"}}},
                     {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                                       {"kind", "Pod"},
                                                       {"name", br.pod_name},
                                                       {"uid", uid},
                                                       {"controller", true},
                                                       {"blockOwnerDeletion", true}}})}}},
                   {"spec", {{"devices", {{"requests", std::move(requests)}}}}}};
    auto created = client_->Create(kube::resources::kResourceClaims, br.ns, object);
    if (!created.ok()) {
      return StepError{"failed to create extended resource claim for pod " + pod_key + ": " +
                       created.error().ToString()};
    }
    claim = kube::NameOf(created.value());
  }
  attempt.state[kExtendedState] = {{"claim", claim}};

  for (int tries = 0;; ++tries) {
    auto got = client_->Get(kube::resources::kResourceClaims, br.ns, claim);
    std::string error;
    if (got.ok()) {
      json object = std::move(got).value();
      json& status = object["status"];
      if (!status.is_object()) status = json::object();
      if (!status.contains("allocation") || status["allocation"].is_null()) {
        status["allocation"] = alloc["allocation"];
      }
      if (!status.contains("reservedFor") || !status["reservedFor"].is_array()) {
        status["reservedFor"] = json::array();
      }
      bool present = false;
      for (const json& ref : status["reservedFor"]) {
        present = present || IsPodRef(ref, br.pod_name, uid);
      }
      if (!present) {
        status["reservedFor"].push_back(
            {{"resource", "pods"}, {"name", br.pod_name}, {"uid", uid}});
      }
      auto written = client_->UpdateStatus(kube::resources::kResourceClaims, br.ns, object);
      if (written.ok()) break;
      if (!written.error().IsConflict() || tries + 1 >= kConflictRetries) {
        error = written.error().ToString();
      }
    } else {
      error = got.error().ToString();
    }
    if (!error.empty()) {
      std::string message = "failed to update status of extended resource claim ";
      message += claim;
      message += " for pod ";
      message += pod_key;
      message += ": ";
      message += error;
      return StepError{std::move(message)};
    }
  }

  // The kubelet finds the devices of each container through the pod's status.
  json mappings = alloc.contains("containerMappings") && alloc["containerMappings"].is_array()
                      ? alloc["containerMappings"]
                      : json::array();
  const json patch = {{"status",
                       {{"extendedResourceClaimStatus",
                         {{"resourceClaimName", claim}, {"requestMappings", mappings}}}}}};
  auto patched = client_->Patch(kube::resources::kPods, br.ns, br.pod_name, kube::PatchType::kMerge,
                                patch, "status");
  if (!patched.ok()) {
    return StepError{"failed to update pod status for extended resource claim for pod " + pod_key +
                     ": " + patched.error().ToString()};
  }
  return std::nullopt;
}

std::optional<std::string> DynamicResourcesStep::RollbackExtendedClaim(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  auto it = attempt.state.find(kExtendedState);
  if (it == attempt.state.end() || !it->is_object()) return std::nullopt;
  const std::string claim = StringOr(*it, "claim");
  std::string errors;
  auto deleted = client_->Delete(kube::resources::kResourceClaims, br.ns, claim);
  if (!deleted.ok() && !deleted.error().IsNotFound()) {
    errors = "deleting extended resource claim " + br.ns + "/" + claim + ": " +
             deleted.error().ToString();
  }
  const json patch = {{"status", {{"extendedResourceClaimStatus", nullptr}}}};
  auto patched = client_->Patch(kube::resources::kPods, br.ns, br.pod_name, kube::PatchType::kMerge,
                                patch, "status");
  if (!patched.ok() && !patched.error().IsNotFound()) {
    if (!errors.empty()) errors += "; ";
    errors += "clearing status.extendedResourceClaimStatus of pod " + br.ns + "/" + br.pod_name +
              ": " + patched.error().ToString();
  }
  if (errors.empty()) {
    attempt.state.erase(it);
    return std::nullopt;
  }
  return errors;
}

std::optional<std::string> DynamicResourcesStep::Rollback(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  std::optional<std::string> extended = RollbackExtendedClaim(attempt);
  auto it = attempt.state.find(Name());
  if (it == attempt.state.end() || !it->is_array()) return extended;
  const std::string uid = kube::UidOf(attempt.pod);
  std::string errors;
  json kept = json::array();
  for (const json& done : *it) {
    const std::string claim = done["claim"];
    bool undone = false;
    std::string error;
    for (int tries = 0; tries < kConflictRetries && !undone; ++tries) {
      auto got = client_->Get(kube::resources::kResourceClaims, br.ns, claim);
      if (!got.ok()) {
        if (got.error().IsNotFound()) {
          undone = true;  // gone: nothing of ours left
        } else {
          error = got.error().ToString();
        }
        break;
      }
      json object = std::move(got).value();
      json& status = object["status"];
      if (!status.is_object()) status = json::object();
      json refs = json::array();
      if (status.contains("reservedFor") && status["reservedFor"].is_array()) {
        for (const json& ref : status["reservedFor"]) {
          if (!(BoolOr(done, "reserved") && IsPodRef(ref, br.pod_name, uid))) {
            refs.push_back(ref);
          }
        }
      }
      const bool unchanged_refs =
          status.contains("reservedFor") && refs.size() == status["reservedFor"].size();
      const bool drop_allocation = BoolOr(done, "allocated") && refs.empty() &&
                                   status.contains("allocation") && !status["allocation"].is_null();
      if (unchanged_refs && !drop_allocation) {
        undone = true;
        break;
      }
      if (refs.empty()) {
        status.erase("reservedFor");
      } else {
        status["reservedFor"] = refs;
      }
      if (drop_allocation) status.erase("allocation");
      auto written = client_->UpdateStatus(kube::resources::kResourceClaims, br.ns, object);
      if (written.ok() || written.error().IsNotFound()) {
        undone = true;
      } else if (!written.error().IsConflict()) {
        error = written.error().ToString();
        break;
      } else {
        error = written.error().ToString();
      }
    }
    if (!undone) {
      if (!errors.empty()) errors += "; ";
      errors += "restoring resource claim ";
      errors += br.ns;
      errors += "/";
      errors += claim;
      errors += ": ";
      errors += error;
      kept.push_back(done);
    }
  }
  *it = kept;
  if (extended) errors = errors.empty() ? *extended : *extended + "; " + errors;
  if (errors.empty()) return std::nullopt;
  return errors;
}

}  // namespace gantry::binder
