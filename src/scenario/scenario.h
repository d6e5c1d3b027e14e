// Scenarios: a cluster snapshot, a scheduler configuration, how many cycles to run and what the
// state must look like afterwards (the format is documented in docs/scenario-format.md and follows
// the shared conformance specification). Used by `gantry conformance`, `gantry cycle` and tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "framework/config.h"
#include "model/cluster.h"
#include "util/status.h"

namespace gantry {

// Expected state of a job (every pod) or of one pod.
struct StateExpectation {
  std::optional<PodStatus> status;
  std::optional<std::string> node;
  std::optional<double> gpus_required;
  std::optional<double> gpus_accepted;
  std::optional<double> cpu_millis_required;
  std::optional<double> memory_bytes_required;
  std::optional<double> last_start_older_than_seconds;
  std::optional<std::string> error_message;
  // Zone indices of the pod's NUMA placement (order ignored; empty: no placement).
  std::optional<std::vector<int>> numa_zones;
};

struct NodeExpectation {
  double idle_gpus = 0;
  double releasing_gpus = 0;
  // Zone index -> resources whose available amount must match exactly.
  std::map<int, ResourceAmounts> numa_zones_available;
};

struct CacheExpectation {
  std::optional<int> max_binds_per_cycle;
  std::optional<int> max_evictions_per_cycle;
  std::optional<int> max_pipelined_per_cycle;
};

struct Scenario {
  std::string origin;  // file name, for messages
  std::string name;
  bool multi_round = false;
  int rounds_until_match = 2;
  int rounds_after_match = 5;
  SchedulerConfig config;
  Cluster cluster;
  // Per job: stale timestamp offset (seconds before the session's now), if given.
  std::vector<std::optional<double>> stale_for_seconds;

  std::map<std::string, StateExpectation> expect_jobs;
  std::map<std::string, StateExpectation> expect_tasks;
  std::map<std::string, NodeExpectation> expect_nodes;
  CacheExpectation expect_cache;
  bool has_expectations = false;
};

// Reads a scenario from a .json, .yaml or .yml file. Errors name the file, the object and the
// field.
Result<Scenario> LoadScenarioFile(const std::string& path);
// Parses scenario text (JSON or YAML); `origin` prefixes error messages.
Result<Scenario> ParseScenario(const std::string& text, const std::string& origin);

}  // namespace gantry
