// The victim search's time budgets: KAI's scenarioSearchBudgets (SchedulerConfig::search_budgets)
// applied to reclaim, preempt and consolidation.
//
// An eviction action starts an ActionSearchBudget when it begins; each job's search starts a
// JobSearchBudget from it. KAI's rules (actions/common/solvers/search_budget.go):
//   - the action's budget runs from the action's start (maxActionSearchDuration);
//   - a job's search may last the action's remaining time, at most maxJobSearchDuration, and at
//     least minJobSearchDuration (the best-effort floor: a job reached after the action's budget
//     ran out still gets it); a job that started with less than maxJobSearchDuration left in the
//     action ran on a "reduced budget";
//   - each scenario generator's attempt may last the job's remaining time, at most its own limit
//     (maxGeneratorSearchDuration).
// KAI tries the registered generators one after the other, each with its limit. Gantry's search
// is one scenario sequence standing for all the registered generators (plugins/
// scenario_generators), so its generator deadline is the sum of their limits (unlimited when one
// is), counted from the job's start and capped by the job's deadline: as long as KAI's
// generators could search in turn.
//
// The search reads the time before the job, before each pod prefix and before each scenario it
// simulates. When the job's deadline has passed, the search ends "deadline_exhausted" and the
// action stops (its later jobs are not searched: KAI's shouldStopActionForSearchResult); when
// only the generators' deadline has passed, it ends "generators_exhausted" and the action goes on
// to its next job. A job with no time left at its start is "not_attempted", which stops the action
// too. The clock is the session's (Session::SearchNow), which tests replace.
#pragma once

#include <chrono>
#include <cstdint>

#include "actions/victim_search/eviction_messages.h"
#include "framework/session.h"

namespace gantry {

// A point on the search clock by which a search must stop; unlimited when none.
class SearchDeadline {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // No deadline.
  SearchDeadline() = default;
  // `ns` after `start`, or none when `ns` is kUnlimited.
  SearchDeadline(TimePoint start, int64_t ns);
  static constexpr int64_t kUnlimited = INT64_MAX;

  bool unlimited() const { return unlimited_; }
  // Nanoseconds left at `now` (0 once passed; kUnlimited without a deadline).
  int64_t RemainingNs(TimePoint now) const;
  bool Passed(TimePoint now) const { return RemainingNs(now) <= 0; }

 private:
  bool unlimited_ = true;
  TimePoint end_{};
};

// One job's search.
struct JobSearchBudget {
  SearchDeadline job;         // the whole search of the job
  SearchDeadline generators;  // the search's scenario generators (see the file comment)
  bool reduced = false;       // started with less than maxJobSearchDuration left in the action
};

// One eviction action's budget; it records the configured budgets in the action's counts
// (Session::action_counts, exported as KAI's scenario_search_*_budget_configured_seconds).
class ActionSearchBudget {
 public:
  ActionSearchBudget(Session& ssn, EvictionAction action);

  // Starts a job's search now.
  JobSearchBudget BeginJob() const;
  // Whether the action's own budget is spent.
  bool Exhausted() const { return deadline_.Passed(ssn_.SearchNow()); }

 private:
  Session& ssn_;
  int64_t job_limit_ns_;     // 0: unlimited
  int64_t min_job_ns_;       // 0: no floor
  int64_t generators_ns_;    // the registered generators' limits added up; 0: unlimited
  SearchDeadline deadline_;  // the action's
};

// KAI's name of the action's key in maxActionSearchDuration.
const char* ActionBudgetKey(EvictionAction action);

}  // namespace gantry
