// The bin-packing order of a topology tree's domains (plugins/topology/domain_order.h), asked
// directly on hand-made trees: children fullest first, ties by id. SortTreeFollowing (the node
// journal's form, with and without SchedulerParams::topology_sort_skip_sorted) must leave the
// children in the order the reference SortTree gives.
//
// - EqualKeysAreOrderedById: every child has the same key and the children start out of id
//   order. Their keys alone are in order, so a skip test that compares keys and not ids would
//   leave them as they are (caught: the skip test without the id tie-break).
// - KeysDescendingThenIds: keys of two values, out of order, and ids out of order within each
//   (the sort runs; the fuller children come first).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/topology/domain_order.h"
#include "plugins/topology/tree.h"
#include "test_cluster.h"

namespace gantry {
namespace {

// A root with one child per entry of `children`: (id, free GPUs), in that order, all leaves.
topology::Tree MakeFlatTree(const std::vector<std::pair<std::string, double>>& children) {
  topology::Tree tree;
  tree.domains.push_back(topology::MakeDomain("", -1));
  for (const auto& [id, gpus] : children) {
    topology::Domain d = topology::MakeDomain(id, 0);
    d.free.gpus = gpus;
    d.free.cpu_millis = 64000;
    d.free.memory_bytes = 256e9;
    tree.domains.push_back(std::move(d));
    topology::AddChild(tree, 0, static_cast<int32_t>(tree.domains.size() - 1));
  }
  tree.sum_dirty.assign(tree.domains.size(), 0);
  tree.dirty_at.assign(2, {});
  tree.asked_serial = 1;
  return tree;
}

std::vector<std::string> ChildIds(const topology::Tree& tree) {
  std::vector<std::string> out;
  for (int32_t c : tree.domains[0].children) out.push_back(tree.domains[static_cast<size_t>(c)].id);
  return out;
}

// The children's order after the reference and after the journal's form (skip on and off).
void ExpectSameOrder(const std::vector<std::pair<std::string, double>>& children,
                     const std::vector<std::string>& expected) {
  Cluster c;
  testutil::AddQueue(c, "q");
  testutil::AddNode(c, "n0", 8);
  c.Finalize();
  Resources asked;
  asked.gpus = 2;
  for (const bool skip : {false, true}) {
    SchedulerConfig cfg = SchedulerConfig::Default();
    cfg.params.topology_sort_skip_sorted = skip;
    const auto scheduler = testutil::MakeScheduler(cfg);
    const auto ssn = scheduler->OpenSession(c, testutil::kNowMs);
    topology::Tree reference = MakeFlatTree(children);
    topology::SortTree(*ssn, reference, 0, asked, /*max_depth=*/0);
    EXPECT_EQ(ChildIds(reference), expected) << "the reference";
    topology::Tree following = MakeFlatTree(children);
    topology::SortScratch scratch;
    topology::SortTreeFollowing(*ssn, following, 0, asked, /*max_depth=*/0, scratch);
    EXPECT_EQ(ChildIds(following), expected) << "following the journal, skip " << skip;
    scheduler->CloseSession(*ssn);
  }
}

TEST(TopologyDomainOrderTest, EqualKeysAreOrderedById) {
  ExpectSameOrder({{"c", 4}, {"a", 4}, {"b", 4}}, {"a", "b", "c"});
}

TEST(TopologyDomainOrderTest, KeysDescendingThenIds) {
  // Fuller first: 2 of 2 free (ratio 1) before 2 of 8 (ratio 0.25).
  ExpectSameOrder({{"d", 8}, {"b", 2}, {"c", 8}, {"a", 2}}, {"a", "b", "c", "d"});
}

}  // namespace
}  // namespace gantry
