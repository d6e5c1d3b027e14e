// `gantry simulate`: runs a simulation file on the virtual clock (sim/simulation.h) and prints or
// writes its report (sim/report.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace gantry::cli {

struct SimulateOptions {
  std::string file;
  std::optional<uint64_t> seed;
  std::optional<double> until;  // seconds of virtual time
  std::string config;           // a KAI-shaped scheduler configuration replacing the file's
  std::string out_dir;          // writes report.html and timeline.csv there
  bool json = false;
  // KAI's time-based fairshare simulator CSV (sim/kai_time_aware.h) to this file; "-": stdout
  // instead of the summary.
  std::string kai_csv;
};
int RunSimulate(const SimulateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gantry::cli
