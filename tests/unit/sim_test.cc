// The simulator's virtual clock: time-dependent behaviour of the real scheduler (minimum runtime,
// stale-gang grace, a job waiting for another to finish), determinism, and inflation batches
// deciding as one-at-a-time arrivals.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "plugins/fragmentation/fragmentation.h"
#include "sim/report.h"
#include "sim/simulation.h"

namespace gantry::sim {
namespace {

Outcome MustRun(const std::string& text, std::optional<uint64_t> seed = std::nullopt) {
  auto sim = ParseSimulation(text, "test.yaml", "");
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error());
  if (!sim.ok()) return {};
  auto out = Run(sim.value(), seed, std::nullopt);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error());
  return out.ok() ? out.value() : Outcome{};
}

const JobRecord* Find(const Outcome& o, const std::string& name) {
  for (const auto& j : o.jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

TEST(SimClock, LaterJobWaitsForOneThatFinishes) {
  const Outcome o = MustRun(R"(
simulation: {period_seconds: 1}
nodes: [{name: n1, gpus: 1}]
queues: [{name: q, resources: {gpu: {quota: -1}, cpu: {quota: -1}}}]
jobs:
  - {name: a, queue: q, priority: 100, submit_seconds: 0, duration_seconds: 100,
     tasks: [{name: a-0, state: pending, gpus: 1}]}
  - {name: b, queue: q, priority: 100, submit_seconds: 10, duration_seconds: 50,
     tasks: [{name: b-0, state: pending, gpus: 1}]}
)");
  const JobRecord* a = Find(o, "a");
  const JobRecord* b = Find(o, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->first_start && a->end && b->first_start && b->end);
  EXPECT_EQ(*a->first_start, 0);
  EXPECT_EQ(*a->end, 100);
  EXPECT_EQ(*b->first_start, 100);  // the GPU frees when a finishes, not before
  EXPECT_EQ(*b->end, 150);
  EXPECT_EQ(QueueWaits(o, "q").p90, 90);
}

// Every bind decision is recorded with its cycle, time and node (the live cross-check compares
// them with what the live pipeline binds).
TEST(SimClock, PlacementsNameCycleTimeAndNode) {
  const Outcome o = MustRun(R"(
simulation: {period_seconds: 1}
nodes: [{name: n1, gpus: 1}]
queues: [{name: q, resources: {gpu: {quota: -1}, cpu: {quota: -1}}}]
jobs:
  - {name: a, queue: q, priority: 100, submit_seconds: 0, duration_seconds: 100,
     tasks: [{name: a-0, state: pending, gpus: 1}]}
  - {name: b, queue: q, priority: 100, submit_seconds: 10, duration_seconds: 50,
     tasks: [{name: b-0, state: pending, gpus: 1}]}
)");
  ASSERT_EQ(o.placements.size(), 2U);
  EXPECT_EQ(o.placements[0].pod, "a-0");
  EXPECT_EQ(o.placements[0].job, "a");
  EXPECT_EQ(o.placements[0].node, "n1");
  EXPECT_EQ(o.placements[0].t, 0);
  EXPECT_EQ(o.placements[1].pod, "b-0");
  EXPECT_EQ(o.placements[1].t, 100);
  EXPECT_GT(o.placements[1].cycle, o.placements[0].cycle);
  const auto j = ToJson(o);
  ASSERT_EQ(j["placements"].size(), 2U);
  EXPECT_EQ(j["placements"][1]["node"], "n1");
  EXPECT_EQ(PlacementsCsv(o), "cycle,time,job,pod,node\n" + std::to_string(o.placements[0].cycle) +
                                  ",0.000,a,a-0,n1\n" + std::to_string(o.placements[1].cycle) +
                                  ",100.000,b,b-0,n1\n");
}

// Queue "over" runs above its quota; "owner" reclaims its quota. The minimum runtime protects the
// running job for 300 s after it started, then reclaim evicts it.
TEST(SimClock, MinRuntimeProtectsThenExpires) {
  const Outcome o = MustRun(R"(
simulation: {period_seconds: 1, idle_recheck_seconds: 10}
config:
  actions: [allocate, reclaim]
  plugins:
    - {name: predicates}
    - {name: proportion}
    - {name: priority}
    - {name: nodeplacement}
    - {name: minruntime, arguments: {defaultReclaimMinRuntime: 300s}}
    - {name: sg-nodelocalgreedy}  # reclaim searches victims through the scenario generators
nodes: [{name: n1, gpus: 1}]
queues:
  - {name: over, resources: {gpu: {quota: 0, limit: -1, over_quota_weight: 1}, cpu: {quota: -1}}}
  - {name: owner, resources: {gpu: {quota: 1, limit: -1, over_quota_weight: 1}, cpu: {quota: -1}}}
jobs:
  - {name: long, queue: over, priority: 50, submit_seconds: 0, duration_seconds: 5000,
     tasks: [{name: long-0, state: pending, gpus: 1}]}
  - {name: claim, queue: owner, priority: 50, submit_seconds: 20, duration_seconds: 100,
     tasks: [{name: claim-0, state: pending, gpus: 1}]}
)");
  ASSERT_FALSE(o.evictions.empty());
  EXPECT_EQ(o.evictions.front().action, "reclaim");
  EXPECT_EQ(o.evictions.front().pod, "long-0");
  // Not while protected (started at 0, protected until 300), and soon after it expires.
  EXPECT_GE(o.evictions.front().t, 300);
  EXPECT_LE(o.evictions.front().t, 311);
  const JobRecord* claim = Find(o, "claim");
  ASSERT_TRUE(claim && claim->first_start);
  EXPECT_GE(*claim->first_start, 300);
  const JobRecord* lng = Find(o, "long");
  ASSERT_NE(lng, nullptr);
  EXPECT_EQ(lng->evictions, 1);
  EXPECT_GE(lng->lost_work_seconds, 300);  // the work done before the eviction is lost
}

// A gang of two loses a worker at 50 s; what is left is evicted once it has been stale for the
// grace period (60 s), not before.
TEST(SimClock, StaleGangEvictedAfterGrace) {
  const Outcome o = MustRun(R"(
simulation: {period_seconds: 1, idle_recheck_seconds: 5}
config:
  session: {staleness_grace_period_seconds: 60}
nodes: [{name: n1, gpus: 2}]
queues: [{name: q, resources: {gpu: {quota: -1}, cpu: {quota: -1}}}]
jobs:
  - name: gang
    queue: q
    min_available: 2
    submit_seconds: 0
    duration_seconds: 1000
    tasks:
      - {name: gang-0, state: pending, gpus: 1, fails_after_seconds: 50}
      - {name: gang-1, state: pending, gpus: 1}
)");
  ASSERT_EQ(o.evictions.size(), 1u);
  EXPECT_EQ(o.evictions[0].action, "stalegangeviction");
  EXPECT_EQ(o.evictions[0].pod, "gang-1");
  EXPECT_GE(o.evictions[0].t, 110);
  EXPECT_LE(o.evictions[0].t, 116);
}

constexpr const char* kMixed = R"(
simulation: {period_seconds: 1, bind_latency_seconds: 2, bind_failure_rate: 0.3}
nodes: [{name: n1, gpus: 4}, {name: n2, gpus: 4}]
queues: [{name: a, resources: {gpu: {quota: 4}, cpu: {quota: -1}}},
         {name: b, resources: {gpu: {quota: 4}, cpu: {quota: -1}}}]
jobs:
  - {name: j1, queue: a, submit_seconds: 0, duration_seconds: 30,
     tasks: [{name: j1-0, state: pending, gpus: 2}, {name: j1-1, state: pending, gpus: 2}]}
  - {name: j2, queue: b, submit_seconds: 5, duration_seconds: 40,
     tasks: [{name: j2-0, state: pending, gpu_fraction: 0.5}]}
  - {name: j3, queue: b, submit_seconds: 6, duration_seconds: 20,
     tasks: [{name: j3-0, state: pending, gpus: 4}]}
  - {name: j4, queue: a, submit_seconds: 7, duration_seconds: 10,
     tasks: [{name: j4-0, state: pending, gpus: 3}]}
)";

TEST(SimClock, SameSeedSameOutput) {
  const Outcome a = MustRun(kMixed, 7);
  const Outcome b = MustRun(kMixed, 7);
  EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump());
  EXPECT_EQ(TimelineCsv(a), TimelineCsv(b));
  EXPECT_EQ(HtmlReport(a), HtmlReport(b));
  EXPECT_GT(a.bind_failures, 0);  // retried binds happened with this seed
  for (const char* j : {"j1", "j2", "j3", "j4"}) {
    const JobRecord* r = Find(a, j);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->end.has_value()) << j;
  }
}

TEST(SimInflation, BatchesDecideAsSingleArrivals) {
  std::string text = R"(
nodes: [{name: n1, gpus: 8, cpu_millis: 64000}, {name: n2, gpus: 8, cpu_millis: 64000},
        {name: n3, gpus: 4, cpu_millis: 16000}]
queues: [{name: q, resources: {gpu: {quota: -1}, cpu: {quota: -1}}}]
config:
  actions: [allocate]
  plugins: [{name: predicates}, {name: proportion}, {name: priority}, {name: gpupack},
            {name: gpusharingorder}, {name: nodeplacement}]
jobs:
)";
  const char* reqs[] = {"gpus: 1", "gpu_fraction: 0.3", "gpus: 2", "gpu_fraction: 0.6",
                        "gpus: 4", "cpu_millis: 8000",  "gpus: 8"};
  for (int i = 0; i < 14; ++i) {
    text += "  - {name: p" + std::to_string(i) +
            ", queue: q, priority: " + std::to_string(50 + 25 * (i % 3)) + ", tasks: [{name: p" +
            std::to_string(i) + "-0, state: pending, " + reqs[i % 7] + "}]}\n";
  }
  const Outcome batched = MustRun(text + "inflation: {target_percent: 150, batch: 16}\n", 3);
  const Outcome single = MustRun(text + "inflation: {target_percent: 150, batch: 1}\n", 3);
  ASSERT_EQ(batched.curve.size(), single.curve.size());
  ASSERT_FALSE(batched.curve.empty());
  for (size_t i = 0; i < batched.curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(batched.curve[i].allocated_gpus, single.curve[i].allocated_gpus) << i;
  }
  EXPECT_GT(batched.pods_dropped, 0);  // 150% cannot all fit
  EXPECT_GE(batched.curve.back().arrived_gpus, 0.99 * 1.5 * 20);
  EXPECT_NEAR(batched.gpu_allocation_ratio, 100 * batched.curve.back().allocated_gpus / 20, 1e-9);
}

TEST(SimLoad, ErrorsNameTheField) {
  auto bad = ParseSimulation("simulation: {bind_failure_rate: 2}\nnodes: [{name: n, gpus: 1}]\n",
                             "f.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bind_failure_rate"), std::string::npos) << bad.error();
  auto unknown = ParseSimulation("simulation: {speed: 2}\n", "f.yaml", "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("\"speed\""), std::string::npos) << unknown.error();
}

TEST(Fragmentation, PartlyUsedDevicesAreLostToWholeGpuPods) {
  frag::NodeFree node{32000, 64e9, {1.0, 1.0, 0.5, 0.25}};
  const frag::PodShape whole{1000, 1e9, 1, 0, 1};
  const frag::PodShape half{1000, 1e9, 0, 0.5, 1};
  const frag::PodShape big_cpu{64000, 1e9, 0, 0, 1};
  EXPECT_DOUBLE_EQ(frag::UnusableGpus(node, whole), 0.75);
  EXPECT_DOUBLE_EQ(frag::UnusableGpus(node, half), 0.25);
  EXPECT_DOUBLE_EQ(frag::UnusableGpus(node, big_cpu), 2.75);  // does not fit: all lost
  // Filled with copies of these shapes, the node keeps what the unusable view says.
  EXPECT_DOUBLE_EQ(frag::UnfilledGpus(node, whole), 0.75);
  EXPECT_DOUBLE_EQ(frag::UnfilledGpus(node, half), 0.25);
  EXPECT_DOUBLE_EQ(frag::UnfilledGpus(node, big_cpu), 2.75);
  EXPECT_DOUBLE_EQ(frag::Fragmentation(node, whole), 0.75);
  const frag::PodShape shapes[] = {{1000, 1e9, 1, 0, 0.5}, {1000, 1e9, 0, 0.5, 0.5}};
  EXPECT_DOUBLE_EQ(frag::ExpectedFragmentation(node, shapes), 0.5);
}

// The error a one-node simulation gives for gpufragmentation's `arguments` (a YAML mapping's
// body): from loading the file, or else from running it (a run that succeeds fails the test).
std::string FragmentationArgumentsError(const std::string& arguments) {
  auto sim = ParseSimulation(R"(
nodes: [{name: n1, gpus: 1}]
config:
  actions: [allocate]
  plugins: [{name: predicates}, {name: gpufragmentation, arguments: {)" +
                                 arguments + R"(}}]
queues: [{name: q, resources: {gpu: {quota: -1}}}]
jobs: [{name: a, queue: q, tasks: [{name: a-0, state: pending, gpus: 1}]}]
)",
                             "f.yaml", "");
  if (!sim.ok()) return sim.error();
  auto out = sim::Run(sim.value(), std::nullopt, std::nullopt);
  EXPECT_FALSE(out.ok());
  return out.ok() ? "" : out.error();
}

TEST(Fragmentation, UnknownMeasureIsAnError) {
  const std::string error = FragmentationArgumentsError("measure: best");
  EXPECT_NE(error.find("measure"), std::string::npos) << error;
  EXPECT_NE(error.find("best"), std::string::npos) << error;
}

// What one copy of a shape does not show: remainders that copies leave on each device, and GPUs
// stranded when CPU runs out first.
TEST(Fragmentation, UnfilledSeesRemaindersAndCpuStrandedGpus) {
  frag::NodeFree node{32000, 64e9, {1.0, 1.0, 0.5, 0.25}};
  const frag::PodShape f47{1000, 1e9, 0, 0.47, 1};
  EXPECT_DOUBLE_EQ(frag::UnusableGpus(node, f47), 0.25);
  // Five copies (two per free device, one on the half-used one): 2.75 - 5 * 0.47 stay free.
  EXPECT_NEAR(frag::UnfilledGpus(node, f47), 0.40, 1e-9);
  const frag::PodShape cpu_heavy{20000, 1e9, 1, 0, 1};
  EXPECT_DOUBLE_EQ(frag::UnusableGpus(node, cpu_heavy), 0.75);  // one copy fits
  EXPECT_DOUBLE_EQ(frag::UnfilledGpus(node, cpu_heavy), 1.75);  // but only one: CPU runs out
  EXPECT_DOUBLE_EQ(frag::Fragmentation(node, cpu_heavy), 1.25);
}

// The fluid view: free GPUs the node's free CPU and memory cannot feed at the workload's average
// demand per GPU (GPU-weighted over the shapes with GPUs; CPU-only shapes do not count).
TEST(Fragmentation, StrandedGpusAreTheFreeGpusCpuAndMemoryCannotFeed) {
  const frag::PodShape shapes[] = {
      {12000, 40e9, 1, 0, 0.25}, {3000, 4e9, 0, 0.5, 0.5}, {32000, 100e9, 0, 0, 0.25}};
  const frag::PerGpu per = frag::DemandPerGpu(shapes);
  // GPUs: 0.25 * 1 + 0.5 * 0.5 = 0.5; CPU: 0.25 * 12000 + 0.5 * 3000 = 4500; memory: 12e9.
  EXPECT_DOUBLE_EQ(per.cpu_millis, 9000);
  EXPECT_DOUBLE_EQ(per.memory_bytes, 24e9);
  // 3.5 free GPUs, CPU for 2 of them, memory for 3: 1.5 stranded.
  EXPECT_DOUBLE_EQ(frag::StrandedGpus({18000, 72e9, {1.0, 1.0, 1.0, 0.5}}, per), 1.5);
  // Memory short first.
  EXPECT_DOUBLE_EQ(frag::StrandedGpus({90000, 24e9, {1.0, 1.0}}, per), 1.0);
  // Enough of both, no GPU free, or no demand known: nothing stranded.
  EXPECT_DOUBLE_EQ(frag::StrandedGpus({90000, 96e9, {1.0, 1.0}}, per), 0);
  EXPECT_DOUBLE_EQ(frag::StrandedGpus({0, 0, {}}, per), 0);
  EXPECT_DOUBLE_EQ(frag::StrandedGpus({0, 0, {1.0}}, frag::PerGpu{}), 0);
  const frag::PodShape cpu_only[] = {{32000, 100e9, 0, 0, 1}};
  EXPECT_DOUBLE_EQ(frag::DemandPerGpu(cpu_only).cpu_millis, 0);
}

// Shapes by GPU demand alone (the plugin's default): pods differing only in CPU or memory merge.
TEST(Fragmentation, GpuOnlyShapesMergePodsOfOneGpuDemand) {
  frag::ShapeCounter counter;
  counter.Add(4000, 8e9, 0, 0.47);
  counter.Add(12000, 32e9, 0, 0.47);
  counter.Add(8000, 16e9, 1, 0);
  counter.Add(8000, 16e9, 0, 0);  // CPU-only
  EXPECT_EQ(counter.Shapes(256).size(), 4u);
  const auto shapes = counter.Shapes(256, /*gpu_only=*/true);
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_DOUBLE_EQ(shapes[0].fraction, 0.47);  // most frequent first
  EXPECT_DOUBLE_EQ(shapes[0].weight, 0.5);
  for (const frag::PodShape& s : shapes) {
    EXPECT_EQ(s.cpu_millis, 0);
    EXPECT_EQ(s.memory_bytes, 0);
  }
}

// Why the views count GPUs only: a fraction that fills a half-used device on a node with CPU for
// one more whole-GPU pod (and 1.5 free GPUs) takes CPU below that pod's need. With CPU in the
// shapes the whole node's free GPU then counts as lost to that shape, so filling the device looks
// no better than opening a fresh one on an idle node; counting GPUs only, filling it is a gain
// and the fresh device a loss. (CPU is left to the stranded-GPU term, a fluid view without the
// cliff.)
TEST(Fragmentation, GpuOnlyViewsPreferFillingAPartlyUsedDevice) {
  frag::ShapeCounter counter;
  for (int i = 0; i < 3; ++i) counter.Add(8000, 16e9, 1, 0);
  counter.Add(2000, 4e9, 0, 0.5);
  const frag::PodShape pod{2000, 4e9, 0, 0.5, 0};
  // Node a: one device half used, one free, CPU for one whole-GPU pod plus a little.
  const frag::NodeFree a_before{9000, 64e9, {1.0, 0.5}};
  const frag::NodeFree a_after{a_before.cpu_millis - pod.cpu_millis, 64e9, {1.0, 0.0}};
  // Node b: two free devices and CPU to spare; the pod opens one of them.
  const frag::NodeFree b_before{64000, 64e9, {1.0, 1.0}};
  const frag::NodeFree b_after{64000 - pod.cpu_millis, 64e9, {1.0, 0.5}};
  auto added = [](const std::vector<frag::PodShape>& shapes, const frag::NodeFree& before,
                  const frag::NodeFree& after) {
    return frag::ExpectedFragmentation(after, shapes) - frag::ExpectedFragmentation(before, shapes);
  };
  const auto full = counter.Shapes(256);
  const auto gpu_only = counter.Shapes(256, /*gpu_only=*/true);
  // With CPU: filling a's device adds fragmentation (its last free GPU is lost to whole pods).
  EXPECT_GT(added(full, a_before, a_after), 0);
  EXPECT_GE(added(full, a_before, a_after), added(full, b_before, b_after));
  // GPUs only: filling a's device removes fragmentation, opening b's adds some.
  EXPECT_LT(added(gpu_only, a_before, a_after), 0);
  EXPECT_GT(added(gpu_only, b_before, b_after), 0);
}

TEST(Fragmentation, FitCpuMemoryMustBeABoolean) {
  const std::string error = FragmentationArgumentsError("fit_cpu_memory: maybe");
  EXPECT_NE(error.find("fit_cpu_memory"), std::string::npos) << error;
}

// The final waste of a device by its free share, learned by filling devices with the shapes.
TEST(Fragmentation, GapWasteIsWhatADeviceEndsWith) {
  const frag::PodShape shapes[] = {
      {0, 0, 1, 0, 0.2}, {0, 0, 0, 0.47, 0.4}, {0, 0, 0, 0.32, 0.2}, {0, 0, 0, 0.65, 0.2}};
  const std::vector<double> value = frag::GapWaste(shapes, 2000, 1);
  ASSERT_EQ(value.size(), 101u);
  EXPECT_EQ(value[0], 0);
  EXPECT_EQ(value[100], 0);            // an unused device goes to a whole-GPU pod
  EXPECT_NEAR(value[53], 0.06, 0.02);  // another 0.47 comes
  EXPECT_NEAR(value[21], 0.21, 1e-9);  // nothing fills 0.21
  EXPECT_LT(value[68], 0.15);          // mostly filled: a 0.65, two 0.32 (or a 0.47: 0.21 left)
  EXPECT_EQ(frag::GapWaste(shapes, 2000, 1), value);  // deterministic
  // A 0.32: the device with 0.53 free adds less fragmentation now, an unused device less waste
  // in the end (0.21 stays free there, while 0.68 is filled).
  auto one = [](double free_share) { return frag::NodeFree{1e6, 1e12, {free_share}}; };
  const double frag_on_partial = frag::ExpectedFragmentation(one(0.21), shapes) -
                                 frag::ExpectedFragmentation(one(0.53), shapes);
  const double frag_on_unused = frag::ExpectedFragmentation(one(0.68), shapes) -
                                frag::ExpectedFragmentation(one(1.0), shapes);
  EXPECT_LT(frag_on_partial, frag_on_unused);
  EXPECT_GT(value[21] - value[53], value[68] - value[100]);
}

TEST(Fragmentation, GapValueIsBetweenZeroAndOne) {
  const std::string error = FragmentationArgumentsError("gap_value: 2");
  EXPECT_NE(error.find("gap_value"), std::string::npos) << error;
}

// A small openb-like inflation (node types with different CPU per GPU; fractions of 0.81, 0.47,
// 0.32, 0.65 and 0.16, whole GPUs with little or much CPU, CPU-only pods): over eight seeds the
// fragmentation-aware placement allocates more GPUs than KAI's default packing.
TEST(Fragmentation, PluginBeatsBinpackOnASmallTrace) {
  std::string nodes = "nodes:\n";
  for (int i = 0; i < 6; ++i) {
    const std::string n = std::to_string(i);
    nodes.append("  - {name: big-").append(n).append(", gpus: 8, cpu_millis: 64000, ");
    nodes.append("memory_bytes: 400e9, gpu_memory_mib: 16000}\n");
    nodes.append("  - {name: small-").append(n).append(", gpus: 2, cpu_millis: 64000, ");
    nodes.append("memory_bytes: 200e9, gpu_memory_mib: 16000}\n");
  }
  nodes += "  - {name: cpu-0, cpu_millis: 64000, memory_bytes: 200e9}\n";
  std::string jobs = "jobs:\n";
  const char* reqs[] = {"gpu_fraction: 0.81, cpu_millis: 6000",
                        "gpu_fraction: 0.47, cpu_millis: 4000",
                        "gpus: 1, cpu_millis: 8000",
                        "gpu_fraction: 0.81, cpu_millis: 8000",
                        "gpu_fraction: 0.32, cpu_millis: 4000",
                        "gpus: 1, cpu_millis: 24000",
                        "gpu_fraction: 0.65, cpu_millis: 6000",
                        "cpu_millis: 16000",
                        "gpu_fraction: 0.16, cpu_millis: 2000",
                        "gpus: 2, cpu_millis: 16000",
                        "gpu_fraction: 0.47, cpu_millis: 6000",
                        "gpus: 1, cpu_millis: 4000"};
  for (int i = 0; i < 36; ++i) {
    const std::string n = "p" + std::to_string(i);
    jobs.append("  - {name: ").append(n).append(", queue: q, tasks: [{name: ").append(n);
    jobs.append("-0, state: pending, ").append(reqs[i % 12]).append("}]}\n");
  }
  const std::string common = nodes +
                             "queues: [{name: q, resources: {gpu: {quota: -1}, cpu: {quota: -1}, "
                             "memory: {quota: -1}}}]\n"
                             "inflation: {target_percent: 130, batch: 4}\n" +
                             jobs;
  const std::string frag_config = R"(config:
  actions: [allocate]
  plugins: [{name: predicates}, {name: proportion}, {name: priority}, {name: nodeavailability},
            {name: gpupack}, {name: resourcetype}, {name: taskorder}, {name: gpufragmentation}]
)";
  const std::string binpack_config = R"(config:
  actions: [allocate]
  plugins: [{name: predicates}, {name: proportion}, {name: priority}, {name: nodeavailability},
            {name: gpusharingorder}, {name: gpupack}, {name: resourcetype}, {name: taskorder},
            {name: nodeplacement, arguments: {gpu: binpack, cpu: binpack}}]
)";
  // The FGD paper's measure alone, for comparison.
  std::string unusable_config = frag_config;
  unusable_config.replace(unusable_config.find("{name: gpufragmentation}"),
                          std::string("{name: gpufragmentation}").size(),
                          "{name: gpufragmentation, arguments: {measure: unusable}}");
  // Without the stranded-GPU term.
  std::string unstranded_config = frag_config;
  unstranded_config.replace(unstranded_config.find("{name: gpufragmentation}"),
                            std::string("{name: gpufragmentation}").size(),
                            "{name: gpufragmentation, arguments: {stranding: 0}}");
  double unstranded_sum = 0;
  double frag_sum = 0;
  double binpack_sum = 0;
  double unusable_sum = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Outcome f = MustRun(common + frag_config, seed);
    const Outcome b = MustRun(common + binpack_config, seed);
    const Outcome u = MustRun(common + unusable_config, seed);
    const Outcome n = MustRun(common + unstranded_config, seed);
    unstranded_sum += n.gpu_allocation_ratio;
    ASSERT_GT(f.pods_dropped, 0);  // 130% cannot all fit: the placement decides what does
    ASSERT_GT(b.pods_dropped, 0);
    frag_sum += f.gpu_allocation_ratio;
    binpack_sum += b.gpu_allocation_ratio;
    unusable_sum += u.gpu_allocation_ratio;
    std::cout << "seed " << seed << ": gpufragmentation " << f.gpu_allocation_ratio
              << "%, with the unusable measure only " << u.gpu_allocation_ratio << "%, binpack "
              << b.gpu_allocation_ratio << "%, without stranding " << n.gpu_allocation_ratio
              << "%\n";
  }
  EXPECT_GT(frag_sum / 8, binpack_sum / 8 + 1) << "gpufragmentation must beat binpack by a point";
  EXPECT_GT(frag_sum / 8, unusable_sum / 8 + 1) << "the mean measure must beat the unusable one";
  std::cout << "means: gpufragmentation " << frag_sum / 8 << "%, without stranding "
            << unstranded_sum / 8 << "%\n";
}

}  // namespace
}  // namespace gantry::sim
