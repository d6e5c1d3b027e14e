// Ranking nodes by classes of equivalent nodes must decide exactly what ranking every node
// decides. These tests run the same random clusters twice: once as configured (classes on), once
// with an extra plugin that does not promise node independence (classes off), and compare every
// pod's status and node and every job's fit errors.
#include <random>

#include "plugins/builtin.h"
#include "scheduler/registry.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using namespace testutil;

// Registers a node order function that scores nothing, without saying what it depends on: the
// session then has to evaluate every node.
class OpaquePlugin : public Plugin {
 public:
  std::string_view name() const override { return "opaque"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn([](const Session&, PodId, NodeId) { return 0.0; });
  }
};

// A node-order plugin as one copied from the node-score template would be: it scores nodes
// labelled zone=b, registered with the default options or (wrongly) promising that its score
// depends only on the node's shape and state.
class ZoneScorePlugin : public Plugin {
 public:
  explicit ZoneScorePlugin(NodeDependence depends_on) : depends_on_(depends_on) {}
  std::string_view name() const override { return "zonescore"; }
  void OnSessionOpen(Session& ssn) override {
    auto score = [](const Session& s, PodId, NodeId n) {
      const std::string* zone = s.cluster().nodes[n].labels.Get("zone");
      return zone != nullptr && *zone == "b" ? 1000.0 : 0.0;
    };
    if (depends_on_ == NodeDependence::kAnything) {
      ssn.AddNodeOrderFn(score);  // (the default options)
    } else {
      ssn.AddNodeOrderFn(score, {.depends_on = depends_on_});
    }
  }

 private:
  NodeDependence depends_on_;
};

const PluginRegistry& RegistryWithOpaque() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    RegisterBuiltinPlugins(r);
    r.Register("opaque", [](const auto&) -> Result<PluginPtr> {
      return PluginPtr(std::make_unique<OpaquePlugin>());
    });
    r.Register("zonescore", [](const auto&) -> Result<PluginPtr> {
      return PluginPtr(std::make_unique<ZoneScorePlugin>(NodeDependence::kAnything));
    });
    r.Register("zonescore-shape-only", [](const auto&) -> Result<PluginPtr> {
      return PluginPtr(std::make_unique<ZoneScorePlugin>(NodeDependence::kShapeAndStateOnly));
    });
    return r;
  }();
  return registry;
}

struct Outcome {
  SessionStats stats;
  std::vector<PodState> pods;
  std::vector<std::string> fit_errors;
};

Outcome RunAllocate(const Cluster& c, SchedulerConfig cfg, bool opaque) {
  if (opaque) cfg.plugins.push_back({"opaque", {}, {}});
  auto created = Scheduler::Create(cfg, RegistryWithOpaque(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  auto scheduler = std::move(created).value();
  auto ssn = scheduler->OpenSession(c, kNowMs);
  scheduler->RunActions(*ssn);
  Outcome out;
  out.stats = ssn->stats();
  out.pods = ssn->pods();
  for (JobId j = 0; j < static_cast<JobId>(c.jobs.size()); ++j) {
    const auto& errors = ssn->job_state(j).fit_errors;
    out.fit_errors.push_back(errors.empty() ? "" : RenderJobFitErrors(errors));
  }
  return out;
}

// A cluster of three node shapes with random occupancy (running and releasing pods), a few
// tainted nodes, and pending gangs of random sizes, some with node selectors and tolerations.
Cluster RandomCluster(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  Cluster c;
  std::vector<NodeId> nodes;
  for (int i = 0; i < 120; ++i) {
    const int shape = uniform(0, 2);
    const double gpus = shape == 0 ? 8 : shape == 1 ? 4 : 0;
    const NodeId n = AddNode(c, "node-" + std::to_string(1000 + i), gpus, 64000, 256e9);
    c.nodes[n].labels.Set("zone", uniform(0, 1) ? "a" : "b");
    if (uniform(0, 19) == 0) c.nodes[n].taints.push_back({"dedicated", "infer", "NoSchedule"});
    nodes.push_back(n);
  }
  AddQueue(c, "dept");
  QueueSpec leaf;
  leaf.parent = "dept";
  leaf.gpu = {200, kUnlimited, 1};
  AddQueue(c, "team-a", leaf);
  leaf.gpu = {100, kUnlimited, 2};
  leaf.creation_ms = 1;
  AddQueue(c, "team-b", leaf);

  // Occupancy: one-GPU running pods (and a few releasing ones) until about 60% of GPUs are used.
  int job = 0;
  for (NodeId n : nodes) {
    const int used = static_cast<int>(c.nodes[n].allocatable.gpus) * uniform(0, 10) / 10;
    for (int g = 0; g < used; ++g) {
      JobSpec spec;
      spec.queue = uniform(0, 1) ? "team-a" : "team-b";
      spec.pod = PodSpec{1, 4000, 16e9};
      spec.creation_ms = job;
      const JobId j = AddJob(c, "run-" + std::to_string(job++), spec);
      Place(c, PodOf(c, j, 0), n, uniform(0, 9) == 0 ? PodStatus::kReleasing : PodStatus::kRunning);
    }
  }
  // Pending gangs.
  for (int i = 0; i < 70; ++i) {
    JobSpec spec;
    spec.queue = uniform(0, 1) ? "team-a" : "team-b";
    spec.pods = uniform(1, 6);
    const int kind = uniform(0, 3);
    spec.pod =
        kind == 3 ? PodSpec{0, 8000, 8e9} : PodSpec{static_cast<double>(1 << kind), 4000, 16e9};
    spec.priority = uniform(0, 1) ? 50 : 100;
    spec.preemptible = spec.priority < 100;
    spec.min_available = uniform(0, 3) == 0 ? 1 : spec.pods;
    spec.creation_ms = 10000 + i;
    const JobId j = AddJob(c, "gang-" + std::to_string(i), spec);
    if (uniform(0, 9) == 0) {
      for (PodId p : c.jobs[j].pods) c.pods[p].node_selector.Set("zone", "a");
    }
    if (uniform(0, 9) == 0) {
      for (PodId p : c.jobs[j].pods)
        c.pods[p].tolerations.push_back({"dedicated", "Exists", "", ""});
    }
  }
  c.Finalize();
  return c;
}

class NodeClassesTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(NodeClassesTest, SameDecisionsAsRankingEveryNode) {
  const Cluster c = RandomCluster(GetParam());
  for (const SchedulerConfig& cfg :
       {SchedulerConfig::Default(), Without(SchedulerConfig::Default(), "predicates"),
        WithArguments(SchedulerConfig::Default(), "nodeplacement",
                      {{"gpu", "spread"}, {"cpu", "spread"}})}) {
    const Outcome by_class = RunAllocate(c, cfg, /*opaque=*/false);
    const Outcome per_node = RunAllocate(c, cfg, /*opaque=*/true);
    int placed = 0;
    for (size_t p = 0; p < c.pods.size(); ++p) {
      EXPECT_EQ(by_class.pods[p].status, per_node.pods[p].status) << c.pods[p].name;
      EXPECT_EQ(by_class.pods[p].node, per_node.pods[p].node) << c.pods[p].name;
      placed +=
          c.pods[p].status == PodStatus::kPending && by_class.pods[p].status != PodStatus::kPending;
    }
    for (size_t j = 0; j < c.jobs.size(); ++j) {
      EXPECT_EQ(by_class.fit_errors[j], per_node.fit_errors[j]) << c.jobs[j].name;
    }
    // The comparison means something only if the cycle did place pods, and the two runs really
    // took the two paths (pods with node selectors are ranked per node in both).
    EXPECT_GT(placed, 20);
    EXPECT_GT(by_class.stats.rankings_by_class, 20);
    EXPECT_EQ(per_node.stats.rankings_by_class, 0);
    EXPECT_LT(by_class.stats.nodes_checked, per_node.stats.nodes_checked);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, NodeClassesTest, ::testing::Values(1, 2, 3, 4, 5));

// Identical empty nodes, zone=a on the first names and zone=b on the last: a label score must
// send every pod to a zone=b node, although all nodes are in one class (same shape and state).
struct ZoneRun {
  SessionStats stats;
  int placed = 0;
  int placed_in_b = 0;
};
ZoneRun RunWithZoneScore(const std::string& plugin) {
  Cluster c;
  for (int i = 0; i < 20; ++i) {
    const NodeId n = AddNode(c, "node-" + std::to_string(100 + i), 8, 64000, 256e9);
    c.nodes[n].labels.Set("zone", i < 15 ? "a" : "b");
  }
  AddQueue(c, "team");
  for (int i = 0; i < 4; ++i) {
    JobSpec spec;
    spec.queue = "team";
    spec.pod = PodSpec{1, 1000, 1e9};
    spec.creation_ms = i;
    AddJob(c, "job-" + std::to_string(i), spec);
  }
  c.Finalize();
  SchedulerConfig cfg = SchedulerConfig::Default();
  cfg.plugins.push_back({plugin, {}, {}});
  auto created = Scheduler::Create(cfg, RegistryWithOpaque(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  auto scheduler = std::move(created).value();
  auto ssn = scheduler->OpenSession(c, kNowMs);
  scheduler->RunActions(*ssn);
  ZoneRun run;
  run.stats = ssn->stats();
  for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
    const NodeId n = ssn->pod(p).node;
    if (ssn->pod(p).status == PodStatus::kPending || n == kNone) continue;
    ++run.placed;
    const std::string* zone = c.nodes[n].labels.Get("zone");
    run.placed_in_b += zone != nullptr && *zone == "b";
  }
  return run;
}

TEST(NodeClassesTest, LabelScoringNodeOrderPluginRanksRightWithDefaultOptions) {
  const ZoneRun run = RunWithZoneScore("zonescore");
  EXPECT_EQ(run.placed, 4);
  EXPECT_EQ(run.placed_in_b, 4);
  EXPECT_EQ(run.stats.rankings_by_class, 0);
  EXPECT_GT(run.stats.rankings_per_node, 0);
}

// What the default protects from: the same score declared shape-and-state-only is evaluated on
// one node per class (the smallest name, in zone a) and places every pod there.
TEST(NodeClassesTest, LabelScoreDeclaredShapeOnlyIsRankedByClass) {
  const ZoneRun run = RunWithZoneScore("zonescore-shape-only");
  EXPECT_EQ(run.placed, 4);
  EXPECT_GT(run.stats.rankings_by_class, 0);
  EXPECT_LT(run.placed_in_b, 4);
}

}  // namespace
}  // namespace gantry
