// Configuration parsing, scheduler construction and scenario loading: good input is read as
// written, bad input is an Error naming the origin, the object and the field, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/config.h"
#include "scenario/scenario.h"
#include "scheduler/registry.h"
#include "scheduler/scheduler.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::Contains;

std::vector<std::string> PluginNames(const SchedulerConfig& c) {
  std::vector<std::string> names;
  names.reserve(c.plugins.size());
  for (const auto& p : c.plugins) names.push_back(p.name);
  return names;
}

// --- ParseSchedulerConfig --------------------------------------------------------------------

class SchedulerConfigTest : public ::testing::Test {};

TEST_F(SchedulerConfigTest, ReadsKaisActionsStringAndTiers) {
  const std::string text = R"(actions: "allocate, reclaim,preempt"
tiers:
- plugins:
  - name: predicates
  - name: proportion
    arguments:
      kValue: "0.5"
- plugins:
  - name: nodeplacement
    arguments:
      gpu: spread
      cpu: binpack
  - name: priority
)";
  auto parsed = ParseSchedulerConfig(text, "kai.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const SchedulerConfig& c = parsed.value();
  EXPECT_EQ(c.actions, (std::vector<std::string>{"allocate", "reclaim", "preempt"}));
  // Tiers are flattened in order.
  EXPECT_EQ(PluginNames(c),
            (std::vector<std::string>{"predicates", "proportion", "nodeplacement", "priority"}));
  EXPECT_EQ(c.plugins[1].arguments.at("kValue"), "0.5");
  EXPECT_EQ(c.plugins[2].arguments.at("gpu"), "spread");
  EXPECT_EQ(c.plugins[2].arguments.at("cpu"), "binpack");
  EXPECT_TRUE(c.plugins[0].arguments.empty());
  // Parameters not mentioned keep their defaults.
  EXPECT_EQ(c.params.scheduler_name, "kai-scheduler");
  // And the scheduler accepts it.
  auto sched = Scheduler::Create(c, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(sched.ok()) << sched.error();
}

TEST_F(SchedulerConfigTest, AcceptsActionListTopLevelPluginsAndParameters) {
  const std::string text = R"(actions: [allocate]
plugins:
- name: predicates
- name: proportion
schedulerName: gantry
queueLabelKey: example.com/queue
maxNumberConsolidationPreemptees: 3
allowConsolidatingReclaim: false
stalenessGracePeriodSeconds: 30
)";
  auto parsed = ParseSchedulerConfig(text, "c.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const SchedulerConfig& c = parsed.value();
  EXPECT_EQ(c.actions, std::vector<std::string>{"allocate"});
  EXPECT_EQ(PluginNames(c), (std::vector<std::string>{"predicates", "proportion"}));
  EXPECT_EQ(c.params.scheduler_name, "gantry");
  EXPECT_EQ(c.params.queue_label_key, "example.com/queue");
  EXPECT_EQ(c.params.max_consolidation_preemptees, 3);
  EXPECT_FALSE(c.params.allow_consolidating_reclaim);
  EXPECT_EQ(c.params.staleness_grace_period_seconds, 30);
}

TEST_F(SchedulerConfigTest, EmptyDocumentIsTheDefault) {
  auto parsed = ParseSchedulerConfig("", "empty.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const SchedulerConfig def = SchedulerConfig::Default();
  EXPECT_EQ(parsed.value().actions, def.actions);
  EXPECT_EQ(PluginNames(parsed.value()), PluginNames(def));
}

TEST_F(SchedulerConfigTest, UnknownTopLevelFieldIsSkippedWithAWarningNamingIt) {
  // As KAI: a key it does not know is skipped, not fatal; Gantry also says so.
  auto parsed = ParseSchedulerConfig("actions: allocate\nbogusField: 1\n", "cfg.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().actions, std::vector<std::string>{"allocate"});
  ASSERT_EQ(parsed.value().warnings.size(), 1u);
  EXPECT_TRUE(Contains(parsed.value().warnings[0], "cfg.yaml"));
  EXPECT_TRUE(Contains(parsed.value().warnings[0], "unknown field \"bogusField\""));
}

TEST_F(SchedulerConfigTest, UnknownPluginFieldIsSkippedWithAWarningNamingThePlugin) {
  const std::string text = R"(actions: allocate
tiers:
- plugins:
  - name: predicates
  - name: proportion
    argumnts: {kValue: "1"}
)";
  auto parsed = ParseSchedulerConfig(text, "cfg.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(PluginNames(parsed.value()), (std::vector<std::string>{"predicates", "proportion"}));
  EXPECT_TRUE(parsed.value().plugins[1].arguments.empty());
  ASSERT_EQ(parsed.value().warnings.size(), 1u);
  EXPECT_TRUE(Contains(parsed.value().warnings[0], "tiers[0].plugins[1]"));
  EXPECT_TRUE(Contains(parsed.value().warnings[0], "unknown field \"argumnts\""));
}

// The configuration KAI v0.17's operator renders for the default SchedulingShard (kept as test
// data; see tests/data/kai-operator-v0.17/README.md) loads, and the scheduler starts from it.
TEST_F(SchedulerConfigTest, KaiOperatorRenderedConfigurationLoads) {
  const std::string path = std::string(GANTRY_KAI_OPERATOR_DATA_DIR) + "/scheduler-config.yaml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseSchedulerConfig(text.str(), path);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const SchedulerConfig& c = parsed.value();
  EXPECT_EQ(c.actions, (std::vector<std::string>{"allocate", "consolidation", "reclaim", "preempt",
                                                 "stalegangeviction"}));
  EXPECT_EQ(c.QueueDepth("allocate"), -1);
  // The operator renders KAI's default search budgets ("5m0s", ...): read as written.
  constexpr int64_t kSecond = 1'000'000'000;
  EXPECT_EQ(c.search_budgets.max_action_ns.at("default"), 300 * kSecond);
  EXPECT_EQ(c.search_budgets.max_job_ns, 240 * kSecond);
  EXPECT_EQ(c.search_budgets.min_job_ns, 0);
  EXPECT_EQ(c.search_budgets.max_generator_ns.at("NodeLocalGreedy"), 30 * kSecond);
  EXPECT_EQ(c.search_budgets.max_generator_ns.at("MultiNodeGang"), 120 * kSecond);
  auto sched = Scheduler::Create(c, BuiltinPlugins(), BuiltinActions());
  ASSERT_TRUE(sched.ok()) << sched.error();
  // Gantry implements every plugin of the rendered list (podaffinity was the last one skipped
  // with an "unknown plugin" warning): nothing is warned about, nothing is dropped.
  for (const auto& p : c.plugins) EXPECT_TRUE(BuiltinPlugins().Contains(p.name)) << p.name;
  EXPECT_TRUE(std::any_of(c.plugins.begin(), c.plugins.end(),
                          [](const PluginConfig& p) { return p.name == "podaffinity"; }));
  EXPECT_TRUE(sched.value()->warnings().empty())
      << testing::PrintToString(sched.value()->warnings());
  EXPECT_EQ(sched.value()->config().plugins.size(), c.plugins.size());
}

TEST_F(SchedulerConfigTest, QueueDepthPerActionAndKaisOtherKeys) {
  const std::string text = R"(actions: allocate, reclaim
queueDepthPerAction:
  allocate: 2
usageDBConfig:
  clientType: prometheus
  connectionString: http://prometheus:9090
scenarioSearchBudgets:
  maxJobSearchDuration: 1s
)";
  auto parsed = ParseSchedulerConfig(text, "c.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().QueueDepth("allocate"), 2);
  EXPECT_EQ(parsed.value().QueueDepth("reclaim"), -1);
  // usageDBConfig (time-based fairshare) and scenarioSearchBudgets are read, nothing is warned.
  ASSERT_TRUE(parsed.value().usage_db.has_value());
  EXPECT_EQ(parsed.value().usage_db->client_type, "prometheus");
  EXPECT_EQ(parsed.value().search_budgets.JobLimitNs(), 1'000'000'000);
  EXPECT_TRUE(parsed.value().warnings.empty());

  // A depth for an action that does not run, or a negative one, is an error naming it.
  auto bad =
      ParseSchedulerConfig("actions: allocate\nqueueDepthPerAction: {preempt: 1}\n", "d.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error(), "queueDepthPerAction.preempt"));
  auto negative =
      ParseSchedulerConfig("actions: allocate\nqueueDepthPerAction: {allocate: -1}\n", "d.yaml");
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(Contains(negative.error(), "must not be negative"));
}

TEST_F(SchedulerConfigTest, EmptyActionsAndTiersMeanTheDefaults) {
  auto parsed = ParseSchedulerConfig("actions: \"\"\ntiers: []\n", "e.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().actions, SchedulerConfig::Default().actions);
  EXPECT_EQ(PluginNames(parsed.value()), PluginNames(SchedulerConfig::Default()));
}

TEST_F(SchedulerConfigTest, KaisDefaultMaxConsolidationPreempteesIs16) {
  EXPECT_EQ(SchedulerConfig::Default().params.max_consolidation_preemptees, 16);
}

TEST_F(SchedulerConfigTest, MalformedYamlNamesTheOrigin) {
  auto parsed = ParseSchedulerConfig("actions: [allocate\ntiers: {", "broken.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(Contains(parsed.error(), "broken.yaml"));
  EXPECT_TRUE(Contains(parsed.error(), "malformed YAML"));
}

TEST_F(SchedulerConfigTest, WrongShapesAreErrorsNotCrashes) {
  const std::vector<std::string> bad = {
      "- just\n- a list\n",                                          // not a mapping
      "actions: allocate\ntiers: 5\n",                               // tiers not a list
      "actions: allocate\ntiers:\n- plugins: 3\n",                   // plugins not a list
      "actions: allocate\ntiers:\n- plugins:\n  - 7\n",              // plugin not a mapping
      "actions: allocate\nplugins:\n- arguments: {a: b}\n",          // plugin without a name
      "actions: allocate\nplugins:\n- name: p\n  arguments: [1]\n",  // arguments not a map
      "actions: {a: b}\n",                                           // actions not a string or list
      "actions: allocate\nmaxNumberConsolidationPreemptees: many\n",  // not a number
  };
  for (const std::string& text : bad) {
    auto parsed = ParseSchedulerConfig(text, "bad.yaml");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_TRUE(Contains(parsed.error(), "bad.yaml")) << text;
  }
}

// --- Scheduler::Create --------------------------------------------------------------------------

class SchedulerCreateTest : public ::testing::Test {
 protected:
  static Result<std::unique_ptr<Scheduler>> Create(SchedulerConfig c) {
    return Scheduler::Create(std::move(c), BuiltinPlugins(), BuiltinActions());
  }
};

TEST_F(SchedulerCreateTest, DefaultConfigurationIsAccepted) {
  auto s = Create(SchedulerConfig::Default());
  EXPECT_TRUE(s.ok()) << s.error();
}

TEST_F(SchedulerCreateTest, UnknownPluginIsSkippedAndNamedWithItsIndex) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {{"predicates", {}, {}}, {"nosuchplugin", {}, {}}};
  auto s = Create(c);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s.value()->warnings().size(), 1u);
  EXPECT_TRUE(Contains(s.value()->warnings()[0], "plugins[1]"));
  EXPECT_TRUE(Contains(s.value()->warnings()[0], "unknown plugin \"nosuchplugin\""));
  ASSERT_EQ(s.value()->config().plugins.size(), 1u);
  EXPECT_EQ(s.value()->config().plugins[0].name, "predicates");
}

TEST_F(SchedulerCreateTest, UnknownActionIsNamedWithItsIndex) {
  SchedulerConfig c = SchedulerConfig::Default();
  c.actions = {"allocate", "teleport"};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "actions[1]"));
  EXPECT_TRUE(Contains(s.error(), "unknown action \"teleport\""));
}

TEST_F(SchedulerCreateTest, BadNodePlacementArgumentIsNamed) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {
      {"predicates", {}, {}}, {"proportion", {}, {}}, {"nodeplacement", {{"gpu", "pack"}}, {}}};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "plugins[2] (nodeplacement)"));
  EXPECT_TRUE(Contains(s.error(), "argument \"gpu\""));
  EXPECT_TRUE(Contains(s.error(), "\"pack\""));
}

TEST_F(SchedulerCreateTest, UnknownNodePlacementArgumentIsNamed) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {{"nodeplacement", {{"memory", "spread"}}, {}}};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "plugins[0] (nodeplacement)"));
  EXPECT_TRUE(Contains(s.error(), "unknown argument \"memory\""));
}

TEST_F(SchedulerCreateTest, NegativeKValueIsRejected) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {{"predicates", {}, {}}, {"proportion", {{"kValue", "-1"}}, {}}};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "plugins[1] (proportion)"));
  EXPECT_TRUE(Contains(s.error(), "kValue"));
}

TEST_F(SchedulerCreateTest, NonNumericKValueIsRejected) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {{"proportion", {{"kValue", "lots"}}, {}}};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "plugins[0] (proportion)"));
  EXPECT_TRUE(Contains(s.error(), "\"lots\" is not a number"));
}

TEST_F(SchedulerCreateTest, ArgumentsOfArgumentlessPluginsAreRejected) {
  SchedulerConfig c;
  c.actions = {"allocate"};
  c.plugins = {{"priority", {{"weight", "2"}}, {}}};
  auto s = Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error(), "plugins[0] (priority)"));
  EXPECT_TRUE(Contains(s.error(), "unknown argument \"weight\""));
}

// Every in-tree plugin checks its argument names (plugin_util::CheckArgumentNames): a misspelt
// argument is an error naming it, never a silently kept default.
TEST(PluginArgumentsTest, EveryInTreePluginRejectsAnUnknownArgument) {
  const auto names = BuiltinPlugins().Names();
  EXPECT_GE(names.size(), 19u);
  for (const auto& name : names) {
    auto created = BuiltinPlugins().Create(PluginConfig{name, {{"noSuchArgument", "1"}}, {}});
    ASSERT_FALSE(created.ok()) << name << " accepted an unknown argument";
    EXPECT_TRUE(Contains(created.error(), "unknown argument \"noSuchArgument\"")) << name;
  }
}

TEST(PluginArgumentsTest, TheErrorListsTheAcceptedArguments) {
  auto placement =
      BuiltinPlugins().Create(PluginConfig{"nodeplacement", {{"memory", "spread"}}, {}});
  ASSERT_FALSE(placement.ok());
  EXPECT_TRUE(Contains(placement.error(), "(accepted: gpu, cpu)")) << placement.error();
  auto topology = BuiltinPlugins().Create(PluginConfig{"topology", {{"levels", "2"}}, {}});
  ASSERT_FALSE(topology.ok());
  EXPECT_TRUE(Contains(topology.error(), "(takes no arguments)")) << topology.error();
}

// --- ParseScenario ------------------------------------------------------------------------------

// A small valid scenario; the tests below break one thing at a time.
constexpr const char* kValidScenario = R"({
  "nodes": [{"name": "n1", "gpus": 2}],
  "queues": [
    {"name": "dept"},
    {"name": "q", "parent": "dept", "resources": {"gpu": {"quota": 1, "limit": -1}}}
  ],
  "jobs": [
    {"name": "j1", "queue": "q", "tasks": [
      {"name": "t1", "state": "running", "node": "n1", "gpus": 1},
      {"name": "t2", "state": "pending", "gpus": 1}
    ]}
  ]
})";

class ScenarioInputTest : public ::testing::Test {
 protected:
  // Parses `text` expecting an error; returns the message.
  static std::string ErrorOf(const std::string& text, const std::string& origin = "s.json") {
    auto parsed = ParseScenario(text, origin);
    EXPECT_FALSE(parsed.ok()) << "accepted: " << text;
    return parsed.ok() ? std::string() : parsed.error();
  }
  // kValidScenario with `from` replaced by `to` (which must occur).
  static std::string Edit(const std::string& from, const std::string& to) {
    std::string s = kValidScenario;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  }
};

TEST_F(ScenarioInputTest, ValidScenarioLoads) {
  auto parsed = ParseScenario(kValidScenario, "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Cluster& c = parsed.value().cluster;
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(c.nodes[0].allocatable.gpus, 2);
  ASSERT_EQ(c.queues.size(), 2u);
  const QueueId q = c.FindQueue("q");
  ASSERT_NE(q, kNone);
  EXPECT_EQ(c.queues[q].parent, c.FindQueue("dept"));
  EXPECT_EQ(c.queues[q].gpu.quota, 1);
  EXPECT_EQ(c.queues[q].gpu.limit, kUnlimited);
  const PodId t1 = c.FindPod("t1");
  ASSERT_NE(t1, kNone);
  EXPECT_EQ(c.pods[t1].status, PodStatus::kRunning);
  EXPECT_EQ(c.pods[t1].node, c.FindNode("n1"));
  EXPECT_EQ(c.pods[t1].request.gpus, 1);
  EXPECT_EQ(c.jobs[c.FindJob("j1")].queue, q);
}

TEST_F(ScenarioInputTest, DefaultsAndUnitsFollowTheSpec) {
  auto parsed = ParseScenario(R"({
    "nodes": [{"name": "n1", "gpus": 2, "gpu_memory_mib": 250}],
    "queues": [
      {"name": "legacy"},
      {"name": "q", "resources": {"cpu": {"quota": 1500}, "memory": {"quota": 1500, "limit": 3000}}}
    ],
    "jobs": [
      {"name": "train", "queue": "q", "priority": 50, "tasks": [{"name": "train-0", "state": "pending"}]},
      {"name": "build", "queue": "q", "priority": 100, "tasks": [{"name": "build-0", "state": "pending"}]},
      {"name": "opt", "queue": "q", "priority": 125, "preemptibility": "preemptible"}
    ]
  })",
                              "d.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Cluster& c = parsed.value().cluster;
  // Nodes: 20 000 cores, 20e9 bytes, 110 pods by default; GPU memory floored to 100 MiB steps.
  const Node& n = c.nodes[0];
  EXPECT_EQ(n.allocatable.gpus, 2);
  EXPECT_EQ(n.allocatable.cpu_millis, 20'000'000);
  EXPECT_EQ(n.allocatable.memory_bytes, 20e9);
  EXPECT_EQ(n.allocatable.pods, 110);
  EXPECT_EQ(n.gpu_memory_mib, 200);  // floor(250 / 100) * 100
  // A queue without a resource spec: quota 0, limit 0, weight 0 everywhere (spec 13.6).
  const Queue& legacy = c.queues[c.FindQueue("legacy")];
  for (auto r : kQueueResources) {
    EXPECT_EQ(legacy.quota(r).quota, 0);
    EXPECT_EQ(legacy.quota(r).limit, 0);
    EXPECT_EQ(legacy.quota(r).over_quota_weight, 0);
  }
  // cpu numbers are millicores as given; memory numbers are units of 10^6 bytes; a resource left
  // out is unlimited with weight 1.
  const Queue& q = c.queues[c.FindQueue("q")];
  EXPECT_EQ(q.cpu.quota, 1500);
  EXPECT_EQ(q.memory.quota, 1.5e9);
  EXPECT_EQ(q.memory.limit, 3e9);
  EXPECT_EQ(q.gpu.quota, kUnlimited);
  EXPECT_EQ(q.gpu.over_quota_weight, 1);
  EXPECT_EQ(q.priority, 100);  // absent -> 100
  // Preemptible iff priority < 100 unless given.
  EXPECT_TRUE(c.jobs[c.FindJob("train")].preemptible);
  EXPECT_FALSE(c.jobs[c.FindJob("build")].preemptible);
  EXPECT_TRUE(c.jobs[c.FindJob("opt")].preemptible);
  // Equal ages: the job listed first is older.
  EXPECT_LT(c.jobs[c.FindJob("train")].creation_ms, c.jobs[c.FindJob("build")].creation_ms);
  // Pods: 1000m / 1e9 bytes by default, one pod slot, label job-name = the pod's own name.
  const Pod& p = c.pods[c.FindPod("train-0")];
  EXPECT_EQ(p.request.cpu_millis, 1000);
  EXPECT_EQ(p.request.memory_bytes, 1e9);
  EXPECT_EQ(p.request.pods, 1);
  ASSERT_NE(p.labels.Get("job-name"), nullptr);
  EXPECT_EQ(*p.labels.Get("job-name"), "train-0");
  EXPECT_EQ(c.jobs[c.FindJob("train")].pod_sets[0].min_available, 1);  // all tasks by default
}

TEST_F(ScenarioInputTest, UnknownQueueOnAJob) {
  const std::string err = ErrorOf(Edit(R"("queue": "q")", R"("queue": "nope")"));
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "jobs[0] (j1)"));
  EXPECT_TRUE(Contains(err, "field \"queue\""));
  EXPECT_TRUE(Contains(err, "unknown queue \"nope\""));
}

TEST_F(ScenarioInputTest, CycleInTheQueueHierarchy) {
  const std::string err = ErrorOf(R"({"queues": [
    {"name": "a", "parent": "b"},
    {"name": "b", "parent": "a"}
  ]})");
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "queues[0] (a)"));
  EXPECT_TRUE(Contains(err, "field \"parent\""));
  EXPECT_TRUE(Contains(err, "cycle"));
}

TEST_F(ScenarioInputTest, QueueThatIsItsOwnParent) {
  const std::string err = ErrorOf(R"({"queues": [{"name": "a", "parent": "a"}]})");
  EXPECT_TRUE(Contains(err, "queues[0] (a)"));
  EXPECT_TRUE(Contains(err, "cycle"));
}

TEST_F(ScenarioInputTest, UnknownParentQueue) {
  const std::string err = ErrorOf(Edit(R"("parent": "dept")", R"("parent": "ghost")"));
  EXPECT_TRUE(Contains(err, "queues[1] (q)"));
  EXPECT_TRUE(Contains(err, "field \"parent\""));
  EXPECT_TRUE(Contains(err, "\"ghost\""));
}

TEST_F(ScenarioInputTest, NegativeQuotaOtherThanMinusOne) {
  const std::string err = ErrorOf(Edit(R"("quota": 1)", R"("quota": -2)"));
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "queues[1] (q)"));
  EXPECT_TRUE(Contains(err, "resources.gpu"));
  EXPECT_TRUE(Contains(err, "field \"quota\""));
  EXPECT_TRUE(Contains(err, "-2"));
}

TEST_F(ScenarioInputTest, MinusOneQuotaAndLimitMeanUnlimited) {
  auto parsed = ParseScenario(Edit(R"("quota": 1)", R"("quota": -1)"), "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().cluster.queues[1].gpu.quota, kUnlimited);
}

TEST_F(ScenarioInputTest, NegativeLimitOtherThanMinusOne) {
  const std::string err = ErrorOf(Edit(R"("limit": -1)", R"("limit": -0.5)"));
  EXPECT_TRUE(Contains(err, "queues[1] (q)"));
  EXPECT_TRUE(Contains(err, "field \"limit\""));
}

TEST_F(ScenarioInputTest, MalformedTaskField) {
  const std::string err =
      ErrorOf(Edit(R"("state": "pending", "gpus": 1)", R"("state": "pending", "gpus": "two")"));
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "jobs[0] (j1)"));
  EXPECT_TRUE(Contains(err, "tasks[1] (t2)"));
  EXPECT_TRUE(Contains(err, "field \"gpus\""));
  EXPECT_TRUE(Contains(err, "number"));
}

TEST_F(ScenarioInputTest, MalformedNodeField) {
  const std::string err = ErrorOf(Edit(R"("gpus": 2)", R"("gpus": "two")"));
  EXPECT_TRUE(Contains(err, "nodes[0] (n1)"));
  EXPECT_TRUE(Contains(err, "field \"gpus\""));
}

TEST_F(ScenarioInputTest, MalformedJson) {
  const std::string err = ErrorOf(R"({"nodes": [{"name": "n1",}]})", "broken.json");
  EXPECT_TRUE(Contains(err, "broken.json"));
  EXPECT_TRUE(Contains(err, "malformed JSON"));
}

TEST_F(ScenarioInputTest, MalformedYaml) {
  const std::string err = ErrorOf("nodes: [\n  - name: n1\n", "broken.yaml");
  EXPECT_TRUE(Contains(err, "broken.yaml"));
  EXPECT_TRUE(Contains(err, "malformed YAML"));
}

TEST_F(ScenarioInputTest, RunningPodOnAMissingNode) {
  const std::string err = ErrorOf(Edit(R"("node": "n1")", R"("node": "ghost")"));
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "jobs[0] (j1)"));
  EXPECT_TRUE(Contains(err, "tasks[0] (t1)"));
  EXPECT_TRUE(Contains(err, "field \"node\""));
  EXPECT_TRUE(Contains(err, "unknown node \"ghost\""));
}

TEST_F(ScenarioInputTest, RunningPodWithoutANode) {
  const std::string err =
      ErrorOf(Edit(R"("state": "running", "node": "n1", )", R"("state": "running", )"));
  EXPECT_TRUE(Contains(err, "tasks[0] (t1)"));
  EXPECT_TRUE(Contains(err, "field \"node\""));
}

TEST_F(ScenarioInputTest, JobOnAParentQueue) {
  const std::string err = ErrorOf(Edit(R"("queue": "q")", R"("queue": "dept")"));
  EXPECT_TRUE(Contains(err, "s.json"));
  EXPECT_TRUE(Contains(err, "jobs[0] (j1)"));
  EXPECT_TRUE(Contains(err, "field \"queue\""));
  EXPECT_TRUE(Contains(err, "parent queue"));
}

TEST_F(ScenarioInputTest, UnknownFieldIsNamed) {
  const std::string err = ErrorOf(Edit(R"("gpus": 2)", R"("gpus": 2, "gpuz": 3)"));
  EXPECT_TRUE(Contains(err, "nodes[0] (n1)"));
  EXPECT_TRUE(Contains(err, "unknown field \"gpuz\""));
}

TEST_F(ScenarioInputTest, HostPortsAndConfigMapsAreReadWithDefaults) {
  const std::string pending = R"("state": "pending", "gpus": 1)";
  const std::string with_both = pending + R"(, "config_maps": ["cfg", "env", "cfg"],
      "host_ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "host_ip": "10.0.0.1"}])";
  auto parsed = ParseScenario(Edit(pending, with_both), "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Pod& pod = parsed.value().cluster.pods[parsed.value().cluster.FindPod("t2")];
  EXPECT_EQ(pod.host_ports,
            (std::vector<HostPort>{{"0.0.0.0", "TCP", 80}, {"10.0.0.1", "UDP", 53}}));
  EXPECT_EQ(pod.config_maps, (std::vector<std::string>{"cfg", "env"}));
  EXPECT_FALSE(parsed.value().cluster.HasConfigMap("", "cfg")) << "none listed: none exist";

  auto listed = ParseScenario(Edit(R"("nodes": [)", R"("config_maps": [{"name": "cfg"},
      {"namespace": "team", "name": "cfg"}], "nodes": [)"),
                              "s.json");
  ASSERT_TRUE(listed.ok()) << listed.error();
  EXPECT_TRUE(listed.value().cluster.HasConfigMap("", "cfg"));
  EXPECT_TRUE(listed.value().cluster.HasConfigMap("team", "cfg"));
  EXPECT_FALSE(listed.value().cluster.HasConfigMap("other", "cfg"));
}

TEST_F(ScenarioInputTest, BadHostPortsAndConfigMapsAreNamed) {
  auto task_error = [](const std::string& extra) {
    return ErrorOf(
        Edit(R"("state": "pending", "gpus": 1)", R"("state": "pending", "gpus": 1, )" + extra));
  };
  std::string err = task_error(R"("host_ports": [{"port": 80, "protocol": "HTTP"}])");
  EXPECT_TRUE(Contains(err, "tasks[1] (t2).host_ports[0]")) << err;
  EXPECT_TRUE(Contains(err, "field \"protocol\": must be TCP, UDP or SCTP")) << err;
  err = task_error(R"("host_ports": [{"port": 0}])");
  EXPECT_TRUE(Contains(err, "field \"port\": must be from 1 to 65535")) << err;
  err = task_error(R"("host_ports": [{"port": 80, "ip": "x"}])");
  EXPECT_TRUE(Contains(err, "unknown field \"ip\"")) << err;
  err = task_error(R"("config_maps": [3])");
  EXPECT_TRUE(Contains(err, "field \"config_maps\": must be a list of ConfigMap names")) << err;
  err = ErrorOf(
      Edit(R"("nodes": [)", R"("config_maps": [{"name": "a"}, {"name": "a"}], "nodes": [)"));
  EXPECT_TRUE(Contains(err, "config_maps[1]")) << err;
  EXPECT_TRUE(Contains(err, "duplicate ConfigMap \"a\"")) << err;
}

TEST_F(ScenarioInputTest, PreferredPodAffinityTermsAreRead) {
  const std::string pending = R"("state": "pending", "gpus": 1)";
  const std::string with_terms = pending + R"(,
      "preferred_pod_affinity": [{"weight": 40, "topology_key": "zone",
                                  "match_labels": {"app": "db"}, "namespaces": ["data"]}],
      "preferred_pod_anti_affinity": [{"weight": 100, "topology_key": "kubernetes.io/hostname"}])";
  auto parsed = ParseScenario(Edit(pending, with_terms), "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Pod& pod = parsed.value().cluster.pods[parsed.value().cluster.FindPod("t2")];
  ASSERT_EQ(pod.preferred_pod_affinity.size(), 1u);
  EXPECT_EQ(pod.preferred_pod_affinity[0].weight, 40);
  EXPECT_EQ(pod.preferred_pod_affinity[0].term.topology_key, "zone");
  EXPECT_EQ(*pod.preferred_pod_affinity[0].term.selector.match_labels.Get("app"), "db");
  EXPECT_EQ(pod.preferred_pod_affinity[0].term.namespaces, std::vector<std::string>{"data"});
  ASSERT_EQ(pod.preferred_pod_anti_affinity.size(), 1u);
  EXPECT_EQ(pod.preferred_pod_anti_affinity[0].weight, 100);
  EXPECT_TRUE(pod.preferred_pod_anti_affinity[0].term.selector.match_labels.empty());
  EXPECT_TRUE(pod.preferred_pod_anti_affinity[0].term.namespaces.empty());
  EXPECT_TRUE(pod.pod_affinity.empty());
}

TEST_F(ScenarioInputTest, BadPreferredPodAffinityTermsAreNamed) {
  auto task_error = [](const std::string& extra) {
    return ErrorOf(
        Edit(R"("state": "pending", "gpus": 1)", R"("state": "pending", "gpus": 1, )" + extra));
  };
  std::string err =
      task_error(R"("preferred_pod_affinity": [{"weight": 0, "topology_key": "zone"}])");
  EXPECT_TRUE(Contains(err, "tasks[1] (t2).preferred_pod_affinity[0]")) << err;
  EXPECT_TRUE(Contains(err, "field \"weight\": must be from 1 to 100")) << err;
  err = task_error(R"("preferred_pod_anti_affinity": [{"weight": 5}])");
  EXPECT_TRUE(Contains(err, "tasks[1] (t2).preferred_pod_anti_affinity[0]")) << err;
  EXPECT_TRUE(Contains(err, "field \"topology_key\": missing")) << err;
  err = task_error(R"("preferred_pod_affinity": [{"topology_key": "zone"}])");
  EXPECT_TRUE(Contains(err, "field \"weight\": missing")) << err;
  err = task_error(R"("preferred_pod_affinity": [{"weight": 5, "topology_key": "zone",
      "labels": {"a": "b"}}])");
  EXPECT_TRUE(Contains(err, "unknown field \"labels\"")) << err;
  err = task_error(R"("preferred_pod_affinity": {"weight": 5})");
  EXPECT_TRUE(Contains(err, "field \"preferred_pod_affinity\": must be a list")) << err;
}

TEST_F(ScenarioInputTest, OddShapesAreErrorsNotCrashes) {
  const std::vector<std::string> bad = {
      "",                                              // nothing
      "[1, 2]",                                        // YAML list at the top
      "42",                                            // a scalar
      R"({"nodes": 5})",                               // nodes not a list
      R"({"nodes": [5]})",                             // node not an object
      R"({"nodes": [{"gpus": 1}]})",                   // node without a name
      R"({"nodes": [{"name": 3}]})",                   // name not a string
      R"({"nodes": [{"name": "a"}, {"name": "a"}]})",  // duplicate node
      R"({"nodes": [{"name": "a", "gpus": -1}]})",     // negative
      R"({"nodes": [{"name": "a", "gpus": 1.5}]})",    // not an integer
      R"({"queues": [{"name": "q", "resources": 7}]})",
      R"({"queues": [{"name": "q", "resources": {"gpu": {"quota": "x"}}}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": "x"}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [1]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t"}]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t", "state": "sleeping"}]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "min_available": -1}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "subgroup_tree": 3}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "subgroup_tree": {"name": "r", "min_available": 1}}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t", "state": "pending", "subgroup": "nope"}]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t", "state": "pending", "gpu_fraction": 2}]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t", "state": "pending", "nominated_node": "ghost"}]}]})",
      R"({"queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q"}, {"name": "j", "queue": "q"}]})",
      R"({"jobs": [{"name": "j"}]})",  // no queue
      R"({"config": {"mode": "forever"}})",
      R"({"config": {"plugins": [{"arguments": {}}]}})",
      R"({"expect": {"jobs": {"j": {"status": "sideways"}}}})",
      R"({"expect": {"nodes": {"n": {"idle_gpus": "all"}}}})",
      R"({"format_version": 2})",
      R"({"nodes": [{"name": "a", "mig_devices": {"m1": 1, "m2": 1, "m3": 1, "m4": 1, "m5": 1, "m6": 1, "m7": 1, "m8": 1, "m9": 1}}]})",
      "nodes:\n  - name: a\n    gpus: [1]\n",  // YAML with a list where a number goes
      "{a: [b: {c: }]}\n: :\n",                // YAML noise
  };
  for (const std::string& text : bad) {
    auto parsed = ParseScenario(text, "odd.json");
    ASSERT_FALSE(parsed.ok()) << "accepted: " << text;
    EXPECT_TRUE(Contains(parsed.error(), "odd.json")) << text;
  }
}

TEST_F(ScenarioInputTest, YamlScenarioLoadsLikeJson) {
  const std::string yaml = R"(nodes:
- name: n1
  gpus: 2
queues:
- name: q
jobs:
- name: j1
  queue: q
  tasks:
  - name: t1
    state: pending
    gpus: 1
)";
  auto parsed = ParseScenario(yaml, "s.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().cluster.pods.size(), 1u);
  EXPECT_EQ(parsed.value().cluster.pods[0].request.gpus, 1);
}

}  // namespace
}  // namespace gantry
