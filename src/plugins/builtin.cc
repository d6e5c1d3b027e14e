#include "plugins/builtin.h"

namespace gantry {

void RegisterBuiltinPlugins(PluginRegistry& registry) {
  RegisterPredicatesPlugin(registry);
  RegisterProportionPlugin(registry);
  RegisterPriorityPlugin(registry);
  RegisterElasticPlugin(registry);
  RegisterRoleOrderPlugins(registry);
  RegisterTaskOrderPlugin(registry);
  RegisterSubGroupOrderPlugin(registry);
  RegisterNodePlacementPlugin(registry);
  RegisterNodeScorePlugins(registry);
  RegisterMinRuntimePlugin(registry);
  RegisterGpuSharingPlugins(registry);
  RegisterTopologyPlugin(registry);
  RegisterDynamicResourcesPlugin(registry);
  RegisterPendingPlugins(registry);
}

}  // namespace gantry
