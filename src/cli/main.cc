// gantry: a Kubernetes scheduler for AI / GPU batch workloads, compatible with KAI Scheduler.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>
#include <vector>

#include "binder/binder.h"
#include "cli/commands.h"
#include "cli/compat_flags.h"
#include "cli/kai_shard.h"
#include "cli/scheduler_command.h"
#include "cli/simulate_command.h"
#include "kube/client_flags.h"
#include "podgrouper/flags.h"
#include "statusctl/flags.h"
#include "util/allocator.h"

int main(int argc, char** argv) {
  CLI::App app{"gantry - a fast, KAI-compatible scheduler for GPU batch workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return std::string("gantry ") + GANTRY_VERSION +
           " (allocator: " + gantry::AllocatorDescription() + ")";
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
  cycle_cmd->add_flag("--victim-search-v017", cycle.victim_search_v017,
                      "Search victims as KAI v0.16+ does (docs/victim-search-v0.17.md)");

  gantry::cli::SimulateOptions simulate;
  auto* sim_cmd = app.add_subcommand(
      "simulate", "Run a simulation file on a virtual clock and report (docs/simulation.md)");
  sim_cmd->add_option("file", simulate.file, "Simulation file (.yaml or .json)")->required();
  sim_cmd->add_option("--seed", simulate.seed, "Seed of every random choice (default: the file's)");
  sim_cmd->add_option("--until", simulate.until, "Stop at this virtual time (seconds)")
      ->check(CLI::Range(0.0, 1e12));
  sim_cmd->add_option("--config", simulate.config,
                      "Scheduler configuration (YAML, KAI's shape) replacing the file's");
  sim_cmd->add_option("--out", simulate.out_dir, "Write report.html and timeline.csv here");
  sim_cmd->add_flag("--json", simulate.json, "Print one JSON document instead of the summary");
  sim_cmd->add_option("--kai-csv", simulate.kai_csv,
                      "Write per-cycle queue allocation and fair share as KAI's time-based "
                      "fairshare simulator does (Time,QueueID,Allocation,FairShare; - for stdout)");

  gantry::cli::ConformanceOptions conf;
  auto* conf_cmd =
      app.add_subcommand("conformance", "Run scenarios and compare them with their expectations");
  conf_cmd->add_option("paths", conf.paths, "Scenario files or directories of them");
  conf_cmd->add_option("--list", conf.lists, "A file listing scenario paths, one per line");
  conf_cmd->add_flag("--report-only", conf.report_only, "Exit 0 even when cases fail");
  conf_cmd->add_flag("-v,--verbose", conf.verbose, "Also print passing cases");
  conf_cmd->add_flag("--do-nothing", conf.do_nothing,
                     "Run with no actions (the baseline a do-nothing scheduler scores)");
  conf_cmd->add_flag("--victim-search-v017", conf.victim_search_v017,
                     "Search victims as KAI v0.16+ does (docs/victim-search-v0.17.md)");

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
  gantry::kube::AddClientFlags(*binder_cmd, binder.kubeconfig, binder.qps, binder.burst,
                               "; events have a limit of their own");
  binder_cmd
      ->add_option("--metrics-bind-address,--metrics-address", binder.metrics_address,
                   "Address serving /metrics, /healthz and /readyz")
      ->capture_default_str();
  binder_cmd->add_option("--health-probe-bind-address", binder.probe_address,
                         "A second address serving /healthz and /readyz (KAI's flag; empty: "
                         "they are served on --metrics-bind-address only)");
  binder_cmd
      ->add_option("--max-concurrent-reconciles,--workers", binder.workers,
                   "BindRequests carried out concurrently (KAI's flag name; --workers is the same)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  binder_cmd
      ->add_option("--namespace-for-leases", binder.lease_namespace,
                   "Namespace of the leader-election Lease (gantry-binder)")
      ->capture_default_str();
  binder_cmd
      ->add_option("--resource-reservation-pod-image", binder.reservation_image,
                   "Container image of the GPU reservation pods (shared GPUs; KAI's flag)")
      ->capture_default_str();

  // KAI's binder flags without an effect here (given with KAI's default they change nothing).
  gantry::cli::CompatFlags binder_compat;
  binder_compat.AddBool(*binder_cmd, "leader-elect", false,
                        "Gantry always holds a Lease (one replica leads, as with KAI's true)");
  binder_compat.Add(*binder_cmd, "scheduler-name", "kai-scheduler",
                    "the binder carries out every BindRequest");
  binder_compat.Add(*binder_cmd, "resource-reservation-namespace", "kai-resource-reservation",
                    "reservation pods live in KAI's default namespace");
  binder_compat.Add(*binder_cmd, "resource-reservation-service-account", "kai-resource-reservation",
                    "reservation pods use KAI's default service account");
  binder_compat.Add(*binder_cmd, "resource-reservation-app-label", "kai-resource-reservation",
                    "reservation pods carry KAI's default app label");
  binder_compat.Add(*binder_cmd, "resource-reservation-allocation-timeout", "40",
                    "a reservation pod is waited for with the built-in timeout");
  binder_compat.Add(*binder_cmd, "resource-reservation-pod-resources", "",
                    "reservation pods request KAI's default resources");
  binder_compat.Add(*binder_cmd, "resource-reservation-pod-security-context", "",
                    "reservation pods use the built-in security context");
  binder_compat.Add(*binder_cmd, "resource-reservation-container-security-context", "",
                    "reservation pods use the built-in security context");
  binder_compat.Add(*binder_cmd, "runtime-class-name", "",
                    "reservation pods have no runtime class");
  binder_compat.Add(*binder_cmd, "scale-adjust-namespace", "kai-scale-adjust",
                    "there is no node scale adjuster");
  binder_compat.Add(*binder_cmd, "plugins", "",
                    "the binder runs its built-in steps (gpusharing, dynamicresources, "
                    "noderesources)");
  binder_compat.AddBool(*binder_cmd, "fake-gpu-nodes", false, "GPUs are real");
  binder_compat.Add(*binder_cmd, "rate-limiter-base-delay", "1",
                    "retries back off on the built-in schedule");
  binder_compat.Add(*binder_cmd, "rate-limiter-max-delay", "60",
                    "retries back off on the built-in schedule");
  binder_compat.AddBool(*binder_cmd, "zap-devel", false, "logs are plain lines");
  binder_compat.Add(*binder_cmd, "feature-gates", "", "Gantry has no feature gates");

  gantry::cli::SchedulerOptions sched;
  gantry::cli::CompatFlags sched_compat;
  auto* sched_cmd = app.add_subcommand(
      "scheduler", "Run the live scheduler against a Kubernetes cluster (until SIGTERM)");
  // KAI's flag names first (as KAI's operator renders them); Gantry's earlier names are aliases.
  gantry::kube::AddClientFlags(*sched_cmd, sched.kubeconfig, sched.qps, sched.burst);
  sched_cmd
      ->add_option("--scheduler-name", sched.scheduler_name,
                   "Schedule pods whose spec.schedulerName is this")
      ->capture_default_str();
  sched_cmd
      ->add_option("--schedule-period,--period", sched.period,
                   "Time between scheduling cycles (1s, 500ms)")
      ->capture_default_str();
  sched_cmd->add_option("--scheduler-conf,--config", sched.config,
                        "Scheduler configuration (YAML, KAI's shape)");
  sched_cmd
      ->add_option("--namespace,--namespace-for-leases", sched.lease_namespace,
                   "Namespace of the leader-election Lease (KAI: the scheduler's namespace)")
      ->capture_default_str();
  sched_cmd
      ->add_option("--listen-address,--metrics-address", sched.metrics_address,
                   "Address serving /metrics, /healthz and /readyz (empty: none)")
      ->capture_default_str();
  sched_cmd
      ->add_option("--plugin-server-port", sched.plugin_server_port,
                   "Port of the plugin server on 127.0.0.1 (plugins' HTTP endpoints such as "
                   "reflectjoborder's /get-job-order; 0: a free port, logged)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sched_cmd->add_option("--queue-label-key", sched.queue_label_key,
                        "Label naming a workload's queue (default: the configuration's, "
                        "kai.scheduler/queue)");
  sched_cmd->add_option("--max-consolidation-preemptees", sched.max_consolidation_preemptees,
                        "Most pods one consolidation may evict (-1: no limit; default: the "
                        "configuration's, 16)");
  sched_cmd->add_option("--default-staleness-grace-period", sched.default_staleness_grace_period,
                        "How long a gang may run below its minimum before it is evicted "
                        "(negative: never; default: the configuration's, 60s)");
  sched_cmd->add_option("--stuck-in-releasing-threshold", sched.stuck_in_releasing_threshold,
                        "A terminating pod older than this is stuck in releasing (default 2m)");
  sched_cmd->add_flag("--allow-consolidating-reclaim{true}", sched.allow_consolidating_reclaim,
                      "Pipelined pods do not count toward reclaimed resources (default true)");
  sched_cmd->add_flag("--update-pod-eviction-condition", sched.update_pod_eviction_condition,
                      "Write the DisruptionTarget condition on a pod before evicting it");
  sched_cmd->add_option("--partition-label-value", sched.partition_label_value,
                        "Node pool (scheduling shard) to schedule: Nodes, Queues and PodGroups "
                        "labelled with it (empty: those without the node-pool label)");
  sched_cmd
      ->add_option("--metrics-namespace", sched.metrics_namespace,
                   "Prefix of the KAI metric names (empty: none)")
      ->capture_default_str();
  sched_cmd
      ->add_option("--nodepool-label-key", sched.nodepool_label_key,
                   "Label naming an object's node pool (see --partition-label-value)")
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
  // KAI's flags without an effect here (given with KAI's default they change nothing).
  sched_compat.AddBool(*sched_cmd, "leader-elect", false,
                       "Gantry always holds a Lease (one replica leads, as with KAI's true)");
  sched_compat.Add(*sched_cmd, "resource-reservation-app-label", "kai-resource-reservation",
                   "reservation pods are recognised by KAI's default app label");
  sched_compat.AddBool(*sched_cmd, "log-json", false, "logs are plain lines");
  sched_compat.Add(*sched_cmd, "v", "3", "one log line per cycle and per error");
  sched_compat.AddBool(*sched_cmd, "detailed-fit-errors", false,
                       "fit errors are KAI's summary ones");
  sched_compat.AddBool(*sched_cmd, "schedule-csi-storage", false,
                       "CSI storage capacity is not modelled");
  sched_compat.AddBool(*sched_cmd, "use-scheduling-signatures", true,
                       "identical jobs are always compared by their own pods");
  sched_compat.AddBool(*sched_cmd, "full-hierarchy-fairness", true,
                       "fairness always spans the whole queue hierarchy");
  sched_compat.AddBool(*sched_cmd, "restrict-node-scheduling", false,
                       "node restriction labels are not read");
  sched_compat.AddBool(*sched_cmd, "enable-profiler", false, "there is no profiler endpoint");
  sched_compat.Add(*sched_cmd, "profiler-port", "8182", "there is no profiler endpoint");
  sched_compat.Add(*sched_cmd, "pyroscope-address", "", "there is no profiler endpoint");
  sched_compat.Add(*sched_cmd, "pyroscope-mutex-profiler-rate", "5",
                   "there is no profiler endpoint");
  sched_compat.Add(*sched_cmd, "pyroscope-block-profiler-rate", "5",
                   "there is no profiler endpoint");
  sched_compat.Add(*sched_cmd, "cpu-worker-node-label-key", "node-role.kubernetes.io/cpu-worker",
                   "node roles are not read");
  sched_compat.Add(*sched_cmd, "gpu-worker-node-label-key", "node-role.kubernetes.io/gpu-worker",
                   "node roles are not read");
  sched_compat.Add(*sched_cmd, "mig-worker-node-label-key", "node-role.kubernetes.io/mig-enabled",
                   "node roles are not read");
  sched_compat.Add(*sched_cmd, "feature-gates", "", "Gantry has no feature gates");

  gantry::podgrouper::PodGrouperOptions grouper;
  auto* grouper_cmd = app.add_subcommand(
      "podgrouper", "Group pods into PodGroups by their top owner, as KAI's pod-grouper");
  gantry::podgrouper::AddPodGrouperFlags(*grouper_cmd, grouper);

  gantry::statusctl::PodGroupControllerOptions pg_controller;
  auto* pg_controller_cmd =
      app.add_subcommand("podgroup-controller",
                         "Keep PodGroups' status.resourcesStatus current from their pods, as KAI's "
                         "podgroup-controller");
  gantry::statusctl::AddPodGroupControllerFlags(*pg_controller_cmd, pg_controller);
  gantry::statusctl::QueueControllerOptions queue_controller;
  std::string queue_label_map, queue_label_defaults;
  auto* queue_controller_cmd = app.add_subcommand(
      "queue-controller",
      "Keep Queues' status (child queues, resource sums) current and export queue metrics, as "
      "KAI's queue-controller");
  gantry::statusctl::AddQueueControllerFlags(*queue_controller_cmd, queue_controller,
                                             queue_label_map, queue_label_defaults);

  gantry::cli::KaiShardOptions shard;
  auto* shard_cmd = app.add_subcommand(
      "kai-shard",
      "Print KAI SchedulingShards as KAI's operator renders them: the scheduler configuration, "
      "its arguments, or the values of Gantry's Helm chart (docs/node-pools.md)");
  shard_cmd
      ->add_option("files", shard.files,
                   "SchedulingShard files (YAML or JSON, one or a list; -: standard input)")
      ->required();
  shard_cmd->add_option("--output,-o", shard.output, "config, args or helm-values")
      ->check(CLI::IsMember({"config", "args", "helm-values"}))
      ->capture_default_str();
  shard_cmd
      ->add_option("--scheduler-name", shard.globals.scheduler_name,
                   "KAI Config's global.schedulerName")
      ->capture_default_str();
  shard_cmd->add_option("--namespace", shard.globals.namespace_name, "KAI Config's namespace")
      ->capture_default_str();
  shard_cmd->add_option("--replicas", shard.globals.replicas, "KAI Config's scheduler.replicas")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  shard_cmd
      ->add_option("--config-path", shard.globals.config_path,
                   "Where the scheduler's container mounts the configuration")
      ->capture_default_str();
  shard_cmd->add_option("--metrics-namespace", shard.globals.metrics_namespace,
                        "KAI Config's queueController.metricsNamespace");
  shard_cmd->add_flag("--internal-prometheus", shard.globals.internal_prometheus,
                      "KAI Config's prometheus.enabled (the usage database's default address)");
  shard_cmd->add_option("--external-prometheus-url", shard.globals.external_prometheus_url,
                        "KAI Config's prometheus.externalPrometheusUrl");

  // KAI's operator renders `--partition-label-value=` (an empty value: the default partition);
  // CLI11 would take the next argument as its value. An empty value of a flag whose default is
  // empty changes nothing, so such arguments are dropped before parsing.
  std::vector<const char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--partition-label-value=" || a == "--feature-gates=" || a == "--pyroscope-address=" ||
        a == "--runtime-class-name=") {
      continue;
    }
    args.push_back(argv[i]);
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (grouper_cmd->parsed()) return gantry::podgrouper::RunPodGrouper(grouper, std::cerr);
  if (pg_controller_cmd->parsed()) {
    return gantry::statusctl::RunPodGroupController(pg_controller, std::cerr);
  }
  if (queue_controller_cmd->parsed()) {
    auto labels = gantry::statusctl::ParseStringMapFlag(queue_label_map);
    auto defaults = gantry::statusctl::ParseStringMapFlag(queue_label_defaults);
    if (!labels.ok() || !defaults.ok()) {
      std::cerr << "queue-controller: "
                << (!labels.ok() ? "--queue-label-to-metric-label " + labels.error()
                                 : "--queue-label-to-default-metric-value " + defaults.error())
                << "\n";
      return 2;
    }
    queue_controller.queue_label_to_metric_label = labels.value();
    queue_controller.queue_label_to_default_metric_value = defaults.value();
    return gantry::statusctl::RunQueueController(queue_controller, std::cerr);
  }
  if (binder_cmd->parsed()) {
    for (const auto& w : binder_compat.Warnings()) std::cerr << "warning: " << w << "\n";
    return gantry::binder::RunBinder(binder, std::cerr);
  }
  if (sched_cmd->parsed()) {
    sched.warnings = sched_compat.Warnings();
    return gantry::cli::RunScheduler(sched, std::cout, std::cerr);
  }
  if (shard_cmd->parsed()) {
    // The shard's args are passed on only as flags `gantry scheduler` takes.
    auto takes_flag = [sched_cmd](const std::string& name) {
      return sched_cmd->get_option_no_throw("--" + name) != nullptr;
    };
    return gantry::cli::RunKaiShard(shard, takes_flag, std::cout, std::cerr);
  }
  if (bench_cmd->parsed()) return gantry::cli::RunBench(bench, std::cout, std::cerr);
  if (sim_cmd->parsed()) return gantry::cli::RunSimulate(simulate, std::cout, std::cerr);
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
