// KAI's podaffinity plugin: preferred inter-pod affinity as a node-order score.
//
// What KAI v0.17 does: its podaffinity plugin wraps Kubernetes' InterPodAffinity scoring. Before
// a pod's nodes are scored (PreScore) it sums, per topology key and value, the weights of every
// pod P already on a node N (as KAI's node info holds them: every active-used status, releasing
// and pipelined included, and pods placed earlier in the same session):
//   + w  for each of the pod's preferred affinity terms that matches P,
//   - w  for each of the pod's preferred anti-affinity terms that matches P,
//   + H  for each of P's required affinity terms that matches the pod,
//   + w  for each of P's preferred affinity terms that matches the pod,
//   - w  for each of P's preferred anti-affinity terms that matches the pod,
// each under the term's topology key and N's value of it (nothing when N lacks the key). A node's
// score is the sum, over the keys it has, of the entry for its value: the raw Kubernetes score
// (KAI does not normalize it), times scores::kK8sPlugins. H is HardPodAffinityWeight: KAI builds
// the Kubernetes plugin with zero-valued arguments, so H = 0 and P's required terms add nothing.
// When nothing was counted (Kubernetes' Skip), every node scores 0, and KAI keeps scoring that pod
// 0 for the rest of the session (its skip mark is never cleared), even after placements that
// would count.
//
// A term with no namespaces means its owner's namespace. Not modelled: namespaceSelector (a term
// is read with its namespaces list only) and a term without labelSelector, which Kubernetes
// matches to no pod and Gantry's LabelSelector to every pod - as Gantry's required terms.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/cluster.h"

namespace gantry::podaffinity {

// KAI's InterPodAffinityArgs.HardPodAffinityWeight (zero-valued arguments).
inline constexpr int32_t kHardPodAffinityWeight = 0;

// The summed weights per topology key and value for one incoming pod (Kubernetes' topologyScore).
class TopologyScores {
 public:
  void Clear() { keys_.clear(); }
  // Adds what `existing`, on a node labelled `node_labels`, contributes for `pod`.
  void AddExistingPod(const Pod& pod, const Pod& existing, const Labels& node_labels,
                      int32_t hard_weight = kHardPodAffinityWeight);
  // Whether no term matched anywhere (Kubernetes' PreScore Skip): every node scores 0.
  bool Empty() const { return keys_.empty(); }
  // The raw score of a node with these labels.
  int64_t Score(const Labels& node_labels) const;

 private:
  void Add(const PodAffinityTerm& term, const Pod& owner, const Pod& matched,
           const Labels& node_labels, int64_t weight);
  struct Key {
    std::string key;
    std::unordered_map<std::string, int64_t> by_value;
  };
  std::vector<Key> keys_;  // few: one per topology key a term uses
};

}  // namespace gantry::podaffinity
