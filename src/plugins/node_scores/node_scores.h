// The nodeavailability plugin's shortcut switch (node_scores.cc).
#pragma once

namespace gantry {

// nodeavailability scores the nodes a ranking found to fit a pod on idle + releasing resources:
// on a node with nothing releasing the pod then fits idle, so with the shortcut on (the default)
// FitsIdle is not asked there. Off only for the differential test
// (tests/unit/node_availability_releasing_test.cc). Process-wide; not for concurrent sessions.
void SetAvailabilityNothingReleasing(bool on);
bool AvailabilityNothingReleasing();

}  // namespace gantry
