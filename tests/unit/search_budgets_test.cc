// KAI's scenarioSearchBudgets: how the configuration is read (defaults, fallbacks, errors naming
// the field) and how the victim search applies the budgets (actions/victim_search/
// search_budget.h). The search reads the session's clock; these tests replace it with one that
// moves 1 ms at every reading, so a budget of a few milliseconds binds at a known point and the
// defaults (minutes) never do.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "framework/config.h"
#include "test_cluster.h"

namespace gantry {
namespace {

using testutil::AddJob;
using testutil::AddNode;
using testutil::AddQueue;
using testutil::Contains;
using testutil::PodOf;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1'000 * kMs;

// --- Configuration ----------------------------------------------------------------------------

ScenarioSearchBudgets Budgets(const std::string& yaml) {
  auto parsed = ParseSchedulerConfig("scenarioSearchBudgets:\n" + yaml, "cfg.yaml");
  if (!parsed.ok()) ADD_FAILURE() << parsed.error();
  return parsed.ok() ? parsed.value().search_budgets : ScenarioSearchBudgets{};
}

std::string BudgetError(const std::string& yaml) {
  auto parsed = ParseSchedulerConfig("scenarioSearchBudgets:\n" + yaml, "cfg.yaml");
  return parsed.ok() ? std::string("(accepted)") : parsed.error();
}

TEST(SearchBudgetsConfig, UnsetBudgetsAreKaisDefaults) {
  const ScenarioSearchBudgets b = SchedulerConfig::Default().search_budgets;
  for (const char* action : {"reclaim", "preempt", "consolidation", "default"}) {
    EXPECT_EQ(b.ActionLimitNs(action), 300 * kSecond) << action;
  }
  EXPECT_EQ(b.JobLimitNs(), 240 * kSecond);
  EXPECT_EQ(b.MinJobNs(), 0);
  EXPECT_EQ(b.GeneratorLimitNs("NodeLocalGreedy"), 30 * kSecond);
  EXPECT_EQ(b.GeneratorLimitNs("MultiNodeGang"), 120 * kSecond);
  EXPECT_EQ(b.GeneratorLimitNs("default"), 120 * kSecond);
}

TEST(SearchBudgetsConfig, ConfiguredDurationsAndTheirDefaultFallbacks) {
  // As KAI's TestActionSearchBudgetUsesConfiguredDurations: an action's own key, else "default";
  // a generator's own key, else the configured "default" (not its built-in default).
  const ScenarioSearchBudgets b = Budgets(R"(  maxActionSearchDuration: {default: 30s, preempt: 3s}
  maxJobSearchDuration: 750ms
  minJobSearchDuration: 100ms
  maxGeneratorSearchDuration: {default: 400ms, NodeLocalGreedy: 75ms}
)");
  EXPECT_EQ(b.ActionLimitNs("preempt"), 3 * kSecond);
  EXPECT_EQ(b.ActionLimitNs("reclaim"), 30 * kSecond);
  EXPECT_EQ(b.JobLimitNs(), 750 * kMs);
  EXPECT_EQ(b.MinJobNs(), 100 * kMs);
  EXPECT_EQ(b.GeneratorLimitNs("NodeLocalGreedy"), 75 * kMs);
  EXPECT_EQ(b.GeneratorLimitNs("MultiNodeGang"), 400 * kMs);
  EXPECT_EQ(b.GeneratorLimitNs("default"), 400 * kMs);
  // A zero maximum is unlimited, and then any minimum is allowed.
  const ScenarioSearchBudgets unlimited = Budgets(
      "  maxJobSearchDuration: 0s\n"
      "  minJobSearchDuration: 10m\n");
  EXPECT_EQ(unlimited.JobLimitNs(), 0);
  EXPECT_EQ(unlimited.MinJobNs(), 600 * kSecond);
}

TEST(SearchBudgetsConfig, BadValuesAreErrorsNamingTheField) {
  const std::string negative = BudgetError("  maxActionSearchDuration: {reclaim: -1s}\n");
  EXPECT_TRUE(
      Contains(negative, "cfg.yaml: scenarioSearchBudgets.maxActionSearchDuration.reclaim"));
  EXPECT_TRUE(Contains(negative, "must be non-negative"));
  EXPECT_TRUE(Contains(BudgetError("  maxJobSearchDuration: -1s\n"),
                       "scenarioSearchBudgets.maxJobSearchDuration: must be non-negative"));
  EXPECT_TRUE(Contains(BudgetError("  minJobSearchDuration: -5ms\n"),
                       "scenarioSearchBudgets.minJobSearchDuration: must be non-negative"));
  EXPECT_TRUE(Contains(BudgetError("  maxGeneratorSearchDuration: {MultiNodeGang: 2 minutes}\n"),
                       "maxGeneratorSearchDuration.MultiNodeGang: time: unknown unit"));
  EXPECT_TRUE(Contains(BudgetError("  maxJobSearchDuration: 10\n"), "missing unit"));
  // Keys: the eviction actions and KAI's generators only (misspelt knobs do not pass silently).
  const std::string action = BudgetError("  maxActionSearchDuration: {allocate: 1s}\n");
  EXPECT_TRUE(Contains(action, "maxActionSearchDuration.allocate: unknown action key"));
  EXPECT_TRUE(Contains(action, "default, reclaim, preempt, consolidation"));
  EXPECT_TRUE(Contains(BudgetError("  maxGeneratorSearchDuration: {NodeLocalGready: 1s}\n"),
                       "maxGeneratorSearchDuration.NodeLocalGready: unknown scenario generator"));
  // The minimum per job must stay below a limited maximum.
  for (const char* min : {"250ms", "251ms"}) {
    EXPECT_TRUE(Contains(BudgetError("  maxJobSearchDuration: 250ms\n  minJobSearchDuration: " +
                                     std::string(min) + "\n"),
                         "minJobSearchDuration: must be less than maxJobSearchDuration"))
        << min;
  }
  EXPECT_TRUE(Contains(BudgetError("  minJobSearchDuration: 4m\n"),
                       "must be less than maxJobSearchDuration"));
  EXPECT_TRUE(Contains(BudgetError("  maxActionSearchDuration: [1s]\n"), "must be a mapping"));
}

// --- The search under budgets -------------------------------------------------------------------

// n0 has 2 GPUs, both used by queue a (deserved 0) through jobs a1 and a2; queue b (deserved 2)
// has two pending one-GPU jobs b1 and b2. Unbounded, reclaim evicts a1 or a2 for each.
struct Reclaim {
  Cluster c;
  JobId b1 = kNone, b2 = kNone;
};

Reclaim BuildReclaim() {
  Reclaim r;
  const NodeId n0 = AddNode(r.c, "n0", 2);
  AddQueue(r.c, "a", {.gpu = QueueQuota{0, kUnlimited, 1}});
  AddQueue(r.c, "b", {.gpu = QueueQuota{2, kUnlimited, 1}});
  const JobId a1 = AddJob(r.c, "a1", {.queue = "a", .pod = testutil::kGpuPod, .creation_ms = 1});
  const JobId a2 = AddJob(r.c, "a2", {.queue = "a", .pod = testutil::kGpuPod, .creation_ms = 2});
  r.b1 = AddJob(r.c, "b1", {.queue = "b", .pod = testutil::kGpuPod, .creation_ms = 3});
  r.b2 = AddJob(r.c, "b2", {.queue = "b", .pod = testutil::kGpuPod, .creation_ms = 4});
  testutil::Place(r.c, PodOf(r.c, a1, 0), n0);
  testutil::Place(r.c, PodOf(r.c, a2, 0), n0);
  r.c.Finalize();
  return r;
}

// Runs reclaim alone under `budgets_yaml` (empty: the defaults) with the stepping clock (or the
// steady clock when `stepping` is false).
testutil::Cycle RunReclaim(const Cluster& c, const std::string& budgets_yaml,
                           bool stepping = true) {
  SchedulerConfig cfg = SchedulerConfig::Default();
  if (!budgets_yaml.empty()) {
    auto parsed = ParseSchedulerConfig("scenarioSearchBudgets:\n" + budgets_yaml, "cfg.yaml");
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    if (parsed.ok()) cfg = parsed.value();
  }
  cfg.actions = {"reclaim"};
  testutil::Cycle cycle;
  cycle.scheduler = testutil::MakeScheduler(cfg);
  cycle.ssn = cycle.scheduler->OpenSession(c, testutil::kNowMs);
  if (stepping) {
    auto now = std::make_shared<std::chrono::steady_clock::time_point>();
    cycle.ssn->SetSearchClock([now] {
      *now += std::chrono::milliseconds(1);
      return *now;
    });
  }
  cycle.scheduler->RunActions(*cycle.ssn);
  return cycle;
}

const ActionCounts& ReclaimCounts(const Session& s) {
  for (const ActionCounts& a : s.all_action_counts()) {
    if (a.action == "reclaim") return a;
  }
  throw std::logic_error("reclaim did not run");
}

TEST(SearchBudgets, DefaultBudgetsDoNotBind) {
  const Reclaim r = BuildReclaim();
  auto steady = RunReclaim(r.c, "", /*stepping=*/false);
  auto stepped = RunReclaim(r.c, "");
  for (const testutil::Cycle* cycle : {&steady, &stepped}) {
    const Session& s = **cycle;
    EXPECT_EQ(s.evictions().size(), 2u);
    EXPECT_EQ(s.pod(PodOf(r.c, r.b1, 0)).status, PodStatus::kPipelined);
    EXPECT_EQ(s.pod(PodOf(r.c, r.b2, 0)).status, PodStatus::kPipelined);
    const ActionCounts& a = ReclaimCounts(s);
    EXPECT_EQ(a.searches[static_cast<size_t>(SearchEnd::kSolved)][0], 2);
    EXPECT_EQ(a.Searches(SearchEnd::kDeadlineExhausted), 0);
    EXPECT_EQ(a.action_budget_exhausted, 0);
    // The configured budgets, as the metrics export them.
    EXPECT_TRUE(a.has_budgets);
    EXPECT_EQ(a.action_budget_ns, 300 * kSecond);
    EXPECT_EQ(a.job_budget_ns, 240 * kSecond);
    EXPECT_EQ(a.generator_budgets_ns.size(), 3u);  // default, MultiNodeGang, NodeLocalGreedy
  }
}

TEST(SearchBudgets, AJobDeadlineStopsTheSearchAndTheAction) {
  // The job may search 1.5 ms: it starts (its start and the check that it has time left are one
  // reading apart) and stops at its first check inside the search. Its time ran out, so reclaim
  // does not search for b2 either.
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(r.c, "  maxJobSearchDuration: 1500us\n");
  const Session& s = *cycle;
  EXPECT_TRUE(s.evictions().empty());
  EXPECT_EQ(s.pod(PodOf(r.c, r.b1, 0)).status, PodStatus::kPending);
  const ActionCounts& a = ReclaimCounts(s);
  EXPECT_EQ(a.Searches(SearchEnd::kDeadlineExhausted), 1);
  EXPECT_EQ(a.podgroups_acted_on, 1);  // b2 was not searched
  EXPECT_EQ(a.Searches(SearchEnd::kSolved), 0);
  EXPECT_EQ(a.action_budget_exhausted, 0);  // the action's own budget (5m) was not spent
}

TEST(SearchBudgets, GeneratorDeadlinesEndOneJobsSearchAndTheActionGoesOn) {
  // The registered generators may search 1 ms + 0.5 ms in all: each job's search ends at its
  // first check inside the search, "generators_exhausted", and reclaim goes on to the next job.
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(
      r.c, "  maxGeneratorSearchDuration: {NodeLocalGreedy: 1ms, MultiNodeGang: 500us}\n");
  const Session& s = *cycle;
  EXPECT_TRUE(s.evictions().empty());
  const ActionCounts& a = ReclaimCounts(s);
  EXPECT_EQ(a.podgroups_acted_on, 2);
  EXPECT_EQ(a.Searches(SearchEnd::kGeneratorsExhausted), 2);
  EXPECT_EQ(a.Searches(SearchEnd::kDeadlineExhausted), 0);
}

TEST(SearchBudgets, ASpentActionBudgetLeavesLaterJobsNotAttempted) {
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(r.c, "  maxActionSearchDuration: {reclaim: 1ns}\n");
  const Session& s = *cycle;
  EXPECT_TRUE(s.evictions().empty());
  const ActionCounts& a = ReclaimCounts(s);
  EXPECT_EQ(a.Searches(SearchEnd::kNotAttempted), 1);
  EXPECT_EQ(a.podgroups_acted_on, 1);
  EXPECT_EQ(a.action_budget_ns, 1);
}

TEST(SearchBudgets, TheMinimumPerJobStillSearchesAfterTheActionBudgetIsSpent) {
  // As KAI's reclaim budget test: the action's budget is spent at once, but every job still
  // gets 50 ms, on a reduced budget, and both are solved.
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(r.c,
                          "  maxActionSearchDuration: {reclaim: 1ns}\n"
                          "  maxJobSearchDuration: 1s\n"
                          "  minJobSearchDuration: 50ms\n");
  const Session& s = *cycle;
  EXPECT_EQ(s.evictions().size(), 2u);
  const ActionCounts& a = ReclaimCounts(s);
  EXPECT_EQ(a.searches[static_cast<size_t>(SearchEnd::kSolved)][1], 2);  // reduced budget
  EXPECT_EQ(a.searches[static_cast<size_t>(SearchEnd::kSolved)][0], 0);
}

TEST(SearchBudgets, AJobStoppedOnceTheActionBudgetIsSpentIsCountedAsSuch) {
  // The action's 2.5 ms (from its start) leave the first job 1.5 ms: the job's deadline is the
  // action's, so the search it stops counts in scenario_search_action_budget_exhausted_total.
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(r.c, "  maxActionSearchDuration: {default: 2500us}\n");
  const ActionCounts& a = ReclaimCounts(*cycle);
  EXPECT_EQ(a.Searches(SearchEnd::kDeadlineExhausted), 1);
  EXPECT_EQ(a.action_budget_exhausted, 1);
  EXPECT_TRUE(cycle->evictions().empty());
}

TEST(SearchBudgets, ZeroMeansUnlimited) {
  // Every maximum 0: nothing binds (the search does not even read the clock).
  const Reclaim r = BuildReclaim();
  auto cycle = RunReclaim(r.c,
                          "  maxActionSearchDuration: {default: 0s}\n"
                          "  maxJobSearchDuration: 0s\n"
                          "  maxGeneratorSearchDuration: {default: 0s}\n");
  EXPECT_EQ(cycle->evictions().size(), 2u);
  const ActionCounts& a = ReclaimCounts(*cycle);
  EXPECT_EQ(a.Searches(SearchEnd::kSolved), 2);
  EXPECT_EQ(a.action_budget_ns, 0);
}

}  // namespace
}  // namespace gantry
