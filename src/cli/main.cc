// gantry: a Kubernetes scheduler for AI / GPU batch workloads, compatible with KAI Scheduler.
#include <CLI/CLI.hpp>
#include <iostream>

#include "binder/binder.h"
#include "cli/commands.h"
#include "cli/scheduler_command.h"
#include "util/allocator.h"

int main(int argc, char** argv) {
  CLI::App app{"gantry - a fast, KAI-compatible scheduler for GPU batch workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return std::string("gantry ") + GANTRY_VERSION + " (allocator: " +
           gantry::AllocatorDescription() + ")";
  });

  gantry::cli::CycleOptions cycle;
  auto* cycle_cmd = app.add_subcommand(
      "cycle", "Run scheduling cycles on a scenario file and print the decisions");
  cycle_cmd->add_option("scenario", cycle.scenario, "Scenario file (.json or .yaml)")->required();
  cycle_cmd->add_option("--cycles", cycle.cycles, "Number of cycles to run")
      ->check(CLI::Range(1, 1000000));
  cycle_cmd->add_option("--config", cycle.config,
                        "Scheduler configuration (YAML) replacing the scenario's");
  cycle_cmd->add_flag("--json", cycle.json, "Print one JSON document instead of text");

  gantry::cli::ConformanceOptions conf;
  auto* conf_cmd =
      app.add_subcommand("conformance", "Run scenarios and compare them with their expectations");
  conf_cmd->add_option("paths", conf.paths, "Scenario files or directories of them");
  conf_cmd->add_option("--list", conf.lists, "A file listing scenario paths, one per line");
  conf_cmd->add_flag("--report-only", conf.report_only, "Exit 0 even when cases fail");
  conf_cmd->add_flag("-v,--verbose", conf.verbose, "Also print passing cases");
  conf_cmd->add_flag("--do-nothing", conf.do_nothing,
                     "Run with no actions (the baseline a do-nothing scheduler scores)");

  gantry::cli::BenchOptions bench;
  auto* bench_cmd =
      app.add_subcommand("bench", "Run a built-in benchmark scenario and print one JSON line");
  bench_cmd->add_option("scenario", bench.scenario, "reclaim-large-jobs")->required();
  bench_cmd->add_option("--nodes", bench.nodes, "Number of 8-GPU nodes")
      ->check(CLI::Range(10, 1000000));
  bench_cmd->add_option("--runs", bench.runs, "Runs (the median is printed)")
      ->check(CLI::Range(1, 1000));

  gantry::binder::BinderOptions binder;
  auto* binder_cmd = app.add_subcommand(
      "binder", "Carry out BindRequests: bind their pods and report in their status");
  binder_cmd->add_option(
      "--kubeconfig", binder.kubeconfig,
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
  binder_cmd
      ->add_option("--metrics-address", binder.metrics_address,
                   "Address serving /metrics, /healthz and /readyz")
      ->capture_default_str();
  binder_cmd
      ->add_option("--max-concurrent-reconciles,--workers", binder.workers,
                   "BindRequests carried out concurrently (KAI's flag name; --workers is the same)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  binder_cmd
      ->add_option("--qps", binder.qps,
                   "Client-side limit of API requests per second (0: none); events have a "
                   "limit of their own")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  binder_cmd->add_option("--burst", binder.burst, "Requests allowed at once above --qps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  binder_cmd
      ->add_option("--namespace-for-leases", binder.lease_namespace,
                   "Namespace of the leader-election Lease (gantry-binder)")
      ->capture_default_str();
  binder_cmd
      ->add_option("--resource-reservation-pod-image", binder.reservation_image,
                   "Container image of the GPU reservation pods (shared GPUs; KAI's flag)")
      ->capture_default_str();

  gantry::cli::SchedulerOptions sched;
  auto* sched_cmd = app.add_subcommand(
      "scheduler", "Run the live scheduler against a Kubernetes cluster (until SIGTERM)");
  sched_cmd->add_option("--kubeconfig", sched.kubeconfig,
                        "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  sched_cmd->add_option("--scheduler-name", sched.scheduler_name,
                        "Schedule pods whose spec.schedulerName is this");
  sched_cmd->add_option("--period", sched.period, "Time between scheduling cycles (1s, 500ms)");
  sched_cmd->add_option("--config", sched.config, "Scheduler configuration (YAML)");
  sched_cmd->add_option("--namespace-for-leases", sched.lease_namespace,
                        "Namespace of the leader-election Lease");
  sched_cmd
      ->add_option("--metrics-address", sched.metrics_address,
                   "Address serving /metrics, /healthz and /readyz (empty: none)")
      ->capture_default_str();
  sched_cmd
      ->add_option("--bind-request-workers", sched.bind_request_workers,
                   "BindRequests created at once after a cycle")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sched_cmd
      ->add_option("--num-of-status-recording-workers", sched.status_recording_workers,
                   "Workers writing PodGroup annotation updates")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  if (binder_cmd->parsed()) return gantry::binder::RunBinder(binder, std::cerr);
  if (sched_cmd->parsed()) return gantry::cli::RunScheduler(sched, std::cout, std::cerr);
  if (bench_cmd->parsed()) return gantry::cli::RunBench(bench, std::cout, std::cerr);
  if (cycle_cmd->parsed()) return gantry::cli::RunCycle(cycle, std::cout, std::cerr);
  if (conf_cmd->parsed()) {
    if (conf.paths.empty() && conf.lists.empty()) {
      std::cerr << "conformance: give at least one scenario path or --list\n";
      return 2;
    }
    return gantry::cli::RunConformance(conf, std::cout, std::cerr);
  }
  return 2;
}
