// Registration of the built-in actions.
#pragma once

#include "framework/plugin.h"

namespace gantry {

void RegisterBuiltinActions(ActionRegistry& registry);

void RegisterStaleGangEvictionAction(ActionRegistry& registry);

}  // namespace gantry
