// Small node-order plugins:
//  nodeavailability - prefer nodes where the pod fits without waiting for releasing resources;
//  resourcetype     - prefer CPU-only nodes for CPU-only pods;
//  nominatednode    - prefer the node the pod was nominated to.
#include <memory>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"

namespace gantry {
namespace {

// Whether node n has no releasing resources at all (every field 0). FitsIdle and
// FitsIdleOrReleasing differ only in adding these to the idle resources field by field
// (x + 0 == x), and shared devices fit alike in both, so on such a node they give the same answer.
bool NothingReleasingOnNode(const Session& s, NodeId n) {
  const Resources& r = s.node(n).releasing;
  if (r.cpu_millis != 0 || r.memory_bytes != 0 || r.gpus != 0 || r.pods != 0) return false;
  for (double v : r.scalars) {
    if (v != 0) return false;
  }
  return true;
}

class NodeAvailabilityPlugin : public Plugin {
 public:
  std::string_view name() const override { return "nodeavailability"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn(
        [](const Session& s, PodId p, NodeId n) {
          return s.FitsIdle(p, n) ? scores::kAvailability : 0.0;
        },
        {.batch =
             [](const Session& s, PodId p, std::span<std::pair<double, NodeId>> scored) {
               // (A ranking scores the nodes the pod fits on idle + releasing resources, the
               // batch function's contract: it fits idle on those with nothing releasing.)
               const bool shortcut = s.params().availability_nothing_releasing;
               for (auto& [score, n] : scored) {
                 const bool idle = (shortcut && NothingReleasingOnNode(s, n)) || s.FitsIdle(p, n);
                 score += idle ? scores::kAvailability : 0.0;
               }
             },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }
};

class ResourceTypePlugin : public Plugin {
 public:
  std::string_view name() const override { return "resourcetype"; }
  void OnSessionOpen(Session& ssn) override {
    if (!ssn.params().resourcetype_node_flags) {
      ssn.AddNodeOrderFn(
          [](const Session& s, PodId p, NodeId n) {
            return s.cluster().pods[p].IsCpuOnly() && IsCpuOnlyNode(s.cluster().nodes[n])
                       ? scores::kResourceType
                       : 0.0;
          },
          {.scores_pod = [](const Cluster&, const Pod& pod) { return pod.IsCpuOnly(); },
           .depends_on = NodeDependence::kShapeStateAndSharedFit});
      return;
    }
    // Whether a node is CPU-only depends on the node alone: once per node and session, shared
    // by the callbacks (which may outlive a plugin object reused across sessions).
    auto cpu_only = std::make_shared<std::vector<char>>(ssn.cluster().nodes.size());
    for (size_t n = 0; n < cpu_only->size(); ++n) {
      (*cpu_only)[n] = IsCpuOnlyNode(ssn.cluster().nodes[n]) ? 1 : 0;
    }
    ssn.AddNodeOrderFn(
        [cpu_only](const Session& s, PodId p, NodeId n) {
          return s.cluster().pods[p].IsCpuOnly() && (*cpu_only)[static_cast<size_t>(n)] != 0
                     ? scores::kResourceType
                     : 0.0;
        },
        {.scores_pod = [](const Cluster&, const Pod& pod) { return pod.IsCpuOnly(); },
         .batch =
             [cpu_only](const Session& s, PodId p, std::span<std::pair<double, NodeId>> scored) {
               if (!s.cluster().pods[p].IsCpuOnly()) return;
               for (auto& [score, n] : scored) {
                 score += (*cpu_only)[static_cast<size_t>(n)] != 0 ? scores::kResourceType : 0.0;
               }
             },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }
};

class NominatedNodePlugin : public Plugin {
 public:
  std::string_view name() const override { return "nominatednode"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn(
        [](const Session& s, PodId p, NodeId n) {
          return s.cluster().pods[p].nominated_node == n ? scores::kNominatedNode : 0.0;
        },
        // (Scores the nominated node by its id: such pods are never ranked by class.)
        {.scores_pod = [](const Cluster&, const Pod& pod) { return pod.nominated_node != kNone; },
         .depends_on = NodeDependence::kShapeStateAndSharedFit});
  }
};

}  // namespace

void RegisterNodeScorePlugins(PluginRegistry& r) {
  r.Register("nodeavailability", plugin_util::NoArguments<NodeAvailabilityPlugin>());
  r.Register("resourcetype", plugin_util::NoArguments<ResourceTypePlugin>());
  r.Register("nominatednode", plugin_util::NoArguments<NominatedNodePlugin>());
}

}  // namespace gantry
