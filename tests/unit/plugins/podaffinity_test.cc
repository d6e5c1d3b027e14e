// podaffinity plugin: KAI's preferred inter-pod affinity score (Kubernetes' raw InterPodAffinity
// score times scores::kK8sPlugins).

#include "plugins/podaffinity/podaffinity.h"

#include <string>
#include <vector>

#include "framework/statement.h"
#include "plugins/plugin_test_base.h"

namespace gantry::plugin_test {
namespace {

using podaffinity::TopologyScores;

Labels MakeLabels(std::initializer_list<std::pair<const char*, const char*>> items) {
  Labels l;
  for (const auto& [k, v] : items) l.Set(k, v);
  return l;
}

Pod MakePod(const std::string& ns, std::initializer_list<std::pair<const char*, const char*>> l) {
  Pod p;
  p.namespace_ = ns;
  p.labels = MakeLabels(l);
  return p;
}

WeightedPodAffinityTerm Term(int32_t weight, const std::string& key,
                             std::initializer_list<std::pair<const char*, const char*>> match,
                             std::vector<std::string> namespaces = {}) {
  WeightedPodAffinityTerm w;
  w.weight = weight;
  w.term.topology_key = key;
  w.term.selector.match_labels = MakeLabels(match);
  w.term.namespaces = std::move(namespaces);
  return w;
}

// KAI's podaffinity_test.go cases and more: one existing pod on a node, the incoming pod, the raw
// score of the scored node.
struct RawCase {
  std::string name;
  Pod existing;
  Labels existing_node;
  Pod incoming;
  Labels scored_node;
  int64_t want;
  bool want_empty = false;  // Kubernetes' PreScore Skip
};

std::vector<RawCase> RawCases() {
  const auto node1 = MakeLabels({{"node-label", "node-1"}});
  const auto affinity = Term(10, "node-label", {{"my-label", "a"}});
  std::vector<RawCase> cases;
  {
    // KAI: "No Pod Affinity" (a node without labels, pods without terms).
    RawCase c{"NoPodAffinity", MakePod("test", {}), {}, MakePod("test", {}), {}, 0, true};
    cases.push_back(c);
  }
  {
    // KAI: "Not fitting Pod Affinity": the existing pod's term does not match the incoming pod.
    RawCase c{"NotFittingPodAffinity",
              MakePod("test", {{"my-label", "a"}}),
              node1,
              MakePod("test", {}),
              node1,
              0,
              true};
    c.existing.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // KAI: "Matching Pod Affinity": both terms match (+10 each way).
    RawCase c{"MatchingPodAffinity",
              MakePod("test", {{"my-label", "a"}}),
              node1,
              MakePod("test", {{"my-label", "a"}}),
              node1,
              20};
    c.existing.preferred_pod_affinity = {affinity};
    c.incoming.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // KAI: "Matching Pod Anti-Affinity": -10 each way.
    RawCase c{"MatchingPodAntiAffinity",
              MakePod("test", {{"my-label", "a"}}),
              node1,
              MakePod("test", {{"my-label", "a"}}),
              node1,
              -20};
    c.existing.preferred_pod_anti_affinity = {affinity};
    c.incoming.preferred_pod_anti_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // Only the incoming pod's term: +w.
    RawCase c{"IncomingAffinityOnly",
              MakePod("test", {{"my-label", "a"}}),
              node1,
              MakePod("test", {}),
              node1,
              10};
    c.incoming.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // Only the incoming pod's anti-affinity: -w.
    RawCase c{"IncomingAntiAffinityOnly",
              MakePod("test", {{"my-label", "a"}}),
              node1,
              MakePod("test", {}),
              node1,
              -7};
    c.incoming.preferred_pod_anti_affinity = {Term(7, "node-label", {{"my-label", "a"}})};
    cases.push_back(c);
  }
  {
    // Symmetry: the existing pod's preferred affinity pulls a pod without terms.
    RawCase c{"ExistingPreferredAffinityMatchesIncoming",
              MakePod("test", {}),
              node1,
              MakePod("test", {{"app", "cache"}}),
              node1,
              30};
    c.existing.preferred_pod_affinity = {Term(30, "node-label", {{"app", "cache"}})};
    cases.push_back(c);
  }
  {
    // Symmetry: the existing pod's preferred anti-affinity pushes it away.
    RawCase c{"ExistingPreferredAntiAffinityMatchesIncoming",
              MakePod("test", {}),
              node1,
              MakePod("test", {{"app", "cache"}}),
              node1,
              -30};
    c.existing.preferred_pod_anti_affinity = {Term(30, "node-label", {{"app", "cache"}})};
    cases.push_back(c);
  }
  {
    // The existing pod's required affinity adds HardPodAffinityWeight, 0 as KAI builds the
    // plugin: nothing is counted.
    RawCase c{"ExistingRequiredAffinityAddsNothing",
              MakePod("test", {}),
              node1,
              MakePod("test", {{"app", "cache"}}),
              node1,
              0,
              true};
    c.existing.pod_affinity = {Term(1, "node-label", {{"app", "cache"}}).term};
    cases.push_back(c);
  }
  {
    // The scored node lacks the topology key: 0, though the key has an entry.
    RawCase c{"ScoredNodeWithoutTheKey", MakePod("test", {{"my-label", "a"}}), node1,
              MakePod("test", {}),       MakeLabels({{"other", "x"}}),         0};
    c.incoming.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // The existing pod's node lacks the key (but has labels): nothing is counted.
    RawCase c{"ExistingNodeWithoutTheKey",
              MakePod("test", {{"my-label", "a"}}),
              MakeLabels({{"other", "x"}}),
              MakePod("test", {}),
              node1,
              0,
              true};
    c.incoming.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // A topology domain: a node of the same zone scores; the key's value decides.
    RawCase c{"SameZoneOtherNode",
              MakePod("test", {{"app", "db"}}),
              MakeLabels({{"zone", "z1"}, {"host", "h1"}}),
              MakePod("test", {}),
              MakeLabels({{"zone", "z1"}, {"host", "h2"}}),
              5};
    c.incoming.preferred_pod_affinity = {Term(5, "zone", {{"app", "db"}}),
                                         Term(50, "host", {{"app", "db"}})};
    cases.push_back(c);
  }
  {
    RawCase c{"OtherZone",
              MakePod("test", {{"app", "db"}}),
              MakeLabels({{"zone", "z1"}, {"host", "h1"}}),
              MakePod("test", {}),
              MakeLabels({{"zone", "z2"}, {"host", "h2"}}),
              0};
    c.incoming.preferred_pod_affinity = {Term(5, "zone", {{"app", "db"}}),
                                         Term(50, "host", {{"app", "db"}})};
    cases.push_back(c);
  }
  {
    // Several terms on several keys add up: 5 (zone) + 50 (host) - 20 (host, anti).
    RawCase c{"TermsAddUpAcrossKeys",
              MakePod("test", {{"app", "db"}}),
              MakeLabels({{"zone", "z1"}, {"host", "h1"}}),
              MakePod("test", {}),
              MakeLabels({{"zone", "z1"}, {"host", "h1"}}),
              35};
    c.incoming.preferred_pod_affinity = {Term(5, "zone", {{"app", "db"}}),
                                         Term(50, "host", {{"app", "db"}})};
    c.incoming.preferred_pod_anti_affinity = {Term(20, "host", {{"app", "db"}})};
    cases.push_back(c);
  }
  {
    // A term without namespaces means its owner's namespace: a pod elsewhere does not match.
    RawCase c{"OtherNamespaceDoesNotMatch",
              MakePod("other", {{"my-label", "a"}}),
              node1,
              MakePod("test", {}),
              node1,
              0,
              true};
    c.incoming.preferred_pod_affinity = {affinity};
    cases.push_back(c);
  }
  {
    // Named namespaces: the other namespace matches.
    RawCase c{"NamedNamespaceMatches",
              MakePod("other", {{"my-label", "a"}}),
              node1,
              MakePod("test", {}),
              node1,
              10};
    c.incoming.preferred_pod_affinity = {Term(10, "node-label", {{"my-label", "a"}}, {"other"})};
    cases.push_back(c);
  }
  {
    // The existing pod's term is in its own namespace, not the incoming pod's.
    RawCase c{"ExistingTermOwnNamespace",
              MakePod("other", {}),
              node1,
              MakePod("test", {{"app", "cache"}}),
              node1,
              0,
              true};
    c.existing.preferred_pod_affinity = {Term(30, "node-label", {{"app", "cache"}})};
    cases.push_back(c);
  }
  return cases;
}

class PodAffinityRawScoreTest : public ::testing::TestWithParam<RawCase> {};

TEST_P(PodAffinityRawScoreTest, Score) {
  const RawCase& c = GetParam();
  TopologyScores scores;
  scores.AddExistingPod(c.incoming, c.existing, c.existing_node);
  EXPECT_EQ(scores.Score(c.scored_node), c.want);
  EXPECT_EQ(scores.Empty(), c.want_empty);
}

std::string CaseName(const ::testing::TestParamInfo<RawCase>& c) { return c.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, PodAffinityRawScoreTest, ::testing::ValuesIn(RawCases()), CaseName);

TEST(PodAffinityRawScore, HardPodAffinityWeightWhenSet) {
  // Kubernetes' default HardPodAffinityWeight (1) would count the existing pod's required term;
  // KAI's zero-valued arguments do not (the case above).
  Pod existing = MakePod("test", {});
  existing.pod_affinity = {Term(1, "node-label", {{"app", "cache"}}).term};
  TopologyScores scores;
  scores.AddExistingPod(MakePod("test", {{"app", "cache"}}), existing,
                        MakeLabels({{"node-label", "n"}}), /*hard_weight=*/1);
  EXPECT_EQ(scores.Score(MakeLabels({{"node-label", "n"}})), 1);
}

TEST(PodAffinityRawScore, ExistingPodsAccumulate) {
  // Two matching pods in a zone and one in another: each adds its weight to its domain.
  Pod incoming = MakePod("test", {});
  incoming.preferred_pod_affinity = {Term(3, "zone", {{"app", "db"}})};
  TopologyScores scores;
  scores.AddExistingPod(incoming, MakePod("test", {{"app", "db"}}), MakeLabels({{"zone", "a"}}));
  scores.AddExistingPod(incoming, MakePod("test", {{"app", "db"}}), MakeLabels({{"zone", "a"}}));
  scores.AddExistingPod(incoming, MakePod("test", {{"app", "db"}}), MakeLabels({{"zone", "b"}}));
  scores.AddExistingPod(incoming, MakePod("test", {{"app", "web"}}), MakeLabels({{"zone", "c"}}));
  EXPECT_EQ(scores.Score(MakeLabels({{"zone", "a"}})), 6);
  EXPECT_EQ(scores.Score(MakeLabels({{"zone", "b"}})), 3);
  EXPECT_EQ(scores.Score(MakeLabels({{"zone", "c"}})), 0);
  EXPECT_EQ(scores.Score(MakeLabels({})), 0);
}

// --- Through sessions -------------------------------------------------------------------------

class PodAffinityTest : public PluginTestBase {
 protected:
  // Nodes n-a and n-b with 4 GPUs, labelled with their hostname.
  void TwoNodes() {
    a_ = AddNode(c_, "n-a", 4);
    b_ = AddNode(c_, "n-b", 4);
    c_.nodes[a_].labels.Set("kubernetes.io/hostname", "n-a");
    c_.nodes[b_].labels.Set("kubernetes.io/hostname", "n-b");
  }
  // A running 1-GPU pod labelled app=<app> on `node`.
  PodId Running(const std::string& job, NodeId node, const std::string& app,
                PodStatus status = PodStatus::kRunning) {
    const JobId j = Fill(job, node, 1, kGpuPod, status);
    const PodId p = PodOf(c_, j, 0);
    c_.pods[p].labels.Set("app", app);
    return p;
  }
  static WeightedPodAffinityTerm OnHost(int32_t weight, const char* app) {
    return Term(weight, "kubernetes.io/hostname", {{"app", app}});
  }
  NodeId a_ = kNone, b_ = kNone;
};

TEST_F(PodAffinityTest, PreferredAffinityLandsNextToTheMatchingPod) {
  TwoNodes();
  Running("other", a_, "other");
  Running("other2", a_, "other");  // binpack prefers n-a (2 GPUs used against 1)
  Running("db", b_, "db");
  const PodId p = Pending("p");
  c_.pods[p].preferred_pod_affinity = {OnHost(10, "db")};
  c_.Finalize();
  EXPECT_EQ(NodeName(*RunCycle(c_), p), "n-b");
  EXPECT_EQ(NodeName(*RunCycle(c_, Without(SchedulerConfig::Default(), "podaffinity")), p), "n-a");
}

TEST_F(PodAffinityTest, PreferredAntiAffinityAvoidsTheMatchingPod) {
  TwoNodes();
  Running("db", a_, "db");
  Running("other", a_, "other");  // binpack prefers n-a
  Running("other2", b_, "other");
  const PodId p = Pending("p");
  c_.pods[p].preferred_pod_anti_affinity = {OnHost(10, "db")};
  c_.Finalize();
  EXPECT_EQ(NodeName(*RunCycle(c_), p), "n-b");
  EXPECT_EQ(NodeName(*RunCycle(c_, Without(SchedulerConfig::Default(), "podaffinity")), p), "n-a");
}

TEST_F(PodAffinityTest, ExistingPodsPreferredTermPullsAPodWithoutTerms) {
  // n-a and n-b are equivalent (same shape, one 1-GPU pod each): ranked by class, n-a would
  // stand for both and win by name. The web pod on n-b prefers app=cache pods next to it, so the
  // cache pod (no terms of its own) must be ranked per node.
  TwoNodes();
  Running("other", a_, "other");
  const PodId web = Running("web", b_, "web");
  c_.pods[web].preferred_pod_affinity = {OnHost(10, "cache")};
  const PodId p = Pending("p");
  c_.pods[p].labels.Set("app", "cache");
  c_.Finalize();
  EXPECT_EQ(NodeName(*RunCycle(c_), p), "n-b");
  EXPECT_EQ(NodeName(*RunCycle(c_, Without(SchedulerConfig::Default(), "podaffinity")), p), "n-a");
}

TEST_F(PodAffinityTest, PodsPlacedEarlierInTheSessionCount) {
  // db (higher priority) is placed first, on n-a by name; p prefers to avoid it and goes to n-b,
  // though binpack would stack it on n-a.
  TwoNodes();
  const JobId db = AddJob(c_, "db", {.queue = "q", .pod = kGpuPod, .priority = 50});
  c_.pods[PodOf(c_, db, 0)].labels.Set("app", "db");
  const JobId j = AddJob(c_, "p", {.queue = "q", .pod = kGpuPod, .priority = 10});
  const PodId p = PodOf(c_, j, 0);
  c_.pods[p].preferred_pod_anti_affinity = {OnHost(10, "db")};
  c_.Finalize();
  {
    auto cycle = RunCycle(c_);
    EXPECT_EQ(NodeName(*cycle, PodOf(c_, db, 0)), "n-a");
    EXPECT_EQ(NodeName(*cycle, p), "n-b");
  }
  {
    auto cycle = RunCycle(c_, Without(SchedulerConfig::Default(), "podaffinity"));
    EXPECT_EQ(NodeName(*cycle, PodOf(c_, db, 0)), "n-a");
    EXPECT_EQ(NodeName(*cycle, p), "n-a");
  }
}

TEST_F(PodAffinityTest, ReleasingPodsCount) {
  // KAI's node info holds releasing pods too: the releasing db pod on n-b still attracts p.
  TwoNodes();
  Running("other", a_, "other");
  Running("other2", a_, "other");
  Running("db", b_, "db", PodStatus::kReleasing);
  const PodId p = Pending("p");
  c_.pods[p].preferred_pod_affinity = {OnHost(10, "db")};
  c_.Finalize();
  EXPECT_EQ(NodeName(*RunCycle(c_), p), "n-b");
  EXPECT_EQ(NodeName(*RunCycle(c_, Without(SchedulerConfig::Default(), "podaffinity")), p), "n-a");
}

TEST_F(PodAffinityTest, ASkippedPodScoresZeroForTheRestOfTheSession) {
  // KAI marks a pod whose PreScore counted nothing and never clears the mark in the session: p is
  // ranked before db is placed (nothing to count), then again after db is placed on n-b; KAI
  // still scores it 0, so binpack keeps n-a. A fresh session, with db placed, sends p to n-b.
  TwoNodes();
  Running("other", a_, "other");  // binpack prefers n-a
  const JobId db = AddJob(c_, "db", {.queue = "q", .pod = kGpuPod});
  const PodId db_pod = PodOf(c_, db, 0);
  c_.pods[db_pod].labels.Set("app", "db");
  const PodId p = Pending("p");
  c_.pods[p].preferred_pod_affinity = {OnHost(10, "db")};
  c_.Finalize();
  auto scheduler = testutil::MakeScheduler();
  auto rank = [](Session& s, PodId pod) {
    s.RankFittingNodes(pod, s.all_nodes(), /*record=*/false);
    return s.cluster().nodes[s.NextRankedNode()].name;
  };
  {
    auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
    EXPECT_EQ(rank(*ssn, p), "n-a");
    Statement stmt(*ssn);
    stmt.Allocate(db_pod, b_);
    EXPECT_EQ(rank(*ssn, p), "n-a");
  }
  {
    auto ssn = scheduler->OpenSession(c_, testutil::kNowMs);
    Statement stmt(*ssn);
    stmt.Allocate(db_pod, b_);
    EXPECT_EQ(rank(*ssn, p), "n-b");
  }
}

TEST_F(PodAffinityTest, NoTermsKeepsRankingByClass) {
  // Without any preferred term the plugin registers nothing: pods are still ranked by class.
  TwoNodes();
  Running("other", a_, "other");
  const PodId p = Pending("p");
  c_.Finalize();
  auto cycle = RunCycle(c_);
  EXPECT_EQ(NodeName(*cycle, p), "n-a");
  EXPECT_GT(cycle->stats().rankings_by_class, 0);
}

}  // namespace
}  // namespace gantry::plugin_test
