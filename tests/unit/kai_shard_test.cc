// `gantry kai-shard`: KAI SchedulingShards rendered as KAI v0.17's operator renders them.
#include "cli/kai_shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "framework/config.h"
#include "scenario/document.h"

namespace gantry::cli {
namespace {

using json = nlohmann::json;  // NOLINT(readability-identifier-naming): nlohmann's own name

// Flags of `gantry scheduler` for these tests (the CLI asks its own scheduler command).
bool TakesFlag(const std::string& name) {
  return name == "schedule-period" || name == "max-consolidation-preemptees" ||
         name == "leader-elect";
}

KaiShard Read(const std::string& spec, const KaiGlobals& globals = {}) {
  const std::string text =
      "apiVersion: kai.scheduler/v1\nkind: SchedulingShard\nmetadata: {name: s}\nspec: " + spec;
  auto shards = ReadKaiShards(text, "shard.yaml", globals, TakesFlag);
  EXPECT_TRUE(shards.ok()) << (shards.ok() ? "" : shards.error());
  if (!shards.ok() || shards.value().size() != 1) return {};
  return shards.value()[0];
}

std::string ReadError(const std::string& text, const KaiGlobals& globals = {}) {
  auto shards = ReadKaiShards(text, "shard.yaml", globals, TakesFlag);
  EXPECT_FALSE(shards.ok());
  return shards.ok() ? "" : shards.error();
}

std::string ShardError(const std::string& spec, const KaiGlobals& globals = {}) {
  return ReadError("kind: SchedulingShard\nmetadata: {name: s}\nspec: " + spec, globals);
}

json Config(const KaiShard& shard) {
  auto doc = ParseJsonOrYamlDocument(shard.config_yaml, "config", "a configuration");
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.error()) << "\n" << shard.config_yaml;
  return doc.ok() ? doc.value() : json();
}

std::vector<std::string> PluginNames(const json& config) {
  std::vector<std::string> names;
  for (const json& p : config["tiers"][0]["plugins"]) names.push_back(p["name"]);
  return names;
}

json PluginArguments(const json& config, const std::string& name) {
  for (const json& p : config["tiers"][0]["plugins"]) {
    if (p["name"] == name) return p.value("arguments", json::object());
  }
  return nullptr;
}

std::string DataFile(const std::string& name) {
  std::ifstream in(std::string(GANTRY_KAI_OPERATOR_DATA_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The default shard renders as tests/data/kai-operator-v0.17 (KAI v0.17.0's operator output for a
// default installation): the same configuration and the same arguments.
TEST(KaiShardTest, DefaultShardIsKaisDefaultRendering) {
  const KaiShard shard = Read("{}");
  auto expected = ParseJsonOrYamlDocument(DataFile("scheduler-config.yaml"), "data", "a config");
  ASSERT_TRUE(expected.ok()) << expected.error();
  EXPECT_EQ(Config(shard), expected.value()) << shard.config_yaml;

  std::vector<std::string> args;
  std::istringstream lines(DataFile("scheduler-args.txt"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) args.push_back(line);
  }
  EXPECT_EQ(shard.args, args);
  EXPECT_TRUE(shard.warnings.empty());
}

// What the operator writes, Gantry's scheduler reads without a warning.
TEST(KaiShardTest, RenderedConfigurationsLoadCleanly) {
  for (const char* spec :
       {"{}", "{placementStrategy: {gpu: spread, cpu: spread}, kValue: 0.5}",
        "{minRuntime: {preemptMinRuntime: 5m}, queueDepthPerAction: {reclaim: 10}}"}) {
    const KaiShard shard = Read(spec);
    auto config = ParseSchedulerConfig(shard.config_yaml, "rendered");
    ASSERT_TRUE(config.ok()) << spec << ": " << config.error();
    EXPECT_TRUE(config.value().warnings.empty()) << spec << ": " << config.value().warnings.front();
  }
}

TEST(KaiShardTest, SpreadGpusSwapThePackingPluginsAndDropConsolidation) {
  const json config = Config(Read("{placementStrategy: {gpu: spread}}"));
  const auto names = PluginNames(config);
  EXPECT_EQ(std::count(names.begin(), names.end(), "gpuspread"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "gpupack"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "gpusharingorder"), 0);
  EXPECT_EQ(PluginArguments(config, "nodeplacement"),
            (json{{"gpu", "spread"}, {"cpu", "binpack"}}));
  EXPECT_EQ(config["actions"], "allocate, reclaim, preempt, stalegangeviction");
}

TEST(KaiShardTest, SpreadCpusKeepGpuPackingButDropConsolidation) {
  const json config = Config(Read("{placementStrategy: {cpu: spread}}"));
  const auto names = PluginNames(config);
  EXPECT_EQ(std::count(names.begin(), names.end(), "gpupack"), 1);
  EXPECT_EQ(config["actions"], "allocate, reclaim, preempt, stalegangeviction");
}

TEST(KaiShardTest, KValueAndMinRuntimeBecomePluginArguments) {
  const json config =
      Config(Read("{kValue: 0.25, minRuntime: {preemptMinRuntime: 10m, reclaimMinRuntime: 1h}}"));
  EXPECT_EQ(PluginArguments(config, "proportion"), (json{{"kValue", "0.25"}}));
  EXPECT_EQ(PluginArguments(config, "minruntime"),
            (json{{"defaultPreemptMinRuntime", "10m"}, {"defaultReclaimMinRuntime", "1h"}}));
  EXPECT_EQ(PluginArguments(Config(Read("{kValue: 2}")), "proportion"), (json{{"kValue", "2"}}));
}

// Overrides: disabled plugins leave, priorities reorder (ties by name), a new plugin comes in at
// priority 0, and given arguments replace the defaults whole.
TEST(KaiShardTest, PluginAndActionOverridesMergeOverTheDefaults) {
  const json config = Config(Read(R"({
    plugins: {gpupack: {enabled: false}, topology: {priority: 2000, arguments: {a: b}},
              zz-custom: {}, aa-custom: {}, nodeplacement: {arguments: {gpu: spread}}},
    actions: {preempt: {enabled: false}, consolidation: {priority: 600}}})"));
  const auto names = PluginNames(config);
  ASSERT_GE(names.size(), 4U);
  EXPECT_EQ(names.front(), "topology");
  EXPECT_EQ(names[names.size() - 2], "aa-custom");
  EXPECT_EQ(names.back(), "zz-custom");
  EXPECT_EQ(std::count(names.begin(), names.end(), "gpupack"), 0);
  EXPECT_EQ(PluginArguments(config, "topology"), (json{{"a", "b"}}));
  EXPECT_EQ(PluginArguments(config, "nodeplacement"), (json{{"gpu", "spread"}}));
  EXPECT_EQ(config["actions"], "consolidation, allocate, reclaim, stalegangeviction");
}

TEST(KaiShardTest, QueueDepthNamesOnlyEnabledActions) {
  EXPECT_EQ(Config(Read("{queueDepthPerAction: {allocate: 5}}"))["queueDepthPerAction"],
            (json{{"allocate", 5}}));
  EXPECT_EQ(
      ShardError("{placementStrategy: {gpu: spread}, queueDepthPerAction: {consolidation: 3}}"),
      "shard.yaml (SchedulingShard s): spec.queueDepthPerAction: the scheduler's actions are "
      "allocate, reclaim, preempt, stalegangeviction. consolidation isn't one of them, making "
      "the queueDepthPerAction invalid");
}

TEST(KaiShardTest, SearchBudgetsAreCheckedAndFilledWithKaisDefaults) {
  const json budgets =
      Config(Read("{scenarioSearchBudgets: {maxActionSearchDuration: {reclaim: 90s}, "
                  "maxGeneratorSearchDuration: {NodeLocalGreedy: 1m}}}"))["scenarioSearchBudgets"];
  EXPECT_EQ(budgets["maxActionSearchDuration"], (json{{"default", "5m0s"}, {"reclaim", "1m30s"}}));
  EXPECT_EQ(budgets["maxGeneratorSearchDuration"],
            (json{{"default", "2m0s"}, {"NodeLocalGreedy", "1m0s"}, {"MultiNodeGang", "2m0s"}}));
  EXPECT_EQ(budgets["maxJobSearchDuration"], "4m0s");

  EXPECT_NE(ShardError("{scenarioSearchBudgets: {maxActionSearchDuration: {allocate: 1s}}}")
                .find("spec.scenarioSearchBudgets.maxActionSearchDuration: contains invalid action "
                      "key \"allocate\""),
            std::string::npos);
  EXPECT_NE(ShardError("{scenarioSearchBudgets: {maxJobSearchDuration: -1s}}")
                .find("spec.scenarioSearchBudgets.maxJobSearchDuration: must be non-negative"),
            std::string::npos);
  EXPECT_NE(ShardError("{scenarioSearchBudgets: {maxJobSearchDuration: 1m, "
                       "minJobSearchDuration: 2m}}")
                .find("minJobSearchDuration: must be less than maxJobSearchDuration"),
            std::string::npos);
}

TEST(KaiShardTest, PrometheusUsageDatabaseGetsKaisAddress) {
  const std::string spec = "{usageDBConfig: {clientType: prometheus}}";
  EXPECT_NE(ShardError(spec).find("spec.usageDBConfig: prometheus connection string not "
                                  "configured"),
            std::string::npos);
  KaiGlobals internal;
  internal.internal_prometheus = true;
  EXPECT_EQ(Config(Read(spec, internal))["usageDBConfig"]["connectionString"],
            "http://usage-prometheus.kai-scheduler.svc.cluster.local:9090");
  KaiGlobals external;
  external.external_prometheus_url = "http://prom.example:9090";
  EXPECT_EQ(Config(Read(spec, external))["usageDBConfig"]["connectionString"],
            "http://prom.example:9090");
  EXPECT_EQ(Config(Read("{usageDBConfig: {clientType: prometheus, connectionString: "
                        "'http://mine:9090'}}"))["usageDBConfig"]["connectionString"],
            "http://mine:9090");
}

// The shard's args by flag name, only flags the scheduler takes; the rest named in a warning.
TEST(KaiShardTest, ShardArgumentsAreFlagsTheSchedulerTakes) {
  KaiGlobals two;
  two.replicas = 2;
  const KaiShard shard = Read(
      "{partitionLabelValue: pool-a, args: {schedule-period: 2s, no-such-flag: x, "
      "max-consolidation-preemptees: '8'}}",
      two);
  EXPECT_EQ(shard.partition_label_value, "pool-a");
  EXPECT_EQ(shard.shard_args,
            (std::vector<std::string>{"--max-consolidation-preemptees=8", "--schedule-period=2s"}));
  ASSERT_EQ(shard.args.size(), 11U);
  EXPECT_EQ(shard.args[4], "--partition-label-value=pool-a");
  EXPECT_EQ(shard.args.back(), "--leader-elect=true");
  ASSERT_EQ(shard.warnings.size(), 1U);
  EXPECT_EQ(Read("{goMemLimitRatio: 0.8}").warnings,
            (std::vector<std::string>{"shard.yaml (SchedulingShard s): spec.goMemLimitRatio: sets "
                                      "the Go runtime's memory limit, which Gantry (C++) does not "
                                      "have; left out"}));
  EXPECT_EQ(shard.warnings[0],
            "shard.yaml (SchedulingShard s): spec.args.no-such-flag: gantry scheduler has no flag "
            "--no-such-flag; left out");
}

TEST(KaiShardTest, BadInputIsNamed) {
  EXPECT_NE(ReadError("spec: [").find("shard.yaml: malformed YAML"), std::string::npos);
  EXPECT_EQ(ReadError("kind: Queue\nmetadata: {name: q}"),
            "shard.yaml: kind: must be SchedulingShard (kai.scheduler/v1)");
  EXPECT_EQ(ReadError("kind: SchedulingShard\nspec: {}"), "shard.yaml: metadata.name: missing");
  EXPECT_EQ(ShardError("{placementStrategy: {gpu: pack}}"),
            "shard.yaml (SchedulingShard s): spec.placementStrategy.gpu: must be binpack or "
            "spread");
  EXPECT_EQ(ShardError("{plugins: {gpupack: {priority: high}}}"),
            "shard.yaml (SchedulingShard s): spec.plugins.gpupack.priority: must be an integer");
  EXPECT_EQ(ShardError("{plugins: {gpupack: {enable: false}}}"),
            "shard.yaml (SchedulingShard s): spec.plugins.gpupack: unknown field \"enable\"");
  EXPECT_EQ(ShardError("{kvalue: 1}"),
            "shard.yaml (SchedulingShard s): spec: unknown field \"kvalue\"");
  EXPECT_EQ(ShardError("{args: {schedule-period: 2}}"),
            "shard.yaml (SchedulingShard s): spec.args.schedule-period: must be a string");
}

// `kubectl get schedulingshards -o yaml` (a List) into the chart's values: the default pool's
// shard as scheduler.config, the others as nodePools entries with their own config and args.
TEST(KaiShardTest, ListOfShardsBecomesHelmValues) {
  const std::string list = R"(apiVersion: v1
kind: List
items:
- {kind: SchedulingShard, metadata: {name: default}, spec: {}}
- {kind: SchedulingShard, metadata: {name: a}, spec: {partitionLabelValue: pool-a,
   placementStrategy: {gpu: spread}, args: {schedule-period: 2s}}}
)";
  auto shards = ReadKaiShards(list, "list.yaml", {}, TakesFlag);
  ASSERT_TRUE(shards.ok()) << shards.error();
  ASSERT_EQ(shards.value().size(), 2U);
  auto values = HelmValuesForShards(shards.value());
  ASSERT_TRUE(values.ok()) << values.error();
  auto doc = ParseJsonOrYamlDocument(values.value(), "values", "values");
  ASSERT_TRUE(doc.ok()) << doc.error() << "\n" << values.value();
  const json& scheduler = doc.value()["scheduler"];
  EXPECT_EQ(scheduler["config"], shards.value()[0].config_yaml);
  EXPECT_EQ(scheduler["extraArgs"], json::array());
  ASSERT_EQ(scheduler["nodePools"].size(), 1U);
  EXPECT_EQ(scheduler["nodePools"][0]["name"], "pool-a");
  EXPECT_EQ(scheduler["nodePools"][0]["config"], shards.value()[1].config_yaml);
  EXPECT_EQ(scheduler["nodePools"][0]["args"], (json{"--schedule-period=2s"}));

  // Two shards of one pool cannot both be served.
  std::vector<KaiShard> twice = {shards.value()[1], shards.value()[1]};
  auto refused = HelmValuesForShards(twice);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "SchedulingShard a: another shard also serves the pool \"pool-a\"");
  EXPECT_NE(ReadError("kind: List\nitems:\n- {kind: SchedulingShard, metadata: {name: x}, spec: "
                      "{kValue: nope}}")
                .find("shard.yaml: items[0] (SchedulingShard x): spec.kValue: must be a number"),
            std::string::npos);
}

}  // namespace
}  // namespace gantry::cli
