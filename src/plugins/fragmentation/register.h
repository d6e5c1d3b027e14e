// Registration of the gpufragmentation node-order plugin (fragmentation-aware GPU placement).
#pragma once

#include "framework/plugin.h"

namespace gantry {
void RegisterFragmentationPlugin(PluginRegistry& r);
}  // namespace gantry
