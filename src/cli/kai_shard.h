// KAI's SchedulingShard (kai.scheduler/v1) read as KAI v0.17's operator reads it, for a swap that
// keeps each node pool's settings: the operator turns a shard into the scheduler configuration
// of its ConfigMap (`<schedulerName>-<shard>`, key config.yaml) and the scheduler's arguments,
// and `gantry scheduler` takes both unchanged. `gantry kai-shard` prints them, or the values of
// Gantry's Helm chart for a set of shards (docs/node-pools.md).
//
// The rendering follows the operator's defaulting: placement strategy binpack unless set
// (gpupack and gpusharingorder with binpack GPUs, gpuspread with spread; consolidation only when
// neither GPU nor CPU spreads), the default plugins and actions by priority (higher first, then by
// name), the shard's plugin and action overrides merged over them, kValue and minRuntime as
// plugin arguments, the default scenario search budgets, queueDepthPerAction checked against the
// enabled actions, a Prometheus usage database given its address from KAI's Config.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace gantry::cli {

// What a shard's rendering reads from KAI's cluster-wide Config (`kai-config`), with KAI's
// defaults.
struct KaiGlobals {
  std::string scheduler_name = "kai-scheduler";
  std::string namespace_name = "kai-scheduler";
  std::string nodepool_label_key = "kai.scheduler/node-pool";
  std::string queue_label_key = "kai.scheduler/queue";
  std::string reservation_app_label = "kai-resource-reservation";
  // Where the scheduler's container finds the ConfigMap's config.yaml.
  std::string config_path = "/etc/config/config.yaml";
  int port = 8080;
  std::optional<std::string> metrics_namespace;
  int replicas = 1;
  bool json_log = false;
  // The usage database's address for a shard whose Prometheus usageDBConfig names none: KAI's
  // own Prometheus (spec.prometheus.enabled) or an external one (externalPrometheusUrl).
  bool internal_prometheus = false;
  std::string external_prometheus_url;
};

struct KaiShard {
  std::string name;                   // metadata.name
  std::string partition_label_value;  // spec.partitionLabelValue ("" for the default pool)
  std::string config_yaml;            // the ConfigMap's config.yaml
  std::vector<std::string> args;      // the scheduler container's arguments, in KAI's order
  // spec.args entries as `--name=value`, each a flag `gantry scheduler` takes.
  std::vector<std::string> shard_args;
  // What is left out, each naming the field: spec.args flags `gantry scheduler` does not take
  // (KAI's operator drops flags its scheduler does not define, silently).
  std::vector<std::string> warnings;
};

// Reads SchedulingShards (YAML or JSON): one, or a list of them (`items`), as `kubectl get
// schedulingshard [NAME] -o yaml` prints them. `origin` names the input in errors, which name the
// shard and field ("<origin> (SchedulingShard a): spec.plugins.gpupack.priority: must be an
// integer"). `takes_flag(name)` says whether `gantry scheduler` has `--name`.
Result<std::vector<KaiShard>> ReadKaiShards(
    const std::string& text, const std::string& origin, const KaiGlobals& globals,
    const std::function<bool(const std::string&)>& takes_flag);

// Values of Gantry's Helm chart (deploy/helm/gantry) serving these shards: the default pool's
// shard (no partitionLabelValue) as `scheduler.config` and `scheduler.extraArgs`, every other one
// as an entry of `scheduler.nodePools` with its own config and arguments.
Result<std::string> HelmValuesForShards(const std::vector<KaiShard>& shards);

// `gantry kai-shard`: reads the files ("-": standard input) and prints, by `output`, each shard's
// configuration ("config"), its arguments one per line ("args"), or the chart's values for all
// of them ("helm-values"). Warnings and errors go to `err`; returns the exit code.
struct KaiShardOptions {
  std::vector<std::string> files;
  std::string output = "config";
  KaiGlobals globals;
};
int RunKaiShard(const KaiShardOptions& options,
                const std::function<bool(const std::string&)>& takes_flag, std::ostream& out,
                std::ostream& err);

}  // namespace gantry::cli
