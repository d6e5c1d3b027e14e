// Registration of every built-in plugin. One function per plugin file; RegisterBuiltinPlugins
// calls them all. Adding a plugin: write plugins/<name>.cc with a Register<Name>Plugin function,
// declare it here, call it from builtin.cc.
#pragma once

#include "framework/plugin.h"
#include "model/cluster.h"

namespace gantry {

void RegisterBuiltinPlugins(PluginRegistry& registry);

void RegisterPredicatesPlugin(PluginRegistry& r);
void RegisterProportionPlugin(PluginRegistry& r);
void RegisterPriorityPlugin(PluginRegistry& r);
void RegisterElasticPlugin(PluginRegistry& r);
void RegisterRoleOrderPlugins(PluginRegistry& r);  // kubeflow, ray
void RegisterTaskOrderPlugin(PluginRegistry& r);
void RegisterSubGroupOrderPlugin(PluginRegistry& r);
void RegisterNodePlacementPlugin(PluginRegistry& r);
void RegisterNodeScorePlugins(PluginRegistry& r);  // nodeavailability, resourcetype, nominatednode
void RegisterMinRuntimePlugin(PluginRegistry& r);
void RegisterGpuSharingPlugins(PluginRegistry& r);
void RegisterTopologyPlugin(PluginRegistry& r);
void RegisterDynamicResourcesPlugin(PluginRegistry& r);
void RegisterPendingPlugins(PluginRegistry& r);

// A node without GPUs and without MIG (shared by nodeplacement and resourcetype).
bool IsCpuOnlyNode(const Node& node);

}  // namespace gantry
