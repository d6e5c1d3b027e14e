// The gantry command-line verbs. Each returns the process exit code.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gantry::cli {

struct CycleOptions {
  std::string scenario;
  std::string config;  // optional scheduler configuration overriding the scenario's
  int cycles = 1;
  bool json = false;
  // The victim search of KAI v0.16+ (SchedulerParams::victim_search_v017).
  bool victim_search_v017 = false;
};
int RunCycle(const CycleOptions& options, std::ostream& out, std::ostream& err);

struct ConformanceOptions {
  std::vector<std::string> paths;  // files or directories
  std::vector<std::string> lists;  // list files naming scenario files
  bool report_only = false;        // exit 0 even when cases fail
  bool verbose = false;            // print passing cases too
  // Run every scenario with no actions at all: the score a do-nothing scheduler gets, to judge
  // how much a pass count means.
  bool do_nothing = false;
  // The victim search of KAI v0.16+ (SchedulerParams::victim_search_v017).
  bool victim_search_v017 = false;
};
int RunConformance(const ConformanceOptions& options, std::ostream& out, std::ostream& err);

struct BenchOptions {
  std::string scenario;  // reclaim-large-jobs
  int nodes = 500;
  int runs = 5;
};
// Prints one JSON line of figures for a built-in benchmark scenario.
int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gantry::cli
