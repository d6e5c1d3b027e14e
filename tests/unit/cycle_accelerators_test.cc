// Accelerators of the 100,000-node mixed cycle (docs/performance.md, "The 100,000-node cluster"),
// each against its reference path on generated clusters of the benchmark family: the full
// five-action cycle must decide the same, in the same order, with the same fit errors.
// - SchedulerParams::resourcetype_node_flags: resourcetype's CPU-only node test once per node and
//   session, scored in batches (off: the MIG label looked up per node and pod). The mixed shape
//   has CPU-only pods pending and running, and GPU nodes only; the default shape none.
// - SchedulerParams::topology_filter_sorted: the victim search's topology filter keeps the domain
//   capacities sorted as victims raise them (off: copied and sorted per scenario). Its answers
//   must be the same, so the searches pass the same number of scenarios through the filters.
// - SchedulerParams::solver_repeated_nodes: the victim search skips a scenario's node whose
//   potential victims are an earlier failed node's (victim_search/repeated_nodes.h; off: every
//   node simulated). Also compared with the plain search on the smaller clusters.
// - SchedulerParams::class_ranking_per_pod: node classes decided per pod, so that pods outside
//   the topology plugin's constrained sub-groups rank by class in a cluster with a Topology (off:
//   no pod ranks by class there). The topology and mixed shapes have constrained gangs with and
//   without a preferred level beside unconstrained pods; the default shape has no Topology.
// - SchedulerParams::shared_fit_skip_full_nodes: a shared-GPU pod's ranking skips the nodes with
//   no whole GPU left and no shared device before SharedFits (off: SharedFits on every node).
// - SchedulerParams::shared_class_ranking: a shared-GPU pod ranked over all the nodes ranks by
//   node class (off: node by node, or per key among the candidates). The fractional shape has no
//   Topology, the sharing and mixed shapes have one with constrained and preferred-level gangs,
//   some of them fractional (their pods rank over a domain's nodes, never by class).
// - SchedulerParams::solver_domain_during_simulation: a simulation stops, not placed, once
//   victims placed again ahead of the pending pods leave no required topology domain that fits,
//   also where one fitted in the batch's base state (victim_search/domain_precheck.h; off: only
//   where none fitted). The topology, sharing and mixed shapes have constrained gangs pending and
//   constrained gangs among the victims of consolidation. Also compared with the plain search on
//   the smaller clusters.
// - SchedulerParams::solver_domain_follow_journal: that check's per-domain counts follow the
//   session's node journal between two checks on the same feasible nodes (off: every feasible
//   node counted at each check). The same sums, so every counter of the victim search must be
//   the same too, and the journal must have been followed on the topology shape.
// - SchedulerParams::preempt_kept_candidates: preempt lists each (queue, priority)'s victim
//   candidates once per action and keeps whether a candidate has an evictable and an alive pod
//   per job version (off: listed, sorted and read per preemptor). Its victims queues must hold
//   the same jobs, so the preempt searches count the same work. The busy shape has preemptors of
//   three priorities over victims of two that earlier solutions of the cycle evicted.
// - SchedulerParams::preempt_repeated_failures: a preempt search known to fail as an earlier one
//   of the same state, queue, priority and victims did, with every scenario filtered, is counted
//   without running it (actions/preempt/repeated_failures.h; off: searched). The action's
//   counters (KAI's per-action metrics: scenarios filtered and simulated, searches by end) must be
//   the same, and the rule must have counted some searches so on the busy shape.
// - SchedulerParams::reclaim_repeated_failures: a reclaim search of a one-pod job known to fail as
//   an earlier one of the same state, queue and pod did is counted without running it
//   (actions/reclaim/repeated_failures.h; off: searched). Decisions, fit errors (per job and per
//   pod), messages and the action's counters must be the same, and the rule must have counted
//   some searches so on the busy shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "differential_cycle.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

void ExpectSameCycle(const CycleDecisions& on, const CycleDecisions& off) {
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(differential::SumOverActions(on.solver_stats, &SolverActionStats::scenarios),
            differential::SumOverActions(off.solver_stats, &SolverActionStats::scenarios));
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty() && on.evictions.empty());
}

class ResourceTypeNodeFlagsTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ResourceTypeNodeFlagsTest, SameDecisionsAsTheLabelLookup) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("resourcetype-flags", k, summary);
  if (std::string(k.shape) == "mixed") {
    ASSERT_GT(summary.cpu_only_pods, 0);
  }
  auto run = [&file](bool flags) {
    return differential::RunCycle(
        file, [flags](SchedulerParams& params) { params.resourcetype_node_flags = flags; });
  };
  ExpectSameCycle(run(true), run(false));
  std::filesystem::remove(file);
}

std::vector<ShapeCase> ResourceTypeCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"mixed", 48, seed});
    cases.push_back({"mixed", 120, seed});
  }
  cases.push_back({"default", 64, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ResourceTypeNodeFlagsTest,
                         ::testing::ValuesIn(ResourceTypeCases()), differential::ShapeCaseName);

class TopologyFilterSortedTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TopologyFilterSortedTest, SameDecisionsAsSortingPerScenario) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("topology-filter", k, summary);
  if (std::string(k.shape) != "mixed") {
    ASSERT_GT(summary.constrained_jobs, 0);
  }
  auto run = [&file](bool sorted) {
    return differential::RunCycle(
        file, [sorted](SchedulerParams& params) { params.topology_filter_sorted = sorted; });
  };
  ExpectSameCycle(run(true), run(false));
  std::filesystem::remove(file);
}

std::vector<ShapeCase> TopologyFilterCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"topology", 64, seed});
    cases.push_back({"topology", 160, seed});
    cases.push_back({"sharing", 64, seed});
    cases.push_back({"mixed", 120, seed});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologyFilterSortedTest,
                         ::testing::ValuesIn(TopologyFilterCases()), differential::ShapeCaseName);

class RepeatedNodesTest : public ::testing::TestWithParam<ShapeCase> {};

uint64_t RepeatedNodes(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::repeated_nodes);
}

// One cycle with the rule on or off (the other shortcuts on), or the plain search.
CycleDecisions RepeatedNodesCycle(const std::string& file, differential::SearchMode mode) {
  CycleDecisions d = differential::RunCycle(file, [mode](SchedulerParams& params) {
    params.solver_shortcuts = mode != differential::SearchMode::kPlain;
    params.solver_repeated_nodes = mode == differential::SearchMode::kRuleOn;
  });
  return d;
}

TEST_P(RepeatedNodesTest, SameDecisionsAsSimulatingEveryNode) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("repeated-nodes", k, summary);
  const CycleDecisions on = RepeatedNodesCycle(file, differential::SearchMode::kRuleOn);
  const CycleDecisions off = RepeatedNodesCycle(file, differential::SearchMode::kRuleOff);
  ExpectSameCycle(on, off);
  EXPECT_EQ(RepeatedNodes(off), 0u);
  if (k.plain) {
    const CycleDecisions plain = RepeatedNodesCycle(file, differential::SearchMode::kPlain);
    differential::ExpectSamePlacements(on, plain);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> RepeatedNodesCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({"topology", 64, seed, true});
    cases.push_back({"topology", 160, seed, false});
    cases.push_back({"sharing", 64, seed, true});
  }
  for (uint64_t seed = 1; seed <= 2; ++seed) cases.push_back({"mixed", 120, seed, false});
  cases.push_back({"default", 64, 1, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, RepeatedNodesTest, ::testing::ValuesIn(RepeatedNodesCases()),
                         differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(RepeatedNodesCoverage, TheRuleSkipsSimulations) {
  uint64_t skipped = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteShapeCluster("repeated-nodes-coverage",
                                                             {"topology", 160, seed}, summary);
    skipped += RepeatedNodes(RepeatedNodesCycle(file, differential::SearchMode::kRuleOn));
    std::filesystem::remove(file);
  }
  EXPECT_GT(skipped, 0u);
}

class ClassRankingPerPodTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ClassRankingPerPodTest, SameDecisionsAsClassesForTheWholeSession) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("class-per-pod", k, summary);
  // (Every shape but default has a Topology; the small mixed clusters may have no constrained
  // gang, and then test that the Topology alone no longer keeps pods from ranking by class.)
  const bool topology = std::string(k.shape) != "default";
  if (std::string(k.shape) == "topology") {
    ASSERT_GT(summary.constrained_jobs, 0);
  }
  auto run = [&file](bool per_pod) {
    return differential::RunCycle(
        file, [per_pod](SchedulerParams& params) { params.class_ranking_per_pod = per_pod; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  ExpectSameCycle(on, off);
  // Not vacuous: with a Topology only the per-pod decision ranks anything by class.
  EXPECT_GT(on.session_stats.rankings_by_class, 0);
  if (topology) {
    EXPECT_EQ(off.session_stats.rankings_by_class, 0);
  }
  if (summary.constrained_jobs > 0) {
    EXPECT_GT(on.session_stats.rankings_per_node, 0);  // the constrained gangs' pods
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> ClassRankingCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"topology", 64, seed});
    cases.push_back({"topology", 160, seed});
    cases.push_back({"mixed", 48, seed});
    cases.push_back({"mixed", 120, seed});
  }
  cases.push_back({"sharing", 64, 1});
  cases.push_back({"default", 64, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ClassRankingPerPodTest, ::testing::ValuesIn(ClassRankingCases()),
                         differential::ShapeCaseName);

class SharedFitSkipTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(SharedFitSkipTest, SameDecisionsAsSharedFitsOnEveryNode) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("shared-fit-skip", k, summary);
  ASSERT_GT(summary.fractional_pods, 0);
  auto run = [&file](bool skip) {
    return differential::RunCycle(
        file, [skip](SchedulerParams& params) { params.shared_fit_skip_full_nodes = skip; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  ExpectSameCycle(on, off);
  // Not vacuous: nodes were skipped (fewer feasibility checks) in the clusters with many
  // fractional pods or nodes; a small one may have no full node without a shared device.
  EXPECT_LE(on.session_stats.nodes_checked, off.session_stats.nodes_checked);
  if (std::string(k.shape) == "fractional" || k.nodes >= 120) {
    EXPECT_LT(on.session_stats.nodes_checked, off.session_stats.nodes_checked);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> SharedFitSkipCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"fractional", 64, seed});
    cases.push_back({"sharing", 64, seed});
    cases.push_back({"mixed", 48, seed});
    cases.push_back({"mixed", 120, seed});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SharedFitSkipTest, ::testing::ValuesIn(SharedFitSkipCases()),
                         differential::ShapeCaseName);

class SharedClassRankingTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(SharedClassRankingTest, SameDecisionsAsRankingNodeByNode) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("shared-class-ranking", k, summary);
  ASSERT_GT(summary.fractional_pods, 0);
  auto run = [&file](bool by_class) {
    return differential::RunCycle(
        file, [by_class](SchedulerParams& params) { params.shared_class_ranking = by_class; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  ExpectSameCycle(on, off);
  // Not vacuous: the shared-GPU pods that ranked node by node over all the nodes now rank by
  // class, and none is left so. (The fractional clusters and the mixed ones of seed 1 have such
  // pods; the sharing clusters' fractional pods pending here are in constrained gangs or rank
  // node by node for another reason.)
  const auto shared = static_cast<size_t>(PerNodeReason::kSharedGpu);
  if (std::string(k.shape) == "fractional" || (std::string(k.shape) == "mixed" && k.seed == 1)) {
    EXPECT_GT(off.session_stats.per_node_rankings[shared], 0);
  }
  EXPECT_EQ(on.session_stats.per_node_rankings[shared], 0);
  EXPECT_EQ(on.session_stats.rankings_by_class,
            off.session_stats.rankings_by_class + off.session_stats.per_node_rankings[shared]);
  std::filesystem::remove(file);
}

std::vector<ShapeCase> SharedClassRankingCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"fractional", 64, seed});
    cases.push_back({"sharing", 64, seed});
    cases.push_back({"mixed", 48, seed});
    cases.push_back({"mixed", 120, seed});
  }
  cases.push_back({"fractional", 160, 1});
  cases.push_back({"sharing", 160, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SharedClassRankingTest,
                         ::testing::ValuesIn(SharedClassRankingCases()),
                         differential::ShapeCaseName);

class DomainDuringSimulationTest : public ::testing::TestWithParam<ShapeCase> {};

uint64_t DomainDuring(const CycleDecisions& d) {
  return differential::SumOverActions(d.solver_stats, &SolverActionStats::domain_during);
}

TEST_P(DomainDuringSimulationTest, SameDecisionsAsPlacingThePendingPods) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("domain-during", k, summary);
  bool SchedulerParams::*rule = &SchedulerParams::solver_domain_during_simulation;
  const CycleDecisions on =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOn, rule);
  const CycleDecisions off =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOff, rule);
  ExpectSameCycle(on, off);
  EXPECT_EQ(DomainDuring(off), 0u);
  if (k.plain) {
    const CycleDecisions plain =
        differential::RunSearchCycle(file, differential::SearchMode::kPlain, rule);
    differential::ExpectSamePlacements(on, plain);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> DomainDuringCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"topology", 64, seed, true});
    cases.push_back({"topology", 160, seed, false});
    cases.push_back({"sharing", 64, seed, true});
  }
  cases.push_back({"mixed", 120, 1, false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DomainDuringSimulationTest,
                         ::testing::ValuesIn(DomainDuringCases()), differential::ShapeCaseName);

// The rule must act on such clusters, else the comparisons above would not cover it.
TEST(DomainDuringSimulationCoverage, TheRuleStopsSimulations) {
  uint64_t stopped = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("domain-during-coverage", {"topology", 160, seed}, summary);
    stopped += DomainDuring(
        differential::RunSearchCycle(file, differential::SearchMode::kRuleOn,
                                     &SchedulerParams::solver_domain_during_simulation));
    std::filesystem::remove(file);
  }
  EXPECT_GT(stopped, 0u);
}

class DomainFollowJournalTest : public ::testing::TestWithParam<ShapeCase> {};

// Every victim-search counter the two runs must share (the counts are the same sums).
void ExpectSameSearchCounters(const CycleDecisions& on, const CycleDecisions& off) {
  EXPECT_EQ(on.action_counts, off.action_counts);
  for (uint64_t SolverActionStats::*counter :
       {&SolverActionStats::prefixes, &SolverActionStats::scenarios, &SolverActionStats::precheck,
        &SolverActionStats::precheck_domain, &SolverActionStats::domain_during,
        &SolverActionStats::simulations, &SolverActionStats::not_placed,
        &SolverActionStats::rejected, &SolverActionStats::accepted,
        &SolverActionStats::proven_before}) {
    EXPECT_EQ(differential::SumOverActions(on.solver_stats, counter),
              differential::SumOverActions(off.solver_stats, counter));
  }
}

TEST_P(DomainFollowJournalTest, SameDecisionsAsCountingAfresh) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("domain-journal", k, summary);
  bool SchedulerParams::*rule = &SchedulerParams::solver_domain_follow_journal;
  const CycleDecisions on =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOn, rule);
  const CycleDecisions off =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOff, rule);
  ExpectSameCycle(on, off);
  ExpectSameSearchCounters(on, off);
  EXPECT_EQ(differential::SumOverActions(off.solver_stats, &SolverActionStats::domain_followed),
            0u);
  if (k.plain) {
    const CycleDecisions plain =
        differential::RunSearchCycle(file, differential::SearchMode::kPlain, rule);
    differential::ExpectSamePlacements(on, plain);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> DomainFollowJournalCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"topology", 64, seed, true});
    cases.push_back({"topology", 160, seed, false});
    cases.push_back({"sharing", 64, seed, seed == 1});
  }
  cases.push_back({"mixed", 120, 1, false});
  cases.push_back({"mixed", 200, 1, false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DomainFollowJournalTest,
                         ::testing::ValuesIn(DomainFollowJournalCases()),
                         differential::ShapeCaseName);

// The counts must follow the journal on such clusters, else the comparisons above would not
// cover it.
TEST(DomainFollowJournalCoverage, TheCountsFollowTheJournal) {
  uint64_t followed = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteShapeCluster("domain-journal-coverage",
                                                             {"topology", 160, seed}, summary);
    followed += differential::SumOverActions(
        differential::RunSearchCycle(file, differential::SearchMode::kRuleOn,
                                     &SchedulerParams::solver_domain_follow_journal)
            .solver_stats,
        &SolverActionStats::domain_followed);
    std::filesystem::remove(file);
  }
  EXPECT_GT(followed, 0u);
}

class PreemptKeptCandidatesTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(PreemptKeptCandidatesTest, SameDecisionsAsListingPerPreemptor) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("preempt-kept", k, summary);
  auto run = [&file](bool kept) {
    return differential::RunCycle(file, [kept](SchedulerParams& params) {
      params.preempt_kept_candidates = kept;
      params.preempt_repeated_failures = false;  // (this rule alone)
    });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  ExpectSameCycle(on, off);
  const auto preempt = static_cast<size_t>(EvictionAction::kPreempt);
  const SolverActionStats& a = on.solver_stats.by_action[preempt];
  const SolverActionStats& b = off.solver_stats.by_action[preempt];
  EXPECT_EQ(a.jobs, b.jobs);
  EXPECT_EQ(a.solved, b.solved);
  EXPECT_EQ(a.prefixes, b.prefixes);
  EXPECT_EQ(a.scenarios, b.scenarios);
  EXPECT_EQ(a.simulations, b.simulations);
  EXPECT_EQ(a.accepted, b.accepted);
  // The same victims-queue entries popped: a job kept as a victim after its pods were evicted
  // pops with nothing to evict, which changes no scenario (only the pops show it).
  EXPECT_EQ(a.victims_popped, b.victims_popped);
  EXPECT_EQ(on.action_counts, off.action_counts);
  // (On busy, preempt found victims: the kept lists were read after evictions changed them.)
  if (std::string(k.shape) == "busy") {
    EXPECT_GT(b.solved, 0U);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> PreemptKeptCandidatesCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"busy", 24, seed});
    cases.push_back({"busy", 48, seed});
  }
  cases.push_back({"mixed", 48, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PreemptKeptCandidatesTest,
                         ::testing::ValuesIn(PreemptKeptCandidatesCases()),
                         differential::ShapeCaseName);

class PreemptRepeatedFailuresTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(PreemptRepeatedFailuresTest, SameDecisionsAndCountsAsSearching) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("preempt-repeats", k, summary);
  auto run = [&file](bool repeats) {
    return differential::RunCycle(
        file, [repeats](SchedulerParams& params) { params.preempt_repeated_failures = repeats; });
  };
  const CycleDecisions on = run(true);
  const CycleDecisions off = run(false);
  ExpectSameCycle(on, off);
  EXPECT_EQ(on.action_counts, off.action_counts);
  const auto preempt = static_cast<size_t>(EvictionAction::kPreempt);
  const SolverActionStats& a = on.solver_stats.by_action[preempt];
  const SolverActionStats& b = off.solver_stats.by_action[preempt];
  EXPECT_EQ(a.jobs, b.jobs);
  EXPECT_EQ(a.solved, b.solved);
  EXPECT_EQ(a.simulations, b.simulations);
  EXPECT_EQ(b.known_failures, 0U);
  if (std::string(k.shape) == "busy") {
    EXPECT_GT(a.known_failures, 0U);
    EXPECT_GT(b.solved, 0U);
  }
  std::filesystem::remove(file);
}

std::vector<ShapeCase> PreemptRepeatedFailuresCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"busy", 24, seed});
    cases.push_back({"busy", 48, seed});
  }
  cases.push_back({"mixed", 48, 1});
  cases.push_back({"topology", 64, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PreemptRepeatedFailuresTest,
                         ::testing::ValuesIn(PreemptRepeatedFailuresCases()),
                         differential::ShapeCaseName);

class ReclaimRepeatedFailuresTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ReclaimRepeatedFailuresTest, SameDecisionsAndCountsAsSearching) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("reclaim-repeats", k, summary);
  bool SchedulerParams::*rule = &SchedulerParams::reclaim_repeated_failures;
  const CycleDecisions on =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOn, rule);
  const CycleDecisions off =
      differential::RunSearchCycle(file, differential::SearchMode::kRuleOff, rule);
  // (Not the scenarios counted by the search's diagnostics: the searches the rule counts are not
  // run. KAI's counters are compared below.)
  differential::ExpectSameDecisions(on, off);
  EXPECT_FALSE(on.binds.empty() && on.pipelined.empty() && on.evictions.empty());
  EXPECT_EQ(on.digest, off.digest);
  EXPECT_EQ(on.task_fit_errors, off.task_fit_errors);
  EXPECT_EQ(on.messages, off.messages);
  EXPECT_EQ(on.action_counts, off.action_counts);
  const auto reclaim = static_cast<size_t>(EvictionAction::kReclaim);
  const SolverActionStats& a = on.solver_stats.by_action[reclaim];
  const SolverActionStats& b = off.solver_stats.by_action[reclaim];
  EXPECT_EQ(a.jobs, b.jobs);
  EXPECT_EQ(a.solved, b.solved);
  EXPECT_EQ(b.known_failures, 0U);
  std::filesystem::remove(file);
}

std::vector<ShapeCase> ReclaimRepeatedFailuresCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    cases.push_back({"busy", 48, seed});
    cases.push_back({"busy", 120, seed});
    cases.push_back({"busy", 200, seed});
  }
  cases.push_back({"mixed", 48, 1});
  cases.push_back({"sharing", 64, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReclaimRepeatedFailuresTest,
                         ::testing::ValuesIn(ReclaimRepeatedFailuresCases()),
                         differential::ShapeCaseName);

// The rule must act on busy clusters of the sizes above, else their comparisons would not cover
// it.
TEST(ReclaimRepeatedFailuresCoverage, TheRuleCountsSearches) {
  uint64_t known = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    bench::ClusterGenSummary summary;
    const std::string file =
        differential::WriteShapeCluster("reclaim-repeats-coverage", {"busy", 200, seed}, summary);
    const CycleDecisions on = differential::RunCycle(file, [](SchedulerParams&) {});
    known +=
        on.solver_stats.by_action[static_cast<size_t>(EvictionAction::kReclaim)].known_failures;
    std::filesystem::remove(file);
  }
  EXPECT_GT(known, 0u);
}

// Hand-made clusters where reclaimers of one queue fail again and again in the same state: queue
// a holds exactly its deserved GPUs (its victims' scenarios are refused: a would not stay above
// its deserved quota), queue d runs jobs over its quota of none (victims a reclaim may take, until
// they run out), and queues b and c have pending jobs of one or two pods of 1-2 GPUs at mixed
// priorities, sometimes two alike in a row, so that some reclaim searches fail with scenarios
// simulated, some are counted by the rule and some are not (a job of another request ranked
// between the two alike ones).
Cluster ReclaimRepeatsCluster(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  Cluster c;
  const int nodes = 3 + pick(3);
  std::vector<NodeId> ids;
  ids.reserve(static_cast<size_t>(nodes));
  for (int n = 0; n < nodes; ++n) ids.push_back(testutil::AddNode(c, "n" + std::to_string(n), 4));
  // Running jobs node by node: (queue a?, GPUs). From seed 201 on, a's and d's jobs of 1 or 2
  // GPUs mixed on the nodes (victims placed back ahead of a preemptor then compete with it);
  // before, a's one-GPU jobs and then 1-3 of d's.
  std::vector<std::pair<bool, int>> running;
  int a_gpus = 0;
  if (seed > 200) {
    for (int n = 0; n < nodes; ++n) {
      for (int free = 4; free > 0;) {
        const int gpus = free >= 2 && pick(3) == 0 ? 2 : 1;
        const bool in_a = pick(3) != 0;
        running.emplace_back(in_a, gpus);
        a_gpus += in_a ? gpus : 0;
        free -= gpus;
      }
    }
  } else {
    const int d_jobs = 1 + pick(3);
    a_gpus = 4 * nodes - d_jobs;
    for (int i = 0; i < 4 * nodes; ++i) running.emplace_back(i < a_gpus, 1);
  }
  // (Created in the order of their quotas: proportion's queue order is then total on siblings,
  // as the rule needs.)
  testutil::AddQueue(
      c, "a", {.gpu = QueueQuota{static_cast<double>(a_gpus), kUnlimited, 1}, .creation_ms = 4});
  testutil::AddQueue(c, "b", {.gpu = QueueQuota{2.0 + pick(3), kUnlimited, 1}, .creation_ms = 3});
  testutil::AddQueue(c, "c", {.gpu = QueueQuota{1.0 + pick(2), kUnlimited, 1}, .creation_ms = 2});
  testutil::AddQueue(c, "d", {.gpu = QueueQuota{0, kUnlimited, 1}, .creation_ms = 1});
  int used = 0;  // GPUs taken on the nodes so far
  for (size_t i = 0; i < running.size(); ++i) {
    const auto [in_a, gpus] = running[i];
    const JobId j = testutil::AddJob(c, (in_a ? "a" : "d") + std::to_string(i),
                                     {.queue = in_a ? "a" : "d",
                                      .pod = {.gpus = static_cast<double>(gpus)},
                                      .creation_ms = static_cast<int64_t>(i)});
    testutil::Place(c, testutil::PodOf(c, j, 0), ids[static_cast<size_t>(used / 4)]);
    used += gpus;
  }
  // Pending: b's and c's jobs, each of one of a few kinds (so that alike ones come with jobs of
  // other requests ranked between them), sometimes two alike in a row.
  const int32_t priorities[] = {50, 100};
  int64_t creation = 1000;
  for (const char* queue : {"b", "c"}) {
    const int jobs = 5 + pick(8);
    for (int i = 0; i < jobs;) {
      const testutil::JobSpec spec{.queue = queue,
                                   .pods = pick(6) == 0 ? 2 : 1,
                                   .pod = {.gpus = pick(3) == 0 ? 2.0 : 1.0},
                                   .priority = priorities[pick(2)],
                                   .creation_ms = creation};
      const int copies = pick(3) == 0 ? 2 : 1;
      for (int k = 0; k < copies && i < jobs; ++k, ++i) {
        testutil::JobSpec copy = spec;
        copy.creation_ms = creation++;
        testutil::AddJob(c, std::string(queue) + std::to_string(i), copy);
      }
    }
  }
  c.Finalize();
  return c;
}

struct ReclaimRepeatsRun {
  std::vector<std::string> lines;  // decisions, messages, fit errors and counters, rendered
  uint64_t known_failures = 0;
  uint64_t reclaim_jobs = 0;
  uint64_t reclaim_solved = 0;
};

ReclaimRepeatsRun RunReclaimRepeats(const Cluster& c, bool repeats) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.params.reclaim_repeated_failures = repeats;
  ResetSolverStats();
  testutil::Cycle cycle = testutil::RunCycle(c, cfg);
  const Session& s = *cycle;
  ReclaimRepeatsRun out;
  for (const auto& e : s.evictions()) {
    out.lines.push_back("evict " + std::to_string(e.pod) + " " + std::to_string(e.node) + " " +
                        e.action + " " + e.message);
  }
  for (const auto& p : s.pipelined()) {
    out.lines.push_back("pipeline " + std::to_string(p.pod) + " " + std::to_string(p.node) + " " +
                        p.message);
  }
  for (const auto& b : s.binds()) {
    out.lines.push_back("bind " + std::to_string(b.pod) + " " + std::to_string(b.node));
  }
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
    out.lines.push_back("fit " + std::to_string(j) + " " + testutil::FitErrors(s, j));
    for (const auto& [pod, errors] : s.job_state(j).task_fit_errors) {
      out.lines.push_back("task fit " + std::to_string(pod) + " " + errors.Render());
    }
  }
  for (const ActionCounts& a : s.all_action_counts()) {
    std::string line = a.action + " " + std::to_string(a.podgroups_acted_on) + " " +
                       std::to_string(a.podgroups_scheduled) + " " +
                       std::to_string(a.scenarios_simulated) + " " +
                       std::to_string(a.scenarios_filtered);
    for (const auto& by_end : a.searches) {
      line += " " + std::to_string(by_end[0]) + "/" + std::to_string(by_end[1]);
    }
    out.lines.push_back(line);
  }
  const SolverActionStats& st =
      GetSolverStats().by_action[static_cast<size_t>(EvictionAction::kReclaim)];
  out.known_failures = st.known_failures;
  out.reclaim_jobs = st.jobs;
  out.reclaim_solved = st.solved;
  return out;
}

TEST(ReclaimRepeatedFailuresHandMade, SameDecisionsAndCountsAsSearching) {
  uint64_t known = 0;
  uint64_t solved = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Cluster c = ReclaimRepeatsCluster(seed);
    const ReclaimRepeatsRun on = RunReclaimRepeats(c, true);
    const ReclaimRepeatsRun off = RunReclaimRepeats(c, false);
    EXPECT_EQ(on.lines, off.lines) << "seed " << seed;
    EXPECT_EQ(on.reclaim_jobs, off.reclaim_jobs) << "seed " << seed;
    EXPECT_EQ(on.reclaim_solved, off.reclaim_solved) << "seed " << seed;
    EXPECT_EQ(off.known_failures, 0u);
    known += on.known_failures;
    solved += on.reclaim_solved;
  }
  // (The rule counted searches, and reclaim also solved some: states changed in between.)
  EXPECT_GT(known, 0u);
  EXPECT_GT(solved, 0u);
}

}  // namespace
}  // namespace gantry
