// KAI's time-based fairshare simulator input run by `gantry simulate` (sim/kai_time_aware.h): the
// import's mapping and errors, the CSV in KAI's format, and the timing of a handover between two
// queues worked out by hand.
#include "sim/kai_time_aware.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kai_csv.h"
#include "sim/simulation.h"

namespace gantry::sim::kai_time_aware_test {
namespace {

Simulation MustImport(const std::string& text) {
  auto sim = ParseSimulation(text, "kai.yaml", "");
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error());
  return sim.ok() ? std::move(sim).value() : Simulation{};
}

std::string ImportError(const std::string& text) {
  auto sim = ParseSimulation(text, "kai.yaml", "");
  EXPECT_FALSE(sim.ok());
  return sim.ok() ? "" : sim.error();
}

const Queue* QueueNamed(const Cluster& cl, const std::string& name) {
  for (const Queue& q : cl.queues) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

TEST(KaiTimeAwareImport, MapsKaisFieldsCaseInsensitivelyWithItsDefaults) {
  const Simulation sim = MustImport(R"(
cycles: 50
windowSize: 20
kValue: 2.5
Nodes: [{gpus: 8, count: 1}]
queues:
  - {name: dept, parent: "", DeservedGPUs: null}
  - {NAME: team-a, Parent: dept, Priority: 120, DeservedGPUs: 2, Weight: 3}
  - {Name: team-b, Parent: dept}
jobs:
  team-a: {GPUs: 4, NumPods: 2, NumJobs: 3}
  team-b: {gpus: 1, numPods: 1, numJobs: 1}
)");
  ASSERT_EQ(sim.cluster.nodes.size(), 1u);
  EXPECT_EQ(sim.cluster.nodes[0].name, "test-node-8");
  EXPECT_EQ(sim.cluster.nodes[0].allocatable.gpus, 8);
  EXPECT_EQ(sim.cluster.nodes[0].allocatable.cpu_millis, 8000);
  EXPECT_EQ(sim.cluster.nodes[0].allocatable.memory_bytes, 16.0 * 1024 * 1024 * 1024);

  const Queue* dept = QueueNamed(sim.cluster, "dept");
  const Queue* a = QueueNamed(sim.cluster, "team-a");
  const Queue* b = QueueNamed(sim.cluster, "team-b");
  ASSERT_TRUE(dept && a && b);
  EXPECT_EQ(dept->parent, kNone);
  EXPECT_EQ(a->parent_name, "dept");
  EXPECT_EQ(a->priority, 120);
  EXPECT_EQ(b->priority, 100);
  EXPECT_EQ(a->gpu.quota, 2);
  EXPECT_EQ(a->gpu.over_quota_weight, 3);
  EXPECT_EQ(a->gpu.limit, -1);
  EXPECT_EQ(b->gpu.quota, 0);
  EXPECT_EQ(b->gpu.over_quota_weight, 1);
  EXPECT_EQ(dept->gpu.quota, 0);  // null is absent
  EXPECT_EQ(a->cpu.quota, 0);     // KAI's queues set the GPU only
  EXPECT_EQ(a->cpu.limit, 0);
  EXPECT_EQ(a->memory.over_quota_weight, 0);

  ASSERT_EQ(sim.jobs.size(), 4u);
  EXPECT_EQ(sim.jobs[0].job.name, "team-a-0");
  EXPECT_EQ(sim.jobs[0].pods.size(), 2u);
  EXPECT_EQ(sim.jobs[0].pods[0].request.gpus, 4);
  EXPECT_EQ(sim.jobs[0].pods[0].request.cpu_millis, 0);
  EXPECT_EQ(sim.jobs[0].job.priority, 50);
  EXPECT_EQ(sim.jobs[3].job.queue_name, "team-b");
  EXPECT_EQ(sim.jobs[0].submit_seconds, 0);  // queue by queue, as KAI creates them
  EXPECT_EQ(sim.jobs[3].submit_seconds, 4);
  EXPECT_EQ(sim.jobs[3].duration_seconds, 0);

  ASSERT_TRUE(sim.config.usage_db.has_value());
  EXPECT_EQ(sim.config.usage_db->client_type, "embedded");
  EXPECT_EQ(sim.config.usage_db->usage_params.window_size_seconds, 20);
  EXPECT_FALSE(sim.config.usage_db->usage_params.half_life_seconds.has_value());
  bool proportion = false;
  for (const auto& p : sim.config.plugins) {
    if (p.name != "proportion") continue;
    proportion = true;
    EXPECT_EQ(std::stod(p.arguments.at("kValue")), 2.5);
  }
  EXPECT_TRUE(proportion);
  EXPECT_EQ(sim.config.actions.size(), 5u);  // KAI's default configuration otherwise

  EXPECT_EQ(sim.clock.period_seconds, 1);
  ASSERT_TRUE(sim.clock.until_seconds.has_value());
  // 50 cycles after KAI's warm-up (cycle 0 = usage_start_seconds: the last queue's jobs arrived
  // at 4, and a bind takes 2).
  EXPECT_EQ(sim.clock.usage_start_seconds, 7);
  EXPECT_EQ(*sim.clock.until_seconds - sim.clock.usage_start_seconds, 49);
  EXPECT_TRUE(sim.clock.tick_every_period);
}

TEST(KaiTimeAwareImport, DefaultsAndHalfLife) {
  const Simulation sim = MustImport(R"(
HalfLifePeriod: 7
Nodes: [{GPUs: 2}]
Queues: [{Name: q}]
Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}
)");
  ASSERT_TRUE(sim.config.usage_db.has_value());
  EXPECT_EQ(sim.config.usage_db->usage_params.window_size_seconds, 5);  // KAI's default
  ASSERT_TRUE(sim.config.usage_db->usage_params.half_life_seconds.has_value());
  EXPECT_EQ(*sim.config.usage_db->usage_params.half_life_seconds, 7);
  EXPECT_EQ(*sim.clock.until_seconds - sim.clock.usage_start_seconds, 99);  // 100 cycles
  for (const auto& p : sim.config.plugins) {
    if (p.name == "proportion") {
      EXPECT_EQ(std::stod(p.arguments.at("kValue")), 1.0);
    }
  }
}

// Gantry's clock settings may be given beside KAI's fields (KAI's simulator ignores the key).
TEST(KaiTimeAwareImport, SimulationKeyOverridesTheClock) {
  const std::string base =
      "Cycles: 10\nNodes: [{GPUs: 2}]\nQueues: [{Name: q}]\n"
      "Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}\n";
  const Simulation sim =
      MustImport(base +
                 "Simulation: {bind_latency_seconds: 0, eviction_latency_seconds: 4, "
                 "usage_start_seconds: 1}\n");
  EXPECT_EQ(sim.clock.bind_latency_seconds, 0);
  EXPECT_EQ(sim.clock.eviction_latency_seconds, 4);
  EXPECT_EQ(sim.clock.usage_start_seconds, 1);
  EXPECT_EQ(*sim.clock.until_seconds, 10);  // 10 cycles from second 1
  const Simulation plain = MustImport(base);
  EXPECT_EQ(plain.clock.bind_latency_seconds, 2);
  EXPECT_EQ(plain.clock.eviction_latency_seconds, 1);
  EXPECT_NE(ImportError(base + "Simulation: {speed: 2}\n").find("unknown field \"speed\""),
            std::string::npos);
  EXPECT_NE(ImportError(base + "Simulation: [1]\n").find("\"Simulation\": must be a mapping"),
            std::string::npos);
}

// KAI's simulator creates one node per entry whatever Count says; here Count is honoured, and
// nodes with the same GPU count are numbered.
TEST(KaiTimeAwareImport, CountMakesThatManyNodes) {
  const Simulation sim = MustImport(R"(
Nodes: [{GPUs: 4, Count: 2}, {GPUs: 8, Count: 1}, {GPUs: 4}]
Queues: [{Name: q}]
Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}
)");
  std::vector<std::string> names;
  names.reserve(sim.cluster.nodes.size());
  for (const auto& n : sim.cluster.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"test-node-4-0", "test-node-4-1", "test-node-8",
                                             "test-node-4-2"}));
}

TEST(KaiTimeAwareImport, GantrysOwnFormatIsNotTakenForKais) {
  auto root = [](const std::string& text) {
    auto sim = ParseSimulation(text, "f.yaml", "");
    return sim.ok() ? sim.value().config.usage_db.has_value() : false;
  };
  // A Gantry file (jobs is a list) is read as before: no usage database appears.
  EXPECT_FALSE(root(R"(
nodes: [{name: n, gpus: 1}]
queues: [{name: q, resources: {gpu: {quota: -1}}}]
jobs: [{name: j, queue: q, priority: 50, tasks: [{name: j-0, state: pending, gpus: 1}]}]
)"));
}

TEST(KaiTimeAwareImport, ErrorsNameTheField) {
  const std::string base = "Nodes: [{GPUs: 4}]\nQueues: [{Name: q}]\n";
  EXPECT_NE(ImportError(base + "Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}\nCycles: 2.5\n")
                .find("\"Cycles\": must be a whole number"),
            std::string::npos);
  EXPECT_NE(ImportError(base + "Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1, Gpu: 2}}\n")
                .find("kai.yaml: Jobs.q: unknown field \"Gpu\""),
            std::string::npos);
  EXPECT_NE(ImportError(base + "Jobs: {q: {GPUs: 1, NumPods: 0, NumJobs: 1}}\n")
                .find("Jobs.q: field \"NumPods\": a job needs at least one pod"),
            std::string::npos);
  EXPECT_NE(ImportError(base + "Jobs: {q: {GPUs: one, NumPods: 1, NumJobs: 1}}\n")
                .find("field \"GPUs\": must be a number"),
            std::string::npos);
  EXPECT_NE(ImportError("Queues: [{Name: q}]\nJobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}\n")
                .find("field \"Nodes\": must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(ImportError(base + "Jobs: {q: {GPUs: 1, NumPods: 1, NumJobs: 1}}\nKValue: -1\n")
                .find("field \"KValue\": -1 is out of range"),
            std::string::npos);
  EXPECT_NE(ImportError("Nodes: [{GPUs: 4}]\nQueues: [{Parent: x}]\nJobs: {q: {NumJobs: 0}}\n")
                .find("Queues[0]: field \"Name\": must not be empty"),
            std::string::npos);
  // A job of an unknown queue: the scenario reader names it.
  EXPECT_NE(ImportError(base + "Jobs: {nope: {GPUs: 1, NumPods: 1, NumJobs: 1}}\n").find("nope"),
            std::string::npos);
}

using kai_csv::KaiRows;
using kai_csv::ParseKaiCsv;

// Two queues of one department, one 16-GPU node, 16-GPU jobs, as KAI's oscillating example. The
// timing of the first handover, by hand: cycle 0 (usage history still empty) team-a holds the
// node and each queue's fair share is 8. At cycle 1 the history holds one sample with team-a at
// the whole cluster, so team-a's fair share drops to 0 and team-b's rises to 16: team-b reclaims.
// The evicted pod shows in the status until cycle 2, team-b's bind two cycles after it is placed
// (placed at cycle 2 when the node is free, bound at 4). After that the queues take turns; with a
// half-life of 128 cycles each turn lasts about 240 cycles: the waiting queue's fair share is about
// 16 GPUs times the holder's usage, which after n cycles of holding is
// (1 - 0.5^(n/128)) / (1 - 0.5^(256/128)); it reaches 15.5 GPUs (rounded to 16) at n = 239.5.
TEST(KaiTimeAware, HandoverTimingAndTurnLength) {
  auto sim = ParseSimulation(R"(
Cycles: 800
WindowSize: 256
HalfLifePeriod: 128
Nodes: [{GPUs: 16, Count: 1}]
Queues:
  - {Name: dept, Parent: ""}
  - {Name: team-a, Parent: dept}
  - {Name: team-b, Parent: dept}
Jobs:
  team-a: {GPUs: 16, NumPods: 1, NumJobs: 10}
  team-b: {GPUs: 16, NumPods: 1, NumJobs: 10}
)",
                             "kai.yaml", "");
  ASSERT_TRUE(sim.ok()) << sim.error();
  auto out = sim::Run(sim.value(), std::nullopt, std::nullopt);
  ASSERT_TRUE(out.ok()) << out.error();
  const KaiRows rows = ParseKaiCsv(KaiTimeAwareCsv(out.value()));
  ASSERT_EQ(rows.size(), 800u);
  EXPECT_EQ(rows.begin()->first, 0);
  EXPECT_EQ(rows.rbegin()->first, 799);
  for (const auto& [t, qs] : rows) ASSERT_EQ(qs.size(), 3u) << "cycle " << t;

  auto alloc = [&](int t, const char* q) { return rows.at(t).at(q).first; };
  auto share = [&](int t, const char* q) { return rows.at(t).at(q).second; };
  EXPECT_EQ(alloc(0, "team-a"), 16);
  EXPECT_EQ(share(0, "team-a"), 8);
  EXPECT_EQ(share(0, "team-b"), 8);
  EXPECT_EQ(share(1, "team-a"), 0);
  EXPECT_EQ(share(1, "team-b"), 16);
  EXPECT_EQ(share(1, "dept"), 16);
  EXPECT_EQ(alloc(1, "team-a"), 16);  // releasing
  EXPECT_EQ(alloc(2, "team-a"), 0);
  EXPECT_EQ(alloc(3, "team-b"), 0);  // being bound
  EXPECT_EQ(alloc(4, "team-b"), 16);
  EXPECT_EQ(alloc(4, "dept"), 16);

  // Turns: the cycles at which the holder changes, after the first one.
  std::vector<int> starts;
  const char* holder = "team-b";
  for (int t = 5; t < 800; ++t) {
    const char* other = std::string(holder) == "team-a" ? "team-b" : "team-a";
    if (alloc(t, other) == 16) {
      starts.push_back(t);
      holder = other;
    }
  }
  ASSERT_GE(starts.size(), 3u);
  for (size_t i = 1; i < starts.size(); ++i) {
    EXPECT_GE(starts[i] - starts[i - 1], 236) << "turn " << i;
    EXPECT_LE(starts[i] - starts[i - 1], 248) << "turn " << i;
  }
}

}  // namespace
}  // namespace gantry::sim::kai_time_aware_test
