// The nodes and queues sections of a scenario file (see reader.h).
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

// Reads the optional "mig_devices" map (MIG resource name -> count) into extended-resource slots.
// Returns whether any entry was present.
bool ParseMigDevices(const Obj& o, Cluster& cl, Resources& into) {
  if (!o.Has("mig_devices")) return false;
  const json& mig = o.Raw("mig_devices");
  if (!mig.is_object()) o.FailField("mig_devices", "must be an object");
  bool any = false;
  for (auto it = mig.begin(); it != mig.end(); ++it) {
    if (!it.value().is_number() || it.value().get<double>() < 0) {
      o.FailField("mig_devices." + it.key(), "must be a non-negative count");
    }
    int g = 0, m = 0;
    if (!ParseMigProfile(it.key(), g, m)) {
      o.FailField("mig_devices." + it.key(),
                  "unknown MIG profile (expected nvidia.com/mig-<g>g.<m>gb)");
    }
    const int slot = cl.resource_names.Intern(it.key());
    if (slot < 0) o.FailField("mig_devices", "too many distinct extended resources");
    into.scalars[slot] = it.value().get<double>();
    any = true;
  }
  return any;
}

NumaTopology ParseNumaTopology(const Obj& node) {
  Obj t(node.Raw("numa_topology"), node.where() + ".numa_topology");
  t.OnlyKeys({"policy", "scope", "zones"});
  NumaTopology topo;
  const std::string policy = t.Str("policy", "none");
  if (policy == "none") {
    topo.policy = NumaPolicy::kNone;
  } else if (policy == "best-effort") {
    topo.policy = NumaPolicy::kBestEffort;
  } else if (policy == "restricted") {
    topo.policy = NumaPolicy::kRestricted;
  } else if (policy == "single-numa-node") {
    topo.policy = NumaPolicy::kSingleNumaNode;
  } else {
    t.FailField("policy", "must be none, best-effort, restricted or single-numa-node (got \"" +
                              policy + "\")");
  }
  const std::string scope = t.Str("scope", "container");
  if (scope != "container" && scope != "pod") {
    t.FailField("scope", "must be container or pod (got \"" + scope + "\")");
  }
  topo.scope = scope == "pod" ? NumaScope::kPod : NumaScope::kContainer;
  const json& zones = t.Array("zones");
  std::set<std::string> ids;
  for (size_t i = 0; i < zones.size(); ++i) {
    Obj z(zones[i], t.where() + ".zones[" + std::to_string(i) + "]");
    z.OnlyKeys({"id", "allocatable", "available"});
    NumaZone zone;
    zone.id = z.Str("id");
    if (!ids.insert(zone.id).second) z.FailField("id", "duplicate zone \"" + zone.id + "\"");
    zone.allocatable = ParseAmounts(z, "allocatable");
    zone.available = z.Has("available") ? ParseAmounts(z, "available") : zone.allocatable;
    topo.zones.push_back(std::move(zone));
  }
  return topo;
}

void ParseNodes(const Obj& root, Scenario& sc) {
  const json& nodes = root.Array("nodes");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Obj o(nodes[i], Item(sc.origin + ": ", "nodes", i, nodes[i]));
    o.OnlyKeys({"name", "gpus", "allocatable_gpus", "cpu_millis", "memory_bytes", "gpu_memory_mib",
                "max_pods", "mig_strategy", "mig_devices", "labels", "taints", "unschedulable",
                "numa_topology"});
    Node n;
    n.name = o.Str("name");
    if (cl.node_index.count(n.name)) o.FailField("name", "duplicate node \"" + n.name + "\"");
    cl.node_index[n.name] = static_cast<NodeId>(cl.nodes.size());
    n.gpu_count = o.IntIn("gpus", 0, 0, kMaxGpusPerNode);
    n.allocatable.gpus = o.NumIn("allocatable_gpus", n.gpu_count, 0, kMaxGpusPerNode);
    n.allocatable.cpu_millis = o.NonNegative("cpu_millis", 20'000'000);
    n.allocatable.memory_bytes = o.NonNegative("memory_bytes", 20e9);
    // KAI floors the GPU memory label to a multiple of 100 MiB.
    n.gpu_memory_mib = std::floor(o.NumIn("gpu_memory_mib", 100, 0, kMaxGpuMemoryMib) / 100) * 100;
    n.allocatable.pods = o.NonNegative("max_pods", 110);
    n.mig_strategy = o.Str("mig_strategy", "");
    if (!n.mig_strategy.empty() && n.mig_strategy != "single" && n.mig_strategy != "mixed") {
      o.FailField("mig_strategy", "must be single or mixed");
    }
    ParseMigDevices(o, cl, n.allocatable);
    for (auto& [k, v] : o.StrMap("labels")) n.labels.Set(k, v);
    for (const auto& t : o.Array("taints")) {
      Obj to(t, o.where() + ".taints");
      to.OnlyKeys({"key", "value", "effect"});
      n.taints.push_back({to.Str("key"), to.Str("value", ""), to.Str("effect", "NoSchedule")});
    }
    n.unschedulable = o.Bool("unschedulable", false);
    if (o.Has("numa_topology")) n.numa = ParseNumaTopology(o);
    cl.nodes.push_back(std::move(n));
  }
}

void ParseQueues(const Obj& root, Scenario& sc) {
  const json& queues = root.Array("queues");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < queues.size(); ++i) {
    Obj o(queues[i], Item(sc.origin + ": ", "queues", i, queues[i]));
    o.OnlyKeys({"name", "parent", "priority", "creation_offset_minutes", "resources",
                "preempt_min_runtime_seconds", "reclaim_min_runtime_seconds", "usage"});
    Queue q;
    q.name = o.Str("name");
    if (cl.queue_index.count(q.name)) o.FailField("name", "duplicate queue \"" + q.name + "\"");
    cl.queue_index[q.name] = static_cast<QueueId>(cl.queues.size());
    q.parent_name = o.Str("parent", "");
    q.priority = o.Int("priority", 100);
    if (o.Has("preempt_min_runtime_seconds")) {
      q.preempt_min_runtime_seconds = o.NonNegative("preempt_min_runtime_seconds");
    }
    if (o.Has("reclaim_min_runtime_seconds")) {
      q.reclaim_min_runtime_seconds = o.NonNegative("reclaim_min_runtime_seconds");
    }
    q.creation_ms = kScenarioEpochMs + o.Millis("creation_offset_minutes", 0, 60'000, false) +
                    static_cast<int64_t>(i);  // equal offsets: earlier listed is older
    if (!o.Has("resources")) {
      // A legacy queue without a resource spec: zero quota, limit and weight.
      q.cpu = q.memory = q.gpu = QueueQuota{0, 0, 0};
    } else {
      Obj r(o.Raw("resources"), o.where() + ".resources");
      r.OnlyKeys({"gpu", "cpu", "memory"});
      auto quota = [&](const char* res, double scale) {
        return r.Has(res) ? ParseQuota(o, r.Raw(res), res, scale)
                          : QueueQuota{kUnlimited, kUnlimited, 1};
      };
      q.gpu = quota("gpu", 1);
      q.cpu = quota("cpu", 1);
      q.memory = quota("memory", 1e6);  // memory numbers are in units of 10^6 bytes
    }
    if (o.Has("usage")) {
      // Historical usage (time-based fairshare): fractions of the cluster's capacity.
      Obj u(o.Raw("usage"), o.where() + ".usage");
      u.OnlyKeys({"gpu", "cpu", "memory"});
      for (auto [key, target] : {std::pair{"gpu", &q.usage.gpu}, std::pair{"cpu", &q.usage.cpu},
                                 std::pair{"memory", &q.usage.memory}}) {
        *target = u.Num(key, 0.0);
        if (*target < 0) u.FailField(key, "must be >= 0 (a fraction of the cluster's capacity)");
      }
    }
    cl.queues.push_back(std::move(q));
  }
  for (size_t i = 0; i < cl.queues.size(); ++i) {
    const Queue& q = cl.queues[i];
    if (!q.parent_name.empty() && !cl.queue_index.count(q.parent_name)) {
      throw LoadError{sc.origin + ": queues[" + std::to_string(i) + "] (" + q.name +
                      "): field \"parent\": unknown queue \"" + q.parent_name + "\""};
    }
  }
  // A cycle in the hierarchy would make fair-share division loop forever.
  for (size_t i = 0; i < cl.queues.size(); ++i) {
    std::set<std::string> seen;
    std::string cur = cl.queues[i].name;
    while (!cur.empty()) {
      if (!seen.insert(cur).second) {
        throw LoadError{sc.origin + ": queues[" + std::to_string(i) + "] (" + cl.queues[i].name +
                        "): field \"parent\": the queue hierarchy has a cycle through \"" + cur +
                        "\""};
      }
      cur = cl.queues[cl.queue_index.at(cur)].parent_name;
    }
  }
}

}  // namespace gantry::scenario_reader
