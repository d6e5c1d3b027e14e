// Registration of the built-in actions.
#pragma once

#include "framework/plugin.h"

namespace gantry {

void RegisterBuiltinActions(ActionRegistry& registry);

void RegisterStaleGangEvictionAction(ActionRegistry& registry);
void RegisterEvictionActions(ActionRegistry& registry);  // reclaim, preempt, consolidation

}  // namespace gantry
