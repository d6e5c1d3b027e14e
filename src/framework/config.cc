#include "framework/config.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>

namespace gantry {

SchedulerConfig SchedulerConfig::Default() {
  SchedulerConfig c;
  c.actions = {"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"};
  for (const char* name : {"predicates", "proportion", "priority", "elastic", "kubeflow", "ray",
                           "nodeavailability", "gpusharingorder", "gpupack", "resourcetype",
                           "subgrouporder", "taskorder", "nominatednode", "dynamicresources"}) {
    c.plugins.push_back({name, {}, {}});
  }
  c.plugins.push_back({"nodeplacement", {{"cpu", "binpack"}, {"gpu", "binpack"}}, {}});
  for (const char* name : {"minruntime", "topology", "snapshot"}) {
    c.plugins.push_back({name, {}, {}});
  }
  return c;
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

Result<PluginConfig> ParsePlugin(const YAML::Node& node, const std::string& where) {
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
      static const std::map<std::string, std::string> kFlags = {
          {"disableJobOrder", "job_order"},      {"disableTaskOrder", "task_order"},
          {"disablePreemptable", "preemptable"}, {"disableReclaimable", "reclaimable"},
          {"disableQueueOrder", "queue_order"},  {"disablePredicate", "predicate"},
          {"disableNodeOrder", "node_order"}};
      auto flag = kFlags.find(key);
      if (flag == kFlags.end()) return Error{where + ": unknown field \"" + key + "\""};
      if (kv.second.as<bool>()) pc.disabled_functions.push_back(flag->second);
    } else {
      return Error{where + ": unknown field \"" + key + "\""};
    }
  }
  if (pc.name.empty()) return Error{where + ".name: missing"};
  return pc;
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
        if (!v.IsSequence()) return Error{origin + ": " + key + ": must be a list"};
        for (size_t t = 0; t < v.size(); ++t) {
          if (key == "plugins") {
            auto pc = ParsePlugin(v[t], origin + ": plugins[" + std::to_string(t) + "]");
            if (!pc.ok()) return Error{pc.error()};
            c.plugins.push_back(pc.value());
            continue;
          }
          const YAML::Node plugins = v[t]["plugins"];
          if (!plugins.IsSequence()) {
            return Error{origin + ": tiers[" + std::to_string(t) + "].plugins: must be a list"};
          }
          for (size_t i = 0; i < plugins.size(); ++i) {
            auto pc = ParsePlugin(plugins[i], origin + ": tiers[" + std::to_string(t) +
                                                  "].plugins[" + std::to_string(i) + "]");
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
      } else {
        return Error{origin + ": unknown field \"" + key + "\""};
      }
    }
  } catch (const YAML::Exception& e) {
    return Error{origin + ": bad value: " + e.what()};
  }
  if (c.actions.empty()) return Error{origin + ": actions: at least one action is required"};
  return c;
}

}  // namespace gantry
