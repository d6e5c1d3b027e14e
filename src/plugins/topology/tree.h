// The topology plugin's tree of domains (plugins/topology/topology.cc says how the plugin uses it):
// the root, then one domain per distinct value path of a Topology's level labels, each with its
// nodes, its free resources and what is kept of them between the plugin's calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/session.h"

namespace gantry::topology {

constexpr int kAllocatablePodsNotSet = -1;

// What a leaf domain (one without children) keeps between SubsetNodes calls: the sum of its
// nodes' free resources and, per representative pod, how many copies its nodes hold. Both are
// functions of its nodes' states alone, and a node's state changes only with its
// Session::node_version, so they are summed again (in the same node order, so the same sums to
// the bit) only when one of those versions moved; the placement epoch (which moves with every
// node's change) spares even that scan while nothing was placed or removed anywhere.
struct LeafCache {
  bool valid = false;
  uint64_t checked_epoch = 0;  // the placement epoch when the node versions were last compared
  uint32_t revision = 0;       // changes whenever `free` is summed again
  Resources free;
  std::vector<std::pair<uint32_t, int>> allocatable;  // per signature: (revision + 1, count)
};

struct Domain {
  std::string id;
  int level = -1;       // index into the topology's levels; -1 is the root
  int32_t parent = -1;  // -1 for the root
  std::vector<int32_t> children;
  std::vector<NodeId> nodes;  // by name rank
  int allocatable_pods = kAllocatablePodsNotSet;
  Resources free;  // idle + releasing of the domain's nodes (whole GPUs only)
  // Kept between SubsetNodes calls (SchedulerParams::topology_incremental), see LeafCache.
  LeafCache leaf;
  // A stamp of `free` (Tree::stamps): a leaf's changes when it is summed again, an inner
  // domain's is the largest of its children's and of `order_stamp` (its children reordered: the
  // same sum added in another order), so it changes whenever `free` may have.
  uint64_t free_stamp = 0;
  uint64_t order_stamp = 0;
  // The order keys of the last sort of `children`, in their sorted order (SortTree), and the
  // request and children's largest free stamp they were computed from.
  std::vector<double> sort_keys;
  uint64_t keys_asked = 0;  // Tree::asked_serial
  uint64_t keys_stamp = 0;
};

struct Tree {
  const Topology* topology = nullptr;
  std::vector<Domain> domains;  // domains[0] is the root
  // Per level: domain id -> index, and the domains in creation order.
  std::vector<std::unordered_map<std::string, int32_t>> by_id;
  std::vector<std::vector<int32_t>> by_level;
  std::vector<char> in_topology;       // per node
  std::vector<uint32_t> seen_version;  // per node: its node version when its leaf last summed it
  uint64_t stamps = 0;                 // the last stamp given (Domain::free_stamp)
  Resources asked;                     // the request of the last SortTree
  uint64_t asked_serial = 0;           // changes with `asked`
  // Per level, per node: the index of the node's domain at that level (-1: not in the tree);
  // LowestCommonDomain compares these instead of label values unless some value is empty.
  std::vector<std::vector<int32_t>> node_domain;
  bool empty_label_value = false;
  // Following the session's node journal (SchedulerParams::topology_follow_changes): `free` of
  // every domain is then kept current between calls (not reset), summed again only for the leaves
  // of changed nodes, the domains above them and the domains whose children were reordered.
  bool sums_valid = false;
  uint64_t journal_generation = 0;
  size_t journal_position = 0;
  std::vector<char> sum_dirty;                 // per domain
  std::vector<std::vector<int32_t>> dirty_at;  // per level + 1 (the root first)
  // The lowest common domain of every node of the tree, per preferred level name.
  std::unordered_map<std::string, int32_t> all_nodes_common;
  // The level index of a label key, -1 for "root", -2 when unknown.
  int LevelIndex(const std::string& key) const {
    if (key == "root") return -1;
    for (size_t i = 0; i < topology->levels.size(); ++i) {
      if (topology->levels[i] == key) return static_cast<int>(i);
    }
    return -2;
  }
  const std::string& LevelName(int level) const {
    static const std::string root_name = "root";
    return level < 0 ? root_name : topology->levels[static_cast<size_t>(level)];
  }
};

// The job's requests summed as KAI's Resource (whole and fractional GPUs in gpus, MIG counts in
// scalars, no pod slots).
Resources SumRequests(const Session& s, std::span<const PodId> tasks);

// KAI's getJobRatioToFreeResources: the dominant ratio of requested to a domain's free
// resources.
double RatioToFree(const Session& s, const Resources& asked, const Resources& free);

// Building and walking the tree. BuildTree puts a node in the tree when it has every level's
// label, in name-rank order.
Tree BuildTree(const Cluster& c, const Topology& t);
// Whether node n belongs to domain d: the root holds the nodes in the tree, a domain at a level
// those whose domain at that level it is (Tree::node_domain). A lookup, not a per-domain bitmap:
// one byte per node per domain would grow with the square of the cluster (about N^2/6 bytes with
// racks of 8 nodes).
bool DomainHasNode(const Tree& tree, int32_t d, NodeId n);
Domain MakeDomain(std::string id, int level);
void AddChild(Tree& tree, int32_t parent, int32_t child);
void LevelDomains(const Tree& tree, int32_t d, int level, std::vector<int32_t>& out);
std::vector<int32_t> DomainsAtLevel(const Tree& tree, int level);
void MarkSubtree(const Tree& tree, int32_t d, std::vector<char>& marks);
std::vector<int32_t> ReverseLevelOrder(const Tree& tree);

}  // namespace gantry::topology
