// The registration function of every in-tree action, one per action folder (src/actions/<name>/);
// scheduler/registry.cc calls them all.
#pragma once

#include "framework/plugin.h"

namespace gantry {

void RegisterAllocateAction(ActionRegistry& registry);
void RegisterStaleGangEvictionAction(ActionRegistry& registry);
void RegisterReclaimAction(ActionRegistry& registry);        // reclaim/
void RegisterPreemptAction(ActionRegistry& registry);        // preempt/
void RegisterConsolidationAction(ActionRegistry& registry);  // consolidation/

}  // namespace gantry
