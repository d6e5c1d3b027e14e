#include "actions/victim_search/search_budget.h"

#include <algorithm>
#include <string>

namespace gantry {

namespace {

// A configured maximum (0: unlimited) as a deadline length.
int64_t LimitOrUnlimited(int64_t ns) { return ns == 0 ? SearchDeadline::kUnlimited : ns; }

}  // namespace

SearchDeadline::SearchDeadline(TimePoint start, int64_t ns) {
  if (ns == kUnlimited) return;
  unlimited_ = false;
  end_ = start + std::chrono::nanoseconds(std::max<int64_t>(ns, 0));
}

int64_t SearchDeadline::RemainingNs(TimePoint now) const {
  if (unlimited_) return kUnlimited;
  if (now >= end_) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(end_ - now).count();
}

const char* ActionBudgetKey(EvictionAction action) {
  switch (action) {
    case EvictionAction::kReclaim:
      return "reclaim";
    case EvictionAction::kPreempt:
      return "preempt";
    case EvictionAction::kConsolidation:
      return "consolidation";
  }
  return "default";
}

ActionSearchBudget::ActionSearchBudget(Session& ssn, EvictionAction action) : ssn_(ssn) {
  const ScenarioSearchBudgets& b = ssn.config().search_budgets;
  const int64_t action_ns = b.ActionLimitNs(ActionBudgetKey(action));
  job_limit_ns_ = b.JobLimitNs();
  min_job_ns_ = b.MinJobNs();
  generators_ns_ = 0;
  for (const std::string& g : ssn.scenario_generators()) {
    const int64_t limit = b.GeneratorLimitNs(g);
    if (limit == 0) {  // one unlimited generator: the whole sequence is
      generators_ns_ = 0;
      break;
    }
    // (Beyond an int64 of nanoseconds, about 292 years, counts as unlimited.)
    if (generators_ns_ > SearchDeadline::kUnlimited - limit) {
      generators_ns_ = 0;
      break;
    }
    generators_ns_ += limit;
  }
  ActionCounts& counts = ssn.action_counts();
  counts.has_budgets = true;
  counts.action_budget_ns = action_ns;
  counts.job_budget_ns = job_limit_ns_;
  const auto generator_limits = b.GeneratorLimitsNs();
  counts.generator_budgets_ns.assign(generator_limits.begin(), generator_limits.end());
  deadline_ = SearchDeadline(ssn.SearchNow(), LimitOrUnlimited(action_ns));
}

JobSearchBudget ActionSearchBudget::BeginJob() const {
  const auto now = ssn_.SearchNow();
  const int64_t action_left = deadline_.RemainingNs(now);
  int64_t job_ns = action_left;
  if (job_limit_ns_ != 0) job_ns = std::min(job_ns, job_limit_ns_);
  job_ns = std::max(job_ns, min_job_ns_);
  JobSearchBudget out;
  out.job = SearchDeadline(now, job_ns);
  out.generators = SearchDeadline(now, std::min(job_ns, LimitOrUnlimited(generators_ns_)));
  out.reduced = job_limit_ns_ > 0 && action_left < job_limit_ns_;
  return out;
}

}  // namespace gantry
