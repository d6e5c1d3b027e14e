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
  // Said about the scenario without failing it (e.g. an expectation the format leaves unchecked).
  std::vector<std::string> notes;
};

// Runs `scenario` with the given registries. Never throws; a configuration the registries reject
// is a failed outcome naming the entry.
ScenarioOutcome RunScenario(const Scenario& scenario, const PluginRegistry& plugins,
                            const ActionRegistry& actions);

// What every decision list must keep, whatever produced it (checked by RunScenario after each
// action, and by the randomized eviction tests): no pod gets two eviction requests, and no
// queue's allocation goes below zero. (A pod placed earlier in the same session may be evicted
// by a later action, as in KAI.) One message per violation, naming the pod or queue; empty when
// both hold.
std::vector<std::string> DecisionInvariantViolations(const Session& ssn);

// Derives the per-session inputs the harness computes at every session build: last start time
// (one minute ago for jobs with an allocated-like pod) and stale timestamps.
void PrepareScenarioCycle(const Scenario& scenario, Cluster& cluster, int64_t now_ms);

// Simulated "now" of a scenario's first session.
int64_t ScenarioStartMs();

}  // namespace gantry
