// Scenario loading: JSON (or YAML converted to JSON) into a Cluster plus expectations, with
// every field checked. Errors read "<file>: <object path> (<name>): <field>: <problem>".
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_set>
#include <utility>

#include "scenario/document.h"
#include "scenario/reader.h"
#include "scenario/scenario.h"
#include "util/checked_number.h"
#include "util/read_file.h"

namespace gantry {

namespace scenario_reader {

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

// Resource amounts: resource name -> non-negative number (cpu in millicores, others in base units).
ResourceAmounts ParseAmounts(const Obj& parent, const std::string& field) {
  ResourceAmounts out;
  if (!parent.Has(field)) return out;
  const json& m = parent.Raw(field);
  if (!m.is_object()) parent.FailField(field, "must map resource names to amounts");
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_number() || it.value().get<double>() < 0) {
      parent.FailField(field + "." + it.key(), "must be a non-negative number");
    }
    out[it.key()] = it.value().get<double>();
  }
  return out;
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
  // Bounded so that a scenario file cannot ask for an endless run.
  sc.rounds_until_match = c.IntIn("rounds_until_match", 2, 0, kMaxRounds);
  sc.rounds_after_match = c.IntIn("rounds_after_match", 5, 0, kMaxRounds);
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
                "scheduler_name", "min_node_gpu_memory_mib", "max_node_gpu_memory_mib",
                "staleness_grace_period_seconds"});
    auto& p = sc.config.params;
    p.max_consolidation_preemptees = s.Int("max_consolidation_preemptees", -1);
    p.allow_consolidating_reclaim = s.Bool("allow_consolidating_reclaim", true);
    p.queue_label_key = s.Str("queue_label_key", p.queue_label_key);
    p.scheduler_name = s.Str("scheduler_name", p.scheduler_name);
    sc.cluster.min_node_gpu_memory_mib = s.NonNegative("min_node_gpu_memory_mib", 100);
    sc.cluster.max_node_gpu_memory_mib = s.NonNegative("max_node_gpu_memory_mib", 100);
    if (sc.cluster.max_node_gpu_memory_mib <= 0) {
      s.FailField("max_node_gpu_memory_mib", "must be positive");
    }
    p.staleness_grace_period_seconds = s.Num("staleness_grace_period_seconds", 0);
  } else {
    sc.config.params.staleness_grace_period_seconds = 0;
  }
}

void ParseStateExpectation(const Obj& o, StateExpectation& e) {
  o.OnlyKeys({"status", "node", "gpus_required", "gpus_accepted", "cpu_millis_required",
              "memory_bytes_required", "last_start_older_than_seconds", "error_message",
              "gpu_groups", "skip_gpu_group_check", "numa_zones"});
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
  if (o.Has("numa_zones")) {
    std::vector<int> zones;
    for (const auto& z : o.Array("numa_zones")) {
      if (!z.is_number_integer() || z.get<int>() < 0) {
        o.FailField("numa_zones", "must be a list of zone indices");
      }
      zones.push_back(z.get<int>());
    }
    e.numa_zones = std::move(zones);
  }
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
      o.OnlyKeys({"idle_gpus", "releasing_gpus", "numa_zones_available"});
      NodeExpectation& ne = sc.expect_nodes[it.key()];
      ne.idle_gpus = o.NonNegative("idle_gpus");
      ne.releasing_gpus = o.NonNegative("releasing_gpus");
      if (o.Has("numa_zones_available")) {
        Obj zones(o.Raw("numa_zones_available"), o.where() + ".numa_zones_available");
        const json& zj = o.Raw("numa_zones_available");
        for (auto z = zj.begin(); z != zj.end(); ++z) {
          char* end = nullptr;
          const long index = std::strtol(z.key().c_str(), &end, 10);
          if (z.key().empty() || *end != '\0' || index < 0) {
            zones.Fail("key \"" + z.key() + "\" is not a zone index");
          }
          ne.numa_zones_available[static_cast<int>(index)] = ParseAmounts(zones, z.key());
        }
      }
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

}  // namespace scenario_reader

namespace {

using namespace scenario_reader;

// The ConfigMaps that exist (Gantry's addition): [{namespace, name}], for KAI's ConfigMap
// predicate. Absent: none.
void ParseConfigMaps(const Obj& root, Cluster& cl) {
  const json& list = root.Array("config_maps");
  if (list.empty()) return;
  auto set = std::make_shared<std::unordered_set<std::string>>();
  for (size_t i = 0; i < list.size(); ++i) {
    Obj o(list[i], Item(root.where() + ": ", "config_maps", i, list[i]));
    o.OnlyKeys({"namespace", "name"});
    const std::string name = o.Str("name");
    if (name.empty()) o.FailField("name", "must not be empty");
    if (!set->insert(o.Str("namespace", "") + "/" + name).second) {
      o.FailField("name", "duplicate ConfigMap \"" + name + "\"");
    }
  }
  cl.config_maps = std::move(set);
}

}  // namespace

Result<Scenario> ParseScenario(const std::string& text, const std::string& origin) {
  Result<json> parsed = ParseJsonOrYamlDocument(text, origin, "a scenario");
  if (!parsed.ok()) return Error{parsed.error()};
  const json doc = std::move(parsed).value();
  Scenario sc;
  sc.origin = origin;
  sc.config = SchedulerConfig::Default();
  std::vector<std::vector<std::string>> reserved_names;  // per claim
  try {
    Obj root(doc, origin);
    root.OnlyKeys({"format_version", "name", "source", "config", "nodes", "queues", "topologies",
                   "dra", "config_maps", "jobs", "expect", "converter_notes"});
    if (root.Has("format_version") && root.Int("format_version") != 1) {
      root.FailField("format_version", "only version 1 is supported");
    }
    sc.name = root.Str("name", origin);
    ParseConfig(root, sc);
    ParseNodes(root, sc);
    ParseQueues(root, sc);
    LevelAliases aliases;
    ParseTopologies(root, sc, aliases);
    ParseDra(root, sc, reserved_names);
    ParseJobs(root, sc);
    ParseConfigMaps(root, sc.cluster);
    ResolveLevelAliases(aliases, sc.cluster);
    ParseExpect(root, sc);
  } catch (const LoadError& e) {
    return Error{e.message};
  } catch (const json::exception& e) {
    return Error{origin + ": " + e.what()};
  }
  const double max_gpu_memory = sc.cluster.max_node_gpu_memory_mib;
  sc.cluster.Finalize();
  // The file's value stands (KAI's harness derives it from the nodes' labels like Finalize).
  sc.cluster.max_node_gpu_memory_mib = max_gpu_memory;
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
  auto text = ReadInputFile(path);
  if (!text.ok()) return Error{text.error()};
  return ParseScenario(text.value(), path);
}

}  // namespace gantry
