// The benchmark's mixed cluster (bench/cluster_gen.h: `mixed`) and the Kubernetes objects the
// watch-cache measurement feeds (bench/kube_objects.h): the generator's counts come out as its
// summary says and as the shape promises (about 10 pods per node, half a pending pod per node,
// no node over its capacity, a two-level queue tree), the file is the same for the same options,
// and the watch cache builds from the objects the cluster the scenario file describes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cache/watch_cache.h"
#include "differential_cycle.h"
#include "kube_objects.h"
#include "scenario/scenario.h"

namespace gantry {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bench::ClusterGenOptions Mixed(int nodes, uint64_t seed) {
  bench::ClusterGenOptions options;
  options.nodes = nodes;
  options.seed = seed;
  options.mixed = true;
  return options;
}

TEST(BenchMixedShapeTest, CountsCapacityAndQueueTree) {
  for (uint64_t seed : {1, 2, 3}) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteCluster("mixed", Mixed(300, seed), summary);
    auto loaded = LoadScenarioFile(file);
    std::filesystem::remove(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    const Cluster& cl = loaded.value().cluster;

    ASSERT_EQ(cl.nodes.size(), 300u);
    EXPECT_EQ(static_cast<int>(cl.pods.size()), summary.pods);
    EXPECT_EQ(static_cast<int>(cl.jobs.size()), summary.jobs);
    EXPECT_EQ(static_cast<int>(cl.queues.size()), summary.queues);
    EXPECT_NEAR(static_cast<double>(summary.pods) / 300.0, 10.0, 1.0);
    EXPECT_GE(summary.pending_pods, 150);
    EXPECT_LT(summary.pending_pods, 150 + 16);
    EXPECT_GT(summary.fractional_pods, 0);
    EXPECT_GT(summary.constrained_jobs, 0);
    EXPECT_GT(summary.non_preemptible_jobs, 0);
    EXPECT_GT(summary.cpu_only_pods, 0);

    // The summary's counts, recounted from the loaded cluster; no node over its capacity (a
    // shared device's fractions add up to at most one GPU).
    int running = 0, pending = 0, fractional = 0, cpu_only = 0, constrained = 0, fixed = 0;
    std::vector<Resources> used(cl.nodes.size());
    std::map<std::string, double> shared;  // by GPU group
    for (const Pod& p : cl.pods) {
      if (p.gpu_kind == GpuRequestKind::kFraction) ++fractional;
      if (p.gpu_kind == GpuRequestKind::kNoGpu) ++cpu_only;
      if (p.status == PodStatus::kPending) {
        ++pending;
        continue;
      }
      ASSERT_EQ(p.status, PodStatus::kRunning);
      ASSERT_NE(p.node, kNone);
      ++running;
      Resources& u = used[static_cast<size_t>(p.node)];
      u.cpu_millis += p.request.cpu_millis;
      u.memory_bytes += p.request.memory_bytes;
      u.gpus += p.request.gpus;
      if (p.gpu_kind == GpuRequestKind::kFraction) {
        ASSERT_EQ(p.gpu_groups.size(), 1u);
        if (!shared.count(p.gpu_groups[0])) u.gpus += 1;
        shared[p.gpu_groups[0]] += p.gpu_fraction;
      }
    }
    int64_t free_gpus = 0;
    for (size_t n = 0; n < cl.nodes.size(); ++n) {
      const Resources& a = cl.nodes[n].allocatable;
      EXPECT_LE(used[n].gpus, a.gpus) << cl.nodes[n].name;
      EXPECT_LE(used[n].cpu_millis, a.cpu_millis) << cl.nodes[n].name;
      EXPECT_LE(used[n].memory_bytes, a.memory_bytes) << cl.nodes[n].name;
      free_gpus += static_cast<int64_t>(a.gpus - used[n].gpus);
    }
    for (const auto& [group, total] : shared) EXPECT_LE(total, 1.0) << group;
    for (const Job& j : cl.jobs) {
      if (!j.preemptible) ++fixed;
      EXPECT_EQ(j.preemptible, j.priority < 100) << j.name;
      if (!j.groups.empty() && j.groups[0].topology) ++constrained;
    }
    EXPECT_EQ(running, summary.running_pods);
    EXPECT_EQ(pending, summary.pending_pods);
    EXPECT_EQ(fractional, summary.fractional_pods);
    EXPECT_EQ(cpu_only, summary.cpu_only_pods);
    EXPECT_EQ(constrained, summary.constrained_jobs);
    EXPECT_EQ(fixed, summary.non_preemptible_jobs);
    EXPECT_EQ(free_gpus, summary.free_gpus);

    // Two levels: departments under no parent, leaves under a department; a department's
    // leaves share at most its GPU quota, and the departments at most the cluster's GPUs.
    double departments = 0;
    std::map<std::string, double> leaf_quota;
    for (const Queue& q : cl.queues) {
      if (q.parent_name.empty()) {
        EXPECT_FALSE(q.IsLeaf()) << q.name;
        departments += q.gpu.quota;
      } else {
        EXPECT_TRUE(q.IsLeaf()) << q.name;
        const Queue& parent = cl.queues[static_cast<size_t>(q.parent)];
        EXPECT_TRUE(parent.parent_name.empty()) << q.name;
        leaf_quota[parent.name] += q.gpu.quota;
      }
    }
    EXPECT_LE(departments, static_cast<double>(summary.total_gpus));
    EXPECT_GT(departments, 0.95 * static_cast<double>(summary.total_gpus));
    for (const Queue& q : cl.queues) {
      if (q.parent_name.empty()) {
        EXPECT_LE(leaf_quota[q.name], q.gpu.quota) << q.name;
      }
    }
  }
}

TEST(BenchMixedShapeTest, SameOptionsSameFile) {
  bench::ClusterGenSummary a, b;
  const std::string first = differential::WriteCluster("mixed-a", Mixed(50, 7), a);
  const std::string text = ReadAll(first);
  std::filesystem::remove(first);
  const std::string second = differential::WriteCluster("mixed-b", Mixed(50, 7), b);
  EXPECT_EQ(ReadAll(second), text);
  std::filesystem::remove(second);
  EXPECT_EQ(a.pods, b.pods);
}

// The objects of the watch-cache measurement make, through the watch cache, the cluster of the
// scenario file: same nodes, queues, jobs and pods, with the same requests, placements,
// priorities and gang sizes, and no object refused.
TEST(BenchMixedShapeTest, WatchCacheBuildsTheScenarioCluster) {
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteCluster("mixed-wc", Mixed(40, 5), summary);
  auto loaded = LoadScenarioFile(file);
  std::filesystem::remove(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Cluster& want = loaded.value().cluster;

  cache::WatchCache wc("kai-scheduler");
  for (int k = 0; k < cache::kNumKinds; ++k) wc.Replace(static_cast<cache::Kind>(k), {});
  bench::ClusterKubeObjects(want, "kai-scheduler", [&](cache::Kind kind, nlohmann::json&& o) {
    wc.Apply(kind, kube::EventType::kAdded, std::move(o));
  });
  const cache::Snapshot snap = wc.Take();
  EXPECT_TRUE(snap.errors.empty()) << snap.errors.front().ToString();
  const Cluster& got = *snap.cluster;
  ASSERT_EQ(got.nodes.size(), want.nodes.size());
  ASSERT_EQ(got.queues.size(), want.queues.size());
  ASSERT_EQ(got.jobs.size(), want.jobs.size());
  ASSERT_EQ(got.pods.size(), want.pods.size());
  for (const Node& n : want.nodes) {
    const NodeId id = got.FindNode(n.name);
    ASSERT_NE(id, kNone) << n.name;
    const Node& g = got.nodes[static_cast<size_t>(id)];
    EXPECT_EQ(g.allocatable.gpus, n.allocatable.gpus) << n.name;
    EXPECT_EQ(g.allocatable.cpu_millis, n.allocatable.cpu_millis) << n.name;
    EXPECT_EQ(g.allocatable.memory_bytes, n.allocatable.memory_bytes) << n.name;
    EXPECT_EQ(g.allocatable.pods, n.allocatable.pods) << n.name;
  }
  for (const Queue& q : want.queues) {
    const QueueId id = got.FindQueue(q.name);
    ASSERT_NE(id, kNone) << q.name;
    const Queue& g = got.queues[static_cast<size_t>(id)];
    EXPECT_EQ(g.parent_name, q.parent_name) << q.name;
    EXPECT_EQ(g.gpu.quota, q.gpu.quota) << q.name;
    EXPECT_EQ(g.gpu.over_quota_weight, q.gpu.over_quota_weight) << q.name;
  }
  for (const Job& j : want.jobs) {
    const JobId id = got.FindJob(j.name);
    ASSERT_NE(id, kNone) << j.name;
    const Job& g = got.jobs[static_cast<size_t>(id)];
    EXPECT_EQ(g.queue_name, j.queue_name) << j.name;
    EXPECT_EQ(g.priority, j.priority) << j.name;
    EXPECT_EQ(g.preemptible, j.preemptible) << j.name;
    // (creationTimestamp has whole seconds.)
    EXPECT_EQ(g.creation_ms / 1000, j.creation_ms / 1000) << j.name;
    EXPECT_EQ(g.pods.size(), j.pods.size()) << j.name;
  }
  for (const Pod& p : want.pods) {
    const PodId id = got.FindPod(p.name);
    ASSERT_NE(id, kNone) << p.name;
    const Pod& g = got.pods[static_cast<size_t>(id)];
    EXPECT_EQ(g.status, p.status) << p.name;
    EXPECT_EQ(g.request.gpus, p.request.gpus) << p.name;
    EXPECT_EQ(g.request.cpu_millis, p.request.cpu_millis) << p.name;
    EXPECT_EQ(g.request.memory_bytes, p.request.memory_bytes) << p.name;
    EXPECT_EQ(g.gpu_kind, p.gpu_kind) << p.name;
    EXPECT_EQ(g.gpu_fraction, p.gpu_fraction) << p.name;
    EXPECT_EQ(g.gpu_groups, p.gpu_groups) << p.name;
    if (p.node != kNone) {
      ASSERT_NE(g.node, kNone) << p.name;
      EXPECT_EQ(got.nodes[static_cast<size_t>(g.node)].name,
                want.nodes[static_cast<size_t>(p.node)].name)
          << p.name;
    }
  }
}

}  // namespace
}  // namespace gantry
