#include "scheduler/registry.h"

#include "actions/builtin.h"
#include "plugins/builtin.h"
#include "plugins/fragmentation/register.h"

namespace gantry {

void RegisterBuiltinPlugins(PluginRegistry& registry) {
  RegisterPredicatesPlugin(registry);          // plugins/predicates/
  RegisterProportionPlugin(registry);          // plugins/proportion/
  RegisterPriorityPlugin(registry);            // plugins/priority/
  RegisterElasticPlugin(registry);             // plugins/elastic/
  RegisterRoleOrderPlugins(registry);          // plugins/role_order/: kubeflow, ray
  RegisterTaskOrderPlugin(registry);           // plugins/taskorder/
  RegisterSubGroupOrderPlugin(registry);       // plugins/subgrouporder/
  RegisterNodePlacementPlugin(registry);       // plugins/nodeplacement/
  RegisterNodeScorePlugins(registry);          // plugins/node_scores/: nodeavailability,
                                               //   resourcetype, nominatednode
  RegisterPodAffinityPlugin(registry);         // plugins/podaffinity/
  RegisterMinRuntimePlugin(registry);          // plugins/minruntime/
  RegisterGpuSharingPlugins(registry);         // plugins/gpu_sharing_order/: gpusharingorder,
                                               //   gpupack, gpuspread
  RegisterTopologyPlugin(registry);            // plugins/topology/
  RegisterDynamicResourcesPlugin(registry);    // plugins/dynamicresources/
  RegisterPendingPlugins(registry);            // plugins/pending/: snapshot
  RegisterReflectJobOrderPlugin(registry);     // plugins/reflectjoborder/
  RegisterFragmentationPlugin(registry);       // plugins/fragmentation/: gpufragmentation
  RegisterScenarioGeneratorPlugins(registry);  // plugins/scenario_generators/: sg-nodelocalgreedy,
                                               //   sg-multinodegang
  RegisterNumaPlugin(registry);                // plugins/numa/
}

void RegisterBuiltinActions(ActionRegistry& registry) {
  RegisterAllocateAction(registry);           // actions/allocate/
  RegisterStaleGangEvictionAction(registry);  // actions/stalegangeviction/
  RegisterReclaimAction(registry);            // actions/reclaim/
  RegisterPreemptAction(registry);            // actions/preempt/
  RegisterConsolidationAction(registry);      // actions/consolidation/
}

const PluginRegistry& BuiltinPlugins() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    RegisterBuiltinPlugins(r);
    return r;
  }();
  return registry;
}

const ActionRegistry& BuiltinActions() {
  static const ActionRegistry registry = [] {
    ActionRegistry r;
    RegisterBuiltinActions(r);
    return r;
  }();
  return registry;
}

}  // namespace gantry
