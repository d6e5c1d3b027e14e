// KAI v0.16+'s scenario generators (docs/victim-search-v0.17.md): what the victim search tries
// for one accumulated scenario (the recorded victims plus the potential victims popped so far,
// scenario.h). Used by the search model of KAI v0.16+ (SchedulerParams::victim_search_v017).
//
// - NodeLocalGreedy (plugin sg-nodelocalgreedy): one scenario per node of the latest popped
//   victim job, in node-name order, holding the accumulated victims of the jobs with a potential
//   victim on that node; a node whose victim set equals an earlier node's is skipped. With no
//   potential victim yet, the recorded victims alone (when there are any).
// - MultiNodeGang (plugin sg-multinodegang): sub-scenarios of growing node sets. Candidate nodes
//   hold potential victims and could host the smallest pending pod once they are evicted
//   (capacity: idle + releasing GPUs, plus the GPUs of the recorded and potential victims on the
//   node); ascending by that capacity, ties by where the node's first potential victim came in
//   the accumulated list. The first sub-scenario takes the fewest candidates that cover the
//   pending GPUs the other feasible nodes do not; each next one takes 1, 2, 4, ... more, up to
//   all. A sub-scenario holds every pop (victim batch) with a task on a picked node, whole, in
//   pop order (KAI adds them in a map's order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actions/victim_search/scenario.h"
#include "actions/victim_search/scenario_filters.h"
#include "framework/session.h"

namespace gantry::victim_search {

// What one probe of a prefix size gave.
enum class ProbeResult { kSolved, kUnsolved, kStop };

// KAI's searchMaxSolvableK: the largest prefix size in [1, n] whose probe solved, found with
// probes of sizes 1, 2, 4, ... (clamped to n) until one does not solve or n does, then by
// bisection between the last size that solved and the first that did not; 0 when none solved
// or a probe said stop (`stopped` then true). Probes run in that order, each once.
template <typename Probe>
size_t MaxSolvableSize(size_t n, Probe&& probe, bool& stopped) {
  stopped = false;
  size_t solved = 0;  // the largest size solved so far
  size_t failed = 0;  // the smallest size that did not solve, above `solved` (0: none)
  for (size_t k = 1; n > 0; k = std::min(2 * k, n)) {
    const ProbeResult r = probe(k);
    if (r == ProbeResult::kStop) {
      stopped = true;
      return 0;
    }
    if (r == ProbeResult::kUnsolved) {
      failed = k;
      break;
    }
    solved = k;
    if (k == n) break;
  }
  while (failed > solved + 1) {
    const size_t mid = (solved + failed) / 2;
    const ProbeResult r = probe(mid);
    if (r == ProbeResult::kStop) {
      stopped = true;
      return 0;
    }
    (r == ProbeResult::kSolved ? solved : failed) = mid;
  }
  return solved;
}

// NodeLocalGreedy's scenarios for the accumulated scenario `acc` (whose potential victims came
// in the pops `batches`): each as the victim groups to add to the recorded ones, by job in the
// order of their first task (a group may hold recorded pods: the caller evicts those once).
void NodeLocalScenarios(const Session& ssn, const Scenario& acc, const VictimGroups& batches,
                        std::vector<VictimGroups>& out);

class SubScenarioEmitter {
 public:
  // For the accumulated scenario `acc` with the potential victims popped as `batches` (at least
  // one), the node capacities of the clean session and the probe's feasible nodes (flags).
  SubScenarioEmitter(const Session& ssn, const Scenario& acc, const VictimGroups& batches,
                     const IdleGpuCapacities& capacities, const std::vector<char>& feasible);
  // The next sub-scenario's potential victims (groups, pop order); false when none is left.
  bool Next(VictimGroups& out);

 private:
  const VictimGroups& batches_;
  std::vector<NodeId> candidates_;                   // sorted (see the file comment)
  std::vector<std::vector<uint32_t>> node_batches_;  // per candidate: its batches, pop order
  size_t next_k_ = 0;
  size_t step_ = 1;
  bool done_ = false;
};

}  // namespace gantry::victim_search
