// The DRA converters of convert.h (resource.k8s.io/v1): device classes, resource slices,
// resource claims and a pod's claims.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/convert.h"
#include "cache/convert_fields.h"

namespace gantry::cache {

namespace {

using convert_detail::At;
using convert_detail::BadField;
using convert_detail::Fail;
using convert_detail::Guard;
using convert_detail::IntField;
using convert_detail::List;
using convert_detail::Number;
using convert_detail::ParseQuantity;
using convert_detail::ResourceList;
using convert_detail::Shown;
using convert_detail::Str;
using convert_detail::StrMap;

// The driver a CEL selector pins: `device.driver == "x"` (or 'x'), nothing else.
std::string DriverOfSelector(const std::string& expression) {
  std::string e;
  for (char c : expression) {
    if (c != ' ' && c != '\t' && c != '\n') e += c;
  }
  const std::string prefix = "device.driver==";
  if (!e.starts_with(prefix) || e.size() < prefix.size() + 2) return "";
  const char quote = e[prefix.size()];
  if ((quote != '"' && quote != '\'') || e.back() != quote) return "";
  std::string driver = e.substr(prefix.size() + 1, e.size() - prefix.size() - 2);
  if (driver.find_first_of("\"'\\") != std::string::npos) return "";
  return driver;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A DNS subdomain (RFC 1123): dot-separated labels of lower-case letters, digits and '-', each
// starting and ending with a letter or digit; 253 characters at most.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find('.', start), s.size());
    const std::string_view label = s.substr(start, end - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    start = end + 1;
  }
  return true;
}

// The name part of a qualified name: 63 characters at most, letters, digits, '-', '_' and '.',
// starting and ending with a letter or digit.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

bool IsExtendedResourceName(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || name.find("kubernetes.io/") != std::string_view::npos ||
      name.starts_with("requests.")) {
    return false;
  }
  // Kubernetes checks "requests." + name as a qualified name (the quota form of the resource).
  const std::string domain = "requests." + std::string(name.substr(0, slash));
  return IsDnsSubdomain(domain) && IsQualifiedNamePart(name.substr(slash + 1));
}

std::vector<DraExtendedResource> DraExtendedResources(
    const std::vector<ContainerExtendedRequest>& requests,
    const std::map<std::string, std::string, std::less<>>& class_of) {
  // Resource name -> its container requests, in container order.
  std::map<std::string, std::vector<const ContainerExtendedRequest*>> by_resource;
  for (const ContainerExtendedRequest& r : requests) {
    if (r.count > 0 && class_of.count(r.resource)) by_resource[r.resource].push_back(&r);
  }
  std::vector<DraExtendedResource> out;
  for (const auto& [resource, list] : by_resource) {
    DraExtendedResource e;
    e.resource = resource;
    e.device_class = class_of.find(resource)->second;
    auto request_name = [](const ContainerExtendedRequest& r) {
      return "container-" + std::to_string(r.container) + "-request-" + std::to_string(r.key_index);
    };
    // Containers that run as long as the pod (app containers and sidecars): a request each.
    std::vector<std::pair<int32_t, ExtendedDeviceRequest>> long_lived;  // by container index
    std::vector<ExtendedResourceMapping> short_mappings;
    for (const ContainerExtendedRequest* r : list) {
      if (r->short_lived) continue;
      long_lived.push_back({r->container, {request_name(*r), r->count}});
      e.mappings.push_back({r->container_name, long_lived.back().second.name});
    }
    // Plain init containers run one at a time before the containers after them start: each
    // first reuses the devices of those (in container order), and asks for the rest.
    std::optional<ExtendedDeviceRequest> largest;
    std::vector<std::string> short_names;
    for (const ContainerExtendedRequest* r : list) {
      if (!r->short_lived) continue;
      int64_t covered = 0;
      bool done = false;
      for (const auto& [container, req] : long_lived) {
        if (container < r->container) continue;
        covered += req.count;
        short_mappings.push_back({r->container_name, req.name});
        if (covered >= r->count) {
          done = true;
          break;
        }
      }
      if (done) continue;
      ExtendedDeviceRequest own{request_name(*r), r->count - covered};
      short_mappings.push_back({r->container_name, own.name});
      short_names.push_back(own.name);
      if (!largest || largest->count < own.count) largest = own;
    }
    // The init containers share the largest of their requests.
    if (largest && short_names.size() > 1) {
      for (ExtendedResourceMapping& m : short_mappings) {
        if (std::find(short_names.begin(), short_names.end(), m.request) != short_names.end()) {
          m.request = largest->name;
        }
      }
    }
    if (largest) e.requests.push_back(*largest);
    for (const auto& lr : long_lived) e.requests.push_back(lr.second);
    e.mappings.insert(e.mappings.end(), short_mappings.begin(), short_mappings.end());
    out.push_back(std::move(e));
  }
  return out;
}

Result<DeviceClassRecord> ConvertDeviceClass(const Object& device_class) {
  return Guard<DeviceClassRecord>([&] {
    DeviceClassRecord r;
    r.name = Str(device_class, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    r.creation_ms = TimestampMs(device_class, {"metadata", "creationTimestamp"}).value_or(0);
    if (const Object* ern = At(device_class, {"spec", "extendedResourceName"});
        ern && !ern->is_null()) {
      if (!ern->is_string()) Fail("spec.extendedResourceName", "must be a string");
      r.extended_resource_name = ern->get<std::string>();
      if (!IsExtendedResourceName(r.extended_resource_name) ||
          r.extended_resource_name.starts_with(kDeviceClassResourcePrefix)) {
        Fail("spec.extendedResourceName",
             "must be a valid extended resource name (got \"" + r.extended_resource_name + "\")");
      }
    }
    const Object& selectors = List(device_class, {"spec", "selectors"}, "spec.selectors");
    for (const auto& sel : selectors) {
      const std::string driver = DriverOfSelector(Str(sel, {"cel", "expression"}));
      if (!driver.empty() && r.driver.empty()) r.driver = driver;
    }
    return r;
  });
}

Result<ResourceSliceRecord> ConvertResourceSlice(const Object& slice) {
  return Guard<ResourceSliceRecord>([&] {
    ResourceSliceRecord r;
    r.name = Str(slice, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
    r.driver = Str(slice, {"spec", "driver"});
    if (r.driver.empty()) Fail("spec.driver", "missing");
    r.pool = Str(slice, {"spec", "pool", "name"});
    if (r.pool.empty()) Fail("spec.pool.name", "missing");
    r.node_name = Str(slice, {"spec", "nodeName"});
    const Object* all = At(slice, {"spec", "allNodes"});
    r.all_nodes = all && all->is_boolean() && all->get<bool>();
    if (At(slice, {"spec", "nodeSelector"})) {
      Fail("spec.nodeSelector", "slices limited by a node selector are not supported");
    }
    const Object* per_device = At(slice, {"spec", "perDeviceNodeSelection"});
    if (per_device && per_device->is_boolean() && per_device->get<bool>()) {
      Fail("spec.perDeviceNodeSelection", "per-device node selection is not supported");
    }
    if (r.node_name.empty() && !r.all_nodes) {
      Fail("spec.nodeName", "a slice needs spec.nodeName or spec.allNodes");
    }
    const Object& devices = List(slice, {"spec", "devices"}, "spec.devices");
    if (devices.size() > kMaxDevicesPerSlice) {
      Fail("spec.devices", "lists " + std::to_string(devices.size()) +
                               " devices; a slice holds at most " +
                               std::to_string(kMaxDevicesPerSlice));
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < devices.size(); ++i) {
      const std::string name = Str(devices[i], {"name"});
      const std::string f = "spec.devices[" + std::to_string(i) + "].name";
      if (name.empty()) Fail(f, "missing");
      if (!seen.insert(name).second) Fail(f, "device \"" + name + "\" listed twice");
      r.devices.push_back(name);
    }
    return r;
  });
}

Result<std::vector<DeviceResult>> ConvertDeviceResults(const Object& results,
                                                       const std::string& field) {
  return Guard<std::vector<DeviceResult>>([&] {
    if (!results.is_array()) Fail(field, "must be a list");
    std::vector<DeviceResult> out;
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string f = field + "[" + std::to_string(i) + "]";
      DeviceResult d{Str(results[i], {"request"}), Str(results[i], {"driver"}),
                     Str(results[i], {"pool"}), Str(results[i], {"device"})};
      if (d.driver.empty()) Fail(f + ".driver", "missing");
      if (d.pool.empty()) Fail(f + ".pool", "missing");
      if (d.device.empty()) Fail(f + ".device", "missing");
      out.push_back(std::move(d));
    }
    return out;
  });
}

Result<ResourceClaimRecord> ConvertResourceClaim(const Object& claim) {
  return Guard<ResourceClaimRecord>([&] {
    ResourceClaimRecord r;
    ResourceClaim& rc = r.claim;
    rc.name = Str(claim, {"metadata", "name"});
    rc.namespace_ = Str(claim, {"metadata", "namespace"});
    if (rc.name.empty()) Fail("metadata.name", "missing");
    r.uid = Str(claim, {"metadata", "uid"});
    rc.labels = StrMap(claim, {"metadata", "labels"}, "metadata.labels");
    const Object& requests = List(claim, {"spec", "devices", "requests"}, "spec.devices.requests");
    for (size_t i = 0; i < requests.size(); ++i) {
      const Object& req = requests[i];
      const std::string f = "spec.devices.requests[" + std::to_string(i) + "]";
      const std::string name = Str(req, {"name"});
      if (name.empty()) Fail(f + ".name", "missing");
      if (At(req, {"firstAvailable"})) {
        Fail(f + ".firstAvailable", "prioritized lists of devices are not supported");
      }
      const Object* exactly = At(req, {"exactly"});
      if (!exactly) Fail(f + ".exactly", "missing");
      const std::string cls = Str(*exactly, {"deviceClassName"});
      if (cls.empty()) Fail(f + ".exactly.deviceClassName", "missing");
      if (!List(*exactly, {"selectors"}, f + ".exactly.selectors").empty()) {
        Fail(f + ".exactly.selectors", "device selectors are not supported");
      }
      const std::string mode = Str(*exactly, {"allocationMode"});
      if (!mode.empty() && mode != "ExactCount") {
        Fail(f + ".exactly.allocationMode", "only ExactCount is supported (got \"" + mode + "\")");
      }
      int32_t count = 1;
      if (auto c = Number(*exactly, {"count"}, f + ".exactly.count")) {
        // resource.k8s.io caps a claim's allocation at 32 devices (AllocationResultsMaxSize).
        count = IntField<int32_t>(*c, f + ".exactly.count", 1, kMaxDevicesPerClaim);
      }
      if (!rc.device_class.empty() && rc.device_class != cls) {
        Fail(f + ".exactly.deviceClassName",
             "requests of more than one device class in a claim are not supported (\"" +
                 rc.device_class + "\" and \"" + cls + "\")");
      }
      rc.device_class = cls;
      if (rc.count + count > kMaxDevicesPerClaim) {
        Fail(f + ".exactly.count", "the claim requests more than " +
                                       std::to_string(kMaxDevicesPerClaim) + " devices in all");
      }
      rc.count += count;
      for (int32_t k = 0; k < count; ++k) rc.device_requests.push_back(name);
    }
    if (rc.count == 0) Fail("spec.devices.requests", "no device requests");
    if (const Object* alloc = At(claim, {"status", "allocation"})) {
      r.allocated = true;
      const Object* results = At(*alloc, {"devices", "results"});
      auto devices = ConvertDeviceResults(results ? *results : Object::array(),
                                          "status.allocation.devices.results");
      if (!devices.ok()) throw BadField{devices.error()};
      r.results = std::move(devices).value();
    }
    const Object& reserved = List(claim, {"status", "reservedFor"}, "status.reservedFor");
    for (const auto& ref : reserved) {
      r.reserved_for.push_back({Str(ref, {"resource"}), Str(ref, {"name"}), Str(ref, {"uid"})});
    }
    return r;
  });
}

std::vector<ContainerExtendedRequest> ContainerExtendedRequests(const Object& spec) {
  std::vector<ContainerExtendedRequest> out;
  int32_t index = 0;
  for (const char* list : {"initContainers", "containers"}) {
    const bool init = std::string_view(list) == "initContainers";
    const Object& containers = List(spec, {list}, std::string("spec.") + list);
    for (size_t c = 0; c < containers.size(); ++c, ++index) {
      const Object* requests = At(containers[c], {"resources", "requests"});
      if (!requests || !requests->is_object()) continue;
      int32_t key_index = 0;  // nlohmann's objects iterate their keys in byte order
      for (const auto& [name, value] : requests->items()) {
        const int32_t j = key_index++;
        if (!IsExtendedResourceName(name) && !name.starts_with(kDeviceClassResourcePrefix)) {
          continue;
        }
        const std::string field =
            std::string("spec.") + list + "[" + std::to_string(c) + "].resources.requests." + name;
        std::optional<double> q;
        if (value.is_string()) q = ParseQuantity(value.get<std::string>());
        if (value.is_number()) q = value.get<double>();
        if (!q) Fail(field, "malformed quantity");
        // Kubernetes keeps extended resources whole; a fraction or nothing asks for no device.
        if (*q <= 0 || *q != std::floor(*q)) continue;
        if (*q > static_cast<double>(kMaxDevicesPerClaim)) {
          Fail(field, "asks for more than " + std::to_string(kMaxDevicesPerClaim) + " devices");
        }
        ContainerExtendedRequest r;
        r.container = index;
        r.container_name = Str(containers[c], {"name"});
        r.short_lived = init && Str(containers[c], {"restartPolicy"}) != "Always";
        r.resource = name;
        r.count = static_cast<int64_t>(*q);
        r.key_index = j;
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

Result<std::vector<PodClaimRef>> ConvertPodClaims(const Object& pod) {
  return Guard<std::vector<PodClaimRef>>([&] {
    std::vector<PodClaimRef> out;
    const Object& claims = List(pod, {"spec", "resourceClaims"}, "spec.resourceClaims");
    const Object& statuses =
        List(pod, {"status", "resourceClaimStatuses"}, "status.resourceClaimStatuses");
    for (size_t i = 0; i < claims.size(); ++i) {
      const std::string f = "spec.resourceClaims[" + std::to_string(i) + "]";
      PodClaimRef ref;
      ref.name = Str(claims[i], {"name"});
      if (ref.name.empty()) Fail(f + ".name", "missing");
      ref.claim_name = Str(claims[i], {"resourceClaimName"});
      if (ref.claim_name.empty()) {
        if (Str(claims[i], {"resourceClaimTemplateName"}).empty()) {
          Fail(f, "names neither resourceClaimName nor resourceClaimTemplateName");
        }
        ref.from_template = true;
        for (const auto& st : statuses) {
          if (Str(st, {"name"}) == ref.name) ref.claim_name = Str(st, {"resourceClaimName"});
        }
      }
      out.push_back(std::move(ref));
    }
    return out;
  });
}
}  // namespace gantry::cache
