// The topology plugin's tree answers "is node n in domain d" from the node's domain at d's level
// (topology::DomainHasNode), not from a byte per node per domain, which grew with the square of
// the cluster. The answers must be those of the domains' node lists: checked for every domain and
// node of generated clusters of the benchmark's topology shapes and of a hand-made one with the
// odd cases (nodes outside the tree, empty label values, two paths whose joined ids collide).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "differential_cycle.h"
#include "plugins/topology/tree.h"
#include "sanitizer_scale.h"
#include "scenario/scenario.h"
#include "test_cluster.h"

namespace gantry {
namespace {

// Checks DomainHasNode against the node lists for every domain and node; returns how many
// (domain, node) pairs were members.
size_t CheckMembership(const Cluster& c, const topology::Tree& tree) {
  size_t members = 0;
  for (size_t d = 0; d < tree.domains.size(); ++d) {
    const auto& nodes = tree.domains[d].nodes;
    std::vector<char> listed(c.nodes.size(), 0);
    for (NodeId n : nodes) listed[static_cast<size_t>(n)] = 1;
    for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
      const bool has = topology::DomainHasNode(tree, static_cast<int32_t>(d), n);
      EXPECT_EQ(has, listed[static_cast<size_t>(n)] != 0)
          << "domain " << tree.domains[d].id << " node " << c.nodes[n].name;
      members += has ? 1 : 0;
    }
  }
  return members;
}

TEST(TopologyTreeTest, MembershipOfGeneratedClusters) {
  const auto seeds = static_cast<uint64_t>(test_scale::SanitizerScaled(3, 3));
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    for (const char* shape : {"topology", "sharing"}) {
      bench::ClusterGenSummary summary;
      const differential::ShapeCase k{shape, 96, seed};
      const std::string file = differential::WriteShapeCluster("topology-tree", k, summary);
      auto loaded = LoadScenarioFile(file);
      ASSERT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
      const Cluster& c = loaded.value().cluster;
      ASSERT_FALSE(c.topologies.empty());
      for (const Topology& t : c.topologies) {
        const topology::Tree tree = topology::BuildTree(c, t);
        ASSERT_GT(tree.domains.size(), 1u);
        // Every node in the tree is in the root and in one domain per level.
        size_t in_tree = 0;
        for (char m : tree.in_topology) in_tree += m != 0 ? 1 : 0;
        EXPECT_EQ(CheckMembership(c, tree), in_tree * (t.levels.size() + 1));
      }
      std::filesystem::remove(file);
    }
  }
}

TEST(TopologyTreeTest, MembershipOfOddLabels) {
  Cluster c;
  auto node = [&c](const std::string& name, const std::string& zone, const std::string& rack) {
    const NodeId n = testutil::AddNode(c, name, 8);
    if (!zone.empty()) c.nodes[n].labels.Set("zone", zone == "-" ? "" : zone);
    if (!rack.empty()) c.nodes[n].labels.Set("rack", rack == "-" ? "" : rack);
  };
  node("n0", "a", "r1");
  node("n1", "a", "r2");
  node("n2", "b", "r1");
  node("n3", "a.b", "c");  // rack id "a.b.c"
  node("n4", "a", "b.c");  // rack id "a.b.c" too: the same rack domain under two zones
  node("n5", "a", "");     // no rack label: outside the tree
  node("n6", "", "r1");    // no zone label: outside the tree
  node("n7", "-", "-");    // empty values: in the tree
  c.topologies.push_back({"t", {"zone", "rack"}});
  c.Finalize();
  const topology::Tree tree = topology::BuildTree(c, c.topologies[0]);
  EXPECT_TRUE(tree.empty_label_value);
  EXPECT_EQ(CheckMembership(c, tree), 6u * 3u);
  EXPECT_FALSE(topology::DomainHasNode(tree, 0, 5));
  EXPECT_FALSE(topology::DomainHasNode(tree, 0, 6));
  EXPECT_TRUE(topology::DomainHasNode(tree, 0, 7));
  const int32_t shared_rack = tree.by_id[1].at("a.b.c");
  EXPECT_TRUE(topology::DomainHasNode(tree, shared_rack, 3));
  EXPECT_TRUE(topology::DomainHasNode(tree, shared_rack, 4));
  EXPECT_FALSE(topology::DomainHasNode(tree, shared_rack, 1));
}

}  // namespace
}  // namespace gantry
