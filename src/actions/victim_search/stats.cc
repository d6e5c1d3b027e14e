#include "actions/victim_search/stats.h"

namespace gantry {

namespace {
thread_local SolverStats g_stats;
thread_local bool g_verify_proofs = false;
thread_local uint64_t g_proof_violations = 0;
}  // namespace

SearchRecord::SearchRecord(EvictionAction action, JobId job)
    : st_(MutableSolverStats(action)),
      job_(job),
      simulations_before_(st_.simulations),
      start_(std::chrono::steady_clock::now()) {}

void SearchRecord::Finish(bool solved) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  ++st_.jobs;
  st_.solved += solved ? 1 : 0;
  st_.ms += ms;
  if (st_.slowest_job == kNone || ms > st_.slowest_ms) {
    st_.slowest_job = job_;
    st_.slowest_ms = ms;
    st_.slowest_solved = solved;
    st_.slowest_simulations = st_.simulations - simulations_before_;
  }
}

void SetVerifyRejectionProofs(bool verify) { g_verify_proofs = verify; }
bool VerifyingRejectionProofs() { return g_verify_proofs; }
void NoteRejectionProofViolation() { ++g_proof_violations; }
uint64_t RejectionProofViolations() { return g_proof_violations; }

const SolverStats& GetSolverStats() { return g_stats; }

void ResetSolverStats() { g_stats = SolverStats(); }

SolverActionStats& MutableSolverStats(EvictionAction action) {
  return g_stats.by_action[static_cast<int>(action)];
}

}  // namespace gantry
