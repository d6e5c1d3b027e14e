// The registration function of every in-tree plugin, one per plugin folder (src/plugins/<name>/);
// scheduler/registry.cc calls them all. Adding a plugin: write plugins/<name>/<name>.cc with a
// Register<Name>Plugin function, declare it here, add its line to scheduler/registry.cc.
#pragma once

#include "framework/plugin.h"
#include "model/cluster.h"

namespace gantry {

void RegisterPredicatesPlugin(PluginRegistry& r);
void RegisterProportionPlugin(PluginRegistry& r);
void RegisterPriorityPlugin(PluginRegistry& r);
void RegisterElasticPlugin(PluginRegistry& r);
void RegisterRoleOrderPlugins(PluginRegistry& r);  // kubeflow, ray
void RegisterTaskOrderPlugin(PluginRegistry& r);
void RegisterSubGroupOrderPlugin(PluginRegistry& r);
void RegisterNodePlacementPlugin(PluginRegistry& r);
void RegisterNodeScorePlugins(PluginRegistry& r);  // nodeavailability, resourcetype, nominatednode
void RegisterPodAffinityPlugin(PluginRegistry& r);
void RegisterMinRuntimePlugin(PluginRegistry& r);
void RegisterGpuSharingPlugins(PluginRegistry& r);
void RegisterTopologyPlugin(PluginRegistry& r);
void RegisterDynamicResourcesPlugin(PluginRegistry& r);
void RegisterPendingPlugins(PluginRegistry& r);
void RegisterReflectJobOrderPlugin(PluginRegistry& r);
void RegisterNumaPlugin(PluginRegistry& r);
void RegisterScenarioGeneratorPlugins(PluginRegistry& r);  // sg-nodelocalgreedy, sg-multinodegang

// A node without GPUs and without MIG (shared by nodeplacement and resourcetype).
bool IsCpuOnlyNode(const Node& node);

}  // namespace gantry
