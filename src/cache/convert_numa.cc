// NUMA objects: NodeResourceTopology (topology.node.k8s.io/v1alpha2) and the observed-placement
// pod annotation, into model/numa.h (see convert.h for the rules).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "cache/convert.h"
#include "cache/convert_fields.h"
#include "kube/quantity.h"

namespace gantry::cache {

namespace {

using convert_detail::At;
using convert_detail::Fail;
using convert_detail::Guard;
using convert_detail::List;
using convert_detail::Str;

// An amount in the model's units: cpu in millicores, everything else in base units, rounded up.
double Amount(const Object& value, const std::string& resource, const std::string& field) {
  auto q = kube::Quantity::FromJson(value);
  if (!q.ok()) Fail(field, q.error());
  if (q.value().negative()) Fail(field, "must not be negative (got " + value.dump() + ")");
  return static_cast<double>(q.value().CeilScaled(resource == "cpu" ? 1000 : 1));
}

// The number a zone name ends with ("node-3" -> 3), or -1 when it ends with no digit.
long long ZoneNumber(const std::string& id) {
  size_t b = id.size();
  while (b > 0 && std::isdigit(static_cast<unsigned char>(id[b - 1]))) --b;
  if (b == id.size() || id.size() - b > 18) return -1;
  return std::stoll(id.substr(b));
}

NumaPolicy PolicyOf(const std::string& value, const std::string& field) {
  if (value == "none") return NumaPolicy::kNone;
  if (value == "best-effort") return NumaPolicy::kBestEffort;
  if (value == "restricted") return NumaPolicy::kRestricted;
  if (value == "single-numa-node") return NumaPolicy::kSingleNumaNode;
  Fail(field, "must be none, best-effort, restricted or single-numa-node (got \"" + value + "\")");
}

NumaScope ScopeOf(const std::string& value, const std::string& field) {
  if (value == "container") return NumaScope::kContainer;
  if (value == "pod") return NumaScope::kPod;
  Fail(field, "must be container or pod (got \"" + value + "\")");
}

// The deprecated topologyPolicies value, which names policy and scope together.
void LegacyPolicy(const std::string& value, const std::string& field, NumaTopology& t) {
  struct Row {
    const char* name;
    NumaPolicy policy;
    NumaScope scope;
  };
  static constexpr Row kRows[] = {
      {"SingleNUMANodePodLevel", NumaPolicy::kSingleNumaNode, NumaScope::kPod},
      {"SingleNUMANodeContainerLevel", NumaPolicy::kSingleNumaNode, NumaScope::kContainer},
      {"RestrictedPodLevel", NumaPolicy::kRestricted, NumaScope::kPod},
      {"RestrictedContainerLevel", NumaPolicy::kRestricted, NumaScope::kContainer},
      {"Restricted", NumaPolicy::kRestricted, NumaScope::kContainer},
      {"BestEffortPodLevel", NumaPolicy::kBestEffort, NumaScope::kPod},
      {"BestEffortContainerLevel", NumaPolicy::kBestEffort, NumaScope::kContainer},
      {"BestEffort", NumaPolicy::kBestEffort, NumaScope::kContainer},
      {"None", NumaPolicy::kNone, NumaScope::kContainer},
  };
  for (const Row& r : kRows) {
    if (value == r.name) {
      t.policy = r.policy;
      t.scope = r.scope;
      return;
    }
  }
  std::string names;
  for (const Row& r : kRows) names += std::string(names.empty() ? "" : ", ") + r.name;
  Fail(field, "must be one of " + names + " (got \"" + value + "\")");
}

// A string field that must be present.
std::string Required(const Object& o, const char* key, const std::string& field) {
  const Object* v = At(o, {key});
  if (v == nullptr) Fail(field, "missing");
  if (!v->is_string()) Fail(field, "must be a string");
  std::string s = v->get<std::string>();
  if (s.empty()) Fail(field, "must not be empty");
  return s;
}

}  // namespace

Result<NodeTopologyRecord> ConvertNodeResourceTopology(const Object& nrt) {
  return Guard<NodeTopologyRecord>([&] {
    NodeTopologyRecord rec;
    rec.node_name = Str(nrt, {"metadata", "name"});
    if (rec.node_name.empty()) Fail("metadata.name", "missing");
    NumaTopology t;
    std::set<std::string> ids;
    const Object& zones = List(nrt, {"zones"}, "zones");
    for (size_t i = 0; i < zones.size(); ++i) {
      const std::string f = "zones[" + std::to_string(i) + "]";
      if (!zones[i].is_object()) Fail(f, "must be an object");
      const std::string name = Required(zones[i], "name", f + ".name");
      if (!ids.insert(name).second) Fail(f + ".name", "zone \"" + name + "\" is listed twice");
      if (Required(zones[i], "type", f + ".type") != "Node") continue;
      NumaZone zone;
      zone.id = name;
      const Object& resources = List(zones[i], {"resources"}, f + ".resources");
      for (size_t r = 0; r < resources.size(); ++r) {
        const std::string rf = f + ".resources[" + std::to_string(r) + "]";
        if (!resources[r].is_object()) Fail(rf, "must be an object");
        const std::string res = Required(resources[r], "name", rf + ".name");
        if (zone.allocatable.count(res)) {
          std::string why = "resource \"";
          why += res;
          why += "\" is listed twice in zone \"";
          why += name;
          why += '"';
          Fail(rf + ".name", why);
        }
        for (const char* key : {"allocatable", "available"}) {
          const Object* v = At(resources[r], {key});
          if (v == nullptr) Fail(rf + "." + key, "missing");
          (std::string(key) == "allocatable" ? zone.allocatable : zone.available)[res] =
              Amount(*v, res, rf + "." + key);
        }
      }
      t.zones.push_back(std::move(zone));
    }

    std::string policy_attr;
    std::string scope_attr;
    std::string policy_field;
    std::string scope_field;
    const Object& attributes = List(nrt, {"attributes"}, "attributes");
    for (size_t i = 0; i < attributes.size(); ++i) {
      const std::string f = "attributes[" + std::to_string(i) + "]";
      const std::string name = Str(attributes[i], {"name"});
      if (name == "topologyManagerPolicy") {
        policy_attr = Required(attributes[i], "value", f + ".value");
        policy_field = f + ".value";
      } else if (name == "topologyManagerScope") {
        scope_attr = Required(attributes[i], "value", f + ".value");
        scope_field = f + ".value";
      }
    }
    if (!policy_attr.empty()) {
      t.policy = PolicyOf(policy_attr, policy_field);
      if (!scope_attr.empty()) t.scope = ScopeOf(scope_attr, scope_field);
    } else {
      const Object& legacy = List(nrt, {"topologyPolicies"}, "topologyPolicies");
      if (!legacy.empty()) {
        if (!legacy[0].is_string()) Fail("topologyPolicies[0]", "must be a string");
        LegacyPolicy(legacy[0].get<std::string>(), "topologyPolicies[0]", t);
      }
    }

    if (t.zones.empty()) return rec;
    std::stable_sort(t.zones.begin(), t.zones.end(), [](const NumaZone& a, const NumaZone& b) {
      const long long na = ZoneNumber(a.id);
      const long long nb = ZoneNumber(b.id);
      if ((na >= 0) != (nb >= 0)) return na >= 0;  // numbered zones first
      if (na != nb) return na < nb;
      return a.id < b.id;
    });
    rec.numa = std::move(t);
    return rec;
  });
}

Result<std::vector<NumaZonePlacement>> ConvertNumaPlacement(const std::string& value,
                                                            const std::string& field) {
  return Guard<std::vector<NumaZonePlacement>>([&] {
    const Object list = Object::parse(value, nullptr, /*allow_exceptions=*/false);
    if (list.is_discarded()) Fail(field, "must be a JSON list of {zone, amount} (not JSON)");
    if (!list.is_array()) Fail(field, "must be a JSON list of {zone, amount}");
    std::vector<NumaZonePlacement> out;
    std::set<std::string> zones;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string f = field + "[" + std::to_string(i) + "]";
      if (!list[i].is_object()) Fail(f, "must be an object {zone, amount}");
      NumaZonePlacement z;
      z.zone = Required(list[i], "zone", f + ".zone");
      if (!zones.insert(z.zone).second)
        Fail(f + ".zone", "zone \"" + z.zone + "\" is listed twice");
      const Object* amount = At(list[i], {"amount"});
      if (amount != nullptr) {
        if (!amount->is_object()) Fail(f + ".amount", "must be a map of resource amounts");
        for (auto it = amount->begin(); it != amount->end(); ++it) {
          z.amount[it.key()] = Amount(it.value(), it.key(), f + ".amount." + it.key());
        }
      }
      out.push_back(std::move(z));
    }
    return out;
  });
}

}  // namespace gantry::cache
