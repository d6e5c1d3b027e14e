// Building core/v1 Events ("Scheduled", "FailedScheduling", "Evicted", ...) about an object.
// Create the result with Client::Create(resources::kEvents, NamespaceOf(event), event).
// Also the other record a component leaves on a pod: one status condition.
#pragma once

#include <chrono>
#include <string>

#include "kube/client.h"

namespace gantry::kube {

struct EventInfo {
  std::string type = "Normal";  // "Normal" or "Warning"
  std::string reason;           // UpperCamelCase, e.g. "Scheduled"
  std::string message;
  std::string component;  // source.component / reportingComponent, e.g. "kai-scheduler"
  std::string instance;   // reportingInstance (e.g. the pod name); optional
};

// An Event about `involved` (an object of `type`; its name, namespace, uid and resourceVersion
// are copied), timestamped `now`, in the object's namespace ("default" for cluster-scoped
// objects). Its name is unique per object and nanosecond.
Object MakeEvent(const ResourceType& type, const Object& involved, const EventInfo& info,
                 std::chrono::system_clock::time_point now);

// A strategic-merge patch of a pod's status subresource setting one condition (merged by its
// type): {"status":{"conditions":[{type, status, reason, message, lastTransitionTime}]}}.
// `status` is "True" or "False"; `now` is already formatted (FormatTime).
Object PodConditionPatch(const std::string& type, const std::string& status,
                         const std::string& reason, const std::string& message,
                         const std::string& now);

}  // namespace gantry::kube
