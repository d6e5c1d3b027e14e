// The eviction actions of KAI's default cycle (consolidation, reclaim, preempt,
// stalegangeviction) are accepted in configurations so KAI's default configuration loads, but do
// not act yet: they leave the session unchanged. They are implemented with the "full cycle"
// capability; until then a run that relies on evictions keeps its jobs pending.
#pragma once

#include "framework/plugin.h"

namespace gantry {

void RegisterNotYetActions(ActionRegistry& registry);

}  // namespace gantry
