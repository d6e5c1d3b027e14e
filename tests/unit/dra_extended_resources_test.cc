// DRA-backed extended resources (KEP-5004, KAI #1943): an extended resource a pod requests may be
// met by a DRA device instead of a device plugin, on nodes that report none of it in their
// allocatable. KAI v0.17 then does not charge that resource to the node when it adds the pod
// (node_info.go): the node's used, idle and releasing amounts of a resource it has none of stay
// untouched, while everything else the pod requests is charged as usual. On a node that does
// have the resource, it is charged.
#include <gtest/gtest.h>

#include "framework/statement.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::PodOf;

constexpr const char* kAccel = "example.com/accel";

// Node "plugin" reports 2 of the accelerator (device plugin); node "dra" reports none (its
// accelerators come from ResourceSlices). One running pod asking for 1 accelerator on each, and
// one releasing pod asking for 1 on "dra".
struct Accelerators {
  Cluster c;
  NodeId plugin = kNone, dra = kNone;
  int slot = -1;
  JobId on_plugin = kNone, on_dra = kNone, releasing = kNone;
};

Accelerators Build() {
  Accelerators a;
  a.slot = a.c.resource_names.Intern(kAccel);
  a.plugin = AddNode(a.c, "plugin", 0);
  a.dra = AddNode(a.c, "dra", 0);
  a.c.nodes[a.plugin].allocatable.scalars[a.slot] = 2;
  AddQueue(a.c, "q");
  a.on_plugin = AddJob(a.c, "on-plugin", {.queue = "q", .creation_ms = 1});
  a.on_dra = AddJob(a.c, "on-dra", {.queue = "q", .creation_ms = 2});
  a.releasing = AddJob(a.c, "releasing", {.queue = "q", .creation_ms = 3});
  for (JobId j : {a.on_plugin, a.on_dra, a.releasing}) {
    a.c.pods[PodOf(a.c, j, 0)].request.scalars[a.slot] = 1;
  }
  testutil::Place(a.c, PodOf(a.c, a.on_plugin, 0), a.plugin);
  testutil::Place(a.c, PodOf(a.c, a.on_dra, 0), a.dra);
  testutil::Place(a.c, PodOf(a.c, a.releasing, 0), a.dra, PodStatus::kReleasing);
  a.c.Finalize();
  return a;
}

TEST(DraBackedExtendedResources, NotChargedToANodeThatHasNoneOfThem) {
  const Accelerators a = Build();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(a.c, testutil::kNowMs);
  const NodeState& dra = ssn->node(a.dra);
  EXPECT_EQ(dra.used.scalars[a.slot], 0);
  EXPECT_EQ(dra.idle.scalars[a.slot], 0);  // not -2
  EXPECT_EQ(dra.releasing.scalars[a.slot], 0);
  // The rest of both pods' requests is charged: one CPU each, the releasing one as releasing.
  EXPECT_EQ(dra.used.cpu_millis, 2000);
  EXPECT_EQ(dra.releasing.cpu_millis, 1000);
  EXPECT_EQ(dra.used.pods, 2);
  // The node with the resource is charged as before.
  const NodeState& plugin = ssn->node(a.plugin);
  EXPECT_EQ(plugin.used.scalars[a.slot], 1);
  EXPECT_EQ(plugin.idle.scalars[a.slot], 1);
}

TEST(DraBackedExtendedResources, EvictingAndPlacingAgainLeavesTheNodeUncharged) {
  // A statement that evicts the pod on "dra" and rolls back never moves the resource either way.
  const Accelerators a = Build();
  auto scheduler = testutil::MakeScheduler();
  auto ssn = scheduler->OpenSession(a.c, testutil::kNowMs);
  Statement stmt(*ssn);
  stmt.Evict(PodOf(a.c, a.on_dra, 0));
  EXPECT_EQ(ssn->node(a.dra).idle.scalars[a.slot], 0);
  EXPECT_EQ(ssn->node(a.dra).releasing.scalars[a.slot], 0);
  EXPECT_EQ(ssn->node(a.dra).releasing.cpu_millis, 2000);
  stmt.Discard();
  EXPECT_EQ(ssn->node(a.dra).idle.scalars[a.slot], 0);
  EXPECT_EQ(ssn->node(a.dra).used.scalars[a.slot], 0);
  EXPECT_EQ(ssn->node(a.dra).releasing.cpu_millis, 1000);
}

}  // namespace
}  // namespace gantry
