// Scenario loading: JSON (or YAML converted to JSON) into a Cluster plus expectations, with
// every field checked. Errors read "<file>: <object path> (<name>): <field>: <problem>".
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "scenario/scenario.h"

namespace gantry {

namespace {

using json = nlohmann::json;

// Epoch of simulated time for scenarios (any fixed instant works: only differences matter).
constexpr int64_t kScenarioEpochMs = 1'700'000'000'000;

// Thrown inside the loader only; converted to an Error at the boundary.
struct LoadError {
  std::string message;
};

json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      char* end = nullptr;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0') return i;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0') return d;
      return s;
    }
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) arr.push_back(YamlToJson(item));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) obj[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return obj;
    }
  }
  return nullptr;
}

// Field access with context for messages.
class Obj {
 public:
  Obj(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) Fail("must be an object");
  }
  const std::string& where() const { return where_; }
  [[noreturn]] void Fail(const std::string& what) const { throw LoadError{where_ + ": " + what}; }
  [[noreturn]] void FailField(const std::string& field, const std::string& what) const {
    throw LoadError{where_ + ": field \"" + field + "\": " + what};
  }
  bool Has(const std::string& k) const { return j_.contains(k) && !j_.at(k).is_null(); }
  const json& Raw(const std::string& k) const { return j_.at(k); }

  void OnlyKeys(std::initializer_list<const char*> allowed) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) Fail("unknown field \"" + it.key() + "\"");
    }
  }
  std::string Str(const std::string& k, std::optional<std::string> fallback = {}) const {
    if (!Has(k)) {
      if (fallback) return *fallback;
      FailField(k, "missing");
    }
    if (!j_.at(k).is_string()) FailField(k, "must be a string");
    return j_.at(k).get<std::string>();
  }
  double Num(const std::string& k, std::optional<double> fallback = {}) const {
    if (!Has(k)) {
      if (fallback) return *fallback;
      FailField(k, "missing");
    }
    if (!j_.at(k).is_number()) FailField(k, "must be a number");
    const double v = j_.at(k).get<double>();
    if (!std::isfinite(v)) FailField(k, "must be finite");
    return v;
  }
  double NonNegative(const std::string& k, std::optional<double> fallback = {}) const {
    const double v = Num(k, fallback);
    if (v < 0) FailField(k, "must not be negative (got " + FormatNumber(v) + ")");
    return v;
  }
  int Int(const std::string& k, std::optional<int> fallback = {}) const {
    const double v = Num(k, fallback ? std::optional<double>(*fallback) : std::nullopt);
    if (v != std::floor(v)) FailField(k, "must be an integer");
    return static_cast<int>(v);
  }
  bool Bool(const std::string& k, bool fallback) const {
    if (!Has(k)) return fallback;
    if (!j_.at(k).is_boolean()) FailField(k, "must be true or false");
    return j_.at(k).get<bool>();
  }
  const json& Array(const std::string& k) const {
    static const json empty = json::array();
    if (!Has(k)) return empty;
    if (!j_.at(k).is_array()) FailField(k, "must be a list");
    return j_.at(k);
  }
  std::map<std::string, std::string> StrMap(const std::string& k) const {
    std::map<std::string, std::string> out;
    if (!Has(k)) return out;
    if (!j_.at(k).is_object()) FailField(k, "must be an object");
    for (auto it = j_.at(k).begin(); it != j_.at(k).end(); ++it) {
      if (!it.value().is_string()) FailField(k + "." + it.key(), "must be a string");
      out[it.key()] = it.value().get<std::string>();
    }
    return out;
  }

 private:
  const json& j_;
  std::string where_;
};

std::string Item(const std::string& parent, const std::string& list, size_t i,
                 const json& element) {
  std::string s = parent + list + "[" + std::to_string(i) + "]";
  if (element.is_object() && element.contains("name") && element["name"].is_string()) {
    s += " (" + element["name"].get<std::string>() + ")";
  }
  return s;
}

PodStatus ParseStatusField(const Obj& o, const std::string& key) {
  const std::string s = o.Str(key);
  auto st = ParsePodStatus(s);
  if (!st) o.FailField(key, "unknown status \"" + s + "\"");
  return *st;
}

QueueQuota ParseQuota(const Obj& parent, const json& j, const std::string& res, double scale) {
  Obj o(j, parent.where() + ".resources." + res);
  o.OnlyKeys({"quota", "limit", "over_quota_weight"});
  QueueQuota q;
  auto value = [&](const char* field, double fallback, bool allow_minus_one) {
    const double v = o.Num(field, fallback);
    if (v < 0 && !(allow_minus_one && v == -1)) {
      o.FailField(field, "must be -1 (unlimited) or >= 0 (got " + FormatNumber(v) + ")");
    }
    return v == -1 ? v : v * scale;
  };
  q.quota = value("quota", -1, true);
  q.limit = value("limit", -1, true);
  // A weight of -1 is accepted literally (KAI's generated default department carries one).
  q.over_quota_weight = o.Num("over_quota_weight", 1);
  if (q.over_quota_weight < 0 && q.over_quota_weight != -1) {
    o.FailField("over_quota_weight", "must be -1 or >= 0");
  }
  return q;
}

void ParseConfig(const Obj& root, Scenario& sc) {
  if (!root.Has("config")) return;
  Obj c(root.Raw("config"), sc.origin + ": config");
  c.OnlyKeys({"mode", "actions", "plugins", "rounds_until_match", "rounds_after_match",
              "round_delay_ms", "session", "feature_gates"});
  const std::string mode = c.Str("mode", "single_session");
  if (mode != "single_session" && mode != "multi_round") {
    c.FailField("mode", "must be single_session or multi_round");
  }
  sc.multi_round = mode == "multi_round";
  if (c.Has("feature_gates")) {
    Obj gates(c.Raw("feature_gates"), c.where() + ".feature_gates");
    if (gates.Has("DynamicResourceAllocation")) {
      sc.cluster.dra_enabled = gates.Bool("DynamicResourceAllocation", true);
    }
  }
  sc.rounds_until_match = c.Int("rounds_until_match", 2);
  sc.rounds_after_match = c.Int("rounds_after_match", 5);
  if (sc.rounds_until_match < 0 || sc.rounds_after_match < 0) {
    c.Fail("rounds must not be negative");
  }
  if (c.Has("actions")) {
    sc.config.actions.clear();
    for (const auto& a : c.Array("actions")) {
      if (!a.is_string()) c.FailField("actions", "must be a list of names");
      sc.config.actions.push_back(a.get<std::string>());
    }
  }
  if (c.Has("plugins")) {
    sc.config.plugins.clear();
    const json& plugins = c.Array("plugins");
    for (size_t i = 0; i < plugins.size(); ++i) {
      Obj p(plugins[i], Item(c.where() + ".", "plugins", i, plugins[i]));
      p.OnlyKeys({"name", "arguments", "disabled_functions"});
      PluginConfig pc;
      pc.name = p.Str("name");
      if (p.Has("arguments")) {
        const json& args = p.Raw("arguments");
        if (!args.is_object()) p.FailField("arguments", "must be an object");
        for (auto it = args.begin(); it != args.end(); ++it) {
          pc.arguments[it.key()] =
              it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
        }
      }
      for (const auto& f : p.Array("disabled_functions")) {
        if (!f.is_string()) p.FailField("disabled_functions", "must be a list of names");
        pc.disabled_functions.push_back(f.get<std::string>());
      }
      sc.config.plugins.push_back(std::move(pc));
    }
  }
  if (c.Has("session")) {
    Obj s(c.Raw("session"), c.where() + ".session");
    s.OnlyKeys({"max_consolidation_preemptees", "allow_consolidating_reclaim", "queue_label_key",
                "scheduler_name", "min_node_gpu_memory_mib", "staleness_grace_period_seconds"});
    auto& p = sc.config.params;
    p.max_consolidation_preemptees = s.Int("max_consolidation_preemptees", -1);
    p.allow_consolidating_reclaim = s.Bool("allow_consolidating_reclaim", true);
    p.queue_label_key = s.Str("queue_label_key", p.queue_label_key);
    p.scheduler_name = s.Str("scheduler_name", p.scheduler_name);
    sc.cluster.min_node_gpu_memory_mib = s.NonNegative("min_node_gpu_memory_mib", 100);
    p.staleness_grace_period_seconds = s.Num("staleness_grace_period_seconds", 0);
  } else {
    sc.config.params.staleness_grace_period_seconds = 0;
  }
}

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

// The pod's DRA claims: by name, or generated from a template (then not shared between pods).
void ParsePodClaims(const Obj& o, Cluster& cl, Pod& p) {
  auto find_claim = [&](const std::string& name, const char* field) {
    for (size_t c = 0; c < cl.resource_claims.size(); ++c) {
      const ResourceClaim& rc = cl.resource_claims[c];
      if (rc.name == name && rc.namespace_ == p.namespace_) return static_cast<int32_t>(c);
    }
    o.FailField(field,
                "unknown resource claim \"" + name + "\" in namespace \"" + p.namespace_ + "\"");
    return int32_t{-1};
  };
  for (const auto& c : o.Array("resource_claims")) {
    if (!c.is_string()) o.FailField("resource_claims", "must be a list of claim names");
    p.claims.push_back(find_claim(c.get<std::string>(), "resource_claims"));
  }
  if (o.Has("resource_claim_templates")) {
    const json& t = o.Raw("resource_claim_templates");
    if (!t.is_object()) o.FailField("resource_claim_templates", "must map template to claim name");
    for (auto it = t.begin(); it != t.end(); ++it) {
      if (!it.value().is_string()) {
        o.FailField("resource_claim_templates." + it.key(), "must be a claim name");
      }
      const int32_t c = find_claim(it.value().get<std::string>(), "resource_claim_templates");
      cl.resource_claims[c].from_template = true;
      p.claims.push_back(c);
    }
  }
  for (int32_t c : p.claims) {
    const ResourceClaim& rc = cl.resource_claims[c];
    if (rc.IsGpuClaim()) p.dra_gpus += rc.count;
  }
}

// GPU-equivalents of MIG instances: a "nvidia.com/mig-<g>g.<m>gb" instance counts g.
double MigGpuEquivalents(const Cluster& cl, const Resources& r) {
  double gpus = 0;
  for (int s = 0; s < cl.resource_names.size(); ++s) {
    int g = 0, m = 0;
    if (r.scalars[s] > 0 && ParseMigProfile(cl.resource_names.Name(s), g, m)) {
      gpus += g * r.scalars[s];
    }
  }
  return gpus;
}

void ParseNodes(const Obj& root, Scenario& sc) {
  const json& nodes = root.Array("nodes");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Obj o(nodes[i], Item(sc.origin + ": ", "nodes", i, nodes[i]));
    o.OnlyKeys({"name", "gpus", "allocatable_gpus", "cpu_millis", "memory_bytes", "gpu_memory_mib",
                "max_pods", "mig_strategy", "mig_devices", "labels", "taints", "unschedulable"});
    Node n;
    n.name = o.Str("name");
    if (cl.node_index.count(n.name)) o.FailField("name", "duplicate node \"" + n.name + "\"");
    cl.node_index[n.name] = static_cast<NodeId>(cl.nodes.size());
    n.gpu_count = o.Int("gpus", 0);
    if (n.gpu_count < 0) o.FailField("gpus", "must not be negative");
    n.allocatable.gpus = o.NonNegative("allocatable_gpus", n.gpu_count);
    n.allocatable.cpu_millis = o.NonNegative("cpu_millis", 20'000'000);
    n.allocatable.memory_bytes = o.NonNegative("memory_bytes", 20e9);
    // KAI floors the GPU memory label to a multiple of 100 MiB.
    n.gpu_memory_mib = std::floor(o.NonNegative("gpu_memory_mib", 100) / 100) * 100;
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
    cl.nodes.push_back(std::move(n));
  }
}

void ParseQueues(const Obj& root, Scenario& sc) {
  const json& queues = root.Array("queues");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < queues.size(); ++i) {
    Obj o(queues[i], Item(sc.origin + ": ", "queues", i, queues[i]));
    o.OnlyKeys({"name", "parent", "priority", "creation_offset_minutes", "resources",
                "preempt_min_runtime_seconds", "reclaim_min_runtime_seconds"});
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
    q.creation_ms = kScenarioEpochMs +
                    static_cast<int64_t>(o.Num("creation_offset_minutes", 0) * 60'000) +
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

struct SubGroupBuild {
  Job& job;
  std::map<std::string, int32_t> pod_set_by_name;
};

// DRA objects. Claims reserved for pods of the scenario are resolved to pods after the jobs are
// read (ResolveClaimReservations).
void ParseDra(const Obj& root, Scenario& sc,
              std::vector<std::vector<std::string>>& reserved_names) {
  if (!root.Has("dra")) return;
  Cluster& cl = sc.cluster;
  Obj d(root.Raw("dra"), "dra");
  d.OnlyKeys({"device_classes", "resource_slices", "resource_claims"});
  for (const auto& dc : d.Array("device_classes")) {
    if (!dc.is_string()) d.FailField("device_classes", "must be a list of names");
    cl.device_classes.push_back(dc.get<std::string>());
  }
  const auto& slices = d.Array("resource_slices");
  for (size_t i = 0; i < slices.size(); ++i) {
    Obj o(slices[i], "dra.resource_slices[" + std::to_string(i) + "]");
    o.OnlyKeys(
        {"name", "driver", "device_class", "node", "all_nodes", "node_selector", "device_count"});
    ResourceSlice rs;
    rs.name = o.Str("name");
    rs.driver = o.Str("driver");
    rs.device_class = o.Str("device_class", rs.driver);
    rs.device_count = o.Int("device_count", 0);
    if (rs.device_count < 0) o.FailField("device_count", "must not be negative");
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
    Obj o(claims[i], "dra.resource_claims[" + std::to_string(i) + "]");
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
    rc.count = o.Int("count", 1);
    if (rc.count < 1) o.FailField("count", "must be at least 1");
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
          if (!found)
            r.FailField("device", "no device \"" + device + "\" in pool \"" + pool + "\"");
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

void ParseTopologies(const Obj& root, Scenario& sc) {
  std::set<std::string> names;
  const auto& list = root.Array("topologies");
  for (size_t i = 0; i < list.size(); ++i) {
    Obj o(list[i], "topologies[" + std::to_string(i) + "]");
    o.OnlyKeys({"name", "levels"});
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
    sc.cluster.topologies.push_back(std::move(t));
  }
}

std::optional<TopologyConstraint> ParseTopologyConstraint(const Obj& o) {
  if (!o.Has("topology_constraint")) return std::nullopt;
  Obj t(o.Raw("topology_constraint"), o.where() + ".topology_constraint");
  t.OnlyKeys({"topology", "required_level", "preferred_level"});
  return TopologyConstraint{t.Str("topology"), t.Str("required_level", ""),
                            t.Str("preferred_level", "")};
}

void ParseSubGroupTree(const json& node, const std::string& where, int32_t parent,
                       SubGroupBuild& b) {
  Obj o(node, where);
  o.OnlyKeys({"name", "min_available", "topology_constraint", "children"});
  const std::string name = o.Str("name", "");
  if (o.Has("min_available")) {
    if (o.Has("children")) o.Fail("a pod set (with min_available) cannot have children");
    if (parent == kNone) o.Fail("the root of a sub-group tree must be a group");
    PodSet ps;
    ps.name = name;
    ps.min_available = o.Int("min_available");
    if (ps.min_available < 0) o.FailField("min_available", "must not be negative");
    ps.parent_group = parent;
    ps.topology = ParseTopologyConstraint(o);
    if (b.pod_set_by_name.count(name)) o.FailField("name", "duplicate pod set \"" + name + "\"");
    const int32_t idx = static_cast<int32_t>(b.job.pod_sets.size());
    b.pod_set_by_name[name] = idx;
    b.job.pod_sets.push_back(std::move(ps));
    b.job.groups[parent].child_pod_sets.push_back(idx);
    return;
  }
  SubGroup g;
  g.name = name;
  g.parent = parent;
  g.topology = ParseTopologyConstraint(o);
  const int32_t idx = static_cast<int32_t>(b.job.groups.size());
  b.job.groups.push_back(std::move(g));
  if (parent != kNone) b.job.groups[parent].child_groups.push_back(idx);
  const json& children = o.Array("children");
  for (size_t i = 0; i < children.size(); ++i) {
    ParseSubGroupTree(children[i], Item(where + ".", "children", i, children[i]), idx, b);
  }
}

void ParseTask(const Obj& o, Scenario& sc, JobId job_id, SubGroupBuild& b, bool best_effort) {
  Cluster& cl = sc.cluster;
  Job& job = cl.jobs[job_id];
  o.OnlyKeys({"name",
              "state",
              "node",
              "cpu_millis",
              "memory_bytes",
              "gpus",
              "gpu_fraction",
              "gpu_fraction_devices",
              "gpu_memory_mib",
              "mig_devices",
              "gpu_groups",
              "subgroup",
              "task_order_priority",
              "required_node_affinity",
              "pod_labels",
              "pod_affinity_topology_key",
              "pod_anti_affinity_topology_key",
              "resource_claims",
              "resource_claim_templates",
              "legacy_mig_task",
              "node_selector",
              "tolerations",
              "nominated_node",
              "labels"});
  Pod p;
  p.name = o.Str("name");
  p.uid = p.name;
  if (cl.pod_index.count(p.name)) o.FailField("name", "duplicate pod \"" + p.name + "\"");
  p.namespace_ = job.namespace_;
  p.job = job_id;
  p.status = ParseStatusField(o, "state");
  if (o.Has("node")) {
    const std::string node = o.Str("node");
    auto it = cl.node_index.find(node);
    if (it == cl.node_index.end()) {
      if (IsActiveUsed(p.status)) o.FailField("node", "unknown node \"" + node + "\"");
    } else {
      p.node = it->second;
    }
  } else if (IsActiveUsed(p.status)) {
    o.FailField("node", "a pod in state " + std::string(ToString(p.status)) + " needs a node");
  }
  p.request.cpu_millis = o.NonNegative("cpu_millis", best_effort ? 0 : 1000);
  p.request.memory_bytes = o.NonNegative("memory_bytes", best_effort ? 0 : 1e9);
  p.request.pods = 1;
  if (o.Has("gpus")) {
    p.request.gpus = o.NonNegative("gpus");
    if (p.request.gpus != std::floor(p.request.gpus)) {
      o.FailField("gpus", "must be a whole number (use gpu_fraction for a share of a device)");
    }
    if (p.request.gpus > 0) p.gpu_kind = GpuRequestKind::kWhole;
  }
  if (o.Has("gpu_fraction")) {
    const double f = o.Num("gpu_fraction");
    if (f <= 0 || f > 1) o.FailField("gpu_fraction", "must be in (0, 1]");
    if (p.request.gpus > 0) o.FailField("gpu_fraction", "cannot be combined with gpus");
    p.gpu_devices = o.Int("gpu_fraction_devices", 1);
    if (p.gpu_devices < 1) o.FailField("gpu_fraction_devices", "must be at least 1");
    if (f == 1) {
      // A whole device is a whole-GPU request, not a share (as KAI reads it).
      p.gpu_kind = GpuRequestKind::kWhole;
      p.request.gpus = p.gpu_devices;
      p.gpu_devices = 0;
    } else {
      p.gpu_kind = GpuRequestKind::kFraction;
      p.gpu_fraction = f;
    }
  }
  if (o.Has("gpu_memory_mib")) {
    const double m = o.Num("gpu_memory_mib");
    if (m <= 0) o.FailField("gpu_memory_mib", "must be positive");
    if (p.gpu_kind == GpuRequestKind::kNoGpu) {
      p.gpu_kind = GpuRequestKind::kMemory;
      p.gpu_devices = 1;
    }
    p.gpu_memory_mib = m;
  }
  if (ParseMigDevices(o, cl, p.request) && p.gpu_kind == GpuRequestKind::kNoGpu) {
    p.gpu_kind = GpuRequestKind::kMig;
  }
  p.mig_gpus = MigGpuEquivalents(cl, p.request);
  p.legacy_mig = o.Bool("legacy_mig_task", false);
  ParsePodClaims(o, cl, p);
  for (const auto& g : o.Array("gpu_groups")) {
    if (!g.is_string()) o.FailField("gpu_groups", "must be a list of strings");
    p.gpu_groups.push_back(g.get<std::string>());
  }
  const std::string sub = o.Str("subgroup", "default");
  auto ps = b.pod_set_by_name.find(sub);
  if (ps == b.pod_set_by_name.end()) {
    o.FailField("subgroup", "no pod set \"" + sub + "\" in the job's subgroup_tree");
  }
  p.pod_set = ps->second;

  p.labels.Set("job-name", p.name);
  const auto pod_labels = o.StrMap("pod_labels");
  for (const auto& [k, v] : pod_labels) p.labels.Set(k, v);
  for (const auto& [k, v] : o.StrMap("labels")) p.labels.Set(k, v);
  if (o.Has("task_order_priority")) {
    p.labels.Set("kai.scheduler/task-priority", std::to_string(o.Int("task_order_priority")));
  }
  for (const auto& [k, v] : o.StrMap("node_selector")) p.node_selector.Set(k, v);
  if (o.Has("required_node_affinity")) {
    Obj a(o.Raw("required_node_affinity"), o.where() + ".required_node_affinity");
    a.OnlyKeys({"label_key", "values"});
    SelectorRequirement req{a.Str("label_key"), "In", {}};
    for (const auto& v : a.Array("values")) {
      if (!v.is_string()) a.FailField("values", "must be a list of strings");
      req.values.push_back(v.get<std::string>());
    }
    p.required_node_affinity.push_back({{req}});
  }
  auto affinity_term = [&](const std::string& key) {
    PodAffinityTerm t;
    t.topology_key = o.Str(key);
    for (const auto& [k, v] : pod_labels) t.selector.match_labels.Set(k, v);
    return t;
  };
  if (o.Has("pod_affinity_topology_key")) {
    p.pod_affinity.push_back(affinity_term("pod_affinity_topology_key"));
  }
  if (o.Has("pod_anti_affinity_topology_key")) {
    p.pod_anti_affinity.push_back(affinity_term("pod_anti_affinity_topology_key"));
  }
  for (const auto& t : o.Array("tolerations")) {
    Obj to(t, o.where() + ".tolerations");
    to.OnlyKeys({"key", "operator", "value", "effect"});
    p.tolerations.push_back({to.Str("key", ""), to.Str("operator", "Equal"), to.Str("value", ""),
                             to.Str("effect", "")});
  }
  if (o.Has("nominated_node")) {
    const std::string nn = o.Str("nominated_node");
    auto it = cl.node_index.find(nn);
    if (it == cl.node_index.end()) o.FailField("nominated_node", "unknown node \"" + nn + "\"");
    p.nominated_node = it->second;
  }
  const PodId id = static_cast<PodId>(cl.pods.size());
  cl.pod_index[p.name] = id;
  job.pods.push_back(id);
  job.pod_sets[p.pod_set].pods.push_back(id);
  cl.pods.push_back(std::move(p));
}

void ParseJobs(const Obj& root, Scenario& sc) {
  const json& jobs = root.Array("jobs");
  Cluster& cl = sc.cluster;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Obj o(jobs[i], Item(sc.origin + ": ", "jobs", i, jobs[i]));
    o.OnlyKeys({"name", "namespace", "queue", "priority", "preemptibility", "age_minutes",
                "min_available", "subgroup_tree", "stale_for_seconds", "deleting", "best_effort",
                "tasks"});
    const JobId id = static_cast<JobId>(cl.jobs.size());
    cl.jobs.emplace_back();
    Job& job = cl.jobs.back();
    job.name = o.Str("name");
    if (cl.job_index.count(job.name)) o.FailField("name", "duplicate job \"" + job.name + "\"");
    cl.job_index[job.name] = id;
    job.namespace_ = o.Str("namespace", "");
    job.queue_name = o.Str("queue");
    if (!cl.queue_index.count(job.queue_name)) {
      o.FailField("queue", "unknown queue \"" + job.queue_name + "\"");
    }
    job.priority = o.Int("priority", 0);
    const std::string pre =
        o.Str("preemptibility", job.priority < 100 ? "preemptible" : "non-preemptible");
    if (pre != "preemptible" && pre != "non-preemptible") {
      o.FailField("preemptibility", "must be preemptible or non-preemptible");
    }
    job.preemptible = pre == "preemptible";
    // Jobs listed earlier are older when ages are equal.
    job.creation_ms = kScenarioEpochMs -
                      static_cast<int64_t>(o.NonNegative("age_minutes", 0) * 60'000) -
                      static_cast<int64_t>(jobs.size() - i);
    job.deleting = o.Bool("deleting", false);
    const bool best_effort = o.Bool("best_effort", false);
    sc.stale_for_seconds.push_back(o.Has("stale_for_seconds")
                                       ? std::optional<double>(o.NonNegative("stale_for_seconds"))
                                       : std::nullopt);

    const json& tasks = o.Array("tasks");
    SubGroupBuild b{job, {}};
    if (o.Has("subgroup_tree")) {
      if (o.Has("min_available")) o.Fail("min_available and subgroup_tree are exclusive");
      ParseSubGroupTree(o.Raw("subgroup_tree"), o.where() + ".subgroup_tree", kNone, b);
      if (job.groups.empty()) o.FailField("subgroup_tree", "the root must be a group");
      bool ungrouped = false;
      for (const auto& t : tasks) ungrouped = ungrouped || !t.contains("subgroup");
      if (ungrouped && !b.pod_set_by_name.count("default")) {
        PodSet ps;
        ps.name = "default";
        ps.min_available = static_cast<int32_t>(tasks.size());
        b.pod_set_by_name["default"] = static_cast<int32_t>(job.pod_sets.size());
        job.groups[0].child_pod_sets.push_back(static_cast<int32_t>(job.pod_sets.size()));
        job.pod_sets.push_back(std::move(ps));
      }
    } else {
      job.groups.push_back(SubGroup{"", kNone, {}, {0}, std::nullopt});
      PodSet ps;
      ps.name = "default";
      ps.min_available = o.Int("min_available", static_cast<int>(tasks.size()));
      if (ps.min_available < 0) o.FailField("min_available", "must not be negative");
      job.pod_sets.push_back(std::move(ps));
      b.pod_set_by_name["default"] = 0;
    }
    for (size_t t = 0; t < tasks.size(); ++t) {
      Obj to(tasks[t], Item(o.where() + ".", "tasks", t, tasks[t]));
      ParseTask(to, sc, id, b, best_effort);
    }
  }
}

void ParseStateExpectation(const Obj& o, StateExpectation& e) {
  o.OnlyKeys({"status", "node", "gpus_required", "gpus_accepted", "cpu_millis_required",
              "memory_bytes_required", "last_start_older_than_seconds", "error_message",
              "gpu_groups", "skip_gpu_group_check"});
  if (o.Has("status")) e.status = ParseStatusField(o, "status");
  if (o.Has("node")) e.node = o.Str("node");
  if (o.Has("gpus_required")) e.gpus_required = o.NonNegative("gpus_required");
  if (o.Has("gpus_accepted")) e.gpus_accepted = o.NonNegative("gpus_accepted");
  if (o.Has("cpu_millis_required")) e.cpu_millis_required = o.NonNegative("cpu_millis_required");
  if (o.Has("memory_bytes_required")) {
    e.memory_bytes_required = o.NonNegative("memory_bytes_required");
  }
  if (o.Has("last_start_older_than_seconds")) {
    e.last_start_older_than_seconds = o.NonNegative("last_start_older_than_seconds");
  }
  if (o.Has("error_message")) e.error_message = o.Str("error_message");
}

void ParseExpect(const Obj& root, Scenario& sc) {
  if (!root.Has("expect")) return;
  sc.has_expectations = true;
  Obj e(root.Raw("expect"), sc.origin + ": expect");
  e.OnlyKeys({"jobs", "tasks", "nodes", "cache"});
  for (const char* section : {"jobs", "tasks"}) {
    if (!e.Has(section)) continue;
    const json& m = e.Raw(section);
    if (!m.is_object()) e.FailField(section, "must be an object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      Obj o(it.value(), e.where() + "." + section + "." + it.key());
      auto& target = std::string(section) == "jobs" ? sc.expect_jobs : sc.expect_tasks;
      ParseStateExpectation(o, target[it.key()]);
    }
  }
  if (e.Has("nodes")) {
    const json& m = e.Raw("nodes");
    if (!m.is_object()) e.FailField("nodes", "must be an object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      Obj o(it.value(), e.where() + ".nodes." + it.key());
      o.OnlyKeys({"idle_gpus", "releasing_gpus"});
      sc.expect_nodes[it.key()] = {o.NonNegative("idle_gpus"), o.NonNegative("releasing_gpus")};
    }
  }
  if (e.Has("cache")) {
    Obj o(e.Raw("cache"), e.where() + ".cache");
    o.OnlyKeys({"max_binds_per_cycle", "max_evictions_per_cycle", "max_pipelined_per_cycle"});
    auto& c = sc.expect_cache;
    if (o.Has("max_binds_per_cycle")) c.max_binds_per_cycle = o.Int("max_binds_per_cycle");
    if (o.Has("max_evictions_per_cycle")) {
      c.max_evictions_per_cycle = o.Int("max_evictions_per_cycle");
    }
    if (o.Has("max_pipelined_per_cycle")) {
      c.max_pipelined_per_cycle = o.Int("max_pipelined_per_cycle");
    }
  }
}

}  // namespace

Result<Scenario> ParseScenario(const std::string& text, const std::string& origin) {
  json doc;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    try {
      doc = json::parse(text);
    } catch (const json::parse_error& e) {
      return Error{origin + ": malformed JSON: " + e.what()};
    }
  } else {
    try {
      doc = YamlToJson(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      return Error{origin + ": malformed YAML: " + e.what()};
    }
  }
  Scenario sc;
  sc.origin = origin;
  sc.config = SchedulerConfig::Default();
  std::vector<std::vector<std::string>> reserved_names;  // per claim
  try {
    Obj root(doc, origin);
    root.OnlyKeys({"format_version", "name", "source", "config", "nodes", "queues", "topologies",
                   "dra", "jobs", "expect", "converter_notes"});
    if (root.Has("format_version") && root.Int("format_version") != 1) {
      root.FailField("format_version", "only version 1 is supported");
    }
    sc.name = root.Str("name", origin);
    ParseConfig(root, sc);
    ParseNodes(root, sc);
    ParseQueues(root, sc);
    ParseTopologies(root, sc);
    ParseDra(root, sc, reserved_names);
    ParseJobs(root, sc);
    ParseExpect(root, sc);
  } catch (const LoadError& e) {
    return Error{e.message};
  } catch (const json::exception& e) {
    return Error{origin + ": " + e.what()};
  }
  sc.cluster.Finalize();
  // Reservations naming pods of the scenario; any other name is an outside consumer.
  for (size_t c = 0; c < reserved_names.size(); ++c) {
    ResourceClaim& rc = sc.cluster.resource_claims[c];
    for (const std::string& name : reserved_names[c]) {
      const PodId p = sc.cluster.FindPod(name);
      if (p == kNone) {
        ++rc.other_consumers;
      } else {
        rc.reserved.push_back(p);
      }
    }
  }
  for (size_t j = 0; j < sc.cluster.jobs.size(); ++j) {
    const Job& job = sc.cluster.jobs[j];
    if (!sc.cluster.queues[job.queue].IsLeaf()) {
      return Error{origin + ": jobs[" + std::to_string(j) + "] (" + job.name +
                   "): field \"queue\": \"" + job.queue_name +
                   "\" is a parent queue; jobs must be submitted to a leaf queue"};
    }
  }
  return sc;
}

Result<Scenario> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseScenario(buf.str(), path);
}

}  // namespace gantry
