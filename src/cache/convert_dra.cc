// The DRA converters of convert.h (resource.k8s.io/v1): device classes, resource slices,
// resource claims and a pod's claims.
#include <algorithm>
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

}  // namespace

Result<DeviceClassRecord> ConvertDeviceClass(const Object& device_class) {
  return Guard<DeviceClassRecord>([&] {
    DeviceClassRecord r;
    r.name = Str(device_class, {"metadata", "name"});
    if (r.name.empty()) Fail("metadata.name", "missing");
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
