// The victim search's shortcuts (capacity pre-checks, block counts corrected per scenario,
// stopping once nothing can be re-placed, victims-queue order answers and sums kept between pops,
// eviction-message texts kept per queue) must not change any decision. Random clusters are
// scheduled with the full cycle twice, shortcuts on and off, and every pod's status and node and
// every committed eviction (with its message) and pipelining are compared.
#include <random>

#include "actions/victim_search/solver.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using namespace testutil;

struct Decisions {
  std::vector<PodState> pods;
  std::vector<std::pair<PodId, NodeId>> evictions;
  std::vector<std::string> eviction_messages;
  std::vector<std::pair<PodId, NodeId>> pipelined;
  size_t binds = 0;
};

Decisions RunAll(const Cluster& c, bool shortcuts) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.params.solver_shortcuts = shortcuts;
  Cycle cycle = RunCycle(c, cfg);
  Decisions d;
  d.pods = cycle->pods();
  for (const auto& e : cycle->evictions()) {
    d.evictions.emplace_back(e.pod, e.node);
    d.eviction_messages.push_back(e.message);
  }
  for (const auto& p : cycle->pipelined()) d.pipelined.emplace_back(p.pod, p.node);
  d.binds = cycle->binds().size();
  return d;
}

// Departments of leaf queues (two of two; with `wide`, three of three); full nodes of running
// jobs (gangs, elastic, 1-4 GPU pods) in over-quota queues, pending jobs in under-quota ones,
// mixed priorities so that reclaim, preempt and consolidation all have work. `wide` clusters also
// get a gang too large to ever fit (the search walks every victim) and, for some seeds, CPU
// requests that are not whole millis (queue sums that are not exact).
// `cpu_jobs`: some running and pending jobs ask for no GPU (the feasible-node list then matters
// to simulations).
Cluster RandomContendedCluster(uint64_t seed, bool wide = false, bool cpu_jobs = false) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  Cluster c;
  const int num_nodes = uniform(6, 14);
  for (int i = 0; i < num_nodes; ++i)
    AddNode(c, "node-" + std::to_string(100 + i), 8, 64000, 256e9);
  const int num_depts = wide ? 3 : 2;
  const int per_dept = wide ? 3 : 2;
  const double cpu = wide && uniform(0, 2) == 0 ? 2000.5 : 2000;
  for (int d = 0; d < num_depts; ++d) {
    QueueSpec dept;
    dept.gpu = {static_cast<double>(num_nodes * 8 / num_depts), kUnlimited, 1};
    dept.creation_ms = d;
    AddQueue(c, std::string("dept-") + static_cast<char>('a' + d), dept);
  }
  std::vector<std::string> leaves;
  for (int i = 0; i < num_depts * per_dept; ++i) {
    leaves.push_back(std::string(1, static_cast<char>('a' + i / per_dept)) + "-" +
                     std::to_string(i % per_dept));
  }
  const int num_leaves = static_cast<int>(leaves.size());
  for (int i = 0; i < num_leaves; ++i) {
    QueueSpec leaf;
    leaf.parent = std::string("dept-") + static_cast<char>('a' + i / per_dept);
    leaf.gpu = {static_cast<double>(uniform(0, num_nodes * 2)), kUnlimited,
                static_cast<double>(uniform(0, 2))};
    leaf.creation_ms = 10 + i;
    AddQueue(c, leaves[static_cast<size_t>(i)], leaf);
  }
  auto leaf_at = [&](int i) { return leaves[static_cast<size_t>(i)]; };
  // Fill nodes with running jobs, mostly from a-0 and b-0.
  int job = 0;
  std::vector<double> free(static_cast<size_t>(num_nodes), 8);
  for (int attempt = 0; attempt < 200; ++attempt) {
    JobSpec spec;
    spec.queue = leaf_at(uniform(0, 9) < 7 ? uniform(0, num_depts - 1) * per_dept
                                           : uniform(0, num_leaves - 1));
    spec.pods = uniform(1, 4);
    spec.pod = PodSpec{static_cast<double>(1 << uniform(0, 2)), cpu, 8e9};
    if (cpu_jobs && uniform(0, 4) == 0) spec.pod = PodSpec{0, 4000, 8e9};
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
    spec.queue = leaf_at(uniform(0, num_leaves - 1));
    spec.pods = uniform(1, 4);
    spec.pod = PodSpec{static_cast<double>(1 << uniform(0, 3)), cpu, 8e9};
    if (cpu_jobs && uniform(0, 5) == 0) spec.pod = PodSpec{0, 6000, 8e9};
    spec.min_available = uniform(0, 2) == 0 ? 1 : spec.pods;
    spec.priority = uniform(0, 2) == 0 ? 125 : 50 + 25 * uniform(0, 1);
    spec.preemptible = spec.priority < 100;
    spec.creation_ms = 1000 + i;
    AddJob(c, "pend-" + std::to_string(i), spec);
  }
  if (wide) {
    JobSpec spec;
    spec.queue = leaf_at(uniform(0, num_leaves - 1));
    spec.pods = num_nodes + 1;
    spec.pod = PodSpec{8, cpu, 8e9};
    spec.priority = 50;
    spec.creation_ms = 999;
    AddJob(c, "too-large", spec);
  }
  c.Finalize();
  return c;
}

class SolverShortcutsTest : public ::testing::TestWithParam<uint64_t> {};

void ExpectSameDecisions(const Cluster& c) {
  const Decisions fast = RunAll(c, true);
  const Decisions slow = RunAll(c, false);
  ASSERT_EQ(fast.pods.size(), slow.pods.size());
  for (size_t p = 0; p < c.pods.size(); ++p) {
    EXPECT_EQ(fast.pods[p].status, slow.pods[p].status) << c.pods[p].name;
    EXPECT_EQ(fast.pods[p].node, slow.pods[p].node) << c.pods[p].name;
  }
  EXPECT_EQ(fast.evictions, slow.evictions);
  EXPECT_EQ(fast.eviction_messages, slow.eviction_messages);
  EXPECT_EQ(fast.pipelined, slow.pipelined);
  EXPECT_EQ(fast.binds, slow.binds);
}

TEST_P(SolverShortcutsTest, SameDecisionsWithAndWithoutShortcuts) {
  ExpectSameDecisions(RandomContendedCluster(GetParam()));
}

TEST_P(SolverShortcutsTest, SameDecisionsOnWideClustersWithAnOversizedGang) {
  ExpectSameDecisions(RandomContendedCluster(GetParam(), /*wide=*/true));
}

TEST_P(SolverShortcutsTest, SameDecisionsWithJobsAskingForNoGpu) {
  ExpectSameDecisions(RandomContendedCluster(GetParam(), /*wide=*/true, /*cpu_jobs=*/true));
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

TEST(SolverShortcutsCoverage, SomeWideClustersHaveEvictions) {
  int with_evictions = 0;
  for (uint64_t seed = 1; seed < 41; ++seed) {
    with_evictions += !RunAll(RandomContendedCluster(seed, true), true).evictions.empty();
  }
  EXPECT_GE(with_evictions, 8);
}

// The rejection rules (a simulation stops, rejected, once a rule of the validator is certain to
// hold; or is not run when a rule is certain before anything is placed) must be proofs: with
// verification on, every such simulation runs to the end and the validator is asked; it must
// reject every one. Both kinds of proof must also apply on these clusters (else the
// comparisons above would not cover them).
TEST(SolverShortcutsCoverage, RejectionRulesAreSoundAndUsed) {
  SetVerifyRejectionProofs(true);
  const uint64_t violations_before = RejectionProofViolations();
  uint64_t proven[3] = {0, 0, 0};
  uint64_t proven_before[3] = {0, 0, 0};
  uint64_t without_evicting[3] = {0, 0, 0};
  uint64_t by_saturation[3] = {0, 0, 0};
  uint64_t by_recorded[3] = {0, 0, 0};
  for (uint64_t seed = 1; seed < 121; ++seed) {
    for (int variant = 0; variant < 3; ++variant) {
      ResetSolverStats();
      RunAll(RandomContendedCluster(seed, variant > 0, variant == 2), true);
      for (int a = 0; a < 3; ++a) {
        proven[a] += GetSolverStats().by_action[a].proven;
        proven_before[a] += GetSolverStats().by_action[a].proven_before;
        without_evicting[a] += GetSolverStats().by_action[a].proven_without_evicting;
        by_saturation[a] += GetSolverStats().by_action[a].proven_by_saturation;
        by_recorded[a] += GetSolverStats().by_action[a].proven_by_recorded;
      }
    }
  }
  SetVerifyRejectionProofs(false);
  EXPECT_EQ(RejectionProofViolations(), violations_before);
  EXPECT_GT(proven[static_cast<int>(EvictionAction::kReclaim)], 0u);
  EXPECT_GT(proven[static_cast<int>(EvictionAction::kConsolidation)], 0u);
  EXPECT_GT(proven_before[static_cast<int>(EvictionAction::kReclaim)], 0u);
  EXPECT_GT(without_evicting[static_cast<int>(EvictionAction::kReclaim)], 0u);
  EXPECT_GT(by_saturation[static_cast<int>(EvictionAction::kReclaim)], 0u);
  EXPECT_GT(by_recorded[static_cast<int>(EvictionAction::kReclaim)], 0u);
}

// Without verification, the simulations proven hopeless before placing are skipped on these
// clusters (so the decision comparisons above exercise the skip).
TEST(SolverShortcutsCoverage, SimulationsProvenHopelessAreSkipped) {
  uint64_t skipped = 0;
  for (uint64_t seed = 1; seed < 121; ++seed) {
    for (int variant = 0; variant < 3; ++variant) {
      ResetSolverStats();
      RunAll(RandomContendedCluster(seed, variant > 0, variant == 2), true);
      for (int a = 0; a < 3; ++a) skipped += GetSolverStats().by_action[a].proven_before;
    }
  }
  EXPECT_GT(skipped, 0u);
}

}  // namespace
}  // namespace gantry
