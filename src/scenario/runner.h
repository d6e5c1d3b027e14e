// Runs scenarios the way the conformance specification describes (single session or multi-round
// with write-back between cycles) and compares the outcome with the scenario's expectations.
#pragma once

#include <string>
#include <vector>

#include "framework/plugin.h"
#include "scenario/scenario.h"

namespace gantry {

struct ScenarioOutcome {
  bool passed = true;
  std::vector<std::string> differences;  // empty when passed
};

// Runs `scenario` with the given registries. Never throws; a configuration the registries reject
// is a failed outcome naming the entry.
ScenarioOutcome RunScenario(const Scenario& scenario, const PluginRegistry& plugins,
                            const ActionRegistry& actions);

// Derives the per-session inputs the harness computes at every session build: last start time
// (one minute ago for jobs with an allocated-like pod) and stale timestamps.
void PrepareScenarioCycle(const Scenario& scenario, Cluster& cluster, int64_t now_ms);

// Simulated "now" of a scenario's first session.
int64_t ScenarioStartMs();

}  // namespace gantry
