// The topology plugin's representative pods (KAI's useRepresentorPodsAccounting): when a
// sub-group's pods are alike, a domain fits it when its nodes hold as many copies of the largest
// pod (the largest request of each kind) as the sub-group has pods. This class computes that pod,
// how many copies each node holds (Accommodation), and the count per domain.
//
// A representative pod's shape gets a signature (its index among the shapes seen this session);
// per signature the count per node is kept while the node's version does not move, and, when the
// plugin follows the session's node journal (SchedulerParams::topology_follow_changes), the count
// per domain is kept too and changed by the journal's nodes only (FollowCounts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/topology/tree.h"

namespace gantry::topology {

class RepresentativePods {
 public:
  // KAI's condition for counting with a representative pod: every pod or none uses GPUs, and
  // every extended resource (MIG profiles aside) is asked by every pod or by none.
  static bool AlikePods(const Session& s, std::span<const PodId> tasks);
  // The largest request of each kind over `tasks`, into `max`. False when two pods ask for shared
  // GPUs of different fractions (they cannot be represented together).
  static bool Largest(const Session& s, std::span<const PodId> tasks, Pod& max);
  // Whether the representative pod asks for any resource (without, every node holds all pods).
  static bool AsksAnything(const Pod& max);

  // A session opens (`trees` topology trees) or closes (0): everything kept is dropped.
  void Reset(size_t trees);
  // The representative pod of the current call: its signature becomes the current one.
  void Select(const Pod& max);
  int signature() const { return signature_; }

  // How many copies of `max` (the selected pod) node `n` holds, kept while the node's version does
  // not move (most jobs look at every node of the tree, few nodes change between jobs).
  int Cached(Session& s, NodeId n, const Pod& max);

  // The selected pod's count per domain of tree `tree_number`, kept per tree and signature and
  // changed by the differences of the nodes the journal names since its last use. Whole sums, so
  // the order of the additions does not matter.
  const std::vector<int64_t>& FollowCounts(Session& s, const Tree& tree, size_t tree_number,
                                           const Pod& max);

 private:
  static bool IsMig(const Session& s, int slot);
  // The index of the representative pod's shape among those seen this session.
  int SignatureOf(const Pod& max);
  // The largest k such that k copies of `max` fit the node's idle and releasing resources. An
  // upper bound from the per-resource quotients is checked downwards (the fit is monotone in k).
  int Accommodation(Session& s, NodeId n, const Pod& max);

  // A representative pod's counts per domain, followed through the node journal (FollowCounts).
  struct SignatureCounts {
    bool valid = false;
    uint64_t journal_generation = 0;
    size_t journal_position = 0;
    std::vector<int> node_value;        // per node: its count when last added
    std::vector<int64_t> domain_count;  // per domain
  };

  Pod test_;  // scratch representative pod (no allocation per node)
  std::vector<Pod> signatures_;
  int signature_ = 0;
  std::vector<std::vector<std::pair<uint32_t, int>>> acc_cache_;  // per signature, per node
  std::vector<std::vector<SignatureCounts>> sig_counts_;          // per tree, per signature
};

}  // namespace gantry::topology
