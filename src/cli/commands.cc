#include "cli/commands.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "sim/synthetic.h"
#include "util/read_file.h"

namespace gantry::cli {

namespace fs = std::filesystem;

namespace {

std::string ReadFile(const std::string& path, bool& ok) {
  auto text = ReadInputFile(path);
  ok = text.ok();
  return ok ? std::move(text).value() : std::string();
}

bool IsScenarioFile(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".json" || ext == ".yaml" || ext == ".yml";
}

// Why a job has pods left pending: its job-level fit errors, or a short explanation.
std::string PendingReason(const Session& ssn, JobId j) {
  const JobState& js = ssn.job_state(j);
  if (!js.fit_errors.empty()) {
    std::string s = RenderJobFitErrors(js.fit_errors);
    // Drop the leading newline of KAI's detailed format for terminal output.
    if (!s.empty() && s.front() == '\n') s.erase(0, 1);
    return s;
  }
  const Job& job = ssn.cluster().jobs[j];
  if (job.queue == kNone) return "queue \"" + job.queue_name + "\" does not exist";
  if (!ssn.IsReadyForScheduling(j)) {
    return "not enough pods to reach the gang minimum (gated or missing pods)";
  }
  return "not considered in this cycle";
}

}  // namespace

int RunCycle(const CycleOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded = LoadScenarioFile(options.scenario);
  if (!loaded.ok()) {
    err << "error: " << loaded.error() << "\n";
    return 1;
  }
  Scenario& sc = loaded.value();
  if (!options.config.empty()) {
    bool ok = false;
    const std::string text = ReadFile(options.config, ok);
    if (!ok) {
      err << "error: " << options.config << ": cannot open file (or is a directory)\n";
      return 1;
    }
    auto cfg = ParseSchedulerConfig(text, options.config);
    if (!cfg.ok()) {
      err << "error: " << cfg.error() << "\n";
      return 1;
    }
    sc.config = cfg.value();
  }
  if (options.victim_search_v017) sc.config.params.victim_search_v017 = true;
  auto scheduler = Scheduler::Create(sc.config, BuiltinPlugins(), BuiltinActions());
  if (!scheduler.ok()) {
    err << "error: " << sc.origin << ": config: " << scheduler.error() << "\n";
    return 1;
  }
  for (const auto& w : sc.config.warnings) err << "warning: " << w << "\n";
  for (const auto& w : scheduler.value()->warnings()) {
    err << "warning: " << sc.origin << ": config: " << w << "\n";
  }
  Scheduler& sched = *scheduler.value();
  Cluster cluster = sc.cluster;
  int64_t now = ScenarioStartMs();
  nlohmann::json doc = nlohmann::json::array();

  for (int cycle = 1; cycle <= options.cycles; ++cycle) {
    now += 1000;
    PrepareScenarioCycle(sc, cluster, now);
    auto ssn = sched.OpenSession(cluster, now);
    sched.RunActions(*ssn);
    const Cluster& c = cluster;
    nlohmann::json cj;
    cj["cycle"] = cycle;
    auto node_name = [&](NodeId n) { return n == kNone ? std::string() : c.nodes[n].name; };
    for (const auto& b : ssn->binds()) {
      cj["binds"].push_back(
          {{"pod", c.pods[b.pod].name}, {"node", node_name(b.node)}, {"gpu_groups", b.gpu_groups}});
    }
    for (const auto& e : ssn->evictions()) {
      cj["evictions"].push_back(
          {{"pod", c.pods[e.pod].name}, {"node", node_name(e.node)}, {"message", e.message}});
    }
    for (const auto& p : ssn->pipelined()) {
      cj["pipelined"].push_back({{"pod", c.pods[p.pod].name}, {"node", node_name(p.node)}});
    }
    // Every pod whose status or node the cycle changed, as the session ends: one eviction
    // request per pod is listed above, while a pod can be evicted, placed elsewhere and
    // evicted again within a cycle (as in KAI).
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      const PodState& st = ssn->pod(p);
      if (st.status == c.pods[p].status && st.node == c.pods[p].node) continue;
      cj["changed_pods"].push_back({{"pod", c.pods[p].name},
                                    {"status", std::string(ToString(st.status))},
                                    {"node", node_name(st.node)}});
    }
    for (QueueId q = 0; q < static_cast<QueueId>(c.queues.size()); ++q) {
      auto fair = ssn->QueueFairShare(q);
      auto alloc = ssn->QueueAllocated(q);
      nlohmann::json qj{{"queue", c.queues[q].name}};
      if (fair) {
        qj["fair_share"] = {{"gpu", (*fair)[QueueResource::kGpu]},
                            {"cpu_millis", (*fair)[QueueResource::kCpu]},
                            {"memory_bytes", (*fair)[QueueResource::kMemory]}};
      }
      if (alloc) {
        qj["allocated"] = {{"gpu", (*alloc)[QueueResource::kGpu]},
                           {"cpu_millis", (*alloc)[QueueResource::kCpu]},
                           {"memory_bytes", (*alloc)[QueueResource::kMemory]}};
      }
      cj["queues"].push_back(qj);
    }
    for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
      int pending = 0;
      for (PodId p : c.jobs[j].pods) pending += ssn->pod(p).status == PodStatus::kPending;
      if (pending == 0) continue;
      cj["pending"].push_back(
          {{"job", c.jobs[j].name}, {"pending_pods", pending}, {"reason", PendingReason(*ssn, j)}});
    }
    sched.CloseSession(*ssn);
    Session::WriteBack(*ssn, cluster);

    if (options.json) {
      doc.push_back(cj);
      continue;
    }
    out << "cycle " << cycle << "\n";
    auto list = [&](const char* key) -> const nlohmann::json& {
      static const nlohmann::json empty = nlohmann::json::array();
      return cj.contains(key) ? cj[key] : empty;
    };
    out << "  binds (" << list("binds").size() << ")\n";
    for (const auto& b : list("binds")) {
      out << "    " << b["pod"].get<std::string>() << " -> " << b["node"].get<std::string>();
      if (!b["gpu_groups"].empty())
        out << " gpu-groups "
            << b["gpu_groups"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out << "\n";
    }
    out << "  evictions (" << list("evictions").size() << ")\n";
    for (const auto& e : list("evictions")) {
      out << "    " << e["pod"].get<std::string>() << " from " << e["node"].get<std::string>()
          << ": " << e["message"].get<std::string>() << "\n";
    }
    out << "  pipelined (" << list("pipelined").size() << ")\n";
    for (const auto& p : list("pipelined")) {
      out << "    " << p["pod"].get<std::string>() << " -> " << p["node"].get<std::string>()
          << "\n";
    }
    out << "  queues (fair share / allocated: gpu, cpu cores, memory GB)\n";
    for (const auto& q : list("queues")) {
      out << "    " << q["queue"].get<std::string>();
      if (q.contains("fair_share")) {
        const auto& f = q["fair_share"];
        const auto& a = q["allocated"];
        out << "  " << FormatNumber(f["gpu"].get<double>()) << " / "
            << FormatNumber(a["gpu"].get<double>()) << " gpu, "
            << Humanize(f["cpu_millis"].get<double>(), 1000) << " / "
            << Humanize(a["cpu_millis"].get<double>(), 1000) << " cpu, "
            << Humanize(f["memory_bytes"].get<double>(), 1e9) << " / "
            << Humanize(a["memory_bytes"].get<double>(), 1e9) << " GB";
      }
      out << "\n";
    }
    out << "  pending jobs (" << list("pending").size() << ")\n";
    for (const auto& p : list("pending")) {
      std::string reason = p["reason"].get<std::string>();
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      out << "    " << p["job"].get<std::string>() << " (" << p["pending_pods"].get<int>()
          << " pods): " << reason << "\n";
    }
  }
  // Names come from user input and may hold invalid UTF-8: replace it rather than throw.
  if (options.json)
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

int RunConformance(const ConformanceOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  for (const auto& p : options.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (entry.is_regular_file() && IsScenarioFile(entry.path())) {
          found.push_back(entry.path().string());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  for (const auto& list : options.lists) {
    bool ok = false;
    const std::string text = ReadFile(list, ok);
    if (!ok) {
      err << "error: " << list << ": cannot open list\n";
      return 2;
    }
    // Entries are relative to the list's folder or to its parent (the corpus root).
    const fs::path dir = fs::path(list).parent_path();
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      fs::path candidate = dir / line;
      if (!fs::exists(candidate)) candidate = dir.parent_path() / line;
      files.push_back(candidate.string());
    }
  }

  if (files.empty()) {
    err << "error: no scenario files (.json, .yaml, .yml) found in the given paths and lists\n";
    return 2;
  }
  int passed = 0, failed = 0;
  for (const auto& file : files) {
    auto sc = LoadScenarioFile(file);
    if (!sc.ok()) {
      ++failed;
      out << "FAIL " << file << ": cannot load: " << sc.error() << "\n";
      continue;
    }
    if (options.do_nothing) sc.value().config.actions.clear();
    if (options.victim_search_v017) sc.value().config.params.victim_search_v017 = true;
    const ScenarioOutcome outcome = RunScenario(sc.value(), BuiltinPlugins(), BuiltinActions());
    for (const std::string& note : outcome.notes) err << "note " << file << ": " << note << "\n";
    if (outcome.passed) {
      ++passed;
      if (options.verbose) out << "ok   " << file << "\n";
      continue;
    }
    ++failed;
    out << "FAIL " << file << ":";
    const size_t shown = std::min<size_t>(outcome.differences.size(), 4);
    for (size_t i = 0; i < shown; ++i) {
      std::string d = outcome.differences[i];
      std::replace(d.begin(), d.end(), '\n', ' ');
      out << (i == 0 ? " " : "; ") << d;
    }
    if (outcome.differences.size() > shown) {
      out << "; ... " << outcome.differences.size() - shown << " more";
    }
    out << "\n";
  }
  out << passed << " passed, " << failed << " failed\n";
  return failed > 0 && !options.report_only ? 1 : 0;
}

namespace {
std::string DigestHex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
}  // namespace

int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  if (options.scenario != "reclaim-large-jobs") {
    err << "bench: unknown scenario \"" << options.scenario
        << "\" (available: reclaim-large-jobs)\n";
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const Cluster cluster = sim::ReclaimLargeJobsCluster(options.nodes);
  SchedulerConfig config = SchedulerConfig::Default();
  config.actions = {"reclaim"};
  auto scheduler = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  if (!scheduler.ok()) {
    err << "bench: " << scheduler.error() << "\n";
    return 1;
  }
  std::vector<double> action_ms, snapshot_ms;
  size_t evicted = 0, pipelined = 0;
  uint64_t digest = 0;
  for (int run = 0; run < std::max(1, options.runs); ++run) {
    const auto t0 = Clock::now();
    auto ssn = scheduler.value()->OpenSession(cluster, 1'700'000'000'000);
    const auto t1 = Clock::now();
    scheduler.value()->RunActions(*ssn);
    const auto t2 = Clock::now();
    snapshot_ms.push_back(ms(t1 - t0));
    action_ms.push_back(ms(t2 - t1));
    evicted = ssn->evictions().size();
    pipelined = ssn->pipelined().size();
    digest = DecisionsDigest(*ssn);
    scheduler.value()->CloseSession(*ssn);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json line{{"nodes", options.nodes},
                      {"action_ms", median(action_ms)},
                      {"snapshot_ms", median(snapshot_ms)},
                      {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0},
                      {"evicted", evicted},
                      {"pipelined", pipelined},
                      {"decisions_digest", DigestHex(digest)},
                      {"runs", action_ms.size()}};
  out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace gantry::cli
