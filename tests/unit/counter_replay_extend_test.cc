// The counter replay continued from a node's previous one (issue 24):
// Session::EvictAndRollBackCountersExtending against Session::EvictAndRollBackCounters, its
// reference. Switch: SchedulerParams::solver_counter_replay_extend.
//
// - CounterReplayExtendSession: on sessions of the fractional and sharing shapes once the default
//   actions ran, per node with a shared-GPU pod, growing lists of its active pods (each the last
//   one and one more pod, as a prefix's scenarios grow) are replayed in two sessions, one by each
//   function, with the other nodes' replays, a statement's evict + rollback on the node and
//   refused replays in between: every call shows the same free GPUs and leaves every node
//   counter, device and queue sum the same; some calls continue a kept replay.
// - CounterReplayExtendTest: cycles with the rule on and off decide the same and pass the same
//   number of scenarios through the filters and pre-check the same nodes on replayed counters.
// - CounterReplayExtendCoverage: the rule continues replays on the fractional shape.
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "differential_cycle.h"
#include "framework/session.h"
#include "framework/statement.h"

namespace gantry {
namespace {

using differential::CycleDecisions;
using differential::ShapeCase;

// A session of `file` once the default actions ran.
struct ExtendRanSession {
  Scenario scenario;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Session> session;
};
ExtendRanSession ExtendRunDefaultActions(const std::string& file) {
  ExtendRanSession r;
  auto loaded = LoadScenarioFile(file);
  EXPECT_TRUE(loaded.ok());
  if (!loaded.ok()) return r;
  r.scenario = std::move(loaded).value();
  const int64_t now = ScenarioStartMs();
  PrepareScenarioCycle(r.scenario, r.scenario.cluster, now);
  SchedulerConfig config = r.scenario.config;
  config.actions = SchedulerConfig::Default().actions;
  auto created = Scheduler::Create(config, BuiltinPlugins(), BuiltinActions());
  EXPECT_TRUE(created.ok());
  if (!created.ok()) return r;
  r.scheduler = std::move(created).value();
  r.session = r.scheduler->OpenSession(r.scenario.cluster, now);
  r.scheduler->RunActions(*r.session, [](std::string_view, double) {});
  return r;
}

void ExtendExpectSameCounters(const Session& a, const Session& b, const std::string& what) {
  for (NodeId n = 0; n < static_cast<NodeId>(a.cluster().nodes.size()); ++n) {
    EXPECT_EQ(a.node(n).idle, b.node(n).idle) << what << " node " << n;
    EXPECT_EQ(a.node(n).used, b.node(n).used) << what << " node " << n;
    EXPECT_EQ(a.node(n).releasing, b.node(n).releasing) << what << " node " << n;
    EXPECT_TRUE(a.shared_gpus(n) == b.shared_gpus(n)) << what << " node " << n;
    EXPECT_EQ(a.non_allocated_gpus()[n], b.non_allocated_gpus()[n]) << what << " node " << n;
  }
  for (QueueId q = 0; q < static_cast<QueueId>(a.cluster().queues.size()); ++q) {
    EXPECT_EQ(a.QueueAllocated(q), b.QueueAllocated(q)) << what << " queue " << q;
  }
}

struct ExtendCounts {
  size_t calls = 0;
  size_t extended = 0;
  size_t drifted = 0;  // calls whose evict + rollback moved the node's free GPUs
};

// Session `a` replays with the reference, `b` with the extending replay; `refuse` says which
// calls the callback refuses (nothing may change then).
void ExtendReplayBoth(Session& a, Session& b, std::span<const PodId> pods, bool refuse,
                      ExtendCounts& counts, const std::string& what) {
  std::vector<double> free_a;
  std::vector<double> free_b;
  const NodeId n = a.pod(pods.front()).node;
  const double before = a.non_allocated_gpus()[n];
  const bool applied_a = a.EvictAndRollBackCounters(
      pods, [&](std::span<const NodeId>, std::span<const double> free) {
        free_a.assign(free.begin(), free.end());
        return !refuse;
      });
  bool extended = false;
  const bool applied_b = b.EvictAndRollBackCountersExtending(
      pods,
      [&](std::span<const NodeId>, std::span<const double> free) {
        free_b.assign(free.begin(), free.end());
        return !refuse;
      },
      extended);
  EXPECT_EQ(applied_a, applied_b) << what;
  EXPECT_EQ(free_a, free_b) << what;
  ExtendExpectSameCounters(a, b, what);
  ++counts.calls;
  if (extended) ++counts.extended;
  if (a.non_allocated_gpus()[n] != before) ++counts.drifted;
}

ExtendCounts CompareExtendingWithReference(const std::string& file) {
  ExtendCounts counts;
  ExtendRanSession a = ExtendRunDefaultActions(file);
  ExtendRanSession b = ExtendRunDefaultActions(file);
  if (!a.session || !b.session) return counts;
  const Cluster& c = a.scenario.cluster;
  std::vector<std::vector<PodId>> on_node(c.nodes.size());
  std::vector<char> has_shared(c.nodes.size(), 0);
  for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
    const PodState& st = a.session->pod(p);
    if (st.node == kNone || !IsActiveAllocated(st.status)) continue;
    on_node[st.node].push_back(p);
    if (c.pods[p].IsSharedGpu()) has_shared[st.node] = 1;
  }
  std::vector<NodeId> nodes;
  for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
    if (has_shared[n]) nodes.push_back(n);
  }
  // Two rounds over the nodes, growing each node's list by one pod per visit, the nodes
  // interleaved (a node's kept replay must survive the others' replays).
  size_t step = 0;
  for (size_t length = 1; length <= 12; ++length) {
    for (NodeId n : nodes) {
      const std::vector<PodId>& all = on_node[n];
      if (length > all.size()) continue;
      const std::span<const PodId> pods(all.data(), length);
      const std::string what = "node " + std::to_string(n) + " length " + std::to_string(length);
      ++step;
      // Now and then: refused (nothing changes, the kept replay stays valid), or a statement
      // evicts and rolls back one of the node's pods first (the node changes: not continued).
      if (step % 7 == 3) ExtendReplayBoth(*a.session, *b.session, pods, true, counts, what);
      if (step % 11 == 5) {
        for (Session* s : {a.session.get(), b.session.get()}) {
          Statement stmt(*s);
          stmt.Evict(all[length - 1]);
          stmt.Rollback(0);
        }
        ExtendExpectSameCounters(*a.session, *b.session, what + " after a statement");
      }
      ExtendReplayBoth(*a.session, *b.session, pods, false, counts, what);
      // The same list again (continued with nothing added).
      if (step % 5 == 1) ExtendReplayBoth(*a.session, *b.session, pods, false, counts, what);
    }
  }
  // A list that does not start with the kept one: replayed in full.
  for (NodeId n : nodes) {
    if (on_node[n].size() < 3) continue;
    std::vector<PodId> reversed(on_node[n].rbegin(), on_node[n].rend());
    ExtendReplayBoth(*a.session, *b.session, reversed, false, counts, "reversed");
    break;
  }
  a.scheduler->CloseSession(*a.session);
  b.scheduler->CloseSession(*b.session);
  return counts;
}

TEST(CounterReplayExtendSession, SameCountersAsTheFullReplay) {
  size_t extended = 0;
  size_t drifted = 0;
  for (const ShapeCase& k : {ShapeCase{"fractional", 160, 1}, ShapeCase{"sharing", 64, 2}}) {
    bench::ClusterGenSummary summary;
    const std::string file = differential::WriteShapeCluster("counter-replay-extend", k, summary);
    const ExtendCounts counts = CompareExtendingWithReference(file);
    EXPECT_GT(counts.calls, 0u) << k.shape;
    extended += counts.extended;
    drifted += counts.drifted;
    std::filesystem::remove(file);
  }
  // Not vacuous: replays were continued, and some drifted (those must not be kept).
  EXPECT_GT(extended, 0u);
  EXPECT_GT(drifted, 0u);
}

uint64_t ExtendSum(const CycleDecisions& d, uint64_t SolverActionStats::*field) {
  return differential::SumOverActions(d.solver_stats, field);
}

CycleDecisions CounterReplayExtendCycle(const std::string& file, bool on) {
  return differential::RunCycle(
      file, [on](SchedulerParams& params) { params.solver_counter_replay_extend = on; });
}

class CounterReplayExtendTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(CounterReplayExtendTest, SameDecisionsAsTheFullReplay) {
  const ShapeCase& k = GetParam();
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("counter-replay-extend", k, summary);
  const CycleDecisions on = CounterReplayExtendCycle(file, true);
  const CycleDecisions off = CounterReplayExtendCycle(file, false);
  differential::ExpectSameDecisions(on, off);
  EXPECT_EQ(ExtendSum(on, &SolverActionStats::scenarios),
            ExtendSum(off, &SolverActionStats::scenarios));
  EXPECT_EQ(ExtendSum(on, &SolverActionStats::precheck_replay),
            ExtendSum(off, &SolverActionStats::precheck_replay));
  EXPECT_EQ(ExtendSum(on, &SolverActionStats::simulations),
            ExtendSum(off, &SolverActionStats::simulations));
  EXPECT_EQ(ExtendSum(off, &SolverActionStats::replay_extended), 0u);
  std::filesystem::remove(file);
}

std::vector<ShapeCase> CounterReplayExtendCases() {
  std::vector<ShapeCase> cases;
  for (uint64_t seed : {1, 2, 4}) cases.push_back({"fractional", 160, seed});
  for (uint64_t seed = 1; seed <= 2; ++seed) cases.push_back({"fractional", 48, seed});
  for (uint64_t seed = 1; seed <= 3; ++seed) cases.push_back({"sharing", 64, seed});
  cases.push_back({"mixed", 120, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CounterReplayExtendTest,
                         ::testing::ValuesIn(CounterReplayExtendCases()),
                         differential::ShapeCaseName);

TEST(CounterReplayExtendCoverage, TheRuleContinuesReplays) {
  bench::ClusterGenSummary summary;
  const std::string file = differential::WriteShapeCluster("counter-replay-extend-coverage",
                                                           {"fractional", 160, 1}, summary);
  EXPECT_GT(ExtendSum(CounterReplayExtendCycle(file, true), &SolverActionStats::replay_extended),
            0u);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gantry
