// KAI's podaffinity plugin (see podaffinity.h for what it computes).
#include "plugins/podaffinity/podaffinity.h"

#include <span>
#include <utility>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"

namespace gantry {
namespace podaffinity {

void TopologyScores::Add(const PodAffinityTerm& term, const Pod& owner, const Pod& matched,
                         const Labels& node_labels, int64_t weight) {
  if (!term.MatchesPod(owner, matched)) return;
  const std::string* value = node_labels.Get(term.topology_key);
  if (value == nullptr) return;
  Key* entry = nullptr;
  for (Key& k : keys_) {
    if (k.key == term.topology_key) entry = &k;
  }
  if (entry == nullptr) entry = &keys_.emplace_back(Key{term.topology_key, {}});
  entry->by_value[*value] += weight;
}

void TopologyScores::AddExistingPod(const Pod& pod, const Pod& existing, const Labels& node_labels,
                                    int32_t hard_weight) {
  if (node_labels.empty()) return;
  // The incoming pod's preferred terms, matched against the existing pod.
  for (const auto& w : pod.preferred_pod_affinity) {
    Add(w.term, pod, existing, node_labels, w.weight);
  }
  for (const auto& w : pod.preferred_pod_anti_affinity) {
    Add(w.term, pod, existing, node_labels, -int64_t{w.weight});
  }
  // The existing pod's terms, matched against the incoming pod (symmetry).
  if (hard_weight > 0) {
    for (const auto& t : existing.pod_affinity) Add(t, existing, pod, node_labels, hard_weight);
  }
  for (const auto& w : existing.preferred_pod_affinity) {
    Add(w.term, existing, pod, node_labels, w.weight);
  }
  for (const auto& w : existing.preferred_pod_anti_affinity) {
    Add(w.term, existing, pod, node_labels, -int64_t{w.weight});
  }
}

int64_t TopologyScores::Score(const Labels& node_labels) const {
  int64_t score = 0;
  for (const Key& k : keys_) {
    const std::string* value = node_labels.Get(k.key);
    if (value == nullptr) continue;
    if (auto it = k.by_value.find(*value); it != k.by_value.end()) score += it->second;
  }
  return score;
}

}  // namespace podaffinity

namespace {

using podaffinity::kHardPodAffinityWeight;
// Session::PodRankableByClass ranks every pod per node when any pod has preferred terms; with a
// hard weight, pods with required affinity terms would have to be counted there too.
static_assert(kHardPodAffinityWeight == 0, "the session's per-node ranking covers preferred terms");

// Whether a pod's own terms can add to another pod's score (Kubernetes' "pods with affinity",
// narrowed to the terms that count here).
bool HasScoringTerms(const Pod& pod) {
  return pod.HasPreferredPodAffinity() || (kHardPodAffinityWeight > 0 && !pod.pod_affinity.empty());
}

class PodAffinityPlugin : public Plugin {
 public:
  std::string_view name() const override { return "podaffinity"; }

  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    scoring_pods_.clear();
    for (PodId p = 0; p < static_cast<PodId>(c.pods.size()); ++p) {
      if (HasScoringTerms(c.pods[p])) scoring_pods_.push_back(p);
    }
    cached_pod_ = kNone;
    skipped_.assign(c.pods.size(), 0);
    // No pod has a term that counts: every score is 0 (Kubernetes skips), so nothing is
    // registered and the session keeps ranking by node class.
    if (scoring_pods_.empty()) return;
    // The score reads node labels and the pods on nodes, yet is declared shape-and-state only:
    // Session::PodRankableByClass ranks every pod per node when any pod has preferred
    // (anti-)affinity, which is when this is registered (as the predicates plugin's inter-pod
    // checks rely on it for pods with required terms).
    ssn.AddNodeOrderFn(
        [this](const Session& s, PodId p, NodeId n) { return Score(s, p, n); },
        {.batch =
             [this](const Session& s, PodId p, std::span<std::pair<double, NodeId>> scored) {
               Refresh(s, p);
               if (skipped_[p]) return;
               for (auto& [score, n] : scored) score += NodeScore(s, n);
             },
         .depends_on = NodeDependence::kShapeAndStateOnly});
  }

  void OnSessionClose(Session&) override {
    scoring_pods_.clear();
    skipped_.clear();
    scores_.Clear();
    cached_pod_ = kNone;
  }

 private:
  double Score(const Session& s, PodId p, NodeId n) {
    Refresh(s, p);
    return skipped_[p] ? 0.0 : NodeScore(s, n);
  }

  double NodeScore(const Session& s, NodeId n) const {
    return scores::kK8sPlugins * static_cast<double>(scores_.Score(s.cluster().nodes[n].labels));
  }

  // KAI's PreScore for pod p, once per pod and placement epoch: every pod on a node counts (the
  // pod's own preferred terms may match any of them), or only the pods whose terms count when p
  // has no preferred terms. When nothing is counted (Kubernetes' Skip), KAI marks the pod and
  // scores it 0 for the rest of the session, even once later placements would count: so does
  // this (skipped_).
  void Refresh(const Session& s, PodId p) {
    if (cached_pod_ == p && cached_epoch_ == s.placement_epoch()) return;
    cached_pod_ = p;
    cached_epoch_ = s.placement_epoch();
    scores_.Clear();
    const Cluster& c = s.cluster();
    const Pod& pod = c.pods[p];
    auto count = [&](PodId o) {
      const PodState& st = s.pod(o);
      if (o == p || !IsActiveUsed(st.status) || st.node == kNone) return;
      scores_.AddExistingPod(pod, c.pods[o], c.nodes[st.node].labels);
    };
    if (pod.HasPreferredPodAffinity()) {
      for (PodId o = 0; o < static_cast<PodId>(c.pods.size()); ++o) count(o);
    } else {
      for (PodId o : scoring_pods_) count(o);
    }
    if (scores_.Empty()) skipped_[p] = 1;
  }

  std::vector<PodId> scoring_pods_;  // pods whose own terms can add to another pod's score
  std::vector<char> skipped_;        // per pod: once skipped, scored 0 (KAI's skipOrderFn)
  PodId cached_pod_ = kNone;
  uint64_t cached_epoch_ = 0;
  podaffinity::TopologyScores scores_;
};

}  // namespace

void RegisterPodAffinityPlugin(PluginRegistry& r) {
  r.Register("podaffinity", plugin_util::NoArguments<PodAffinityPlugin>());
}

}  // namespace gantry
