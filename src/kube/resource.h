// Addressing Kubernetes resources: a ResourceType names an API group, version and plural
// resource, and whether it lives in namespaces; it builds the REST paths the client uses.
// Well-known types (core, coordination, and KAI's CRDs) are in gantry::kube::resources.
#pragma once

#include <string>
#include <string_view>

namespace gantry::kube {

struct ResourceType {
  std::string group;     // "" for the core API ("v1" at /api)
  std::string version;   // "v1", "v2alpha2", ...
  std::string resource;  // plural, lower case: "pods", "podgroups"
  std::string kind;      // "Pod", "PodGroup"
  bool namespaced = true;

  // "v1" for core, otherwise "group/version" (an object's apiVersion field).
  std::string ApiVersion() const;
  // "/api/v1" or "/apis/group/version".
  std::string GroupVersionPath() const;
  // The collection: ".../namespaces/{ns}/{resource}", or ".../{resource}" when `ns` is empty
  // (all namespaces) or the resource is cluster-scoped.
  std::string CollectionPath(std::string_view ns) const;
  // One object, optionally a subresource of it: ".../{resource}/{name}[/{subresource}]".
  std::string ObjectPath(std::string_view ns, std::string_view name,
                         std::string_view subresource = "") const;
  // "pods", or "podgroups.scheduling.run.ai" (for messages).
  std::string Describe() const;
};

namespace resources {
inline const ResourceType kPods{"", "v1", "pods", "Pod", true};
inline const ResourceType kNodes{"", "v1", "nodes", "Node", false};
inline const ResourceType kNamespaces{"", "v1", "namespaces", "Namespace", false};
inline const ResourceType kEvents{"", "v1", "events", "Event", true};
inline const ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline const ResourceType kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses",
                                           "PriorityClass", false};
inline const ResourceType kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false};
// DRA (dynamic resource allocation), GA as resource.k8s.io/v1 in Kubernetes 1.34.
inline const ResourceType kResourceClaims{"resource.k8s.io", "v1", "resourceclaims",
                                          "ResourceClaim", true};
inline const ResourceType kResourceSlices{"resource.k8s.io", "v1", "resourceslices",
                                          "ResourceSlice", false};
inline const ResourceType kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", "DeviceClass",
                                         false};
// KAI Scheduler's custom resources.
inline const ResourceType kQueues{"scheduling.run.ai", "v2", "queues", "Queue", false};
inline const ResourceType kPodGroups{"scheduling.run.ai", "v2alpha2", "podgroups", "PodGroup",
                                     true};
inline const ResourceType kBindRequests{"scheduling.run.ai", "v1alpha2", "bindrequests",
                                        "BindRequest", true};
inline const ResourceType kTopologies{"kai.scheduler", "v1alpha1", "topologies", "Topology", false};
}  // namespace resources

// Percent-encodes a query value (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view value);

}  // namespace gantry::kube
