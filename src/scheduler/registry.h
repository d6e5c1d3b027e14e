// The in-tree plugins and actions: every name a scheduler configuration can use, registered in
// registry.cc (one line each). Each extension lives in a folder of its own (src/plugins/<name>/,
// src/actions/<name>/) and exposes one registration function, declared in plugins/builtin.h or
// actions/builtin.h.
#pragma once

#include "framework/plugin.h"

namespace gantry {

// Registers every in-tree plugin in `registry` (a registry may add more after, e.g. in tests).
void RegisterBuiltinPlugins(PluginRegistry& registry);
// Registers every in-tree action in `registry`.
void RegisterBuiltinActions(ActionRegistry& registry);

// Registries holding every in-tree plugin and action, built on first use.
const PluginRegistry& BuiltinPlugins();
const ActionRegistry& BuiltinActions();

}  // namespace gantry
