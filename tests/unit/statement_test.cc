// Statement: allocate / pipeline / evict change the session at once and can be rolled back to a
// checkpoint, discarded, or committed into decisions.
#include "framework/statement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::JobSpec;
using testutil::PodOf;
using testutil::PodSpec;
using testutil::Res;

using testutil::ExpectResourcesEq;
using testutil::ExpectSameState;
using testutil::Snapshot;
using testutil::Take;

void ExpectNodeEq(const NodeState& want, const NodeState& got, const std::string& what) {
  ExpectResourcesEq(want.idle, got.idle, what + ".idle");
  ExpectResourcesEq(want.used, got.used, what + ".used");
  ExpectResourcesEq(want.releasing, got.releasing, what + ".releasing");
}

// Field-by-field comparison of two snapshots; `when` names the moment in failure messages.

void ExpectCounters(const Session& s, JobId j, int active_allocated, int active_used, int alive,
                    int pending, const std::string& what) {
  const PodSetCounters& c = s.counters(j, 0);
  EXPECT_EQ(c.active_allocated, active_allocated) << what;
  EXPECT_EQ(c.active_used, active_used) << what;
  EXPECT_EQ(c.alive, alive) << what;
  EXPECT_EQ(c.pending, pending) << what;
  EXPECT_EQ(c.gated, 0) << what;
}

void ExpectQueueAllocated(const Session& s, QueueId q, double cpu, double mem, double gpus,
                          const std::string& what) {
  auto a = s.QueueAllocated(q);
  ASSERT_TRUE(a.has_value()) << what;
  EXPECT_EQ((*a)[QueueResource::kCpu], cpu) << what;
  EXPECT_EQ((*a)[QueueResource::kMemory], mem) << what;
  EXPECT_EQ((*a)[QueueResource::kGpu], gpus) << what;
}

// Two nodes, a department with one leaf queue, and three jobs:
//   a: two pending pods, 1 GPU / 1000m / 2 GB each
//   r: one pod running on n1, 1 GPU / 2000m / 4 GB
//   b: one pending pod, 1 GPU / 1000m / 2 GB
// Nodes have 16000m CPU, 64 GB memory, 110 pod slots; n0 has 4 GPUs, n1 has 2.
class StatementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    n0_ = AddNode(cluster_, "n0", 4);
    n1_ = AddNode(cluster_, "n1", 2);
    dept_ = AddQueue(cluster_, "dept");
    q_ = AddQueue(cluster_, "q", {.parent = "dept"});
    const PodSpec small{.gpus = 1, .cpu_millis = 1000, .memory_bytes = 2e9};
    a_ = AddJob(cluster_, "a", {.queue = "q", .pods = 2, .pod = small, .creation_ms = 1});
    r_ = AddJob(cluster_, "r",
                {.queue = "q",
                 .pod = {.gpus = 1, .cpu_millis = 2000, .memory_bytes = 4e9},
                 .creation_ms = 2});
    b_ = AddJob(cluster_, "b", {.queue = "q", .pod = small, .creation_ms = 3});
    testutil::Place(cluster_, PodOf(cluster_, r_, 0), n1_);
    cluster_.Finalize();
    a0_ = PodOf(cluster_, a_, 0);
    a1_ = PodOf(cluster_, a_, 1);
    r0_ = PodOf(cluster_, r_, 0);
    b0_ = PodOf(cluster_, b_, 0);
    scheduler_ = testutil::MakeScheduler(SchedulerConfig::Default());
    ssn_ = scheduler_->OpenSession(cluster_, testutil::kNowMs);
  }

  Session& ssn() { return *ssn_; }

  Cluster cluster_;
  NodeId n0_ = kNone, n1_ = kNone;
  QueueId dept_ = kNone, q_ = kNone;
  JobId a_ = kNone, r_ = kNone, b_ = kNone;
  PodId a0_ = kNone, a1_ = kNone, r0_ = kNone, b0_ = kNone;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Session> ssn_;
};

TEST_F(StatementTest, InitialSessionStateMatchesTheCluster) {
  // n0 is empty; n1 carries r-0 (2000m, 4 GB, 1 GPU, 1 slot).
  ExpectNodeEq({Res(16000, 64e9, 4, 110), {}, {}}, ssn().node(n0_), "n0");
  ExpectNodeEq({Res(14000, 60e9, 1, 109), Res(2000, 4e9, 1, 1), {}}, ssn().node(n1_), "n1");
  ExpectCounters(ssn(), a_, 0, 0, 2, 2, "job a");
  ExpectCounters(ssn(), r_, 1, 1, 1, 0, "job r");
  // Only r-0 is allocated: it counts for its leaf queue and for the department.
  ExpectQueueAllocated(ssn(), q_, 2000, 4e9, 1, "q");
  ExpectQueueAllocated(ssn(), dept_, 2000, 4e9, 1, "dept");
}

TEST_F(StatementTest, AllocateEvictPipelineUpdateTheSessionAtOnce) {
  Statement stmt(ssn());

  stmt.Allocate(a0_, n0_);
  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kAllocated);
  EXPECT_EQ(ssn().pod(a0_).node, n0_);
  EXPECT_TRUE(ssn().pod(a0_).virtual_status);
  // n0: idle 16000-1000, 64-2 GB, 4-1 GPUs, 110-1 slots; used = a-0's request.
  ExpectNodeEq({Res(15000, 62e9, 3, 109), Res(1000, 2e9, 1, 1), {}}, ssn().node(n0_),
               "n0 after allocate");
  ExpectCounters(ssn(), a_, 1, 1, 2, 1, "job a after allocate");
  // q: r-0 (2000m, 4 GB, 1 GPU) + a-0 (1000m, 2 GB, 1 GPU).
  ExpectQueueAllocated(ssn(), q_, 3000, 6e9, 2, "q after allocate");
  ExpectQueueAllocated(ssn(), dept_, 3000, 6e9, 2, "dept after allocate");

  stmt.Evict(r0_, "make room");
  EXPECT_EQ(ssn().pod(r0_).status, PodStatus::kReleasing);
  EXPECT_EQ(ssn().pod(r0_).node, n1_);
  EXPECT_TRUE(ssn().pod(r0_).virtual_status);
  // n1: r-0 still uses its resources but they are now releasing; idle does not change.
  ExpectNodeEq({Res(14000, 60e9, 1, 109), Res(2000, 4e9, 1, 1), Res(2000, 4e9, 1, 1)},
               ssn().node(n1_), "n1 after evict");
  // A releasing pod is active-used but neither active-allocated nor alive.
  ExpectCounters(ssn(), r_, 0, 1, 0, 0, "job r after evict");
  // q loses r-0: only a-0 remains.
  ExpectQueueAllocated(ssn(), q_, 1000, 2e9, 1, "q after evict");

  stmt.Pipeline(a1_, n1_);
  EXPECT_EQ(ssn().pod(a1_).status, PodStatus::kPipelined);
  EXPECT_EQ(ssn().pod(a1_).node, n1_);
  EXPECT_TRUE(ssn().pod(a1_).virtual_status);
  // n1: a-1 takes from releasing (2000-1000, 4-2 GB, 1-1 GPU, 1-1 slot); used grows by a-1.
  ExpectNodeEq({Res(14000, 60e9, 1, 109), Res(3000, 6e9, 2, 2), Res(1000, 2e9, 0, 0)},
               ssn().node(n1_), "n1 after pipeline");
  ExpectCounters(ssn(), a_, 2, 2, 2, 0, "job a after pipeline");
  ExpectQueueAllocated(ssn(), q_, 2000, 4e9, 2, "q after pipeline");
  // n0 was not touched by the last two operations.
  ExpectNodeEq({Res(15000, 62e9, 3, 109), Res(1000, 2e9, 1, 1), {}}, ssn().node(n0_),
               "n0 at the end");
  EXPECT_FALSE(stmt.empty());
}

// Session::jobs_pending_at_open lists the jobs with pending pods when the session was built,
// and every job with pending pods later is among them: operations and their undo never make a
// pod pending that was not pending before.
TEST_F(StatementTest, JobsWithPendingPodsStayAmongThosePendingAtOpen) {
  EXPECT_EQ(ssn().jobs_pending_at_open(), (std::vector<JobId>{a_, b_}));
  auto expect_covered = [&](const std::string& when) {
    const auto& at_open = ssn().jobs_pending_at_open();
    for (JobId j = 0; j < static_cast<JobId>(cluster_.jobs.size()); ++j) {
      if (!ssn().HasPendingPods(j)) continue;
      EXPECT_NE(std::find(at_open.begin(), at_open.end(), j), at_open.end())
          << cluster_.jobs[j].name << " has pending pods " << when;
    }
  };
  Statement stmt(ssn());
  const auto start = stmt.checkpoint();
  stmt.Allocate(a0_, n0_);
  stmt.Evict(r0_, "make room");
  stmt.Pipeline(a1_, n1_);
  stmt.Pipeline(b0_, n0_);
  EXPECT_FALSE(ssn().HasPendingPods(a_));
  EXPECT_FALSE(ssn().HasPendingPods(b_));
  expect_covered("after allocate, evict and pipelines");
  stmt.Rollback(start);
  EXPECT_TRUE(ssn().HasPendingPods(a_));
  EXPECT_TRUE(ssn().HasPendingPods(b_));
  EXPECT_FALSE(ssn().HasPendingPods(r_));
  expect_covered("after the rollback");
  stmt.Evict(r0_, "again");
  stmt.Commit();
  EXPECT_FALSE(ssn().HasPendingPods(r_));
  expect_covered("after an eviction is committed");
  EXPECT_EQ(ssn().jobs_pending_at_open(), (std::vector<JobId>{a_, b_}));
}

// A whole job's allocated sum is kept while its version holds (Session::ViewAllocated): it must
// follow every operation and rollback, as the same sum over an explicit list of the job's pods
// (never kept) does.
TEST_F(StatementTest, WholeJobAllocatedFollowsOperationsAndRollbacks) {
  auto expect_fresh = [&](const std::string& when) {
    for (JobId j : {a_, r_}) {
      const Job& job = cluster_.jobs[j];
      const Quantities kept = ssn().ViewAllocated(JobView{j, false, {}});
      const Quantities fresh = ssn().ViewAllocated(JobView{j, true, job.pods});
      for (auto res : kQueueResources) EXPECT_EQ(kept[res], fresh[res]) << job.name << " " << when;
    }
  };
  expect_fresh("at the start");
  Statement stmt(ssn());
  const auto start = stmt.checkpoint();
  stmt.Allocate(a0_, n0_);
  expect_fresh("after allocate");
  EXPECT_GT(ssn().ViewAllocated(JobView{a_, false, {}})[QueueResource::kGpu], 0);
  stmt.Evict(r0_, "make room");
  expect_fresh("after evict");
  stmt.Pipeline(a1_, n1_);
  expect_fresh("after pipeline");
  stmt.Rollback(start);
  expect_fresh("after rollback");
  EXPECT_EQ(ssn().ViewAllocated(JobView{a_, false, {}})[QueueResource::kGpu], 0);
}

// The first whole-job sum asked for sums every job at once (Session::ViewAllocated): a job whose
// pods changed after that, and that was not asked for in between, must still get its new sum.
TEST_F(StatementTest, WholeJobAllocatedOfJobsSummedAtOnceFollowsLaterOperations) {
  auto expect_fresh = [&](JobId j, const std::string& when) {
    const Job& job = cluster_.jobs[j];
    const Quantities kept = ssn().ViewAllocated(JobView{j, false, {}});
    const Quantities fresh = ssn().ViewAllocated(JobView{j, true, job.pods});
    for (auto res : kQueueResources) EXPECT_EQ(kept[res], fresh[res]) << job.name << " " << when;
  };
  Statement stmt(ssn());
  // (The first sum: b's and r's are summed with it.)
  expect_fresh(a_, "at the start");
  stmt.Evict(r0_, "make room");
  stmt.Allocate(b0_, n0_);
  expect_fresh(r_, "after r's pod was evicted");
  expect_fresh(b_, "after b's pod was allocated");
  EXPECT_GT(ssn().ViewAllocated(JobView{b_, false, {}})[QueueResource::kGpu], 0);
  stmt.Discard();
  expect_fresh(b_, "after the discard");
  expect_fresh(r_, "after the discard");
}

TEST_F(StatementTest, RollbackRestoresEachCheckpointExactly) {
  const Snapshot s0 = Take(ssn());
  Statement stmt(ssn());
  const auto cp0 = stmt.checkpoint();
  stmt.Allocate(a0_, n0_);
  const Snapshot s1 = Take(ssn());
  const auto cp1 = stmt.checkpoint();
  stmt.Evict(r0_, "make room");
  const Snapshot s2 = Take(ssn());
  const auto cp2 = stmt.checkpoint();
  stmt.Pipeline(a1_, n1_);
  stmt.Allocate(b0_, n0_);

  stmt.Rollback(cp2);
  ExpectSameState(s2, Take(ssn()), cluster_, "rolled back to after evict");
  stmt.Rollback(cp1);
  ExpectSameState(s1, Take(ssn()), cluster_, "rolled back to after allocate");
  stmt.Rollback(cp0);
  ExpectSameState(s0, Take(ssn()), cluster_, "rolled back to the start");
  EXPECT_TRUE(stmt.empty());
}

TEST_F(StatementTest, DiscardRestoresTheWholeSessionState) {
  const Snapshot before = Take(ssn());
  const uint64_t epoch = ssn().placement_epoch();
  {
    Statement stmt(ssn());
    stmt.Allocate(a0_, n0_);
    stmt.Evict(r0_, "make room");
    stmt.Pipeline(a1_, n1_);
    stmt.Allocate(b0_, n1_);
    EXPECT_GT(ssn().placement_epoch(), epoch);
    stmt.Discard();
    EXPECT_TRUE(stmt.empty());
  }
  ExpectSameState(before, Take(ssn()), cluster_, "after discard");
  EXPECT_TRUE(ssn().binds().empty());
  EXPECT_TRUE(ssn().evictions().empty());
  EXPECT_TRUE(ssn().pipelined().empty());
}

TEST_F(StatementTest, OperationsAfterARollbackCanBeRolledBackToo) {
  const Snapshot before = Take(ssn());
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  const auto cp = stmt.checkpoint();
  stmt.Allocate(a1_, n0_);
  stmt.Rollback(cp);
  stmt.Allocate(a1_, n1_);  // a different node this time
  // n1: r-0 plus a-1: idle 14000-1000, 60-2 GB, 1-1 GPU, 109-1 slots.
  ExpectNodeEq({Res(13000, 58e9, 0, 108), Res(3000, 6e9, 2, 2), {}}, ssn().node(n1_), "n1");
  stmt.Discard();
  ExpectSameState(before, Take(ssn()), cluster_, "after discard");
}

TEST_F(StatementTest, CommitTurnsOperationsIntoDecisions) {
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  stmt.Evict(r0_, "make room for a");
  stmt.Pipeline(a1_, n1_);
  const Snapshot before_commit = Take(ssn());
  stmt.Commit();
  EXPECT_TRUE(stmt.empty());

  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kBinding);
  EXPECT_EQ(ssn().pod(a1_).status, PodStatus::kPipelined);
  EXPECT_EQ(ssn().pod(r0_).status, PodStatus::kReleasing);
  for (PodId p : {a0_, a1_, r0_}) {
    EXPECT_FALSE(ssn().pod(p).virtual_status) << cluster_.pods[p].name;
  }

  ASSERT_EQ(ssn().binds().size(), 1u);
  EXPECT_EQ(ssn().binds()[0].pod, a0_);
  EXPECT_EQ(ssn().binds()[0].node, n0_);
  ASSERT_EQ(ssn().pipelined().size(), 1u);
  EXPECT_EQ(ssn().pipelined()[0].pod, a1_);
  EXPECT_EQ(ssn().pipelined()[0].node, n1_);
  EXPECT_EQ(ssn().pipelined()[0].message, "Pod ns/a-1 was pipelined to node n1");
  ASSERT_EQ(ssn().evictions().size(), 1u);
  EXPECT_EQ(ssn().evictions()[0].pod, r0_);
  EXPECT_EQ(ssn().evictions()[0].node, n1_);
  EXPECT_EQ(ssn().evictions()[0].message, "make room for a");

  // Committing moves no resources and keeps the counters (binding is still active-allocated).
  const Snapshot after = Take(ssn());
  for (size_t n = 0; n < after.nodes.size(); ++n) {
    ExpectNodeEq(before_commit.nodes[n], after.nodes[n], "node " + cluster_.nodes[n].name);
  }
  ExpectCounters(ssn(), a_, 2, 2, 2, 0, "job a after commit");
  ExpectQueueAllocated(ssn(), q_, 2000, 4e9, 2, "q after commit");
}

TEST_F(StatementTest, CommittedOperationsAreNotUndoneByALaterDiscard) {
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  stmt.Commit();
  const Snapshot committed = Take(ssn());
  stmt.Allocate(a1_, n0_);
  stmt.Discard();
  ExpectSameState(committed, Take(ssn()), cluster_, "after commit then discard");
  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kBinding);
  EXPECT_EQ(ssn().binds().size(), 1u);
}

// A pending pod may name a node it does not occupy (spec section 13.2). Rolling back an
// allocation clears that attribute; rolling back a pipelining restores it.
class PendingPodWithNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    n0_ = AddNode(cluster_, "n0", 2);
    n1_ = AddNode(cluster_, "n1", 2);
    AddQueue(cluster_, "q");
    const JobId j = AddJob(cluster_, "j", {.queue = "q", .pod = {.gpus = 1}});
    p_ = PodOf(cluster_, j, 0);
    cluster_.pods[p_].node = n1_;  // still pending
    cluster_.Finalize();
    scheduler_ = testutil::MakeScheduler();
    ssn_ = scheduler_->OpenSession(cluster_, testutil::kNowMs);
  }
  Cluster cluster_;
  NodeId n0_ = kNone, n1_ = kNone;
  PodId p_ = kNone;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Session> ssn_;
};

TEST_F(PendingPodWithNodeTest, TheNamedNodeHoldsNothing) {
  EXPECT_EQ(ssn_->pod(p_).status, PodStatus::kPending);
  EXPECT_EQ(ssn_->pod(p_).node, n1_);
  EXPECT_EQ(ssn_->node(n1_).idle.gpus, 2);
  EXPECT_EQ(ssn_->node(n1_).used.gpus, 0);
}

TEST_F(PendingPodWithNodeTest, RolledBackAllocationClearsTheNode) {
  Statement stmt(*ssn_);
  stmt.Allocate(p_, n0_);
  EXPECT_EQ(ssn_->pod(p_).node, n0_);
  stmt.Discard();
  EXPECT_EQ(ssn_->pod(p_).status, PodStatus::kPending);
  EXPECT_EQ(ssn_->pod(p_).node, kNone);
  EXPECT_EQ(ssn_->node(n0_).idle.gpus, 2);
}

TEST_F(PendingPodWithNodeTest, RolledBackPipeliningRestoresTheNode) {
  Statement stmt(*ssn_);
  stmt.Pipeline(p_, n0_);
  EXPECT_EQ(ssn_->pod(p_).node, n0_);
  stmt.Discard();
  EXPECT_EQ(ssn_->pod(p_).status, PodStatus::kPending);
  EXPECT_EQ(ssn_->pod(p_).node, n1_);
  // Neither node keeps anything: n0 gets its releasing GPU back, n1 was never charged.
  EXPECT_EQ(ssn_->node(n0_).releasing.gpus, 0);
  EXPECT_EQ(ssn_->node(n0_).used.gpus, 0);
  EXPECT_EQ(ssn_->node(n1_).used.gpus, 0);
}

TEST_F(StatementTest, ConvertAllAllocatedToPipelinedOnlyTouchesTheJob) {
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  stmt.Allocate(b0_, n0_);
  stmt.Allocate(a1_, n0_);
  // n0 after three 1-GPU / 1000m / 2 GB pods: idle 13000, 58 GB, 1 GPU, 107 slots.
  const NodeState n0_allocated = ssn().node(n0_);
  ExpectNodeEq({Res(13000, 58e9, 1, 107), Res(3000, 6e9, 3, 3), {}}, n0_allocated, "n0");

  stmt.ConvertAllAllocatedToPipelined(a_);
  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kPipelined);
  EXPECT_EQ(ssn().pod(a1_).status, PodStatus::kPipelined);
  EXPECT_EQ(ssn().pod(a0_).node, n0_);
  EXPECT_EQ(ssn().pod(a1_).node, n0_);
  EXPECT_EQ(ssn().pod(b0_).status, PodStatus::kAllocated);
  // a-0 and a-1 go back to idle and are charged to releasing instead (KAI's NodeInfo accounting
  // for pipelined pods): idle 13000 + 2*1000 = 15000, releasing 0 - 2*1000 = -2000, and the
  // non-allocated total (idle + releasing) is unchanged.
  const NodeState& n0 = ssn().node(n0_);
  ExpectNodeEq({Res(15000, 62e9, 3, 109), Res(3000, 6e9, 3, 3), Res(-2000, -4e9, -2, -2)}, n0,
               "n0 after convert");
  ExpectResourcesEq(n0_allocated.NonAllocated(), n0.NonAllocated(), "n0 non-allocated");
  // Pipelined pods stay active-allocated; the queue keeps all three pods plus r-0.
  ExpectCounters(ssn(), a_, 2, 2, 2, 0, "job a after convert");
  ExpectCounters(ssn(), b_, 1, 1, 1, 0, "job b after convert");
  ExpectQueueAllocated(ssn(), q_, 5000, 10e9, 4, "q after convert");

  stmt.Commit();
  ASSERT_EQ(ssn().binds().size(), 1u);
  EXPECT_EQ(ssn().binds()[0].pod, b0_);
  ASSERT_EQ(ssn().pipelined().size(), 2u);
  EXPECT_EQ(ssn().pipelined()[0].pod, a0_);
  EXPECT_EQ(ssn().pipelined()[1].pod, a1_);
  EXPECT_EQ(ssn().pipelined()[0].node, n0_);
}

TEST_F(StatementTest, ConvertedStatementStillDiscardsToTheStart) {
  const Snapshot before = Take(ssn());
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  stmt.Evict(r0_, "make room");
  stmt.Allocate(b0_, n1_);
  stmt.Allocate(a1_, n0_);
  stmt.ConvertAllAllocatedToPipelined(a_);
  stmt.Discard();
  ExpectSameState(before, Take(ssn()), cluster_, "after convert and discard");
}

// State versions (what caches of pod states key on): a change gets a new number, a rollback gives
// the old one back when nothing else changed since, and a different state never shows an old
// number again.
TEST_F(StatementTest, RollbackGivesStateVersionsBack) {
  const uint64_t v0 = ssn().state_version();
  const uint64_t q0 = ssn().queue_version(q_);
  const uint64_t d0 = ssn().queue_version(dept_);
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  const uint64_t v1 = ssn().state_version();
  EXPECT_NE(v1, v0);
  EXPECT_EQ(ssn().queue_version(q_), v1);
  EXPECT_EQ(ssn().queue_version(dept_), v1);
  const auto cp = stmt.checkpoint();
  stmt.Evict(r0_);
  EXPECT_NE(ssn().state_version(), v1);
  stmt.Rollback(cp);
  EXPECT_EQ(ssn().state_version(), v1);
  EXPECT_EQ(ssn().queue_version(q_), v1);
  stmt.Discard();
  EXPECT_EQ(ssn().state_version(), v0);
  EXPECT_EQ(ssn().queue_version(q_), q0);
  EXPECT_EQ(ssn().queue_version(dept_), d0);
}

TEST_F(StatementTest, UndoOutOfOrderGivesNewStateVersions) {
  // Converting a0's allocation to a pipelining undoes it while a later eviction stands: the
  // state is then one the session never had, so its version must be new.
  const uint64_t v0 = ssn().state_version();
  Statement stmt(ssn());
  stmt.Allocate(a0_, n0_);
  const uint64_t v1 = ssn().state_version();
  stmt.Evict(r0_);
  const uint64_t v2 = ssn().state_version();
  stmt.ConvertAllAllocatedToPipelined(a_);
  const uint64_t v3 = ssn().state_version();
  EXPECT_NE(v3, v0);
  EXPECT_NE(v3, v1);
  EXPECT_NE(v3, v2);
  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kPipelined);
  stmt.Discard();
  EXPECT_EQ(ssn().pod(a0_).status, PodStatus::kPending);
  EXPECT_EQ(ssn().pod(r0_).status, PodStatus::kRunning);
  const uint64_t v4 = ssn().state_version();
  EXPECT_NE(v4, v1);
  EXPECT_NE(v4, v2);
  EXPECT_NE(v4, v3);
}

}  // namespace
}  // namespace gantry
