// The dra and topologies sections of a scenario file (see reader.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scenario/reader.h"

namespace gantry::scenario_reader {

// A claim's device count: a 64-bit integer (up to int64 max). No pool holds more than an int32's
// worth of devices, so a larger count (which can never be met) is kept as the int32 maximum.
int32_t ClaimCount(const Obj& o) {
  if (!o.Has("count")) return 1;
  const json& v = o.Raw("count");
  if (!v.is_number_integer()) o.FailField("count", "must be an integer");
  if (v.is_number_unsigned() ? v.get<uint64_t>() < 1 : v.get<int64_t>() < 1) {
    o.FailField("count", "must be at least 1");
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    o.FailField("count", "must fit a 64-bit signed integer");
  }
  return static_cast<int32_t>(std::min<int64_t>(v.get<int64_t>(), INT32_MAX));
}

// DRA objects. Claims reserved for pods of the scenario are resolved to pods after the jobs are
// read (ResolveClaimReservations).
void ParseDra(const Obj& root, Scenario& sc,
              std::vector<std::vector<std::string>>& reserved_names) {
  if (!root.Has("dra")) return;
  Cluster& cl = sc.cluster;
  Obj d(root.Raw("dra"), sc.origin + ": dra");
  d.OnlyKeys({"device_classes", "resource_slices", "resource_claims"});
  for (const auto& dc : d.Array("device_classes")) {
    if (!dc.is_string()) d.FailField("device_classes", "must be a list of names");
    cl.device_classes.push_back(dc.get<std::string>());
  }
  const auto& slices = d.Array("resource_slices");
  for (size_t i = 0; i < slices.size(); ++i) {
    Obj o(slices[i], d.where() + ".resource_slices[" + std::to_string(i) + "]");
    o.OnlyKeys(
        {"name", "driver", "device_class", "node", "all_nodes", "node_selector", "device_count"});
    ResourceSlice rs;
    rs.name = o.Str("name");
    rs.driver = o.Str("driver");
    rs.device_class = o.Str("device_class", rs.driver);
    // resource.k8s.io allows at most 128 devices in one slice.
    rs.device_count = o.IntIn("device_count", 0, 0, static_cast<int>(kMaxDevicesPerSlice));
    if (o.Has("node")) {
      const std::string node = o.Str("node");
      auto it = cl.node_index.find(node);
      if (it == cl.node_index.end()) o.FailField("node", "unknown node \"" + node + "\"");
      rs.node = it->second;
    } else if (!o.Bool("all_nodes", false)) {
      o.FailField("node", "a slice needs a node or all_nodes: true");
    }
    if (rs.node != kNone && IsGpuDeviceClass(rs.driver)) {
      // GPUs published through DRA join the node's GPUs (KAI's AddDRAGPUs).
      Node& n = cl.nodes[rs.node];
      n.dra_gpus += rs.device_count;
      n.allocatable.gpus += rs.device_count;
    }
    cl.resource_slices.push_back(std::move(rs));
  }
  const auto& claims = d.Array("resource_claims");
  for (size_t i = 0; i < claims.size(); ++i) {
    Obj o(claims[i], d.where() + ".resource_claims[" + std::to_string(i) + "]");
    o.OnlyKeys(
        {"name", "namespace", "labels", "device_class", "count", "reserved_for_count", "status"});
    ResourceClaim rc;
    rc.name = o.Str("name");
    rc.namespace_ = o.Str("namespace", "");
    if (o.Has("labels")) {
      const json& labels = o.Raw("labels");
      if (!labels.is_object()) o.FailField("labels", "must be a map of strings");
      for (auto it = labels.begin(); it != labels.end(); ++it) {
        if (!it.value().is_string()) o.FailField("labels." + it.key(), "must be a string");
        rc.labels.Set(it.key(), it.value().get<std::string>());
      }
    }
    rc.device_class = o.Str("device_class");
    rc.count = ClaimCount(o);
    rc.other_consumers = o.Int("reserved_for_count", 0);
    if (rc.other_consumers < 0) o.FailField("reserved_for_count", "must not be negative");
    std::vector<std::string> names;
    if (o.Has("status")) {
      Obj st(o.Raw("status"), o.where() + ".status");
      st.OnlyKeys({"allocation", "reserved_for"});
      if (st.Has("allocation")) {
        Obj alloc(st.Raw("allocation"), st.where() + ".allocation");
        Obj devices(alloc.Raw("devices"), alloc.where() + ".devices");
        const auto& results = devices.Array("results");
        for (size_t k = 0; k < results.size(); ++k) {
          Obj r(results[k], devices.where() + ".results[" + std::to_string(k) + "]");
          const std::string pool = r.Str("pool");
          const std::string device = r.Str("device");
          // The device of the node's slice (pools are named after nodes).
          bool found = false;
          for (size_t si = 0; si < cl.resource_slices.size() && !found; ++si) {
            const ResourceSlice& sl = cl.resource_slices[si];
            const std::string slice_pool = sl.node == kNone ? sl.name : cl.nodes[sl.node].name;
            if (slice_pool != pool) continue;
            for (int32_t dv = 0; dv < sl.device_count; ++dv) {
              if (std::to_string(dv) == device) {
                rc.allocation.push_back({static_cast<int32_t>(si), dv});
                found = true;
                break;
              }
            }
          }
          if (!found) {
            std::string message = "no device \"";
            message += device;
            message += "\" in pool \"";
            message += pool;
            message += "\"";
            r.FailField("device", message);
          }
        }
        rc.allocated = true;
      }
      for (const auto& holder : st.Array("reserved_for")) {
        if (!holder.is_object() || !holder.contains("name")) {
          st.FailField("reserved_for", "must be a list of {resource, name, uid}");
        }
        names.push_back(holder.at("name").get<std::string>());
      }
    }
    reserved_names.push_back(std::move(names));
    cl.resource_claims.push_back(std::move(rc));
  }
}

void ParseTopologies(const Obj& root, Scenario& sc, LevelAliases& aliases) {
  std::set<std::string> names;
  const auto& list = root.Array("topologies");
  for (size_t i = 0; i < list.size(); ++i) {
    Obj o(list[i], sc.origin + ": topologies[" + std::to_string(i) + "]");
    o.OnlyKeys({"name", "levels", "level_aliases"});
    Topology t;
    t.name = o.Str("name");
    if (t.name.empty()) o.FailField("name", "must not be empty");
    if (!names.insert(t.name).second) o.FailField("name", "duplicate topology \"" + t.name + "\"");
    std::set<std::string> seen;
    for (const auto& level : o.Array("levels")) {
      if (!level.is_string() || level.get<std::string>().empty()) {
        o.FailField("levels", "must be a list of node-label keys");
      }
      if (!seen.insert(level.get<std::string>()).second) {
        o.FailField("levels", "duplicate level \"" + level.get<std::string>() + "\"");
      }
      t.levels.push_back(level.get<std::string>());
    }
    if (t.levels.empty()) o.FailField("levels", "must name at least one level");
    // Level aliases (KAI's TopologyLevel.alias): a constraint may name a level by its alias.
    for (const auto& [alias, level] : o.StrMap("level_aliases")) {
      if (std::find(t.levels.begin(), t.levels.end(), level) == t.levels.end()) {
        o.FailField("level_aliases." + alias, "\"" + level + "\" is not a level of the topology");
      }
      if (seen.count(alias) && alias != level) {
        o.FailField("level_aliases." + alias, "is the name of another level");
      }
      aliases[t.name][alias] = level;
    }
    sc.cluster.topologies.push_back(std::move(t));
  }
}

// Constraints naming a level by its alias name the level itself from here on (KAI resolves them
// when it builds the cluster snapshot).
void ResolveLevelAliases(const LevelAliases& aliases, Cluster& cl) {
  if (aliases.empty()) return;
  auto resolve = [&](std::optional<TopologyConstraint>& c) {
    if (!c) return;
    auto t = aliases.find(c->topology);
    if (t == aliases.end()) return;
    for (std::string* level : {&c->required_level, &c->preferred_level}) {
      if (auto a = t->second.find(*level); a != t->second.end()) *level = a->second;
    }
  };
  for (Job& job : cl.jobs) {
    for (SubGroup& g : job.groups) resolve(g.topology);
    for (PodSet& ps : job.pod_sets) resolve(ps.topology);
  }
}

}  // namespace gantry::scenario_reader
