// Reclaimable's saturation check (KAI's reclaimable strategies): a reclaim is refused when, at
// some level of the queue tree, the reclaimer's queue would be over its fair share with the job
// and at least as saturated (times reclaimerUtilizationMultiplier) as a sibling queue that
// victims are taken from.
#pragma once

#include <array>
#include <limits>

#include "framework/session.h"
#include "model/resources.h"

namespace gantry::proportion {

// A queue's saturation: what it holds over its fair share (0 with an unlimited share; infinite
// when it holds something of a zero share).
inline double Saturation(double allocated, double fair) {
  if (fair == 0) return allocated > 0 ? std::numeric_limits<double>::infinity() : 0;
  if (fair == kUnlimited) return 0;
  return allocated / fair;
}

// The saturation check on GPUs at the level where the reclaimer's root path and a victim's part,
// with x the GPUs of the sibling's victims left evicted and b those left evicted below the
// reclaimer's queue there: it rejects when Rejects(x, b). With whole-number sums it is increasing
// in x and decreasing in b (what the victim search's SaturationBound promises).
struct SaturationCheck {
  double allocated = 0;      // of the reclaimer's queue at the level where the paths part
  double required = 0;       // GPUs the pending pods ask for
  double fair = 0;           // fair share of the reclaimer's queue there (> 0)
  double sib_allocated = 0;  // of the sibling queue the rule's victims are under
  double sib_fair = 0;       // its fair share (> 0)
  double multiplier = 1;     // reclaimerUtilizationMultiplier
  bool Rejects(double x, double b) const {
    const double ratio = (allocated - b + required) / fair;
    return ratio > 1 && ratio * multiplier >= (sib_allocated - x) / sib_fair;
  }
  // The check in the form a rejection rule carries.
  SaturationBound AsBound() const {
    SaturationBound bound;
    bound.params = {allocated, required, fair, sib_allocated, sib_fair, multiplier};
    bound.formula = [](const std::array<double, SaturationBound::kParams>& p, double x, double b) {
      return SaturationCheck{p[0], p[1], p[2], p[3], p[4], p[5]}.Rejects(x, b);
    };
    return bound;
  }
};

}  // namespace gantry::proportion
