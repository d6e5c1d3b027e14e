// Scheduler configuration: which actions run, in which order, and which plugins with which
// arguments. Read from YAML in KAI's shape:
//
//   actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"
//   tiers:
//   - plugins:
//     - name: proportion
//     - name: nodeplacement
//       arguments: {gpu: binpack, cpu: binpack}
//
// (a top-level `plugins:` list is accepted too), plus the scheduler parameters below.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace gantry {

struct PluginConfig {
  std::string name;
  std::map<std::string, std::string> arguments;
  // Callbacks to switch off: job_order, task_order, preemptable, reclaimable, queue_order,
  // predicate, node_order.
  std::vector<std::string> disabled_functions;
};

struct SchedulerParams {
  std::string scheduler_name = "kai-scheduler";
  std::string queue_label_key = "kai.scheduler/queue";
  int max_consolidation_preemptees = -1;  // -1: no limit
  bool allow_consolidating_reclaim = true;
  double staleness_grace_period_seconds = 60;  // negative: never evict stale gangs
  // Victim search shortcuts that give the same result with less work (off only to verify that).
  bool solver_shortcuts = true;
};

struct SchedulerConfig {
  std::vector<std::string> actions;
  std::vector<PluginConfig> plugins;
  SchedulerParams params;

  // KAI's defaults: the five actions and the default plugin list.
  static SchedulerConfig Default();
};

// Parses a configuration document (YAML or JSON). Unspecified parts keep their defaults; an
// unknown key is an error naming it.
Result<SchedulerConfig> ParseSchedulerConfig(const std::string& text, const std::string& origin);

}  // namespace gantry
