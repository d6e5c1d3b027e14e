// What the victim search tells the evicted pods: KAI's eviction messages, per action.
#pragma once

#include <string>

#include "framework/session.h"

namespace gantry {

// Which action runs the solver (decides eviction messages).
enum class EvictionAction { kReclaim, kPreempt, kConsolidation };

// KAI's eviction message for a victim pod.
std::string EvictionMessage(const Session& ssn, EvictionAction action, PodId victim,
                            JobId preemptor);

}  // namespace gantry
