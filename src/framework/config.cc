#include "framework/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string_view>

#include "util/duration.h"

namespace gantry {

SchedulerConfig SchedulerConfig::Default() {
  SchedulerConfig c;
  c.actions = {"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"};
  for (const char* name :
       {"predicates", "proportion", "priority", "elastic", "kubeflow", "ray", "nodeavailability",
        "gpusharingorder", "gpupack", "resourcetype", "podaffinity", "subgrouporder", "taskorder",
        "nominatednode", "dynamicresources"}) {
    c.plugins.push_back({name, {}, {}});
  }
  c.plugins.push_back({"nodeplacement", {{"cpu", "binpack"}, {"gpu", "binpack"}}, {}});
  for (const char* name :
       {"minruntime", "topology", "snapshot", "sg-nodelocalgreedy", "sg-multinodegang"}) {
    c.plugins.push_back({name, {}, {}});
  }
  return c;
}

namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kMinuteNs = 60 * kSecondNs;
// KAI's defaults (constants.Default*Budget, DefaultNodeLocalGreedy, DefaultMultiNodeGang).
constexpr int64_t kDefaultActionNs = 5 * kMinuteNs;
constexpr int64_t kDefaultJobNs = 4 * kMinuteNs;
constexpr int64_t kDefaultGeneratorNs = 2 * kMinuteNs;
constexpr int64_t kDefaultNodeLocalGreedyNs = 30 * kSecondNs;
constexpr int64_t kDefaultMultiNodeGangNs = 2 * kMinuteNs;

// The parts joined (one allocation: messages built inside loops).
std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  std::string out;
  out.reserve(size);
  for (std::string_view p : parts) out += p;
  return out;
}

}  // namespace

int64_t ScenarioSearchBudgets::ActionLimitNs(const std::string& action) const {
  if (auto it = max_action_ns.find(action); it != max_action_ns.end()) return it->second;
  if (auto it = max_action_ns.find("default"); it != max_action_ns.end()) return it->second;
  return kDefaultActionNs;
}

int64_t ScenarioSearchBudgets::JobLimitNs() const { return max_job_ns.value_or(kDefaultJobNs); }

int64_t ScenarioSearchBudgets::MinJobNs() const { return min_job_ns.value_or(0); }

std::map<std::string, int64_t> ScenarioSearchBudgets::GeneratorLimitsNs() const {
  std::map<std::string, int64_t> out = max_generator_ns;
  const auto configured_default = max_generator_ns.find("default");
  const bool has_default = configured_default != max_generator_ns.end();
  out["default"] = has_default ? configured_default->second : kDefaultGeneratorNs;
  for (const auto& [name, builtin] :
       {std::pair<const char*, int64_t>{"NodeLocalGreedy", kDefaultNodeLocalGreedyNs},
        {"MultiNodeGang", kDefaultMultiNodeGangNs}}) {
    if (!max_generator_ns.contains(name)) out[name] = has_default ? out["default"] : builtin;
  }
  return out;
}

int64_t ScenarioSearchBudgets::GeneratorLimitNs(const std::string& generator) const {
  const auto limits = GeneratorLimitsNs();
  auto it = limits.find(generator);
  return it != limits.end() ? it->second : limits.at("default");
}

namespace {

std::vector<std::string> SplitActions(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t\n");
    const auto e = item.find_last_not_of(" \t\n");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

Result<PluginConfig> ParsePlugin(const YAML::Node& node, const std::string& where,
                                 std::vector<std::string>& warnings) {
  if (!node.IsMap()) return Error{where + ": must be a mapping with a name"};
  PluginConfig pc;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key == "name") {
      pc.name = kv.second.as<std::string>();
    } else if (key == "arguments") {
      if (!kv.second.IsMap()) return Error{where + ".arguments: must be a mapping"};
      for (const auto& arg : kv.second) {
        pc.arguments[arg.first.as<std::string>()] = arg.second.as<std::string>();
      }
    } else if (key.rfind("disable", 0) == 0) {
      // KAI's disableJobOrder / disableTaskOrder / ... flags.
      static const std::map<std::string, std::string> flags = {
          {"disableJobOrder", "job_order"},      {"disableTaskOrder", "task_order"},
          {"disablePreemptable", "preemptable"}, {"disableReclaimable", "reclaimable"},
          {"disableQueueOrder", "queue_order"},  {"disablePredicate", "predicate"},
          {"disableNodeOrder", "node_order"}};
      auto flag = flags.find(key);
      if (flag == flags.end()) {
        warnings.push_back(Cat({where, ": unknown field \"", key, "\" skipped"}));
        continue;
      }
      if (kv.second.as<bool>()) pc.disabled_functions.push_back(flag->second);
    } else {
      warnings.push_back(Cat({where, ": unknown field \"", key, "\" skipped"}));
    }
  }
  if (pc.name.empty()) return Error{where + ".name: missing"};
  return pc;
}

// "2025-01-01T00:00:00Z" or with an offset ("+02:00"), fractions of a second allowed, as
// Unix milliseconds.
std::optional<int64_t> ParseRfc3339Ms(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
                  &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  size_t i = 19;
  double frac = 0;
  if (i < text.size() && text[i] == '.') {
    size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) != 0) ++j;
    if (j == i + 1) return std::nullopt;
    frac = std::strtod(("0" + text.substr(i, j - i)).c_str(), nullptr);  // never throws
    i = j;
  }
  int64_t offset_s = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    const int oh = std::atoi(text.substr(i + 1, 2).c_str());
    const int om = std::atoi(text.substr(i + 4, 2).c_str());
    offset_s = (text[i] == '-' ? -1 : 1) * (int64_t{oh} * 3600 + int64_t{om} * 60);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  // Days from the civil date (proleptic Gregorian).
  const int yy = mo <= 2 ? y - 1 : y;
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = int64_t{era} * 146097 + doe - 719468;
  const int64_t secs = days * 86400 + int64_t{h} * 3600 + int64_t{mi} * 60 + sec - offset_s;
  return secs * 1000 + static_cast<int64_t>(frac * 1000);
}

Result<UsageDbConfig> ParseUsageDbConfig(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) return Error{where + ": must be a mapping"};
  UsageDbConfig c;
  const auto text = [](const YAML::Node& v) { return v.as<std::string>(); };
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "clientType") {
      c.client_type = text(v);
    } else if (key == "connectionString") {
      c.connection_string = text(v);
    } else if (key == "connectionStringEnvVar") {
      c.connection_string_env_var = text(v);
    } else if (key == "usageParams") {
      if (v.IsNull()) continue;
      if (!v.IsMap()) return Error{where + ".usageParams: must be a mapping"};
      UsageParams& p = c.usage_params;
      for (const auto& pkv : v) {
        const std::string pkey = pkv.first.as<std::string>();
        const YAML::Node& pv = pkv.second;
        std::string field = where;
        field += ".usageParams.";
        field += pkey;
        const auto duration = [&](DurationUnits units) -> Result<double> {
          auto seconds = ParseGoDurationSeconds(text(pv), units);
          if (!seconds.ok()) return Error{field + ": " + seconds.error()};
          return seconds.value();
        };
        if (pkey == "halfLifePeriod") {
          auto d = duration(DurationUnits::kGo);
          if (!d.ok()) return Error{d.error()};
          // KAI: a half-life <= 0 means no decay.
          if (d.value() > 0) {
            p.half_life_seconds = d.value();
          } else {
            p.half_life_seconds.reset();
          }
        } else if (pkey == "windowSize") {
          auto d = duration(DurationUnits::kGoDaysAndWeeks);
          if (!d.ok()) return Error{d.error()};
          if (d.value() <= 0) return Error{field + ": must be positive (got \"" + text(pv) + "\")"};
          p.window_size_seconds = d.value();
        } else if (pkey == "windowType") {
          const std::string t = text(pv);
          if (t == "sliding") {
            p.window_type = UsageParams::WindowType::kSliding;
          } else if (t == "tumbling") {
            p.window_type = UsageParams::WindowType::kTumbling;
          } else if (t == "cron") {
            p.window_type = UsageParams::WindowType::kCron;
          } else {
            std::string message = field;
            message += ": must be sliding, tumbling or cron (got \"";
            message += t;
            message += "\")";
            return Error{message};
          }
        } else if (pkey == "tumblingWindowStartTime") {
          auto ms = ParseRfc3339Ms(text(pv));
          if (!ms) {
            return Error{field + ": not an RFC 3339 time (got \"" + text(pv) +
                         "\", e.g. 2025-01-01T00:00:00Z)"};
          }
          p.tumbling_window_start_ms = *ms;
        } else if (pkey == "cronString") {
          p.cron_string = text(pv);
        } else if (pkey == "fetchInterval" || pkey == "stalenessPeriod" || pkey == "waitTimeout") {
          auto d = duration(DurationUnits::kGo);
          if (!d.ok()) return Error{d.error()};
          if (d.value() <= 0) return Error{field + ": must be positive (got \"" + text(pv) + "\")"};
          (pkey == "fetchInterval"     ? p.fetch_interval_seconds
           : pkey == "stalenessPeriod" ? p.staleness_period_seconds
                                       : p.wait_timeout_seconds) = d.value();
        } else if (pkey == "extraParams") {
          if (!pv.IsMap()) return Error{field + ": must be a mapping"};
          for (const auto& e : pv) p.extra_params[e.first.as<std::string>()] = text(e.second);
        } else {
          std::string message = where;
          message += ".usageParams: unknown field \"";
          message += pkey;
          message += "\"";
          return Error{message};
        }
      }
    } else {
      std::string message = where;
      message += ": unknown field \"";
      message += key;
      message += "\"";
      return Error{message};
    }
  }
  if (c.client_type.empty())
    return Error{where + ".clientType: missing (client type cannot be empty)"};
  if (c.client_type != "prometheus" && c.client_type != "embedded") {
    return Error{where + ".clientType: unknown client type \"" + c.client_type +
                 "\", supported types: [embedded prometheus]"};
  }
  if (c.client_type == "prometheus") {
    if (!c.connection_string.empty() && !c.connection_string_env_var.empty()) {
      return Error{
          where +
          ": both connectionString and connectionStringEnvVar are set, only one is allowed"};
    }
    if (c.connection_string.empty() && c.connection_string_env_var.empty()) {
      return Error{where +
                   ": connectionString and connectionStringEnvVar are not set, one is required"};
    }
  }
  const UsageParams& p = c.usage_params;
  if (p.window_type == UsageParams::WindowType::kTumbling && !p.tumbling_window_start_ms) {
    return Error{where +
                 ".usageParams.tumblingWindowStartTime: required when windowType is tumbling"};
  }
  if (p.window_type == UsageParams::WindowType::kCron && p.cron_string.empty()) {
    return Error{where + ".usageParams.cronString: required when windowType is cron"};
  }
  for (const char* key : {"usageQueryTimeout", "queryResolution"}) {
    auto it = p.extra_params.find(key);
    if (it == p.extra_params.end()) continue;
    auto d = ParseGoDuration(it->second);
    if (!d.ok() || d.value() <= 0) {
      return Error{where + ".usageParams.extraParams." + key + ": not a positive duration (got \"" +
                   it->second + "\")"};
    }
  }
  return c;
}

// One budget: a non-negative Go duration, as nanoseconds.
Result<int64_t> ParseBudget(const YAML::Node& v, const std::string& where) {
  if (!v.IsScalar()) return Error{where + ": must be a duration string (e.g. \"30s\")"};
  const std::string text = v.as<std::string>();
  auto d = ParseGoDuration(text);
  if (!d.ok()) return Error{where + ": " + d.error()};
  if (d.value() < 0) return Error{where + ": must be non-negative (got \"" + text + "\")"};
  return d.value();
}

// A map of budgets whose keys must be among `keys`.
Result<bool> ParseBudgetMap(const YAML::Node& v, const std::string& where,
                            std::initializer_list<const char*> keys, const char* what,
                            std::map<std::string, int64_t>& out) {
  if (v.IsNull()) return true;
  if (!v.IsMap()) return Error{where + ": must be a mapping"};
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
      std::string valid;
      for (const char* k : keys) {
        if (!valid.empty()) valid += ", ";
        valid += k;
      }
      return Error{
          Cat({where, ".", key, ": unknown ", what, " \"", key, "\" (valid: ", valid, ")"})};
    }
    auto d = ParseBudget(kv.second, Cat({where, ".", key}));
    if (!d.ok()) return Error{d.error()};
    out[key] = d.value();
  }
  return true;
}

// KAI's scenarioSearchBudgets, checked as KAI's operator and session open check them: durations
// non-negative, action keys among the eviction actions, generator keys among the generators
// (Gantry has KAI's two), the minimum per job below the job's maximum unless that is unlimited.
Result<bool> ParseSearchBudgets(const YAML::Node& v, const std::string& where,
                                ScenarioSearchBudgets& out, std::vector<std::string>& warnings) {
  if (v.IsNull()) return true;
  if (!v.IsMap()) return Error{where + ": must be a mapping"};
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    const std::string at = Cat({where, ".", key});
    if (key == "maxActionSearchDuration") {
      auto ok = ParseBudgetMap(kv.second, at, {"default", "reclaim", "preempt", "consolidation"},
                               "action key", out.max_action_ns);
      if (!ok.ok()) return Error{ok.error()};
    } else if (key == "maxGeneratorSearchDuration") {
      auto ok = ParseBudgetMap(kv.second, at, {"default", "NodeLocalGreedy", "MultiNodeGang"},
                               "scenario generator", out.max_generator_ns);
      if (!ok.ok()) return Error{ok.error()};
    } else if (key == "maxJobSearchDuration" || key == "minJobSearchDuration") {
      if (kv.second.IsNull()) continue;
      auto d = ParseBudget(kv.second, at);
      if (!d.ok()) return Error{d.error()};
      (key == "maxJobSearchDuration" ? out.max_job_ns : out.min_job_ns) = d.value();
    } else {
      warnings.push_back(Cat({where, ": unknown field \"", key, "\" skipped"}));
    }
  }
  if (out.JobLimitNs() != 0 && out.MinJobNs() >= out.JobLimitNs()) {
    return Error{where + ".minJobSearchDuration: must be less than maxJobSearchDuration"};
  }
  return true;
}

}  // namespace

Result<SchedulerConfig> ParseSchedulerConfig(const std::string& text, const std::string& origin) {
  SchedulerConfig c = SchedulerConfig::Default();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Error{origin + ": malformed YAML: " + e.what()};
  }
  if (!root.IsDefined() || root.IsNull()) return c;
  if (!root.IsMap()) return Error{origin + ": the configuration must be a mapping"};
  try {
    bool plugins_set = false;
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "actions") {
        if (v.IsSequence()) {
          c.actions.clear();
          for (const auto& a : v) c.actions.push_back(a.as<std::string>());
        } else {
          c.actions = SplitActions(v.as<std::string>());
        }
      } else if (key == "tiers" || key == "plugins") {
        if (!plugins_set) c.plugins.clear();
        plugins_set = true;
        if (!v.IsSequence()) return Error{Cat({origin, ": ", key, ": must be a list"})};
        for (size_t t = 0; t < v.size(); ++t) {
          if (key == "plugins") {
            auto pc =
                ParsePlugin(v[t], origin + ": plugins[" + std::to_string(t) + "]", c.warnings);
            if (!pc.ok()) return Error{pc.error()};
            c.plugins.push_back(pc.value());
            continue;
          }
          const YAML::Node plugins = v[t]["plugins"];
          if (!plugins.IsSequence()) {
            return Error{origin + ": tiers[" + std::to_string(t) + "].plugins: must be a list"};
          }
          for (size_t i = 0; i < plugins.size(); ++i) {
            auto pc = ParsePlugin(
                plugins[i],
                origin + ": tiers[" + std::to_string(t) + "].plugins[" + std::to_string(i) + "]",
                c.warnings);
            if (!pc.ok()) return Error{pc.error()};
            c.plugins.push_back(pc.value());
          }
        }
      } else if (key == "schedulerName") {
        c.params.scheduler_name = v.as<std::string>();
      } else if (key == "queueLabelKey") {
        c.params.queue_label_key = v.as<std::string>();
      } else if (key == "maxNumberConsolidationPreemptees") {
        c.params.max_consolidation_preemptees = v.as<int>();
      } else if (key == "allowConsolidatingReclaim") {
        c.params.allow_consolidating_reclaim = v.as<bool>();
      } else if (key == "stalenessGracePeriodSeconds") {
        c.params.staleness_grace_period_seconds = v.as<double>();
      } else if (key == "usageDBConfig") {
        if (v.IsNull()) continue;
        auto u = ParseUsageDbConfig(v, origin + ": usageDBConfig");
        if (!u.ok()) return Error{u.error()};
        c.usage_db = u.value();
      } else if (key == "queueDepthPerAction") {
        if (!v.IsMap()) return Error{origin + ": queueDepthPerAction: must be a mapping"};
        for (const auto& d : v) {
          const std::string action = d.first.as<std::string>();
          const int depth = d.second.as<int>();
          if (depth < 0) {
            return Error{Cat({origin, ": queueDepthPerAction.", action, ": must not be negative"})};
          }
          c.queue_depth_per_action[action] = depth;
        }
      } else if (key == "scenarioSearchBudgets") {
        auto ok =
            ParseSearchBudgets(v, origin + ": scenarioSearchBudgets", c.search_budgets, c.warnings);
        if (!ok.ok()) return Error{ok.error()};
      } else {
        c.warnings.push_back(Cat({origin, ": unknown field \"", key, "\" skipped"}));
      }
    }
  } catch (const YAML::Exception& e) {
    return Error{origin + ": bad value: " + e.what()};
  }
  // As KAI: an empty action list or plugin list means the default one.
  if (c.actions.empty()) c.actions = SchedulerConfig::Default().actions;
  if (c.plugins.empty()) c.plugins = SchedulerConfig::Default().plugins;
  for (const auto& [action, depth] : c.queue_depth_per_action) {
    (void)depth;
    if (std::find(c.actions.begin(), c.actions.end(), action) == c.actions.end()) {
      // KAI's operator refuses such a shard; the scheduler has nothing to apply it to.
      return Error{Cat({origin, ": queueDepthPerAction.", action, ": \"", action,
                        "\" is not one of the actions"})};
    }
  }
  return c;
}

}  // namespace gantry
