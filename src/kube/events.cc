#include "kube/events.h"

#include <cstdio>

#include "kube/time_format.h"

namespace gantry::kube {

Object MakeEvent(const ResourceType& type, const Object& involved, const EventInfo& info,
                 std::chrono::system_clock::time_point now) {
  std::string ns = type.namespaced ? NamespaceOf(involved) : "";
  std::string event_ns = ns.empty() ? "default" : ns;
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%llx", static_cast<unsigned long long>(nanos));
  std::string name = NameOf(involved);
  Object ref = {{"apiVersion", type.ApiVersion()}, {"kind", type.kind}, {"name", name}};
  if (!ns.empty()) ref["namespace"] = ns;
  if (std::string uid = UidOf(involved); !uid.empty()) ref["uid"] = uid;
  if (std::string rv = ResourceVersionOf(involved); !rv.empty()) ref["resourceVersion"] = rv;
  std::string ts = FormatTime(now);
  Object event = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"name", name + "." + suffix}, {"namespace", event_ns}}},
                  {"involvedObject", ref},
                  {"type", info.type},
                  {"reason", info.reason},
                  {"message", info.message},
                  {"source", {{"component", info.component}}},
                  {"reportingComponent", info.component},
                  {"reportingInstance", info.instance},
                  {"firstTimestamp", ts},
                  {"lastTimestamp", ts},
                  {"count", 1}};
  return event;
}

Object PodConditionPatch(const std::string& type, const std::string& status,
                         const std::string& reason, const std::string& message,
                         const std::string& now) {
  return Object{{"status",
                 {{"conditions", Object::array({{{"type", type},
                                                 {"status", status},
                                                 {"reason", reason},
                                                 {"message", message},
                                                 {"lastTransitionTime", now}}})}}}};
}

}  // namespace gantry::kube
