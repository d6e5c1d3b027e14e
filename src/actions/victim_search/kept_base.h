// Accelerator of the victim search: the recorded victims stay evicted between batches and
// prefixes (the "kept eviction base").
//
// KAI evicts a prefix's recorded victims again in the fresh statement of every scenario. With
// whole-number queue and node sums (undo then restores the state exactly) and no resource
// claims, one statement instead keeps them evicted: a batch rolls it back to the longest common
// prefix of its eviction sequence and the batch's recorded victims and evicts the rest. A solved
// prefix keeps its evictions (its simulation is undone) as the next prefix's starting point. The
// final statement holds the same operations in the same order as a fresh one would.
//
// The accelerator (accelerator.h) holds one only when it applies (Applies) and the solver shortcuts
// are on; without it every batch evicts the recorded victims in a statement of its own, as KAI
// does.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "framework/session.h"
#include "framework/statement.h"

namespace gantry::victim_search {

class KeptEvictionBase {
 public:
  using StatementFactory = std::function<std::unique_ptr<Statement>()>;
  explicit KeptEvictionBase(StatementFactory new_statement)
      : new_statement_(std::move(new_statement)) {}

  // Whether undo gives back exactly the state before in this session: queue and node sums of
  // whole numbers only, and no devices allocated through claims.
  static bool Applies(const Session& ssn) {
    return ssn.QueueOrderDependsOnlyOnPodStates() && ssn.cluster().resource_claims.empty();
  }

  // The statement with exactly `recorded` evicted, in order (operation i evicts recorded[i]).
  Statement& Acquire(const std::vector<PodId>& recorded) {
    if (!stmt_) stmt_ = new_statement_();
    size_t common = 0;
    while (common < seq_.size() && common < recorded.size() && seq_[common] == recorded[common]) {
      ++common;
    }
    stmt_->Rollback(common);
    seq_.resize(common);
    for (size_t i = common; i < recorded.size(); ++i) {
      stmt_->Evict(recorded[i]);
      seq_.push_back(recorded[i]);
    }
    return *stmt_;
  }

  // A solved, incomplete prefix: its simulation (after `evict_end`) is undone and its evictions
  // `evicted` stay as the next prefix's starting point.
  void KeepPrefix(Statement::Checkpoint evict_end, std::vector<PodId> evicted) {
    stmt_->Rollback(evict_end);
    seq_ = std::move(evicted);
  }

  // The whole job is solved: the statement leaves with the solution.
  std::unique_ptr<Statement> Release() {
    seq_.clear();
    return std::move(stmt_);
  }

  // Undoes everything kept (the session is as the search found it).
  void Discard() {
    if (stmt_) stmt_->Discard();
    seq_.clear();
  }

 private:
  StatementFactory new_statement_;
  std::unique_ptr<Statement> stmt_;
  std::vector<PodId> seq_;
};

}  // namespace gantry::victim_search
