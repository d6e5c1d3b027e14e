#include "actions/victim_search/solver.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "actions/allocate/allocate.h"
#include "actions/victim_search/accelerator.h"
#include "actions/victim_search/generators.h"
#include "actions/victim_search/scenario.h"
#include "actions/victim_search/scenario_filters.h"
#include "actions/victim_search/search_context.h"

namespace gantry {

namespace {

using victim_search::AppendPods;
using victim_search::MaxSolvableSize;
using victim_search::NodeLocalScenarios;
using victim_search::Outcome;
using victim_search::PartialResult;
using victim_search::PopStep;
using victim_search::ProbeResult;
using victim_search::Scenario;
using victim_search::ScenarioIndex;
using victim_search::SearchAccelerator;
using victim_search::SearchContext;
using victim_search::SubScenarioEmitter;
using victim_search::VictimGroups;
using victim_search::VictimStep;

// KAI's JobSolver for one pending job. `accel_` holds the accelerators (accelerator.h) with the
// solver shortcuts on and is null otherwise: every `if (accel_)` below is a named point where
// they may decide ahead of the reference steps; the rest is the reference path.
class Solver {
 public:
  // Valid scenarios generated at most per batch (see SolvePartial): each batch re-evicts the
  // recorded victims once its pops needed the clean session, and the batch that solves a prefix
  // wastes the scenarios generated after the solving one. 512 did best on the 5,000-node cycle
  // benchmark (unbounded, 64, 256 and 1,024 all cost more).
  static constexpr size_t kMaxBatch = 512;

  Solver(Session& ssn, JobId job, SolverSpec& spec, const JobSearchBudget& budget)
      : ctx_(ssn, job, spec),
        ssn_(ssn),
        job_(job),
        budget_(budget),
        timed_(!budget.job.unlimited() || !budget.generators.unlimited()) {
    if (ssn.params().solver_shortcuts) {
      accel_ = std::make_unique<SearchAccelerator>(ctx_, [this] { return NewStatement(); });
    }
  }

  SolverResult Solve() {
    if (ssn_.params().victim_search_v017) return SolveV017();
    SolverResult out;
    const int original_active = ActiveUsed();
    std::vector<PodId> tasks;
    ssn_.TasksToAllocate(job_, tasks, /*real=*/false);
    std::vector<PodId> pending;
    std::unique_ptr<Statement> statement;
    std::vector<PodId> recorded_tasks;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (OutOfTime()) break;
      pending.push_back(tasks[i]);
      const bool complete = pending.size() == tasks.size();
      PartialResult r = SolvePartial(pending);
      const bool kept = accel_ && accel_->KeepPrefix(r, complete);
      if (!r.solved) break;
      if (!kept && !complete) r.statement->Discard();
      statement = std::move(r.statement);
      recorded_tasks = r.victim_tasks;
      recorded_groups_ = std::move(r.victim_groups);
    }
    MakeClean();  // (a failed search leaves nothing evicted)
    out.solved = ssn_.IsGangSatisfied(job_) && ActiveUsed() > original_active;
    out.statement = std::move(statement);
    out.victims = std::move(recorded_tasks);
    out.end = out.solved ? SearchEnd::kSolved : stopped_.value_or(SearchEnd::kGeneratorsExhausted);
    out.cut_by_budget = stopped_.has_value();
    return out;
  }

 private:
  // --- KAI v0.16+'s search model (docs/victim-search-v0.17.md) ---------------------------------

  // KAI's SolveWithResult: each registered generator in turn, with no recorded victims at its
  // start, probes prefix sizes (1, 2, 4, ... until one fails or all tasks are solved, then
  // bisection between the last size solved and the first that failed); each probe that solves
  // records its victims for the next one. When some size solved, a last probe of every task
  // decides the generator. Failed scenarios are remembered for the whole job.
  SolverResult SolveV017() {
    SolverResult out;
    const int original_active = ActiveUsed();
    std::vector<PodId> tasks;
    ssn_.TasksToAllocate(job_, tasks, /*real=*/false);
    const size_t n = tasks.size();
    failed_.clear();
    auto stop = [&] { return stopped_ == SearchEnd::kDeadlineExhausted; };
    for (const std::string& generator : ssn_.scenario_generators()) {
      const bool multi_node = generator == "MultiNodeGang";
      recorded_groups_ = VictimGroups();
      auto probe = [&](size_t k) {
        PartialResult r = ProbeV017(multi_node, tasks, k);
        if (!r.solved) return stop() ? ProbeResult::kStop : ProbeResult::kUnsolved;
        recorded_groups_ = std::move(r.victim_groups);
        r.statement->Discard();
        return ProbeResult::kSolved;
      };
      bool stopped = false;
      const size_t solved = MaxSolvableSize(n, probe, stopped);
      if (stopped) break;
      if (solved == 0) continue;
      PartialResult r = ProbeV017(multi_node, tasks, n);
      if (r.solved) {
        out.solved = ssn_.IsGangSatisfied(job_) && ActiveUsed() > original_active;
        if (out.solved) {
          out.statement = std::move(r.statement);
          out.victims = std::move(r.victim_tasks);
          out.end = SearchEnd::kSolved;
        } else {
          r.statement->Discard();
        }
        return out;
      }
      if (stop()) break;
    }
    out.end = stopped_.value_or(SearchEnd::kGeneratorsExhausted);
    return out;
  }

  // One probe: the first `k` tasks, the scenarios of one generator (KAI's solvePartialJob with
  // a fresh generator over a fresh victims queue), the first one solved wins.
  PartialResult ProbeV017(bool multi_node, const std::vector<PodId>& tasks, size_t k) {
    if (OutOfTime()) return {};
    ++MutableSolverStats(ctx_.spec.action).prefixes;
    ctx_.ResetFeasible(recorded_groups_.pods);
    const std::vector<PodId> pending(tasks.begin(), tasks.begin() + static_cast<ptrdiff_t>(k));
    if (accel_) accel_->StartPrefix(pending);
    Scenario acc(ssn_, index_, job_, pending, recorded_groups_);
    if (!base_queue_) {
      base_queue_ = ctx_.spec.victims_queue();
      base_queue_->Freeze();
    }
    JobsByQueue own(*base_queue_);
    if (!capacities_) capacities_ = &IdleGpuCapacities::Kept(ssn_);
    ScenarioFilters filters(ssn_, *capacities_, job_, acc.pending(), acc.recorded_tasks(),
                            ctx_.feasible);
    planned_.Clear();
    std::vector<VictimGroups> node_local;  // NodeLocalGreedy's scenarios of the current state
    size_t next_local = 0;
    std::optional<SubScenarioEmitter> emitter;  // MultiNodeGang's, of the current state
    bool advance = false;  // the first accumulated state is the recorded victims alone
    VictimGroups victims;
    PartialResult r;
    for (;;) {
      bool have = false;
      if (emitter) {
        have = emitter->Next(victims);
        if (!have) emitter.reset();
      } else if (next_local < node_local.size()) {
        victims = std::move(node_local[next_local++]);
        have = true;
      }
      if (!have) {
        if (!NextAccumulated(own, acc, filters, advance)) return {};
        advance = true;
        if (!multi_node) {
          NodeLocalScenarios(ssn_, acc, planned_, node_local);
          next_local = 0;
          continue;
        }
        if (!planned_.pods.empty()) {
          emitter.emplace(ssn_, acc, planned_, *capacities_, ctx_.feasible);
          continue;
        }
        victims = VictimGroups();  // the recorded victims alone
      }
      if (OutOfTime()) return {};
      std::vector<PodId> fingerprint = Fingerprint(k, acc.recorded_tasks(), victims.pods);
      if (failed_.count(fingerprint) != 0) continue;
      ++ssn_.action_counts().scenarios_simulated;
      if (SolveByPod(pending, victims, r)) return r;
      failed_.insert(std::move(fingerprint));
    }
  }

  // KAI's iterateAccumulated: with `advance`, pops victims until a pop adds some; then the
  // accumulated filters, popping on while they reject. False when the victims queue runs out.
  bool NextAccumulated(JobsByQueue& own, Scenario& acc, ScenarioFilters& filters, bool advance) {
    for (bool pop = advance;; pop = true) {
      if (pop) {
        if (own.empty()) return false;
        const size_t before = planned_.size();
        if (!AddNextPotentialVictims(&own, acc)) continue;
        for (size_t g = before; g < planned_.size(); ++g) {
          acc.AddPotentialVictims(ssn_, planned_.tasks(g));
        }
      }
      if (filters.Accept(planned_.pods)) return true;
      ++ssn_.action_counts().scenarios_filtered;
    }
  }

  // A scenario's identity (KAI's fingerprint): the prefix size (the pending pods are the first
  // k tasks), the recorded victims and the potential victims, as sorted pod lists.
  static std::vector<PodId> Fingerprint(size_t k, std::span<const PodId> recorded,
                                        std::span<const PodId> potential) {
    std::vector<PodId> out;
    out.reserve(recorded.size() + potential.size() + 2);
    out.push_back(static_cast<PodId>(k));
    const size_t r = out.size();
    out.insert(out.end(), recorded.begin(), recorded.end());
    std::sort(out.begin() + static_cast<ptrdiff_t>(r), out.end());
    out.push_back(kNone);
    const size_t p = out.size();
    out.insert(out.end(), potential.begin(), potential.end());
    std::sort(out.begin() + static_cast<ptrdiff_t>(p), out.end());
    return out;
  }

  // KAI's byPodSolver: every victim of the scenario (the recorded ones and `victims`, a pod listed
  // in both evicted once) evicted at once, their nodes added to the feasible ones, then simulated
  // and validated. Unsolved, the session and the feasible nodes are as before.
  bool SolveByPod(const std::vector<PodId>& pending, const VictimGroups& victims,
                  PartialResult& out) {
    Scenario scenario(ssn_, SecondIndex(), job_, pending, recorded_groups_);
    std::vector<PodId>& potential = potential_scratch_;
    potential.clear();
    std::vector<PodId> group;
    for (size_t g = 0; g < victims.size(); ++g) {
      group.clear();
      for (PodId p : victims.tasks(g)) {
        if (!scenario.IsRecorded(p)) group.push_back(p);
      }
      if (group.empty()) continue;
      scenario.AddPotentialVictims(ssn_, group);
      AppendPods(potential, group);
    }
    if (scenario.recorded_tasks().empty() && potential.empty()) return false;
    std::unique_ptr<Statement> stmt = NewStatement();
    for (PodId p : scenario.recorded_tasks()) stmt->Evict(p);
    // (To the accelerators, each scenario is a batch of its own, its recorded victims the base.)
    if (accel_) {
      accel_->StartBatch();
      accel_->OnScenario();
      if (accel_->SkipScenarioBeforeEvicting(potential)) {
        stmt->Discard();
        return false;
      }
    }
    for (PodId p : potential) stmt->Evict(p);
    std::vector<NodeId>& added = added_scratch_;
    added.clear();
    ctx_.AddNodesOf(potential, added);
    if (accel_) accel_->AfterEvicting();
    // (Unsolved ends alike whether failed or rejected: the accelerators may skip either.)
    if (Simulate(scenario, *stmt, potential, out, /*may_skip=*/true) == Outcome::kSolved) {
      out.statement = std::move(stmt);
      return true;
    }
    // (KAI #1841: a rejected simulation gives its feasible nodes back too.)
    ctx_.RemoveAdded(added);
    stmt->Discard();
    return false;
  }

  // Whether the job's time budget is spent (then the search stops, with its end noted in
  // `stopped_`). Read before each prefix and before each scenario simulated.
  bool OutOfTime() {
    if (!timed_) return false;
    if (stopped_) return true;
    const auto now = ssn_.SearchNow();
    if (budget_.job.Passed(now)) {
      stopped_ = SearchEnd::kDeadlineExhausted;
    } else if (budget_.generators.Passed(now)) {
      stopped_ = SearchEnd::kGeneratorsExhausted;
    }
    return stopped_.has_value();
  }

  int ActiveUsed() const {
    int n = 0;
    for (PodId p : ssn_.cluster().jobs[job_].pods) n += IsActiveUsed(ssn_.pod(p).status);
    return n;
  }

  // KAI's byPodSolver for the prefix `pending`: scenarios of growing victim sets until one is
  // solved or the victims queue is empty.
  PartialResult SolvePartial(const std::vector<PodId>& pending) {
    ctx_.ResetFeasible(recorded_groups_.pods);
    Scenario scenario(ssn_, index_, job_, pending, recorded_groups_);
    if (accel_) accel_->StartPrefix(pending);
    // Every prefix starts from the same session state, so the victims queue is built once per
    // job and copied (KAI builds a fresh one per prefix; the pops of a prefix depend on its
    // recorded victims).
    if (!base_queue_) {
      MakeClean();
      base_queue_ = ctx_.spec.victims_queue();
      base_queue_->Freeze();  // copies share its entries
    }
    std::optional<JobsByQueue> own_queue;
    if (accel_) {
      accel_->StartPops(*base_queue_);
    } else {
      own_queue.emplace(*base_queue_);
    }
    JobsByQueue* own = own_queue ? &*own_queue : nullptr;
    // KAI solves each scenario in a statement of its own, so every pop of the victims queue and
    // every scenario filter sees the session with no victim evicted. Pops and filters change
    // nothing in the session and no simulation outcome changes what comes next, so the
    // scenarios are generated on the clean session, a batch at a time; the recorded victims are
    // then evicted once for the batch and its scenarios simulated in turn, each rolling back to
    // that point. Batches double in size, so a prefix evicts its recorded victims a logarithmic
    // number of times.
    if (!capacities_) {
      MakeClean();
      capacities_ = &IdleGpuCapacities::Kept(ssn_);
    }
    ScenarioFilters filters(ssn_, *capacities_, job_, scenario.pending(), scenario.recorded_tasks(),
                            ctx_.feasible);
    planned_.Clear();
    size_t added = 0;  // planned groups already added to `scenario`
    bool initial_done = false;
    std::vector<size_t> batch;  // group counts of the valid scenarios of the batch
    // The first batch holds four scenarios: re-evicting the recorded victims costs more than
    // generating a few scenarios that are never simulated (measured on the cycle benchmark).
    // Batches double up to kMaxBatch: the scenarios of a batch after the one that solves the
    // prefix are generated for nothing (their pops and filters), up to a whole batch.
    for (size_t batch_size = 4;; batch_size = std::min(batch_size * 2, kMaxBatch)) {
      batch.clear();
      if (!initial_done) {
        initial_done = true;
        // GetValidScenario on the scenario of the recorded victims alone.
        if (filters.Accept(planned_.pods)) {
          batch.push_back(0);
        } else {
          ++ssn_.action_counts().scenarios_filtered;
        }
      }
      while (batch.size() < batch_size && !PopsEmpty(own)) {
        if (!AddNextPotentialVictims(own, scenario)) continue;
        if (filters.Accept(planned_.pods)) {
          batch.push_back(planned_.size());
        } else {
          ++ssn_.action_counts().scenarios_filtered;
        }
      }
      if (batch.empty()) return {};
      // The recorded victims are evicted once per batch; each scenario rolls back to this point.
      std::unique_ptr<Statement> own_stmt;
      Statement* stmt = accel_ ? accel_->KeptStatement(scenario.recorded_tasks()) : nullptr;
      if (stmt == nullptr) {
        own_stmt = NewStatement();
        stmt = own_stmt.get();
        for (PodId p : scenario.recorded_tasks()) stmt->Evict(p);
      }
      const auto base = stmt->checkpoint();
      PartialResult r;
      if (accel_) accel_->StartBatch();
      for (size_t end : batch) {
        if (OutOfTime()) break;
        for (; added < end; ++added) scenario.AddPotentialVictims(ssn_, planned_.tasks(added));
        if (accel_) accel_->OnScenario();
        ++ssn_.action_counts().scenarios_simulated;
        // (A scenario fills `r` only when it solves the prefix.)
        if (SolveScenario(scenario, *stmt, base, r)) {
          r.statement = std::move(own_stmt);
          return r;
        }
      }
      // (A kept base stays evicted: the next batch starts from the same recorded victims.)
      if (own_stmt) own_stmt->Discard();
      if (stopped_ || PopsEmpty(own)) return {};
    }
  }

  // Whether the victims queue of the current prefix is empty (`own`: the prefix's own copy;
  // null when the accelerators replay the pops).
  bool PopsEmpty(const JobsByQueue* own) const { return own ? own->empty() : accel_->PopsEmpty(); }

  // KAI's addNextPotentialVictims: pops the next victim job entry and plans its tasks to evict
  // as the next potential victims (false when the entry holds a recorded victim: only the rest
  // of its job goes back to the queue). Called with no victim evicted.
  bool AddNextPotentialVictims(JobsByQueue* own, const Scenario& scenario) {
    const JobView* view = nullptr;
    std::span<const PodId> victims;
    if (own) {
      if (own->empty()) return false;
      own_next_ = own->PopNextView();
      ++MutableSolverStats(ctx_.spec.action).victims_popped;
      bool has_more = false;
      own_victims_ = TasksToEvict(ssn_, own_next_, has_more);
      DecideStep(ssn_, own_next_, own_victims_, has_more, scenario, step_);
      if (step_.push) own->PushView(JobView{own_next_.job, true, step_.rest});
      view = &own_next_;
      victims = own_victims_;
    } else if (!accel_->NextPop(scenario, step_, view, victims)) {
      return false;
    } else {
      ++MutableSolverStats(ctx_.spec.action).victims_popped;
    }
    if (step_.skip) return false;
    if (!victims.empty()) {
      planned_.Add(view->job, victims);
    }
    return true;
  }

  void MakeClean() {
    if (accel_) accel_->MakeClean();
  }

  std::unique_ptr<Statement> NewStatement() {
    auto stmt = std::make_unique<Statement>(ssn_);
    stmt->SetEvictionMessageFn([&ssn = ssn_, action = ctx_.spec.action, job = job_](PodId p) {
      return EvictionMessage(ssn, action, p, job);
    });
    return stmt;
  }

  // Tries one scenario on `stmt` (which holds the recorded evictions up to `base`). Returns true
  // with `out` filled when solved; otherwise leaves the statement at `base`.
  bool SolveScenario(const Scenario& scenario, Statement& stmt, Statement::Checkpoint base,
                     PartialResult& out) {
    const JobId latest = scenario.LatestPotentialVictimJob(ssn_);
    if (latest == kNone) {
      if (scenario.recorded_tasks().empty()) return false;
      // (Any outcome but kSolved ends the scenario the same way.)
      const Outcome o = Simulate(scenario, stmt, {}, out, /*may_skip=*/true);
      if (o == Outcome::kSolved) return true;
      stmt.Rollback(base);
      return false;
    }
    // The nodes of the latest victim job, in name order.
    std::vector<NodeId>& nodes = victim_nodes_scratch_;
    const std::span<const NodeId> job_nodes = NodesOfJob(ssn_, latest, single_job_node_);
    nodes.assign(job_nodes.begin(), job_nodes.end());
    std::vector<PodId>& potential = potential_scratch_;
    std::vector<NodeId>& added = added_scratch_;
    // (Accelerated: no node's evictions can free a block the pending pods lack.)
    if (accel_ && accel_->ScenarioOutOfReach(scenario, nodes)) return false;
    // With several nodes, kFailed on one goes on to the next while kRejected ends the scenario.
    if (nodes.size() > 1 && accel_ &&
        accel_->AllNodesProvenUnsolvable(
            scenario, stmt, nodes, potential, added,
            [&](NodeId n, std::vector<PodId>& pot, std::vector<NodeId>& add) {
              return EvictNodeVictims(scenario, stmt, n, pot, add, /*may_prove=*/true);
            },
            [&](Statement::Checkpoint cp, const std::vector<NodeId>& add) {
              UndoNodeVictims(stmt, cp, add);
            })) {
      stmt.Rollback(base);
      return false;
    }
    if (accel_) accel_->StartNodes();
    for (size_t ni = 0; ni < nodes.size(); ++ni) {
      const NodeId node = nodes[ni];
      // (Accelerated: a node that would repeat a failed node's simulation fails the same way.)
      if (accel_ && accel_->RepeatsFailedNode(scenario, node)) continue;
      const auto cp = stmt.checkpoint();
      const bool last = ni + 1 == nodes.size();
      if (!EvictNodeVictims(scenario, stmt, node, potential, added, /*may_prove=*/last)) {
        if (accel_) accel_->NodeFailed(scenario, node);
        continue;
      }
      // On the last node kFailed and kRejected both end the scenario unsolved (they differ only
      // in the nodes added to the feasible ones, which kRejected keeps, as KAI does).
      const bool may_skip = last && accel_ && accel_->MaySkip(added);
      const Outcome o = Simulate(scenario, stmt, potential, out, may_skip);
      if (o == Outcome::kSolved) return true;
      if (o == Outcome::kRejected) {
        stmt.Rollback(base);
        return false;
      }
      UndoNodeVictims(stmt, cp, added);
      if (accel_ && o == Outcome::kFailed) accel_->NodeFailed(scenario, node);
    }
    stmt.Rollback(base);
    return false;
  }

  // The start of a node's simulation in a scenario: evicts the victims of the scenario's jobs
  // that have potential victims on `node` (into `potential`) and adds their nodes to the
  // feasible ones (those newly added into `added`). False, with nothing evicted, when the
  // accelerators decided the node's simulation without evicting (`may_prove`: kFailed and
  // kRejected would end the scenario alike on this node).
  bool EvictNodeVictims(const Scenario& scenario, Statement& stmt, NodeId node,
                        std::vector<PodId>& potential, std::vector<NodeId>& added, bool may_prove) {
    potential.clear();
    added.clear();
    if (accel_ && accel_->SkipNodeBeforeListing(scenario, node)) return false;
    if (node != kNone) scenario.VictimTasksFromNode(node, potential);
    if (may_prove && accel_ && accel_->SkipNodeProven(scenario, potential)) return false;
    // (Accelerated: a pre-check failing after the evictions, decided on their replayed counters.)
    if (accel_ && accel_->SkipNodeByCounterReplay(scenario, potential)) return false;
    // The node's victim groups include the recorded ones, which the statement's base already
    // evicted (as KAI evicts recorded + potential victims once each): evicting them again made
    // one pod get two eviction requests and its queue's allocation drop twice.
    for (PodId p : potential) {
      if (!scenario.IsRecorded(p)) stmt.Evict(p);
    }
    ctx_.AddNodesOf(potential, added);
    if (accel_) accel_->AfterEvicting();
    return true;
  }

  // Undoes EvictNodeVictims (the statement back to `cp`).
  void UndoNodeVictims(Statement& stmt, Statement::Checkpoint cp,
                       const std::vector<NodeId>& added) {
    ctx_.RemoveAdded(added);
    stmt.Rollback(cp);
  }

  // Places the pending pods (and re-places victims that fit) with the scenario's recorded
  // victims and `potential` evicted, then asks the validator. kFailed: the pods did not fit (the
  // caller rolls back); kRejected: they fit but the validator refused the scenario; kSolved:
  // `out` holds the victims. `may_skip`: the caller treats kFailed and kRejected alike (then the
  // accelerators may answer kUnsolvable without simulating).
  Outcome Simulate(const Scenario& scenario, Statement& stmt, std::span<const PodId> potential,
                   PartialResult& out, bool may_skip) {
    if (accel_) {
      if (const auto o = accel_->BeforeSimulation(scenario, potential, may_skip)) return *o;
    }
    const Statement::Checkpoint evict_end = stmt.checkpoint();
    const bool placed = AllocatePreemptorAndVictims(stmt, scenario, potential, may_skip);
    if (accel_) {
      if (const auto o = accel_->AfterSimulation(placed)) return *o;
    }
    if (!placed) return Outcome::kFailed;
    scenario.SetEvicted(potential);
    if (ctx_.spec.validator && !ctx_.spec.validator(ssn_, scenario.Info())) {
      if (accel_) accel_->OnRejected();
      return Outcome::kRejected;
    }
    if (accel_) accel_->OnAccepted(scenario, potential, evict_end, out);
    std::vector<PodId>& preempted = preempted_scratch_;
    std::vector<PodId>& pipelined = pipelined_scratch_;
    preempted.clear();
    pipelined.clear();
    auto classify = [&](PodId p) {
      const PodStatus st = ssn_.pod(p).status;
      if (st == PodStatus::kReleasing) {
        preempted.push_back(p);
      } else if (st == PodStatus::kPipelined) {
        pipelined.push_back(p);
      }
    };
    for (PodId p : scenario.recorded_tasks()) classify(p);
    for (PodId p : potential) classify(p);
    out.solved = true;
    out.victim_tasks = preempted;
    out.victim_tasks.insert(out.victim_tasks.end(), pipelined.begin(), pipelined.end());
    std::vector<char>& seen = seen_scratch_;
    seen.assign(scenario.group_count(), 0);
    for (PodId p : out.victim_tasks) {
      const int32_t g = scenario.GroupIndexOf(p);
      if (g < 0 || seen[static_cast<size_t>(g)]) continue;
      seen[static_cast<size_t>(g)] = 1;
      out.victim_groups.Add(scenario.group_job(g), scenario.group_tasks(g));
    }
    return Outcome::kSolved;
  }

  // KAI's TryToVirtuallyAllocatePreemptorAndGetVictims: every pending job, victim job and the
  // preemptor in queue order; only victims and the preemptor are placed (pipelined). True when
  // the preemptor's pods were placed.
  bool AllocatePreemptorAndVictims(Statement& stmt, const Scenario& scenario,
                                   std::span<const PodId> potential, bool may_skip) {
    const std::vector<NodeId>& nodes = ctx_.feasible_list;
    const auto& jobs = ssn_.cluster().jobs;
    is_victim_job_.resize(jobs.size(), 0);
    // (Scratch lists sized up front and written by index: this runs for every victim of every
    // simulation.)
    std::vector<JobId>& victim_jobs = victim_jobs_scratch_;
    victim_jobs.resize(scenario.recorded_tasks().size() + potential.size());
    size_t num_victim_jobs = 0;
    auto note_victim = [&](PodId p) {
      const Pod& pod = ssn_.cluster().pods[p];
      if (accel_) accel_->NoteVictim(pod);
      if (!is_victim_job_[pod.job]) {
        is_victim_job_[pod.job] = 1;
        victim_jobs[num_victim_jobs++] = pod.job;
      }
    };
    for (PodId p : scenario.recorded_tasks()) note_victim(p);
    for (PodId p : potential) note_victim(p);
    victim_jobs.resize(num_victim_jobs);
    JobsOrderOptions options;
    options.filter_non_pending = false;
    options.filter_unready = false;
    options.lazy_heaps = true;  // (one entry per job: pending jobs, victim jobs, the preemptor)
    // Pending jobs take part in the order (they are never placed here): computed once per job.
    // (Fixed for the whole solve: each simulation starts from the same session state, and
    // simulations only pipeline.)
    // (With the acting runs' kept lists, fixed_lists.h, they are listed from those, when needed.)
    const bool kept_pending = accel_ && accel_->ActingRunsKeepPendingJobs();
    if (!pending_jobs_known_ && !kept_pending) {
      for (JobId j : ssn_.jobs_pending_at_open()) {
        if (j != job_ && ssn_.HasPendingPods(j)) pending_jobs_.push_back(j);
      }
      pending_jobs_known_ = true;
    }
    // The order of every pending job, victim job and the preemptor. (Accelerated: only its
    // acting entries, in the order's sequence, where acting_runs.h applies.)
    const JobView preemptor{job_, true, scenario.pending()};
    const bool by_runs =
        accel_ && accel_->StartActingRuns(pending_jobs_, victim_jobs, is_victim_job_, preemptor);
    std::optional<JobsByQueue> fresh;
    JobsByQueue* order = nullptr;
    if (!by_runs && !pending_jobs_known_) {
      accel_->KeptPendingJobs(pending_jobs_);
      pending_jobs_known_ = true;
    }
    if (!by_runs) {
      order = accel_ ? accel_->SimulationOrder(options, pending_jobs_, victim_jobs, is_victim_job_)
                     : nullptr;
      if (order == nullptr) {
        order = &fresh.emplace(ssn_, options);
        std::vector<JobId>& to_order = to_order_scratch_;
        to_order.clear();
        for (JobId j : pending_jobs_) {
          if (!is_victim_job_[j]) to_order.push_back(j);
        }
        for (JobId j : victim_jobs) {
          if (j != job_) to_order.push_back(j);
        }
        order->PushMany(to_order);
      }
      order->PushView(preemptor);
    }
    bool placed = false;
    bool ok = true;
    JobView v;
    for (;;) {
      if (by_runs) {
        if (!accel_->NextActing(v)) break;
      } else {
        if (order->empty() || (accel_ && accel_->OnlyPendingJobsLeft())) break;
        v = order->PopNextView();
        if (accel_) accel_->NotePopped(v.job, v.job == job_ || is_victim_job_[v.job]);
      }
      if (v.job == job_) {
        if (!AllocateJobTaskList(ssn_, stmt, nodes, job_, scenario.pending(), true,
                                 /*nodes_cover_free_gpus=*/true)) {
          ok = false;
          break;
        }
        placed = true;
        if (accel_ && accel_->StopAfterPreemptor(nodes)) break;
        continue;
      }
      if (!is_victim_job_[v.job]) continue;
      if (accel_) {
        const VictimStep step = accel_->VictimTurn(stmt, nodes, v.job, placed, may_skip);
        if (step == VictimStep::kStop) break;
        if (step == VictimStep::kFail) {
          ok = false;
          break;
        }
        continue;
      }
      AllocateJobTasks(ssn_, stmt, nodes, v.job, /*pipeline_only=*/true,
                       /*nodes_cover_free_gpus=*/true);
    }
    for (JobId j : victim_jobs) is_victim_job_[j] = 0;
    return ok && placed;
  }

  SearchContext ctx_;  // the job, its spec and the prefix's feasible nodes
  Session& ssn_;
  const JobId job_;
  const JobSearchBudget budget_;
  const bool timed_;                          // whether the budget has a deadline at all
  std::optional<SearchEnd> stopped_;          // set once the budget stopped the search
  std::unique_ptr<SearchAccelerator> accel_;  // null with the solver shortcuts off
  VictimGroups recorded_groups_;
  std::vector<PodId> preempted_scratch_, pipelined_scratch_;
  std::vector<char> seen_scratch_;
  // (Kept per thread between searches: its per-pod and per-job arrays are sized once and each
  // scenario resets the entries it touched. Searches do not nest.)
  static ScenarioIndex& SharedIndex() {
    thread_local ScenarioIndex index;
    return index;
  }
  ScenarioIndex& index_ = SharedIndex();
  // (The v0.16+ model's scenario to simulate, beside its accumulated scenario in index_.)
  static ScenarioIndex& SecondIndex() {
    thread_local ScenarioIndex index;
    return index;
  }
  std::set<std::vector<PodId>> failed_;  // the v0.16+ model's failed scenarios (Fingerprint)
  std::unique_ptr<JobsByQueue> base_queue_;
  PopStep step_;  // the last pop's step
  JobView own_next_;
  NodeId single_job_node_ = kNone;  // NodesOfJob's answer for a job of one pod
  std::vector<PodId> own_victims_;
  // Scenario generation: the victim groups popped so far for the current prefix (every
  // scenario adds the next one; `pods` lists all their tasks in order), and the per-solve node
  // capacities of the idle-GPU filters.
  VictimGroups planned_;
  const IdleGpuCapacities* capacities_ = nullptr;  // of the clean session (IdleGpuCapacities::Kept)
  // Scratch lists of SolveScenario (it is not re-entered).
  std::vector<NodeId> victim_nodes_scratch_;
  std::vector<PodId> potential_scratch_;
  std::vector<NodeId> added_scratch_;
  std::vector<char> is_victim_job_;
  std::vector<JobId> victim_jobs_scratch_, to_order_scratch_;  // (AllocatePreemptorAndVictims)
  std::vector<JobId> pending_jobs_;  // jobs with pending pods other than the preemptor
  bool pending_jobs_known_ = false;
};

}  // namespace

SolverResult SolveJob(Session& ssn, JobId job, SolverSpec& spec) {
  // (KAI's SolveWithResult: a job with nothing to place, or reached with no time left, is not
  // attempted; then, with no scenario generator registered, there is nothing to search.)
  ActionCounts& counts = ssn.action_counts();
  auto finish = [&counts](SolverResult r) {
    ++counts.searches[static_cast<size_t>(r.end)][r.reduced_budget ? 1 : 0];
    return r;
  };
  std::vector<PodId> tasks;
  ssn.TasksToAllocate(job, tasks, /*real=*/false, /*ordered=*/false);
  if (tasks.empty()) {
    SolverResult r;
    r.end = SearchEnd::kNotAttempted;  // (counted so, but the action goes on, as KAI's)
    return finish(std::move(r));
  }
  const JobSearchBudget budget = spec.budget ? spec.budget->BeginJob() : JobSearchBudget{};
  if (budget.job.Passed(ssn.SearchNow())) {
    SolverResult r;
    r.end = SearchEnd::kNotAttempted;
    r.stops_action = true;
    return finish(std::move(r));
  }
  // Victims are searched only through registered scenario generators (KAI v0.16+: the
  // sg-nodelocalgreedy / sg-multinodegang plugins); with none there is nothing to search.
  if (ssn.scenario_generators().empty()) {
    SolverResult r;
    r.end = SearchEnd::kNoGenerator;
    r.reduced_budget = budget.reduced;
    return finish(std::move(r));
  }
  if (spec.known_filtered_failure) {
    // (Known to end as the search would: unsolved, after as many scenarios filtered and
    // simulated.)
    counts.scenarios_filtered += *spec.known_filtered_failure;
    counts.scenarios_simulated += spec.known_failure_simulated;
    SolverActionStats& stats = MutableSolverStats(spec.action);
    ++stats.jobs;
    ++stats.known_failures;
    SolverResult r;
    r.end = SearchEnd::kGeneratorsExhausted;
    r.reduced_budget = budget.reduced;
    r.scenarios_filtered = *spec.known_filtered_failure;
    r.scenarios_simulated = spec.known_failure_simulated;
    return finish(std::move(r));
  }
  const int64_t simulated_before = counts.scenarios_simulated;
  const int64_t filtered_before = counts.scenarios_filtered;
  SearchRecord record(spec.action, job);
  SolverResult r = Solver(ssn, job, spec, budget).Solve();
  record.Finish(r.solved);
  r.scenarios_simulated = counts.scenarios_simulated - simulated_before;
  r.scenarios_filtered = counts.scenarios_filtered - filtered_before;
  r.reduced_budget = budget.reduced;
  if (r.end == SearchEnd::kDeadlineExhausted) {
    r.stops_action = true;
    if (spec.budget && spec.budget->Exhausted()) ++counts.action_budget_exhausted;
  }
  return finish(std::move(r));
}

}  // namespace gantry
