// Kubernetes resource quantities and the pod-request arithmetic, in one place for every component
// that reads pods (the watch cache, the binder, the status controllers).
//
// A Quantity is held exactly, as a whole number of nano-units (1e-9 of the base unit: cores for
// cpu, bytes for memory, a count otherwise), so sums of many containers' requests do not drift.
// Like Kubernetes, an amount finer than one nano-unit rounds up to one, and reading it in coarser
// units (MilliValue, Value) rounds up too.
//
// Accepted text: <sign><digits>[.<digits>]<suffix> with a binary suffix (Ki Mi Gi Ti Pi Ei), a
// decimal one (n u m "" k M G T P E) or an exponent (e<int>, E<int>): "500m", "1Gi", "1.5", "1e3".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gantry::kube {

class Quantity {
 public:
  __extension__ typedef __int128 Nanos;

  Quantity() = default;
  static Quantity FromNanos(Nanos nanos) { return Quantity(nanos); }
  // Parses `text`; the error reads: malformed quantity "1GB".
  static Result<Quantity> Parse(std::string_view text);
  // A JSON string (parsed as above) or number (some sources write 2 for "2").
  static Result<Quantity> FromJson(const nlohmann::json& value);

  Nanos nanos() const { return nanos_; }
  bool negative() const { return nanos_ < 0; }
  bool zero() const { return nanos_ == 0; }
  // The amount in base units as a double ("500m" -> 0.5, "1Gi" -> 1073741824).
  double Value() const;
  // The amount in units of 1/`per_unit` (1000 for millicores), rounded up (towards +inf) and
  // saturated at the int64 range.
  int64_t CeilScaled(int64_t per_unit) const;
  // Canonical text in the shortest of the whole / milli / nano forms ("2", "500m", "1Gi" stays
  // "1073741824"), the form status fields are written in.
  std::string ToString() const;

  Quantity& operator+=(const Quantity& o);  // saturating
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend auto operator<=>(const Quantity&, const Quantity&) = default;

 private:
  explicit Quantity(Nanos n) : nanos_(n) {}
  Nanos nanos_ = 0;
};

// Resource name -> quantity, as in a ResourceList.
using ResourceQuantities = std::map<std::string, Quantity>;

// `into` += `add`, resource by resource.
void AddQuantities(ResourceQuantities& into, const ResourceQuantities& add);

// A ResourceList object ({"cpu": "2", "memory": "1Gi"}); absent (null pointer) -> empty. Errors
// name the entry: `<field>.cpu: malformed quantity "x"`, `<field>.memory: must not be negative`.
Result<ResourceQuantities> ParseResourceList(const nlohmann::json* list, const std::string& field);

// The effective requests of a pod spec, as Kubernetes schedules with them: the larger of
//  - the app containers' requests plus those of every restartable init container ("sidecar",
//    restartPolicy Always), and
//  - for each plain init container, its requests plus those of the sidecars started before it
//    (and each sidecar's own start: the sidecars up to and including it),
// resource by resource, plus spec.overhead. A container's requests default to its limits for
// resources with only a limit. Errors name the field (spec.initContainers[1].resources...).
Result<ResourceQuantities> PodSpecRequests(const nlohmann::json& spec);

}  // namespace gantry::kube
