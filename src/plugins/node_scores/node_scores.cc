// Small node-order plugins:
//  nodeavailability - prefer nodes where the pod fits without waiting for releasing resources;
//  resourcetype     - prefer CPU-only nodes for CPU-only pods;
//  nominatednode    - prefer the node the pod was nominated to.
#include "framework/session.h"
#include "plugins/builtin.h"
#include "plugins/plugin_util.h"
#include "plugins/scores.h"

namespace gantry {
namespace {

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
               for (auto& [score, n] : scored) {
                 score += s.FitsIdle(p, n) ? scores::kAvailability : 0.0;
               }
             },
         .depends_on = NodeDependence::kShapeAndStateOnly});
  }
};

class ResourceTypePlugin : public Plugin {
 public:
  std::string_view name() const override { return "resourcetype"; }
  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn(
        [](const Session& s, PodId p, NodeId n) {
          return s.cluster().pods[p].IsCpuOnly() && IsCpuOnlyNode(s.cluster().nodes[n])
                     ? scores::kResourceType
                     : 0.0;
        },
        {.scores_pod = [](const Pod& pod) { return pod.IsCpuOnly(); },
         .depends_on = NodeDependence::kShapeAndStateOnly});
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
        {.scores_pod = [](const Pod& pod) { return pod.nominated_node != kNone; },
         .depends_on = NodeDependence::kShapeAndStateOnly});
  }
};

}  // namespace

void RegisterNodeScorePlugins(PluginRegistry& r) {
  r.Register("nodeavailability", plugin_util::NoArguments<NodeAvailabilityPlugin>());
  r.Register("resourcetype", plugin_util::NoArguments<ResourceTypePlugin>());
  r.Register("nominatednode", plugin_util::NoArguments<NominatedNodePlugin>());
}

}  // namespace gantry
