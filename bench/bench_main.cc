// gantry-bench: times the scheduler's hot path on synthetic clusters (see README.md).
//
//   gantry-bench [--nodes 100,1000,5000] [--runs 7] [--keep DIR] [--no-predicates]
//                [--only load|snapshot|allocate|cycle] [--seed N] [--shape NAME]
//                [--search-budget-hours H] [--victim-search-v017] [--no-repeated-nodes]
//                [--no-shared-rank-by-class] [--no-strategy-rules] [--no-counter-replay]
//                [--no-reach-bound] [--no-reach-single-pod] [--no-shared-class-ranking]
//                [--no-domain-during-simulation] [--no-topology-follow-changes]
//                [--no-preempt-kept-candidates] [--no-preempt-repeated-failures]
//                [--no-joint-profile] [--no-reclaim-repeated-failures]
//                [--no-domain-follow-journal] [--no-topology-sort-skip-sorted]
//                [--no-shared-rank-changed-nodes]
//
// `--shape NAME` picks one cluster shape of the benchmark family (README.md, "The shapes"):
// default, sharing (30% fractional pods and topology-constrained gangs; `--variant sharing` is
// the same), kai-layout, busy, fractional, topology, hero.
//
// For each size it writes one scenario file (cluster_gen.h), then measures, each as min and median
// of --runs runs:
//   load      LoadScenarioFile: file -> Scenario (Cluster)
//   snapshot  Scheduler::OpenSession: session build + every plugin's OnSessionOpen (fair share)
//   allocate  one AllocateAction::Execute on a fresh session (only the action is timed)
// and prints one human-readable line and one JSON line (starting with '{') per size.
//
// `--only allocate` skips the load and snapshot measurements (the file is still loaded once) and
// runs gantry_bench_measured_region (session build + allocate) --runs times: with --runs 1 it is
// what bench/callgrind.sh runs under valgrind.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actions/allocate/allocate.h"
#include "actions/victim_search/solver.h"
#include "actions/victim_search/stats.h"
#include "cache/watch_cache.h"
#include "cluster_gen.h"
#include "framework/session.h"
#include "kube/json_parse.h"
#include "kube_objects.h"
#include "measure.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "util/allocator.h"
#include "watch_cache_stage.h"

namespace fs = std::filesystem;

// The region bench/callgrind.sh collects (--toggle-collect): one session build and one allocate.
// extern "C" keeps the symbol name unmangled; noinline/noipa keep it a real, uncloned function.
struct RegionContext {
  gantry::Scheduler* scheduler;
  const gantry::Cluster* cluster;
  int64_t now_ms;
  std::unique_ptr<gantry::Session> session;  // out: the session after allocate
  double snapshot_ms = 0;
  double allocate_ms = 0;
  double allocate_cpu_ms = 0;  // the action's thread CPU
};

#if defined(__GNUC__) && !defined(__clang__)
#define GANTRY_BENCH_NOINLINE __attribute__((noinline, noipa))
#else
#define GANTRY_BENCH_NOINLINE __attribute__((noinline))
#endif

extern "C" GANTRY_BENCH_NOINLINE void gantry_bench_measured_region(RegionContext* ctx) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ctx->session = ctx->scheduler->OpenSession(*ctx->cluster, ctx->now_ms);
  const auto t1 = Clock::now();
  const double cpu_start = gantry::bench::ThreadCpuMs();
  gantry::AllocateAction allocate;
  allocate.Execute(*ctx->session);
  ctx->allocate_cpu_ms = gantry::bench::ThreadCpuMs() - cpu_start;
  const auto t2 = Clock::now();
  ctx->snapshot_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  ctx->allocate_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
}

namespace {

using gantry::bench::Clock;
using gantry::bench::CurrentRssMib;
using gantry::bench::Mib;
using gantry::bench::MsSince;
using gantry::bench::PeakRssMib;
using gantry::bench::ThreadCpuMs;

struct Args {
  std::vector<int> nodes = {100, 1000, 5000};
  int runs = 7;
  std::string keep;  // folder to keep the generated files in; empty: a temporary folder
  std::string only;  // "", "load", "snapshot", "allocate", "cycle" or "watch-cache"
  bool predicates = true;
  std::optional<uint64_t> seed;
  std::string shape = "default";  // one of kShapes
  // With `--search-budget-hours`: every victim-search time budget of the cycle (action, job,
  // generators) set to this many hours instead of KAI's defaults (5, 4 and 2.5 minutes).
  std::optional<int> search_budget_hours;
  bool victim_search_v017 = false;
  bool repeated_nodes = true;  // the victim search's repeated-nodes rule (repeated_nodes.h)
  bool counter_replay = true;  // the pre-check on replayed shared-GPU counters (capacity_blocks.h)
  bool reach_bound = true;     // the victim search's reach rule (reach_bound.h)
  bool reach_single_pod = true;  // its one-pod jobs without lists (reach_bound.h)
  // The per-domain check during a simulation where a domain fitted in the base state
  // (domain_precheck.h, SchedulerParams::solver_domain_during_simulation).
  bool domain_during_simulation = true;
  // That check's counts follow the node journal (SchedulerParams::solver_domain_follow_journal).
  bool domain_follow_journal = true;
  // SchedulerParams::solver_joint_profile (victim_search/joint_profile.h).
  bool joint_profile = true;
  bool shared_rank_by_class = true;
  bool shared_rank_changed_nodes = true;  // SchedulerParams::shared_rank_changed_nodes
  // Proportion's strategy rules (plugins/proportion/reclaim_strategy.h).
  bool strategy_rules = true;
  bool shared_class_ranking = true;       // SchedulerParams::shared_class_ranking
  bool topology_follow_changes = true;    // SchedulerParams::topology_follow_changes
  bool topology_sort_skip_sorted = true;  // SchedulerParams::topology_sort_skip_sorted
  bool preempt_kept_candidates = true;    // SchedulerParams::preempt_kept_candidates
  bool preempt_repeated_failures = true;  // SchedulerParams::preempt_repeated_failures
  bool reclaim_repeated_failures = true;  // SchedulerParams::reclaim_repeated_failures
  bool reclaim_kept_leaves = true;        // SchedulerParams::reclaim_kept_leaves
  // `--only watch-cache`: what the cache keeps of each object (cache::Hold).
  bool watch_cache_whole = false;
};

// The benchmark family's shapes (README.md, "The shapes").
constexpr std::string_view kShapes[] = {"default",    "sharing",  "kai-layout", "busy",
                                        "fractional", "topology", "hero",       "mixed"};

bool KnownShape(const std::string& name) {
  return std::find(std::begin(kShapes), std::end(kShapes), name) != std::end(kShapes);
}

// The generator's options for a shape of `nodes` nodes.
gantry::bench::ClusterGenOptions ShapeOptions(const std::string& shape, int nodes) {
  gantry::bench::ClusterGenOptions gen;
  gen.nodes = nodes;
  if (shape == "sharing") {
    gen.fractional_share = 0.3;
    gen.topology = true;
  } else if (shape == "kai-layout") {
    gen.round_robin = true;
  } else if (shape == "busy") {
    gen.busy_shared = true;
  } else if (shape == "fractional") {
    gen.fractional_share = 0.8;
  } else if (shape == "topology") {
    gen.topology = true;
  } else if (shape == "hero") {
    gen.hero_gang_pods = std::max(2, nodes / 16);
  } else if (shape == "mixed") {
    gen.mixed = true;
  }
  return gen;
}

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: gantry-bench [--nodes 100,1000,5000] [--runs 7] [--keep DIR]\n"
               "                    [--no-predicates]\n"
               "                    [--only load|snapshot|allocate|cycle|watch-cache]\n"
               "                    [--seed N] [--shape NAME] [--search-budget-hours H]\n"
               "  --nodes          comma-separated cluster sizes (nodes of 8 GPUs)\n"
               "  --runs           runs per measurement; min and median are reported\n"
               "  --keep DIR       write the generated scenarios to DIR and keep them\n"
               "  --no-predicates  use the default plugin list without \"predicates\"\n"
               "  --only STAGE     measure one stage; `--only allocate` times session build +\n"
               "                   allocate in gantry_bench_measured_region (for callgrind);\n"
               "                   `--only watch-cache` feeds the cluster's objects to the live\n"
               "                   path's watch cache and builds its snapshot and a session\n"
               "  --seed N         generator seed (default: a fixed constant)\n"
               "  --shape NAME     cluster shape: default, sharing (30%% fractional pods and\n"
               "                   topology-constrained gangs), kai-layout (running pods\n"
               "                   round-robin over the nodes), busy (a busy shared cluster),\n"
               "                   fractional (80%% fractional pods), topology, hero (one gang\n"
               "                   of nodes/16 8-GPU pods), mixed (about 10 pods per node\n"
               "                   of every kind, for sizes up to 100,000 nodes)\n"
               "  --variant V      whole (= --shape default) or sharing (= --shape sharing)\n"
               "  --search-budget-hours H\n"
               "                   the cycle's victim-search time budgets (action, job and\n"
               "                   generators) H hours each instead of KAI's minutes: for runs\n"
               "                   under valgrind, too slow for the default budgets\n"
               "  --victim-search-v017\n"
               "                   the cycle searches victims as KAI v0.16+ does\n"
               "                   (docs/victim-search-v0.17.md; no accelerators yet)\n"
               "  --no-repeated-nodes\n"
               "                   the victim search simulates every node of a scenario, also\n"
               "                   those repeating a failed one (the rule's reference path)\n"
               "  --no-counter-replay\n"
               "                   a node whose victims hold shared GPUs is evicted, pre-checked\n"
               "                   and rolled back (the reference path of the pre-check on\n"
               "                   replayed counters)\n"
               "  --no-reach-bound\n"
               "                   the victim search tries the nodes of every scenario, also\n"
               "                   of those out of reach of a freed block (the reference path)\n"
               "  --no-reach-single-pod\n"
               "                   the reach rule lists the victims of one-pod jobs by job and\n"
               "                   node like the others (the same answers, more work)\n"
               "  --no-domain-during-simulation\n"
               "                   a simulation goes on to the pending pods' turn after victims\n"
               "                   placed again left no required topology domain that fits, when\n"
               "                   one fitted before (the reference path of that check)\n"
               "  --no-domain-follow-journal\n"
               "                   that check counts every feasible node per domain at each\n"
               "                   victim job placed again instead of following the node\n"
               "                   journal (the reference path of its counts)\n"
               "  --no-joint-profile\n"
               "                   consolidation simulates the scenarios whose pending pods and\n"
               "                   evicted victims cannot all fit the free GPUs (the reference\n"
               "                   path of that rule)\n"
               "  --no-shared-rank-by-class\n"
               "                   the cycle ranks shared-GPU pods node by node (the\n"
               "                   reference of SchedulerParams::shared_rank_by_class)\n"
               "  --no-shared-rank-changed-nodes\n"
               "                   the cycle checks and scores every candidate of a fractional\n"
               "                   pod ranked again, not only those changed since its previous\n"
               "                   ranking (the reference of\n"
               "                   SchedulerParams::shared_rank_changed_nodes)\n"
               "  --no-strategy-rules\n"
               "                   reclaim's victim search without the rejection rules from\n"
               "                   proportion's strategy check (the rule's reference path)\n"
               "  --no-preempt-kept-candidates\n"
               "                   preempt lists and filters each preemptor's victim\n"
               "                   candidates anew (the reference of\n"
               "                   SchedulerParams::preempt_kept_candidates)\n"
               "  --no-preempt-repeated-failures\n"
               "                   preempt searches again for a job known to fail as an\n"
               "                   earlier one of the same state did (the reference of\n"
               "                   SchedulerParams::preempt_repeated_failures)\n"
               "  --no-reclaim-repeated-failures\n"
               "                   reclaim searches again for a job known to fail as an\n"
               "                   earlier one of the same state did (the reference of\n"
               "                   SchedulerParams::reclaim_repeated_failures)\n"
               "  --no-reclaim-kept-leaves\n"
               "                   reclaim builds a changed leaf queue's victim entries again\n"
               "                   from all its jobs (the reference of\n"
               "                   SchedulerParams::reclaim_kept_leaves)\n"
               "  --no-shared-class-ranking\n"
               "                   allocate and the cycle rank shared-GPU pods over all nodes\n"
               "                   node by node, not by node class (the reference of\n"
               "                   SchedulerParams::shared_class_ranking)\n"
               "  --no-topology-follow-changes\n"
               "                   the topology plugin scans every node's version and walks\n"
               "                   its tree on every call (the reference of\n"
               "                   SchedulerParams::topology_follow_changes)\n"
               "  --no-topology-sort-skip-sorted\n"
               "                   the topology plugin sorts a domain's children whenever their\n"
               "                   keys changed, also when they are already in order (the\n"
               "                   reference path of SchedulerParams::topology_sort_skip_sorted)\n"
               "  --watch-cache-hold read-fields|whole\n"
               "                   what `--only watch-cache`'s cache keeps of each object\n"
               "                   beside its record (default: the fields read back)\n");
}

bool ParseInt(const std::string& s, long long min, long long& out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < min) return false;
  out = v;
  return true;
}

std::optional<Args> ParseArgs(int argc, char** argv) {
  Args a;
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "gantry-bench: %s\n", msg.c_str());
    Usage(stderr);
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      Usage(stdout);
      std::exit(0);
    } else if (arg == "--nodes") {
      if (!value(v)) return fail("--nodes needs a value");
      a.nodes.clear();
      size_t pos = 0;
      while (pos <= v.size()) {
        const size_t comma = std::min(v.find(',', pos), v.size());
        long long n = 0;
        if (!ParseInt(v.substr(pos, comma - pos), 1, n) || n > 10'000'000) {
          return fail("--nodes: bad size in \"" + v + "\"");
        }
        a.nodes.push_back(static_cast<int>(n));
        pos = comma + 1;
      }
    } else if (arg == "--runs") {
      long long n = 0;
      if (!value(v) || !ParseInt(v, 1, n) || n > 100'000) return fail("--runs needs a count >= 1");
      a.runs = static_cast<int>(n);
    } else if (arg == "--keep") {
      if (!value(a.keep)) return fail("--keep needs a folder");
    } else if (arg == "--only") {
      if (!value(a.only) || (a.only != "load" && a.only != "snapshot" && a.only != "allocate" &&
                             a.only != "cycle" && a.only != "watch-cache")) {
        return fail("--only needs load, snapshot, allocate, cycle or watch-cache");
      }
    } else if (arg == "--watch-cache-hold") {
      if (!value(v) || (v != "read-fields" && v != "whole")) {
        return fail("--watch-cache-hold needs read-fields or whole");
      }
      a.watch_cache_whole = v == "whole";
    } else if (arg == "--no-predicates") {
      a.predicates = false;
    } else if (arg == "--predicates") {
      a.predicates = true;
    } else if (arg == "--variant") {
      if (!value(v) || (v != "whole" && v != "sharing")) {
        return fail("--variant needs whole or sharing");
      }
      a.shape = v == "whole" ? "default" : "sharing";
    } else if (arg == "--shape") {
      if (!value(a.shape) || !KnownShape(a.shape)) {
        return fail(
            "--shape needs default, sharing, kai-layout, busy, fractional, topology, hero "
            "or mixed");
      }
    } else if (arg == "--seed") {
      long long n = 0;
      if (!value(v) || !ParseInt(v, 0, n)) return fail("--seed needs a non-negative integer");
      a.seed = static_cast<uint64_t>(n);
    } else if (arg == "--victim-search-v017") {
      a.victim_search_v017 = true;
    } else if (arg == "--no-repeated-nodes") {
      a.repeated_nodes = false;
    } else if (arg == "--no-counter-replay") {
      a.counter_replay = false;
    } else if (arg == "--no-reach-bound") {
      a.reach_bound = false;
    } else if (arg == "--no-reach-single-pod") {
      a.reach_single_pod = false;
    } else if (arg == "--no-domain-during-simulation") {
      a.domain_during_simulation = false;
    } else if (arg == "--no-domain-follow-journal") {
      a.domain_follow_journal = false;
    } else if (arg == "--no-joint-profile") {
      a.joint_profile = false;
    } else if (arg == "--no-shared-rank-by-class") {
      a.shared_rank_by_class = false;
    } else if (arg == "--no-shared-rank-changed-nodes") {
      a.shared_rank_changed_nodes = false;
    } else if (arg == "--no-strategy-rules") {
      a.strategy_rules = false;
    } else if (arg == "--no-preempt-kept-candidates") {
      a.preempt_kept_candidates = false;
    } else if (arg == "--no-preempt-repeated-failures") {
      a.preempt_repeated_failures = false;
    } else if (arg == "--no-reclaim-repeated-failures") {
      a.reclaim_repeated_failures = false;
    } else if (arg == "--no-reclaim-kept-leaves") {
      a.reclaim_kept_leaves = false;
    } else if (arg == "--no-shared-class-ranking") {
      a.shared_class_ranking = false;
    } else if (arg == "--no-topology-follow-changes") {
      a.topology_follow_changes = false;
    } else if (arg == "--no-topology-sort-skip-sorted") {
      a.topology_sort_skip_sorted = false;
    } else if (arg == "--search-budget-hours") {
      long long n = 0;
      if (!value(v) || !ParseInt(v, 1, n) || n > 1000) {
        return fail("--search-budget-hours needs 1 to 1000 hours");
      }
      a.search_budget_hours = static_cast<int>(n);
    } else {
      return fail("unknown argument \"" + arg + "\"");
    }
  }
  return a;
}

struct Stats {
  double min = 0;
  double median = 0;
  bool measured = false;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.measured = true;
  s.min = v.front();
  const size_t m = v.size() / 2;
  s.median = v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
  return s;
}

std::string JsonNumber(const Stats& s) {
  if (!s.measured) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", s.median);
  return buf;
}

std::string HumanStats(const char* label, const Stats& s) {
  if (!s.measured) return std::string(label) + " -";
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%s %.2f/%.2f ms", label, s.min, s.median);
  return buf;
}

struct SizeResult {
  int nodes = 0;
  int pods = 0;
  Stats load;
  Stats snapshot;
  Stats allocate;
  Stats snapshot_plus_allocate;
  size_t binds = 0;
  size_t pipelined = 0;
  Stats cycle;                            // full five-action cycle
  Stats cycle_cpu;                        // its thread CPU time
  Stats open_cpu;                         // thread CPU of the cycle's session build
  std::vector<std::string> action_names;  // the cycle's actions, in order
  std::vector<Stats> action_cpu;          // thread CPU of each action
  size_t cycle_binds = 0;
  size_t cycle_evictions = 0;
  size_t cycle_pipelined = 0;
  uint64_t cycle_digest = 0;         // DecisionsDigest of the cycle's decisions
  gantry::SolverStats cycle_solver;  // the victim search's counters of the last cycle run
  std::string cycle_slowest[3];      // name of each action's slowest job in that run
  double peak_rss_mib = 0;
  std::string watch_cache_json;  // with `--only watch-cache`: its fields of the JSON line
};

// Runs every measurement for one size. Returns false on an error (already printed).
bool RunSize(const Args& args, int nodes, const fs::path& dir, SizeResult& result) {
  result.nodes = nodes;
  const double peak_before = PeakRssMib();
  const double rss_before = CurrentRssMib();

  gantry::bench::ClusterGenOptions gen = ShapeOptions(args.shape, nodes);
  gen.with_predicates = args.predicates;
  if (args.seed) gen.seed = *args.seed;
  const std::string prefix = args.shape == "default" ? "bench-" : "bench-" + args.shape + "-";
  const fs::path file = dir / (prefix + std::to_string(nodes) + "-nodes.json");
  gantry::bench::ClusterGenSummary summary;
  std::string error;
  const auto gen_start = Clock::now();
  if (!gantry::bench::WriteClusterScenario(gen, file.string(), summary, error)) {
    std::fprintf(stderr, "gantry-bench: %s\n", error.c_str());
    return false;
  }
  const double gen_ms = MsSince(gen_start);
  result.pods = summary.pods;
  std::printf(
      "# nodes=%d: generated %s in %.0f ms (%ju bytes): %d queues, %d jobs, %d pods "
      "(%d running, %d pending in %d gangs); GPUs %jd total, %jd free, %jd requested by pending "
      "pods; %d full nodes, %d empty nodes; predicates %s; shape %s (%d fractional pods, %d "
      "constrained gangs, %d non-preemptible jobs, %d CPU-only pods)\n",
      nodes, file.c_str(), gen_ms, static_cast<uintmax_t>(fs::file_size(file)), summary.queues,
      summary.jobs, summary.pods, summary.running_pods, summary.pending_pods, summary.pending_jobs,
      static_cast<intmax_t>(summary.total_gpus), static_cast<intmax_t>(summary.free_gpus),
      static_cast<intmax_t>(summary.pending_gpus), summary.full_nodes, summary.empty_nodes,
      args.predicates ? "on" : "off", args.shape.c_str(), summary.fractional_pods,
      summary.constrained_jobs, summary.non_preemptible_jobs, summary.cpu_only_pods);
  std::printf("# nodes=%d: RSS before: current %.1f MiB, peak %.1f MiB\n", nodes, rss_before,
              peak_before);
  std::fflush(stdout);

  // (1) Loading. The last run's scenario is kept for the other measurements (only one scenario
  // is alive at a time, so the peak RSS is not inflated by the runs).
  std::optional<gantry::Scenario> scenario;
  {
    std::vector<double> times;
    const int runs = args.only.empty() || args.only == "load" ? args.runs : 1;
    for (int r = 0; r < runs; ++r) {
      scenario.reset();
      const auto start = Clock::now();
      auto loaded = gantry::LoadScenarioFile(file.string());
      const double ms = MsSince(start);
      if (!loaded.ok()) {
        std::fprintf(stderr, "gantry-bench: %s\n", loaded.error().c_str());
        return false;
      }
      times.push_back(ms);
      scenario.emplace(std::move(loaded).value());
    }
    // (With `--only cycle` the one load is reported too: the path a cycle's cluster takes.)
    if (args.only.empty() || args.only == "load" || args.only == "cycle") {
      result.load = Summarize(times);
    }
  }

  std::printf("# nodes=%d: RSS after loading: current %.1f MiB, peak %.1f MiB\n", nodes,
              CurrentRssMib(), PeakRssMib());
  std::fflush(stdout);
  gantry::Scenario& sc = *scenario;
  const int64_t now = gantry::ScenarioStartMs();
  gantry::PrepareScenarioCycle(sc, sc.cluster, now);
  if (!args.shared_class_ranking) sc.config.params.shared_class_ranking = false;
  if (!args.shared_rank_changed_nodes) sc.config.params.shared_rank_changed_nodes = false;
  if (!args.topology_follow_changes) sc.config.params.topology_follow_changes = false;
  if (!args.topology_sort_skip_sorted) sc.config.params.topology_sort_skip_sorted = false;
  auto created =
      gantry::Scheduler::Create(sc.config, gantry::BuiltinPlugins(), gantry::BuiltinActions());
  if (!created.ok()) {
    std::fprintf(stderr, "gantry-bench: config: %s\n", created.error().c_str());
    return false;
  }
  gantry::Scheduler& scheduler = *created.value();

  if (args.only == "watch-cache" &&
      !gantry::bench::MeasureWatchCache(sc, scheduler, now, nodes, args.watch_cache_whole,
                                        result.watch_cache_json)) {
    return false;
  }

  // (2) Snapshot: session build + plugins' OnSessionOpen.
  if (args.only.empty() || args.only == "snapshot") {
    std::vector<double> times;
    std::vector<double> cpu_times;
    int64_t session_heap = 0;
    for (int r = 0; r < args.runs; ++r) {
      const int64_t heap_before = r == 0 ? gantry::AllocatedBytes() : 0;
      const auto start = Clock::now();
      const double cpu_start = ThreadCpuMs();
      auto ssn = scheduler.OpenSession(sc.cluster, now);
      cpu_times.push_back(ThreadCpuMs() - cpu_start);
      times.push_back(MsSince(start));
      if (r == 0) session_heap = gantry::AllocatedBytes() - heap_before;
      scheduler.CloseSession(*ssn);
    }
    result.snapshot = Summarize(times);
    const Stats cpu = Summarize(cpu_times);
    std::printf(
        "# nodes=%d: session build thread CPU min/median %.2f/%.2f ms; heap of one session %.1f "
        "MiB (%.0f B per pod)\n",
        nodes, cpu.min, cpu.median, Mib(session_heap),
        sc.cluster.pods.empty()
            ? 0.0
            : static_cast<double>(session_heap) / static_cast<double>(sc.cluster.pods.size()));
  }

  // (3) Allocate on a fresh session; only the action is timed. With --only allocate the session
  // build is timed too (gantry_bench_measured_region), as under callgrind.
  if (args.only.empty() || args.only == "allocate") {
    std::vector<double> alloc_times;
    std::vector<double> sum_times;
    std::vector<double> open_times;
    std::vector<double> alloc_cpu_times;
    uint64_t alloc_digest = 0;
    for (int r = 0; r < args.runs; ++r) {
      RegionContext ctx{&scheduler, &sc.cluster, now, nullptr};
      gantry_bench_measured_region(&ctx);
      alloc_times.push_back(ctx.allocate_ms);
      alloc_cpu_times.push_back(ctx.allocate_cpu_ms);
      if (r == 0) alloc_digest = gantry::DecisionsDigest(*ctx.session);
      open_times.push_back(ctx.snapshot_ms);
      sum_times.push_back(ctx.snapshot_ms + ctx.allocate_ms);
      const size_t binds = ctx.session->binds().size();
      const size_t pipelined = ctx.session->pipelined().size();
      if (r > 0 && (binds != result.binds || pipelined != result.pipelined)) {
        std::printf(
            "# WARNING nodes=%d: run %d bound %zu / pipelined %zu pods, run 0 %zu / %zu "
            "(allocate is not deterministic)\n",
            nodes, r, binds, pipelined, result.binds, result.pipelined);
      }
      if (r == 0) {
        result.binds = binds;
        result.pipelined = pipelined;
        const gantry::SessionStats& st = ctx.session->stats();
        std::printf(
            "# nodes=%d: allocate ranked %lld pods by node class, %lld node by node (%lld node "
            "checks); node classes %s, %zu at the end\n",
            nodes, static_cast<long long>(st.rankings_by_class),
            static_cast<long long>(st.rankings_per_node), static_cast<long long>(st.nodes_checked),
            ctx.session->NodeClassesEnabled() ? "kept" : "off", ctx.session->NodeClassCount());
        std::printf("# nodes=%d: node by node, why (rankings / node checks):", nodes);
        for (size_t i = 0; i < gantry::kPerNodeReasons; ++i) {
          std::printf(" %s %lld / %lld", gantry::PerNodeReasonName(gantry::PerNodeReason(i)),
                      static_cast<long long>(st.per_node_rankings[i]),
                      static_cast<long long>(st.per_node_checks[i]));
        }
        std::printf("; %lld per key among the candidates\n",
                    static_cast<long long>(st.rankings_per_candidate_class));
      }
      scheduler.CloseSession(*ctx.session);
    }
    result.allocate = Summarize(alloc_times);
    result.snapshot_plus_allocate = Summarize(sum_times);
    const Stats alloc_cpu = Summarize(alloc_cpu_times);
    std::printf(
        "# nodes=%d: allocate thread CPU min/median %.2f/%.2f ms; decisions digest %016llx\n",
        nodes, alloc_cpu.min, alloc_cpu.median, static_cast<unsigned long long>(alloc_digest));
    if (!args.only.empty()) result.snapshot = Summarize(open_times);
  }

  // (4) With `--only cycle`: a full cycle (session build + the five default actions: allocate,
  // consolidation, reclaim, preempt, stalegangeviction) on the same cluster, whose queues are over
  // and under their shares. Not part of the default run: the eviction actions' victim search
  // does not scale to thousands of nodes yet (see the README).
  if (args.only == "cycle") {
    gantry::SchedulerConfig full = sc.config;
    full.actions = gantry::SchedulerConfig::Default().actions;
    full.params.victim_search_v017 = args.victim_search_v017;
    full.params.solver_repeated_nodes = args.repeated_nodes;
    full.params.solver_strategy_rules = args.strategy_rules;
    full.params.solver_counter_replay = args.counter_replay;
    full.params.solver_reach_bound = args.reach_bound;
    full.params.solver_reach_single_pod_jobs = args.reach_single_pod;
    full.params.solver_domain_during_simulation = args.domain_during_simulation;
    full.params.solver_domain_follow_journal = args.domain_follow_journal;
    full.params.solver_joint_profile = args.joint_profile;
    full.params.preempt_kept_candidates = args.preempt_kept_candidates;
    full.params.preempt_repeated_failures = args.preempt_repeated_failures;
    full.params.reclaim_repeated_failures = args.reclaim_repeated_failures;
    full.params.reclaim_kept_leaves = args.reclaim_kept_leaves;
    full.params.shared_rank_changed_nodes = args.shared_rank_changed_nodes;
    if (!args.shared_rank_by_class) {
      full.params.shared_rank_by_class = gantry::SchedulerParams::SharedRankByClass::kOff;
    }
    if (args.search_budget_hours) {
      // (Long but finite: the search reads its clock as it does with the default budgets.)
      const int64_t ns = int64_t{*args.search_budget_hours} * 3600 * 1'000'000'000;
      full.search_budgets.max_action_ns = {{"default", ns}};
      full.search_budgets.max_job_ns = ns;
      full.search_budgets.max_generator_ns = {{"default", ns}};
    }
    auto full_created =
        gantry::Scheduler::Create(full, gantry::BuiltinPlugins(), gantry::BuiltinActions());
    if (!full_created.ok()) {
      std::fprintf(stderr, "gantry-bench: config: %s\n", full_created.error().c_str());
      return false;
    }
    std::vector<double> times, cpu_times, open_cpu_times;
    std::vector<std::vector<double>> action_cpu_times;
    for (int r = 0; r < args.runs; ++r) {
      gantry::ResetSolverStats();
      const auto start = Clock::now();
      const double cpu_start = ThreadCpuMs();
      auto ssn = full_created.value()->OpenSession(sc.cluster, now);
      // Each action's thread CPU: the time since the previous action ended (or the session was
      // built), read when the scheduler reports the action done.
      double mark = ThreadCpuMs();
      open_cpu_times.push_back(mark - cpu_start);
      size_t action = 0;
      full_created.value()->RunActions(*ssn, [&](std::string_view name, double /*wall_ms*/) {
        const double cpu_now = ThreadCpuMs();
        if (action == action_cpu_times.size()) {
          action_cpu_times.emplace_back();
          result.action_names.emplace_back(name);
        }
        action_cpu_times[action++].push_back(cpu_now - mark);
        mark = ThreadCpuMs();
      });
      times.push_back(MsSince(start));
      cpu_times.push_back(ThreadCpuMs() - cpu_start);
      result.cycle_solver = gantry::GetSolverStats();
      for (int a = 0; a < 3; ++a) {
        const gantry::JobId j = result.cycle_solver.by_action[a].slowest_job;
        result.cycle_slowest[a] = j == gantry::kNone ? "-" : sc.cluster.jobs[j].name;
      }
      result.cycle_evictions = ssn->evictions().size();
      result.cycle_binds = ssn->binds().size();
      result.cycle_pipelined = ssn->pipelined().size();
      result.cycle_digest = gantry::DecisionsDigest(*ssn);
      if (r == 0) {
        const gantry::SessionStats& st = ssn->stats();
        std::printf(
            "# nodes=%d: cycle ranked %lld pods node by node (%lld node checks), %lld per key "
            "among the candidates, %lld from their previous ranking (%lld nodes checked again)\n",
            nodes, static_cast<long long>(st.rankings_per_node),
            static_cast<long long>(st.nodes_checked),
            static_cast<long long>(st.rankings_per_candidate_class),
            static_cast<long long>(st.rankings_from_kept),
            static_cast<long long>(st.kept_nodes_rescored));
      }
      full_created.value()->CloseSession(*ssn);
    }
    result.cycle = Summarize(times);
    result.cycle_cpu = Summarize(cpu_times);
    result.open_cpu = Summarize(open_cpu_times);
    for (const std::vector<double>& t : action_cpu_times) result.action_cpu.push_back(Summarize(t));
  }

  scenario.reset();
  result.peak_rss_mib = PeakRssMib();
  std::printf("# nodes=%d: RSS after: current %.1f MiB, peak %.1f MiB\n", nodes, CurrentRssMib(),
              result.peak_rss_mib);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = ParseArgs(argc, argv);
  if (!parsed) return 2;
  const Args& args = *parsed;

  fs::path dir;
  bool remove_dir = false;
  std::error_code ec;
  if (!args.keep.empty()) {
    dir = args.keep;
    fs::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "gantry-bench: %s: %s\n", args.keep.c_str(), ec.message().c_str());
      return 1;
    }
  } else {
    std::string templ = (fs::temp_directory_path(ec) / "gantry-bench.XXXXXX").string();
    if (ec || mkdtemp(templ.data()) == nullptr) {
      std::fprintf(stderr, "gantry-bench: cannot create a temporary folder\n");
      return 1;
    }
    dir = templ;
    remove_dir = true;
  }

  std::printf(
      "# gantry-bench: runs=%d, predicates %s, stage %s, allocator %s; times are min/median ms\n",
      args.runs, args.predicates ? "on" : "off", args.only.empty() ? "all" : args.only.c_str(),
      gantry::AllocatorDescription().c_str());
  int status = 0;
  for (int nodes : args.nodes) {
    SizeResult r;
    if (!RunSize(args, nodes, dir, r)) {
      status = 1;
      break;
    }
    std::printf(
        "nodes=%d pods=%d | %s | %s | %s | %s | binds %zu pipelined %zu | peak RSS %.1f MiB\n",
        r.nodes, r.pods, HumanStats("load", r.load).c_str(),
        HumanStats("snapshot", r.snapshot).c_str(), HumanStats("allocate", r.allocate).c_str(),
        HumanStats("snapshot+allocate", r.snapshot_plus_allocate).c_str(), r.binds, r.pipelined,
        r.peak_rss_mib);
    if (r.cycle.measured) {
      std::printf(
          "nodes=%d full cycle (5 actions) | %s | %s | binds %zu evictions %zu pipelined %zu | "
          "decisions digest %016llx\n",
          r.nodes, HumanStats("cycle", r.cycle).c_str(),
          HumanStats("thread-cpu", r.cycle_cpu).c_str(), r.cycle_binds, r.cycle_evictions,
          r.cycle_pipelined, static_cast<unsigned long long>(r.cycle_digest));
      std::printf("nodes=%d shape %s thread-cpu median ms | session %.2f", r.nodes,
                  args.shape.c_str(), r.open_cpu.median);
      for (size_t a = 0; a < r.action_cpu.size(); ++a) {
        std::printf(" | %s %.2f", r.action_names[a].c_str(), r.action_cpu[a].median);
      }
      std::printf(" | cycle %.2f\n", r.cycle_cpu.median);
      const char* action_names[] = {"reclaim", "preempt", "consolidation"};
      for (int a = 0; a < 3; ++a) {
        const gantry::SolverActionStats& st = r.cycle_solver.by_action[a];
        if (st.jobs == 0) continue;
        std::printf(
            "# nodes=%d victim search %s: jobs %llu solved %llu [%llu known failures] | prefixes "
            "%llu popped %llu [%llu kept leaf updates] "
            "scenarios %llu | "
            "out of reach %llu pre-checked %llu [%llu per domain, %llu on replayed counters] "
            "proven unsolvable %llu "
            "[joint profile: %llu skipped, %llu stopped] "
            "repeated nodes %llu "
            "simulated %llu (not placed "
            "%llu [%llu stopped where a domain fitted], rejected "
            "%llu [%llu proven early], "
            "accepted %llu) | idle queues left out %llu | by acting runs %llu [%llu maxima by "
            "request, %llu searches on kept lists] | "
            "%.1f ms | slowest job %s: %s, %llu simulated, %.1f ms\n",
            r.nodes, action_names[a], static_cast<unsigned long long>(st.jobs),
            static_cast<unsigned long long>(st.solved),
            static_cast<unsigned long long>(st.known_failures),
            static_cast<unsigned long long>(st.prefixes),
            static_cast<unsigned long long>(st.victims_popped),
            static_cast<unsigned long long>(st.kept_leaf_updates),
            static_cast<unsigned long long>(st.scenarios),
            static_cast<unsigned long long>(st.out_of_reach),
            static_cast<unsigned long long>(st.precheck),
            static_cast<unsigned long long>(st.precheck_domain),
            static_cast<unsigned long long>(st.precheck_replay),
            static_cast<unsigned long long>(st.proven_before),
            static_cast<unsigned long long>(st.joint_skipped),
            static_cast<unsigned long long>(st.joint_stopped),
            static_cast<unsigned long long>(st.repeated_nodes),
            static_cast<unsigned long long>(st.simulations),
            static_cast<unsigned long long>(st.not_placed),
            static_cast<unsigned long long>(st.domain_during),
            static_cast<unsigned long long>(st.rejected),
            static_cast<unsigned long long>(st.proven),
            static_cast<unsigned long long>(st.accepted),
            static_cast<unsigned long long>(st.idle_queues),
            static_cast<unsigned long long>(st.acting_runs),
            static_cast<unsigned long long>(st.run_maxima_by_request),
            static_cast<unsigned long long>(st.kept_pending), st.ms, r.cycle_slowest[a].c_str(),
            st.slowest_solved ? "solved" : "not solved",
            static_cast<unsigned long long>(st.slowest_simulations), st.slowest_ms);
      }
    }
    const bool allocated = r.allocate.measured;
    std::string cycle_json;  // the cycle's thread CPU, per action, and digest (--only cycle)
    if (r.cycle.measured) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), ",\"cycle_cpu_ms\":%.3f,\"session_cpu_ms\":%.3f",
                    r.cycle_cpu.median, r.open_cpu.median);
      cycle_json = buf;
      for (size_t a = 0; a < r.action_cpu.size(); ++a) {
        std::snprintf(buf, sizeof(buf), ",\"%s_cpu_ms\":%.3f", r.action_names[a].c_str(),
                      r.action_cpu[a].median);
        cycle_json += buf;
      }
      std::snprintf(buf, sizeof(buf), ",\"decisions_digest\":\"%016llx\"",
                    static_cast<unsigned long long>(r.cycle_digest));
      cycle_json += buf;
    }
    std::printf(
        "{\"shape\":\"%s\",\"nodes\":%d,\"pods\":%d,\"load_ms\":%s,\"snapshot_ms\":%s,\"allocate_"
        "ms\":%s,"
        "\"snapshot_plus_allocate_ms\":%s,\"binds\":%s,\"pipelined\":%s,"
        "\"cycle_ms\":%s%s%s,\"peak_rss_mib\":%.1f}\n",
        args.shape.c_str(), r.nodes, r.pods, JsonNumber(r.load).c_str(),
        JsonNumber(r.snapshot).c_str(), JsonNumber(r.allocate).c_str(),
        JsonNumber(r.snapshot_plus_allocate).c_str(),
        allocated ? std::to_string(r.binds).c_str() : "null",
        allocated ? std::to_string(r.pipelined).c_str() : "null", JsonNumber(r.cycle).c_str(),
        cycle_json.c_str(), r.watch_cache_json.c_str(), r.peak_rss_mib);
    std::fflush(stdout);
  }
  if (remove_dir) fs::remove_all(dir, ec);
  return status;
}
