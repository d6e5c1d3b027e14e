#include "cli/simulate_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "framework/config.h"
#include "sim/kai_time_aware.h"
#include "sim/report.h"
#include "sim/simulation.h"

namespace gantry::cli {

namespace {

// A progress bar on stderr, redrawn when the percentage changes (only when stderr is a terminal).
void DrawProgress(double fraction, void* context) {
  auto* last = static_cast<int*>(context);
  const int pct = static_cast<int>(fraction * 100);
  if (pct == *last) return;
  *last = pct;
  char bar[41];
  for (int i = 0; i < 40; ++i) bar[i] = i < pct * 40 / 100 ? '#' : '.';
  bar[40] = '\0';
  std::fprintf(stderr, "\r[%s] %3d%%", bar, pct);
  std::fflush(stderr);
}

bool WriteFile(const std::filesystem::path& path, const std::string& text, std::ostream& err) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) {
    err << "simulate: cannot write " << path.string() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int RunSimulate(const SimulateOptions& options, std::ostream& out, std::ostream& err) {
  auto sim = sim::LoadSimulationFile(options.file);
  if (!sim.ok()) {
    err << sim.error() << "\n";
    return 2;
  }
  if (!options.config.empty()) {
    std::ifstream in(options.config, std::ios::binary);
    if (!in) {
      err << options.config << ": cannot open file\n";
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto cfg = ParseSchedulerConfig(text.str(), options.config);
    if (!cfg.ok()) {
      err << cfg.error() << "\n";
      return 2;
    }
    sim.value().config = cfg.value();
  }
  if (!options.kai_csv.empty() && sim.value().inflation.enabled) {
    err << "simulate: --kai-csv: an inflation run has no cycles of queue allocations\n";
    return 2;
  }
  const bool tty = isatty(STDERR_FILENO) == 1;
  int last = -1;
  auto result =
      sim::Run(sim.value(), options.seed, options.until, tty ? DrawProgress : nullptr, &last);
  if (tty) std::fprintf(stderr, "\r%60s\r", "");
  if (!result.ok()) {
    err << result.error() << "\n";
    return 2;
  }
  const sim::Outcome& o = result.value();
  if (!options.kai_csv.empty() && options.kai_csv != "-" &&
      !WriteFile(options.kai_csv, sim::KaiTimeAwareCsv(o), err)) {
    return 2;
  }
  if (options.kai_csv == "-") {
    out << sim::KaiTimeAwareCsv(o);
  } else if (options.json) {
    out << sim::ToJson(o).dump(2) << "\n";
  } else {
    sim::PrintSummary(o, out);
  }
  if (!options.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out_dir, ec);
    if (ec) {
      err << "simulate: cannot create " << options.out_dir << ": " << ec.message() << "\n";
      return 2;
    }
    const std::filesystem::path dir(options.out_dir);
    if (!WriteFile(dir / "report.html", sim::HtmlReport(o), err) ||
        !WriteFile(dir / "timeline.csv", sim::TimelineCsv(o), err) ||
        (!o.inflation && !WriteFile(dir / "placements.csv", sim::PlacementsCsv(o), err))) {
      return 2;
    }
    if (!options.json && options.kai_csv != "-")
      out << "report: " << (dir / "report.html").string() << "\n";
  }
  return 0;
}

}  // namespace gantry::cli
