#include "binder/dra_step.h"

#include "util/json_fields.h"

namespace gantry::binder {

namespace {

using nlohmann::json;

constexpr int kConflictRetries = 5;

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
  if (!br.claim_allocations.is_array() || br.claim_allocations.empty()) return std::nullopt;
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
  return std::nullopt;
}

std::optional<std::string> DynamicResourcesStep::Rollback(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  auto it = attempt.state.find(Name());
  if (it == attempt.state.end() || !it->is_array()) return std::nullopt;
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
  if (errors.empty()) return std::nullopt;
  return errors;
}

}  // namespace gantry::binder
