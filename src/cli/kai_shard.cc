#include "cli/kai_shard.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <utility>

#include "scenario/document.h"
#include "util/duration.h"
#include "util/read_file.h"

namespace gantry::cli {
namespace {

using json = nlohmann::json;  // NOLINT(readability-identifier-naming): nlohmann's own name

// Thrown inside this file only; converted to an Error at the functions' boundaries.
struct ShardError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw ShardError{where + ": " + what};
}

const json* Field(const json& object, const std::string& key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

const json& AsObject(const json& v, const std::string& where) {
  if (!v.is_object()) Fail(where, "must be an object");
  return v;
}

std::string AsString(const json& v, const std::string& where) {
  if (!v.is_string()) Fail(where, "must be a string");
  return v.get<std::string>();
}

bool AsBool(const json& v, const std::string& where) {
  if (!v.is_boolean()) Fail(where, "must be true or false");
  return v.get<bool>();
}

int AsInt(const json& v, const std::string& where) {
  if (!v.is_number_integer()) Fail(where, "must be an integer");
  const int64_t i = v.get<int64_t>();
  if (i < INT32_MIN || i > INT32_MAX) Fail(where, "must fit in 32 bits");
  return static_cast<int>(i);
}

void OnlyKeys(const json& object, const std::string& where, const std::set<std::string>& allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (allowed.count(it.key()) == 0) Fail(where, "unknown field \"" + it.key() + "\"");
  }
}

std::map<std::string, std::string> AsStringMap(const json& v, const std::string& where) {
  std::map<std::string, std::string> out;
  for (auto it = AsObject(v, where).begin(); it != v.end(); ++it) {
    out[it.key()] = AsString(it.value(), where + "." + it.key());
  }
  return out;
}

// A duration as metav1.Duration reads it (Go's syntax), written back as Go prints it ("5m0s").
std::string GoDuration(const json& v, const std::string& where, bool non_negative) {
  const Result<int64_t> ns = ParseGoDuration(AsString(v, where));
  if (!ns.ok()) Fail(where, ns.error());
  if (non_negative && ns.value() < 0) Fail(where, "must be non-negative");
  return FormatGoDuration(ns.value());
}

int64_t GoDurationNs(const std::string& text) {
  const Result<int64_t> ns = ParseGoDuration(text);
  return ns.ok() ? ns.value() : 0;  // only called on text GoDuration wrote
}

// Go's strconv.FormatFloat(v, 'f', -1, 64): the shortest digits that read back as v, no exponent.
std::string FormatFloat(double v) {
  char buffer[400];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed);
  return std::string(buffer, r.ptr);
}

// KAI v0.17's defaults (pkg/apis/kai/v1/schedulingshard_types.go): higher priority runs first.
const std::pair<const char*, int> kDefaultPlugins[] = {
    {"predicates", 1900},       {"proportion", 1800},        {"priority", 1700},
    {"nodeavailability", 1600}, {"resourcetype", 1500},      {"podaffinity", 1400},
    {"elastic", 1300},          {"kubeflow", 1200},          {"ray", 1100},
    {"subgrouporder", 1000},    {"taskorder", 900},          {"nominatednode", 800},
    {"dynamicresources", 700},  {"minruntime", 600},         {"topology", 500},
    {"snapshot", 400},          {"sg-nodelocalgreedy", 360}, {"sg-multinodegang", 350},
    {"gpupack", 300},           {"gpuspread", 300},          {"nodeplacement", 200},
    {"gpusharingorder", 100},
};
const std::pair<const char*, int> kDefaultActions[] = {
    {"allocate", 500}, {"consolidation", 400},     {"reclaim", 300},
    {"preempt", 200},  {"stalegangeviction", 100},
};
// The keys maxActionSearchDuration takes.
const std::set<std::string> kBudgetActionKeys = {"default", "reclaim", "preempt", "consolidation"};

struct Toggle {
  bool enabled = true;
  int priority = 0;
  std::map<std::string, std::string> arguments;  // plugins only
};

// Enabled entries by priority, higher first, then by name (as the operator sorts them).
std::vector<std::string> Resolve(const std::map<std::string, Toggle>& entries) {
  std::vector<std::string> names;
  for (const auto& [name, t] : entries) {
    if (t.enabled) names.push_back(name);
  }
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return entries.at(a).priority > entries.at(b).priority;
  });
  return names;
}

// The shard's overrides (spec.plugins / spec.actions) merged over the defaults: a name not among
// them is added, enabled, with priority 0; given arguments replace the default ones whole.
void MergeOverrides(const json* overrides, const std::string& where, bool with_arguments,
                    std::map<std::string, Toggle>& entries) {
  if (overrides == nullptr) return;
  for (auto it = AsObject(*overrides, where).begin(); it != overrides->end(); ++it) {
    const std::string at = where + "." + it.key();
    const json& o = AsObject(it.value(), at);
    if (with_arguments) {
      OnlyKeys(o, at, {"enabled", "priority", "arguments"});
    } else {
      OnlyKeys(o, at, {"enabled", "priority"});
    }
    Toggle& t = entries.try_emplace(it.key()).first->second;
    if (const json* v = Field(o, "enabled")) t.enabled = AsBool(*v, at + ".enabled");
    if (const json* v = Field(o, "priority")) t.priority = AsInt(*v, at + ".priority");
    if (const json* v = Field(o, "arguments")) t.arguments = AsStringMap(*v, at + ".arguments");
  }
}

std::string Strategy(const json* placement, const char* key, const std::string& where) {
  if (placement == nullptr) return "binpack";
  const json* v = Field(*placement, key);
  if (v == nullptr) return "binpack";
  std::string s = AsString(*v, where + "." + key);
  if (s != "binpack" && s != "spread") Fail(where + "." + key, "must be binpack or spread");
  return s;
}

json ScenarioSearchBudgets(const json* given, const std::string& where) {
  json out = json::object();
  out["maxActionSearchDuration"] = json::object();
  out["maxGeneratorSearchDuration"] = json::object();
  if (given != nullptr) {
    const json& g = AsObject(*given, where);
    OnlyKeys(g, where,
             {"maxActionSearchDuration", "maxJobSearchDuration", "minJobSearchDuration",
              "maxGeneratorSearchDuration"});
    for (const char* map_key : {"maxActionSearchDuration", "maxGeneratorSearchDuration"}) {
      const json* m = Field(g, map_key);
      if (m == nullptr) continue;
      const std::string at = where + "." + map_key;
      for (auto it = AsObject(*m, at).begin(); it != m->end(); ++it) {
        if (std::string(map_key) == "maxActionSearchDuration" &&
            kBudgetActionKeys.count(it.key()) == 0) {
          Fail(at, "contains invalid action key \"" + it.key() +
                       "\"; valid action keys: default, reclaim, preempt, consolidation");
        }
        out[map_key][it.key()] = GoDuration(it.value(), at + "." + it.key(), true);
      }
    }
    for (const char* key : {"maxJobSearchDuration", "minJobSearchDuration"}) {
      if (const json* v = Field(g, key)) {
        out[key] = GoDuration(*v, where + "." + key, true);
      }
    }
    if (out.contains("maxJobSearchDuration") && out.contains("minJobSearchDuration")) {
      const int64_t max_ns = GoDurationNs(out["maxJobSearchDuration"].get<std::string>());
      const int64_t min_ns = GoDurationNs(out["minJobSearchDuration"].get<std::string>());
      if (max_ns != 0 && min_ns >= max_ns) {
        Fail(where + ".minJobSearchDuration", "must be less than maxJobSearchDuration");
      }
    }
  }
  // KAI's defaults where the shard sets none.
  auto fill = [](json& m, const char* key, const char* value) {
    if (!m.contains(key)) m[key] = value;
  };
  fill(out["maxActionSearchDuration"], "default", "5m0s");
  fill(out, "maxJobSearchDuration", "4m0s");
  fill(out, "minJobSearchDuration", "0s");
  fill(out["maxGeneratorSearchDuration"], "default", "2m0s");
  fill(out["maxGeneratorSearchDuration"], "NodeLocalGreedy", "30s");
  fill(out["maxGeneratorSearchDuration"], "MultiNodeGang", "2m0s");
  return out;
}

// spec.usageDBConfig, passed through; a Prometheus one without an address gets KAI's.
json UsageDb(const json& given, const std::string& where, const KaiGlobals& globals) {
  json out = AsObject(given, where);
  const json* client = Field(out, "clientType");
  if (client == nullptr || AsString(*client, where + ".clientType") != "prometheus") return out;
  const json* cs = Field(out, "connectionString");
  const json* env = Field(out, "connectionStringEnvVar");
  const bool has_cs = cs != nullptr && !AsString(*cs, where + ".connectionString").empty();
  const bool has_env = env != nullptr && !AsString(*env, where + ".connectionStringEnvVar").empty();
  if (has_cs || has_env) return out;
  if (globals.internal_prometheus) {
    out["connectionString"] =
        "http://usage-prometheus." + globals.namespace_name + ".svc.cluster.local:9090";
  } else if (!globals.external_prometheus_url.empty()) {
    out["connectionString"] = globals.external_prometheus_url;
  } else {
    Fail(where,
         "prometheus connection string not configured: either enable internal prometheus "
         "or configure external TSDB connection URL");
  }
  return out;
}

// A YAML scalar that would read back as something other than this string (a number, a boolean,
// null, or empty) is quoted.
bool NeedsQuotes(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return true;
  static const std::set<std::string> booleans = {
      "true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no",
      "No",   "NO",   "on",   "On",    "ON",    "off",   "Off", "OFF", "y",   "n"};
  if (booleans.count(s) != 0) return true;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

void Emit(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (auto it = v.begin(); it != v.end(); ++it) {  // nlohmann's objects iterate sorted by key
      out << YAML::Key << it.key() << YAML::Value;
      Emit(out, it.value());
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const json& item : v) Emit(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_number_integer()) {
    out << v.get<int64_t>();
  } else if (v.is_number()) {
    out << FormatFloat(v.get<double>());
  } else {
    out << YAML::Null;
  }
}

std::string ToYaml(const json& v) {
  YAML::Emitter out;
  Emit(out, v);
  return std::string(out.c_str()) + "\n";
}

KaiShard Read(const json& doc, const std::string& origin, const KaiGlobals& globals,
              const std::function<bool(const std::string&)>& takes_flag) {
  const json& root = AsObject(doc, origin);
  if (const json* kind = Field(root, "kind")) {
    if (AsString(*kind, origin + ": kind") != "SchedulingShard") {
      Fail(origin + ": kind", "must be SchedulingShard (kai.scheduler/v1)");
    }
  }
  KaiShard shard;
  if (const json* meta = Field(root, "metadata")) {
    if (const json* name = Field(AsObject(*meta, origin + ": metadata"), "name")) {
      shard.name = AsString(*name, origin + ": metadata.name");
    }
  }
  if (shard.name.empty()) Fail(origin + ": metadata.name", "missing");
  const std::string where = origin + " (SchedulingShard " + shard.name + "): spec";
  static const json empty_spec = json::object();
  const json* spec_field = Field(root, "spec");
  const json& spec = spec_field != nullptr ? AsObject(*spec_field, where) : empty_spec;
  OnlyKeys(spec, where,
           {"args", "goMemLimitRatio", "goMemLimit", "placementStrategy", "partitionLabelValue",
            "queueDepthPerAction", "minRuntime", "kValue", "usageDBConfig", "scenarioSearchBudgets",
            "plugins", "actions"});
  for (const char* go_only : {"goMemLimit", "goMemLimitRatio"}) {
    if (Field(spec, go_only) != nullptr) {
      shard.warnings.push_back(where + "." + go_only +
                               ": sets the Go runtime's memory limit, which Gantry (C++) does not "
                               "have; left out");
    }
  }
  if (const json* v = Field(spec, "partitionLabelValue")) {
    shard.partition_label_value = AsString(*v, where + ".partitionLabelValue");
  }

  const json* placement = Field(spec, "placementStrategy");
  if (placement != nullptr) {
    AsObject(*placement, where + ".placementStrategy");
    OnlyKeys(*placement, where + ".placementStrategy", {"gpu", "cpu"});
  }
  const std::string gpu = Strategy(placement, "gpu", where + ".placementStrategy");
  const std::string cpu = Strategy(placement, "cpu", where + ".placementStrategy");

  std::map<std::string, Toggle> plugins;
  for (const auto& [name, priority] : kDefaultPlugins) plugins[name].priority = priority;
  plugins["gpusharingorder"].enabled = gpu == "binpack";
  plugins["gpupack"].enabled = gpu == "binpack";
  plugins["gpuspread"].enabled = gpu != "binpack";
  if (const json* v = Field(spec, "kValue")) {
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      Fail(where + ".kValue", "must be a number");
    }
    plugins["proportion"].arguments["kValue"] = FormatFloat(v->get<double>());
  }
  if (const json* v = Field(spec, "minRuntime")) {
    const std::string at = where + ".minRuntime";
    OnlyKeys(AsObject(*v, at), at, {"preemptMinRuntime", "reclaimMinRuntime"});
    if (const json* p = Field(*v, "preemptMinRuntime")) {
      plugins["minruntime"].arguments["defaultPreemptMinRuntime"] =
          AsString(*p, at + ".preemptMinRuntime");
    }
    if (const json* r = Field(*v, "reclaimMinRuntime")) {
      plugins["minruntime"].arguments["defaultReclaimMinRuntime"] =
          AsString(*r, at + ".reclaimMinRuntime");
    }
  }
  plugins["nodeplacement"].arguments["gpu"] = gpu;
  plugins["nodeplacement"].arguments["cpu"] = cpu;
  MergeOverrides(Field(spec, "plugins"), where + ".plugins", true, plugins);

  std::map<std::string, Toggle> actions;
  for (const auto& [name, priority] : kDefaultActions) actions[name].priority = priority;
  actions["consolidation"].enabled = gpu != "spread" && cpu != "spread";
  MergeOverrides(Field(spec, "actions"), where + ".actions", false, actions);

  json config = json::object();
  std::string action_list;
  const std::vector<std::string> action_names = Resolve(actions);
  for (const std::string& a : action_names) {
    action_list += (action_list.empty() ? "" : ", ") + a;
  }
  config["actions"] = action_list;
  json tier_plugins = json::array();
  for (const std::string& name : Resolve(plugins)) {
    json p = {{"name", name}};
    if (!plugins[name].arguments.empty()) p["arguments"] = plugins[name].arguments;
    tier_plugins.push_back(std::move(p));
  }
  config["tiers"] = json::array({json{{"plugins", std::move(tier_plugins)}}});
  config["scenarioSearchBudgets"] =
      ScenarioSearchBudgets(Field(spec, "scenarioSearchBudgets"), where + ".scenarioSearchBudgets");
  if (const json* depth = Field(spec, "queueDepthPerAction")) {
    const std::string at = where + ".queueDepthPerAction";
    json out = json::object();
    for (auto it = AsObject(*depth, at).begin(); it != depth->end(); ++it) {
      if (std::find(action_names.begin(), action_names.end(), it.key()) == action_names.end()) {
        Fail(at, "the scheduler's actions are " + action_list + ". " + it.key() +
                     " isn't one of them, making the queueDepthPerAction invalid");
      }
      out[it.key()] = AsInt(it.value(), at + "." + it.key());
    }
    if (!out.empty()) config["queueDepthPerAction"] = std::move(out);
  }
  if (const json* usage = Field(spec, "usageDBConfig")) {
    config["usageDBConfig"] = UsageDb(*usage, where + ".usageDBConfig", globals);
  }
  shard.config_yaml = ToYaml(config);

  shard.args = {
      "--scheduler-conf=" + globals.config_path,
      "--scheduler-name=" + globals.scheduler_name,
      "--namespace=" + globals.namespace_name,
      "--nodepool-label-key=" + globals.nodepool_label_key,
      "--partition-label-value=" + shard.partition_label_value,
      "--resource-reservation-app-label=" + globals.reservation_app_label,
      "--queue-label-key=" + globals.queue_label_key,
      "--listen-address=:" + std::to_string(globals.port),
  };
  if (globals.metrics_namespace) {
    shard.args.push_back("--metrics-namespace=" + *globals.metrics_namespace);
  }
  if (const json* args = Field(spec, "args")) {
    // By flag name, as the operator visits its scheduler's flags.
    for (const auto& [name, value] : AsStringMap(*args, where + ".args")) {
      if (takes_flag(name)) {
        std::string flag = "--" + name;
        flag += "=";
        flag += value;
        shard.shard_args.push_back(std::move(flag));
      } else {
        std::string warning = where + ".args.";
        warning += name;
        warning += ": gantry scheduler has no flag --";
        warning += name;
        warning += "; left out";
        shard.warnings.push_back(std::move(warning));
      }
    }
    shard.args.insert(shard.args.end(), shard.shard_args.begin(), shard.shard_args.end());
  }
  if (globals.replicas > 1) shard.args.emplace_back("--leader-elect=true");
  if (globals.json_log) shard.args.emplace_back("--log-json");
  return shard;
}

}  // namespace

Result<std::vector<KaiShard>> ReadKaiShards(
    const std::string& text, const std::string& origin, const KaiGlobals& globals,
    const std::function<bool(const std::string&)>& takes_flag) {
  Result<json> parsed = ParseJsonOrYamlDocument(text, origin, "a SchedulingShard or a list");
  if (!parsed.ok()) return Error{parsed.error()};
  const json& doc = parsed.value();
  std::vector<KaiShard> shards;
  try {
    const json* items = doc.is_object() ? Field(doc, "items") : nullptr;
    if (items == nullptr) {
      shards.push_back(Read(doc, origin, globals, takes_flag));
    } else {
      if (!items->is_array()) Fail(origin + ": items", "must be a list");
      for (size_t i = 0; i < items->size(); ++i) {
        shards.push_back(
            Read((*items)[i], origin + ": items[" + std::to_string(i) + "]", globals, takes_flag));
      }
    }
  } catch (const ShardError& e) {
    return Error{e.message};
  } catch (const json::exception& e) {
    return Error{origin + ": " + e.what()};
  }
  return shards;
}

Result<std::string> HelmValuesForShards(const std::vector<KaiShard>& shards) {
  json scheduler = json::object();
  json pools = json::array();
  std::set<std::string> seen;
  for (const KaiShard& s : shards) {
    if (!seen.insert(s.partition_label_value).second) {
      return Error{"SchedulingShard " + s.name + ": another shard also serves " +
                   (s.partition_label_value.empty()
                        ? std::string("the default pool (no partitionLabelValue)")
                        : "the pool \"" + s.partition_label_value + "\"")};
    }
    if (s.partition_label_value.empty()) {
      scheduler["config"] = s.config_yaml;
      scheduler["extraArgs"] = s.shard_args;
    } else {
      pools.push_back(json{
          {"name", s.partition_label_value}, {"config", s.config_yaml}, {"args", s.shard_args}});
    }
  }
  if (!pools.empty()) scheduler["nodePools"] = std::move(pools);
  // Literal blocks for the configurations, so that the values read like the ConfigMaps.
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "scheduler" << YAML::Value << YAML::BeginMap;
  for (auto it = scheduler.begin(); it != scheduler.end(); ++it) {
    out << YAML::Key << it.key() << YAML::Value;
    if (it.key() == "config") {
      out << YAML::Literal << it.value().get<std::string>();
    } else if (it.key() == "nodePools") {
      out << YAML::BeginSeq;
      for (const json& pool : it.value()) {
        out << YAML::BeginMap << YAML::Key << "name" << YAML::Value
            << pool["name"].get<std::string>() << YAML::Key << "config" << YAML::Value
            << YAML::Literal << pool["config"].get<std::string>() << YAML::Key << "args"
            << YAML::Value;
        Emit(out, pool["args"]);
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    } else {
      Emit(out, it.value());
    }
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

int RunKaiShard(const KaiShardOptions& options,
                const std::function<bool(const std::string&)>& takes_flag, std::ostream& out,
                std::ostream& err) {
  std::vector<KaiShard> shards;
  for (const std::string& file : options.files) {
    const std::string path = file == "-" ? "/dev/stdin" : file;
    Result<std::string> text = ReadInputFile(path);
    if (!text.ok()) {
      err << "kai-shard: " << text.error() << "\n";
      return 1;
    }
    Result<std::vector<KaiShard>> read =
        ReadKaiShards(text.value(), file == "-" ? "<stdin>" : file, options.globals, takes_flag);
    if (!read.ok()) {
      err << "kai-shard: " << read.error() << "\n";
      return 1;
    }
    for (KaiShard& s : read.value()) shards.push_back(std::move(s));
  }
  if (shards.empty()) {
    err << "kai-shard: no SchedulingShard in the input\n";
    return 1;
  }
  for (const KaiShard& s : shards) {
    for (const std::string& w : s.warnings) err << "warning: " << w << "\n";
  }
  if (options.output == "helm-values") {
    Result<std::string> values = HelmValuesForShards(shards);
    if (!values.ok()) {
      err << "kai-shard: " << values.error() << "\n";
      return 1;
    }
    out << values.value();
    return 0;
  }
  for (const KaiShard& s : shards) {
    if (shards.size() > 1) {  // one YAML document per shard, or a comment line before its args
      out << (options.output == "args" ? "" : "---\n") << "# SchedulingShard " << s.name << "\n";
    }
    if (options.output == "args") {
      for (const std::string& a : s.args) out << a << "\n";
    } else {
      out << s.config_yaml;
    }
  }
  return 0;
}

}  // namespace gantry::cli
