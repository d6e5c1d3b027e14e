// Reclaimable's strategy check (KAI's reclaim strategies), shared by the validator
// (reclaimable.cc) and the rejection rules stated from it (rejection_rules.cc).
#pragma once

#include <cstdint>

#include "model/resources.h"
#include "plugins/proportion/resource_share.h"

namespace gantry::proportion {

// KAI's reclaim strategies: taking `remaining` down is allowed while the reclaimee stays above
// its fair share, or when the reclaimer stays within its deserved quota and the reclaimee above
// its own. (What does not depend on `remaining` is computed once per reclaimer / reclaimee.)
//
// Fits is up-closed: if it holds for `remaining`, it holds for anything at least as large in
// every resource (both of its tests are "not <= a fixed bound"). The validator asks it of the
// reclaimee's allocation less what was taken below it so far, which only falls; so once it fails
// for the reclaimee's whole allocation, any victim below the reclaimee that is counted (left
// evicted, with consolidating reclaim) makes the validator refuse.
struct ReclaimStrategy {
  ReclaimStrategy(const Quantities& required, const QueueShare& reclaimer,
                  const QueueShare& reclaimee)
      : allocatable(reclaimee.AllocatableShare()), deserved(reclaimee.Deserved()) {
    Quantities with = reclaimer.Allocated();
    with += required;
    reclaimer_within_deserved = LessEqual(with, reclaimer.Deserved());
  }
  bool Fits(const Quantities& remaining) const {
    if (!LessEqual(remaining, allocatable)) return true;
    if (!reclaimer_within_deserved) return false;
    return !LessEqual(remaining, deserved);
  }
  Quantities allocatable, deserved;
  bool reclaimer_within_deserved = false;
};

// Reclaimable's early refusal from the strategy check (ProportionPlugin::StrategyRefuses, with
// SchedulerParams::solver_strategy_rules): the number of validations it refused. A test mode
// (SetVerifyStrategyRefusals) runs the full check after each such refusal instead of returning,
// and counts those the full check accepted (StrategyRefusalViolations: must stay 0).
uint64_t StrategyRefusals();
void SetVerifyStrategyRefusals(bool on);
uint64_t StrategyRefusalViolations();

}  // namespace gantry::proportion
