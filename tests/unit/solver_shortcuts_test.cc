// The victim search's shortcuts (capacity pre-checks, carrying the victims queue and scenario
// between pod prefixes, stopping once nothing can be re-placed) must not change any decision.
// Random clusters are scheduled with the full cycle twice, shortcuts on and off, and every pod's
// status and node and every committed eviction and pipelining are compared.
#include <random>

#include "test_cluster.h"

namespace gantry {
namespace {

using namespace testutil;

struct Decisions {
  std::vector<PodState> pods;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  size_t binds = 0;
};

Decisions RunAll(const Cluster& c, bool shortcuts) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.params.solver_shortcuts = shortcuts;
  Cycle cycle = RunCycle(c, cfg);
  Decisions d;
  d.pods = cycle->pods();
  for (const auto& e : cycle->evictions()) d.evictions.emplace_back(e.pod, e.node);
  for (const auto& p : cycle->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  d.binds = cycle->binds().size();
  return d;
}

// Two departments of two queues; full nodes of running jobs (gangs, elastic, 1-4 GPU pods) in
// over-quota queues, pending jobs in under-quota ones, mixed priorities so that reclaim, preempt
// and consolidation all have work.
Cluster RandomContendedCluster(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  Cluster c;
  const int num_nodes = uniform(6, 14);
  for (int i = 0; i < num_nodes; ++i)
    AddNode(c, "node-" + std::to_string(100 + i), 8, 64000, 256e9);
  QueueSpec dept;
  dept.gpu = {static_cast<double>(num_nodes * 4), kUnlimited, 1};
  AddQueue(c, "dept-a", dept);
  dept.creation_ms = 1;
  AddQueue(c, "dept-b", dept);
  const char* leaves[] = {"a-0", "a-1", "b-0", "b-1"};
  for (int i = 0; i < 4; ++i) {
    QueueSpec leaf;
    leaf.parent = i < 2 ? "dept-a" : "dept-b";
    leaf.gpu = {static_cast<double>(uniform(0, num_nodes * 2)), kUnlimited,
                static_cast<double>(uniform(0, 2))};
    leaf.creation_ms = 10 + i;
    AddQueue(c, leaves[i], leaf);
  }
  // Fill nodes with running jobs, mostly from a-0 and b-0.
  int job = 0;
  std::vector<double> free(static_cast<size_t>(num_nodes), 8);
  for (int attempt = 0; attempt < 200; ++attempt) {
    JobSpec spec;
    spec.queue = leaves[uniform(0, 9) < 7 ? uniform(0, 1) * 2 : uniform(0, 3)];
    spec.pods = uniform(1, 4);
    spec.pod = PodSpec{static_cast<double>(1 << uniform(0, 2)), 2000, 8e9};
    spec.min_available = uniform(0, 2) == 0 ? 1 : spec.pods;
    spec.priority = uniform(0, 3) == 0 ? 100 : 50;
    spec.preemptible = spec.priority < 100;
    spec.creation_ms = job;
    std::vector<NodeId> where;
    for (int k = 0; k < spec.pods; ++k) {
      const NodeId n = uniform(0, num_nodes - 1);
      if (free[static_cast<size_t>(n)] < spec.pod.gpus) break;
      free[static_cast<size_t>(n)] -= spec.pod.gpus;
      where.push_back(n);
    }
    if (static_cast<int>(where.size()) < spec.pods) {
      for (NodeId n : where) free[static_cast<size_t>(n)] += spec.pod.gpus;
      continue;
    }
    const JobId j = AddJob(c, "run-" + std::to_string(job++), spec);
    for (int k = 0; k < spec.pods; ++k) Place(c, PodOf(c, j, k), where[static_cast<size_t>(k)]);
  }
  // Pending jobs.
  for (int i = 0; i < 8; ++i) {
    JobSpec spec;
    spec.queue = leaves[uniform(0, 3)];
    spec.pods = uniform(1, 4);
    spec.pod = PodSpec{static_cast<double>(1 << uniform(0, 3)), 2000, 8e9};
    spec.min_available = uniform(0, 2) == 0 ? 1 : spec.pods;
    spec.priority = uniform(0, 2) == 0 ? 125 : 50 + 25 * uniform(0, 1);
    spec.preemptible = spec.priority < 100;
    spec.creation_ms = 1000 + i;
    AddJob(c, "pend-" + std::to_string(i), spec);
  }
  c.Finalize();
  return c;
}

class SolverShortcutsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(SolverShortcutsTest, SameDecisionsWithAndWithoutShortcuts) {
  const Cluster c = RandomContendedCluster(GetParam());
  const Decisions fast = RunAll(c, true);
  const Decisions slow = RunAll(c, false);
  ASSERT_EQ(fast.pods.size(), slow.pods.size());
  for (size_t p = 0; p < c.pods.size(); ++p) {
    EXPECT_EQ(fast.pods[p].status, slow.pods[p].status) << c.pods[p].name;
    EXPECT_EQ(fast.pods[p].node, slow.pods[p].node) << c.pods[p].name;
  }
  EXPECT_EQ(fast.evictions, slow.evictions);
  EXPECT_EQ(fast.pipelined, slow.pipelined);
  EXPECT_EQ(fast.binds, slow.binds);
}

// The seeds are many so that the evicting actions do act on some of them.
INSTANTIATE_TEST_SUITE_P(Seeds, SolverShortcutsTest, ::testing::Range<uint64_t>(1, 121));

TEST(SolverShortcutsCoverage, SomeRandomClustersHaveEvictions) {
  int with_evictions = 0;
  for (uint64_t seed = 1; seed < 41; ++seed) {
    with_evictions += !RunAll(RandomContendedCluster(seed), true).evictions.empty();
  }
  EXPECT_GE(with_evictions, 8);
}

}  // namespace
}  // namespace gantry
