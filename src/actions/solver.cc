#include "actions/solver.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "actions/allocate.h"
#include "actions/scenario_filters.h"

namespace gantry {

namespace {

thread_local SolverStats g_stats;
thread_local bool g_verify_proofs = false;
thread_local uint64_t g_proof_violations = 0;

// Appends `pods` to `out`. (Most victim groups hold one pod: a push is cheaper than a range
// insert there, and this runs for every group of every scenario.)
void AppendPods(std::vector<PodId>& out, std::span<const PodId> pods) {
  if (pods.size() == 1) {
    out.push_back(pods.front());
  } else {
    out.insert(out.end(), pods.begin(), pods.end());
  }
}

// Groups of one victim job's pods taken together (KAI's job representative clones), in one
// flat list.
struct VictimGroups {
  std::vector<JobId> jobs;
  std::vector<size_t> ends;  // group i holds pods[ends[i - 1] .. ends[i])
  std::vector<PodId> pods;

  size_t size() const { return jobs.size(); }
  JobId job(size_t i) const { return jobs[i]; }
  std::span<const PodId> tasks(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::span<const PodId>(pods).subspan(begin, ends[i] - begin);
  }
  void Add(JobId job, std::span<const PodId> group) {
    jobs.push_back(job);
    AppendPods(pods, group);
    ends.push_back(pods.size());
  }
};

// A group of a scenario: one victim job's pods taken together, group_pods[begin, end), and the
// job's next group (-1: none).
struct ScenarioGroup {
  JobId job;
  size_t begin;
  size_t end;
  int32_t next;
};

// What evicting a group's pod in the prefix's base state frees: its node and, when `counted`
// (it is active there and asks for whole GPUs), its GPUs.
struct ScenarioPodFree {
  NodeId node;
  bool counted;
  double gpus;
};

// Per-pod and per-job lookups of a scenario, as flat arrays reused from one scenario to the next
// (only the entries a scenario touched are reset).
struct ScenarioIndex {
  std::vector<int32_t> group_of_pod;  // first group holding the pod, or -1
  std::vector<char> recorded;         // the pod is a recorded victim
  std::vector<int32_t> victim_slot;   // per job: its entry in ScenarioInfo::victims, or -1
  // Per job: its first and last group in the scenario, or -1 (the groups of a job are chained
  // through Scenario's Group::next, in order).
  std::vector<int32_t> first_group_of_job, last_group_of_job;
  std::vector<PodId> touched_pods;
  std::vector<JobId> touched_jobs;
  // Per node (index node + 1, so kNone is 0): the jobs with potential victims there.
  std::vector<std::vector<JobId>> jobs_by_node;
  std::vector<size_t> touched_nodes;
  // What validators see (the preemptor's pods and every victim so far), and victim pod lists
  // kept for reuse.
  ScenarioInfo info;
  std::vector<std::vector<PodId>> spare_lists;
  // A scenario's own lists, kept between scenarios with their capacity (a prefix's scenario
  // grows them to every victim it considers).
  struct Lists {
    std::vector<PodId> potential_tasks;
    std::vector<PodId> group_pods;
    std::vector<ScenarioGroup> groups;
    std::vector<ScenarioPodFree> group_frees;
  };
  Lists spare;

  void Size(size_t pods, size_t jobs, size_t nodes) {
    if (jobs_by_node.size() != nodes + 1) jobs_by_node.assign(nodes + 1, {});
    if (group_of_pod.size() != pods) {
      group_of_pod.assign(pods, -1);
      recorded.assign(pods, 0);
    }
    if (victim_slot.size() != jobs) {
      victim_slot.assign(jobs, -1);
      first_group_of_job.assign(jobs, -1);
      last_group_of_job.assign(jobs, -1);
    }
  }
  void Reset() {
    for (PodId p : touched_pods) {
      group_of_pod[p] = -1;
      recorded[p] = 0;
    }
    for (JobId j : touched_jobs) {
      victim_slot[j] = -1;
      first_group_of_job[j] = -1;
      last_group_of_job[j] = -1;
    }
    for (size_t n : touched_nodes) jobs_by_node[n].clear();
    touched_pods.clear();
    touched_jobs.clear();
    touched_nodes.clear();
  }
};

// The victims considered for one pod prefix of the pending job.
class Scenario {
 public:
  Scenario(const Session& ssn, ScenarioIndex& index, JobId preemptor, std::vector<PodId> pending,
           const VictimGroups& recorded)
      : index_(index), preemptor_(preemptor), pending_(std::move(pending)) {
    index_.Size(ssn.cluster().pods.size(), ssn.cluster().jobs.size(), ssn.cluster().nodes.size());
    index_.Reset();
    ScenarioInfo& info = index_.info;
    // Victim pod lists go back to the pool, to be reused without allocating.
    for (auto& [job, pods] : info.victims) index_.spare_lists.push_back(std::move(pods));
    info.victims.clear();
    info.preemptor = preemptor_;
    info.preemptor_tasks = pending_;
    // (Lists kept with their capacity between scenarios; see ~Scenario.)
    potential_tasks_ = std::move(index_.spare.potential_tasks);
    group_pods_ = std::move(index_.spare.group_pods);
    groups_ = std::move(index_.spare.groups);
    group_frees_ = std::move(index_.spare.group_frees);
    potential_tasks_.clear();
    group_pods_.clear();
    groups_.clear();
    group_frees_.clear();
    // (The recorded tasks are the groups' pods in order.)
    recorded_tasks_ = recorded.pods;
    groups_.reserve(recorded.size());
    group_pods_.reserve(recorded.pods.size());
    for (size_t i = 0; i < recorded.size(); ++i) {
      AppendGroup(ssn, recorded.job(i), recorded.tasks(i), /*recorded=*/true);
    }
    // (AppendGroup listed every recorded pod in touched_pods.)
    for (PodId p : recorded_tasks_) index_.recorded[p] = 1;
  }
  ~Scenario() {
    index_.Reset();
    index_.spare.potential_tasks = std::move(potential_tasks_);
    index_.spare.group_pods = std::move(group_pods_);
    index_.spare.groups = std::move(groups_);
    index_.spare.group_frees = std::move(group_frees_);
  }
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  const std::vector<PodId>& pending() const { return pending_; }
  const std::vector<PodId>& recorded_tasks() const { return recorded_tasks_; }

  bool IsRecorded(PodId p) const { return index_.recorded[p] != 0; }

  void AddPotentialVictims(const Session& ssn, std::span<const PodId> tasks) {
    if (tasks.empty()) return;
    AppendPods(potential_tasks_, tasks);
    const JobId job = ssn.pod_briefs()[tasks.front()].job;
    AppendGroup(ssn, job, tasks, /*recorded=*/false);
    for (PodId p : tasks) {
      const size_t slot = static_cast<size_t>(ssn.pod(p).node + 1);
      auto& jobs = index_.jobs_by_node[slot];
      if (jobs.empty()) index_.touched_nodes.push_back(slot);
      if (std::find(jobs.begin(), jobs.end(), job) == jobs.end()) jobs.push_back(job);
    }
  }

  // Job of the last potential victim added, or kNone.
  JobId LatestPotentialVictimJob(const Session& ssn) const {
    return potential_tasks_.empty() ? kNone : ssn.pod_briefs()[potential_tasks_.back()].job;
  }

  // Every task of every group of the jobs that have potential victims on `node`, into `out`.
  // With `job_stamp`: appends, skipping jobs stamped `stamp` in it and stamping those taken.
  void VictimTasksFromNode(NodeId node, std::vector<PodId>& out,
                           std::vector<uint64_t>* job_stamp = nullptr, uint64_t stamp = 0) const {
    if (job_stamp == nullptr) out.clear();
    for (JobId job : index_.jobs_by_node[static_cast<size_t>(node + 1)]) {
      if (job_stamp != nullptr) {
        if ((*job_stamp)[job] == stamp) continue;
        (*job_stamp)[job] = stamp;
      }
      for (int32_t g = index_.first_group_of_job[job]; g >= 0;
           g = groups_[static_cast<size_t>(g)].next) {
        const auto tasks = group_tasks(g);
        AppendPods(out, tasks);
      }
    }
  }

  using PodFree = ScenarioPodFree;
  // Calls f(const PodFree&) for every task VictimTasksFromNode(node) lists, in that order.
  template <typename F>
  void ForEachFreeFromNode(NodeId node, F&& f) const {
    for (JobId job : index_.jobs_by_node[static_cast<size_t>(node + 1)]) {
      for (int32_t g = index_.first_group_of_job[job]; g >= 0;
           g = groups_[static_cast<size_t>(g)].next) {
        const Group& group = groups_[static_cast<size_t>(g)];
        for (size_t i = group.begin; i < group.end; ++i) f(group_frees_[i]);
      }
    }
  }

  // Index of the group holding `p` (the victim job representative for a task), or -1.
  int32_t GroupIndexOf(PodId p) const { return index_.group_of_pod[p]; }
  JobId group_job(int32_t g) const { return groups_[static_cast<size_t>(g)].job; }
  std::span<const PodId> group_tasks(int32_t g) const {
    const Group& group = groups_[static_cast<size_t>(g)];
    return std::span<const PodId>(group_pods_).subspan(group.begin, group.end - group.begin);
  }

  // What validators see. Its victim lists are brought up to date here, from the groups added
  // since the last call (most scenarios are never validated).
  const ScenarioInfo& Info() const {
    auto& victims = index_.info.victims;
    for (; info_groups_ < groups_.size(); ++info_groups_) {
      const JobId job = groups_[info_groups_].job;
      const auto tasks = group_tasks(static_cast<int32_t>(info_groups_));
      int32_t& slot = index_.victim_slot[job];
      if (slot < 0) {
        slot = static_cast<int32_t>(victims.size());
        std::vector<PodId> list;
        if (!index_.spare_lists.empty()) {
          list = std::move(index_.spare_lists.back());
          index_.spare_lists.pop_back();
          list.clear();
        }
        list.assign(tasks.begin(), tasks.end());
        victims.emplace_back(job, std::move(list));
      } else {
        auto& v = victims[static_cast<size_t>(slot)].second;
        v.insert(v.end(), tasks.begin(), tasks.end());
      }
    }
    return index_.info;
  }
  // Records which victims a simulation evicted (see ScenarioInfo::evicted_known).
  void SetEvicted(std::span<const PodId> potential) const {
    index_.info.evicted_known = true;
    index_.info.evicted_recorded = recorded_tasks_;
    index_.info.evicted_potential = potential;
  }
  size_t group_count() const { return groups_.size(); }

 private:
  using Group = ScenarioGroup;

  // `recorded`: the group is of recorded victims (evicted in the prefix's base state; potential
  // victims are added in that state).
  void AppendGroup(const Session& ssn, JobId job, std::span<const PodId> tasks, bool recorded) {
    const int32_t index = static_cast<int32_t>(groups_.size());
    groups_.push_back({job, group_pods_.size(), group_pods_.size() + tasks.size(), -1});
    AppendPods(group_pods_, tasks);
    if (recorded) {
      // (Evicted in the base state: never counted.)
      for (PodId p : tasks) group_frees_.push_back({ssn.pod(p).node, false, 0.0});
    } else {
      const auto& briefs = ssn.pod_briefs();
      for (PodId p : tasks) {
        const PodState& st = ssn.pod(p);
        const double gpus = briefs[p].whole_gpus;
        // (Counted: active in the base state and asking for whole GPUs.)
        const bool counted = st.node != kNone && IsActiveAllocated(st.status) && !std::isnan(gpus);
        group_frees_.push_back({st.node, counted, counted ? gpus : 0.0});
      }
    }
    for (PodId p : tasks) {
      if (index_.group_of_pod[p] < 0) {
        index_.group_of_pod[p] = index;
        index_.touched_pods.push_back(p);
      }
    }
    // (Info lists the job's victims when asked.)
    int32_t& last = index_.last_group_of_job[job];
    if (last < 0) {
      index_.touched_jobs.push_back(job);
      index_.first_group_of_job[job] = index;
    } else {
      groups_[static_cast<size_t>(last)].next = index;
    }
    last = index;
  }

  ScenarioIndex& index_;
  JobId preemptor_;
  std::vector<PodId> pending_;
  std::vector<PodId> recorded_tasks_;
  std::vector<PodId> potential_tasks_;
  std::vector<Group> groups_;
  std::vector<PodId> group_pods_;
  std::vector<PodFree> group_frees_;  // per entry of group_pods_
  mutable size_t info_groups_ = 0;    // groups listed in the ScenarioInfo's victims (see Info)
};

struct PartialResult {
  bool solved = false;
  std::unique_ptr<Statement> statement;
  std::vector<PodId> victim_tasks;
  VictimGroups victim_groups;
  // With the kept eviction base (Solver::keep_base_): the statement is the solver's base
  // statement; `evicted` are the pods it evicted before the simulation, which ended at
  // `evict_end`.
  std::vector<PodId> evicted;
  Statement::Checkpoint evict_end = 0;
};

class Solver {
 public:
  // Pops recorded ahead at once (see AddNextPotentialVictims).
  static constexpr size_t kPopsPerExtension = 64;
  // Valid scenarios generated at most per batch (see SolvePartial): each batch re-evicts the
  // recorded victims once its pops needed the clean session, and the batch that solves a prefix
  // wastes the scenarios generated after the solving one. On the 5,000-node cycle benchmark 512
  // did best: 2.14 G instructions (unbounded 2.25 G, 64: 2.22 G, 256 and 1,024: 2.15 G).
  static constexpr size_t kMaxBatch = 512;

  Solver(Session& ssn, JobId job, SolverSpec& spec) : ssn_(ssn), job_(job), spec_(spec) {}

  SolverResult Solve() {
    stats_ = &g_stats.by_action[static_cast<int>(spec_.action)];
    // The session reports the nodes it changes while this search runs (see FreeBlocks).
    // (Shared by the searches of the thread: an entry is read only for a node written since the
    // counts were last synced in this search, see FreeBlocks.)
    if (blocks_free_.size() != ssn_.cluster().nodes.size()) {
      blocks_free_.assign(ssn_.cluster().nodes.size(), 0.0);
    }
    ssn_.SetNodeChangeLog(&node_log_);
    // Keeping the recorded victims evicted between prefixes (see AcquireBase) relies on undo
    // giving back exactly the state before: queue and node sums of whole numbers only, and no
    // devices allocated through claims.
    keep_base_ = ssn_.params().solver_shortcuts && ssn_.QueueOrderDependsOnlyOnPodStates() &&
                 ssn_.cluster().resource_claims.empty();
    SolverResult out = SolvePrefixes();
    ssn_.SetNodeChangeLog(nullptr);
    return out;
  }

 private:
  SolverResult SolvePrefixes() {
    SolverResult out;
    const int original_active = ActiveUsed();
    std::vector<PodId> tasks;
    ssn_.TasksToAllocate(job_, tasks, /*real=*/false);
    std::vector<PodId> pending;
    std::unique_ptr<Statement> statement;
    std::vector<PodId> recorded_tasks;
    for (size_t i = 0; i < tasks.size(); ++i) {
      pending.push_back(tasks[i]);
      const bool complete = pending.size() == tasks.size();
      PartialResult r = SolvePartial(pending);
      ++stats_->prefixes;
      if (!r.solved) break;
      if (keep_base_) {
        // The prefix's evictions stay as the next prefix's starting point; its simulation is
        // undone.
        if (!complete) {
          base_stmt_->Rollback(r.evict_end);
          base_seq_ = std::move(r.evicted);
        } else {
          r.statement = std::move(base_stmt_);
          base_seq_.clear();
        }
      } else if (!complete) {
        r.statement->Discard();
      }
      statement = std::move(r.statement);
      recorded_tasks = r.victim_tasks;
      recorded_groups_ = std::move(r.victim_groups);
    }
    MakeClean();  // (a failed search leaves nothing evicted)
    out.solved = ssn_.IsGangSatisfied(job_) && ActiveUsed() > original_active;
    out.statement = std::move(statement);
    out.victims = std::move(recorded_tasks);
    return out;
  }

 private:
  int ActiveUsed() const {
    int n = 0;
    for (PodId p : ssn_.cluster().jobs[job_].pods) n += IsActiveUsed(ssn_.pod(p).status);
    return n;
  }

  PartialResult SolvePartial(const std::vector<PodId>& pending) {
    ++prefix_serial_;
    feasible_.assign(ssn_.cluster().nodes.size(), 0);
    feasible_list_.clear();
    ++feasible_version_;
    for (NodeId n : spec_.feasible_nodes) AddFeasible(n);
    {
      for (PodId p : recorded_groups_.pods) {
        if (ssn_.pod(p).node != kNone) AddFeasible(ssn_.pod(p).node);
      }
    }
    Scenario scenario(ssn_, index_, job_, pending, recorded_groups_);
    SortedGpuSizes(pending, sizes_scratch_);
    MakeProfile(sizes_scratch_, pending_profile_);
    // Every prefix starts from the same session state, so the victims queue is built once per
    // job and copied (KAI builds a fresh one per prefix; the pops of a prefix depend on its
    // recorded victims).
    if (!base_queue_) {
      MakeClean();
      base_queue_ = spec_.victims_queue();
      base_queue_->Freeze();  // copies share its entries
    }
    // With the solver shortcuts on, the pops are not repeated per prefix: they are replayed from
    // the previous prefixes' record (see NextPop).
    std::optional<JobsByQueue> own_queue;
    if (!ssn_.params().solver_shortcuts) own_queue.emplace(*base_queue_);
    JobsByQueue* own = own_queue ? &*own_queue : nullptr;
    cursor_ = 0;
    // KAI solves each scenario in a statement of its own, so every pop of the victims queue and
    // every scenario filter sees the session with no victim evicted. Pops and filters change
    // nothing in the session and no simulation outcome changes what comes next, so the
    // scenarios are generated on the clean session, a batch at a time; the recorded victims are
    // then evicted once for the batch and its scenarios simulated in turn, each rolling back to
    // that point. Batches double in size, so a prefix evicts its recorded victims a logarithmic
    // number of times.
    if (!capacities_) {
      MakeClean();
      capacities_ = &SharedCapacities(ssn_);
    }
    ScenarioFilters filters(ssn_, *capacities_, job_, scenario.pending(), scenario.recorded_tasks(),
                            feasible_);
    planned_ = VictimGroups();
    planned_tasks_.clear();
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
        if (filters.Accept(planned_tasks_)) batch.push_back(0);
      }
      while (batch.size() < batch_size && !PopsEmpty(own)) {
        if (!AddNextPotentialVictims(own, scenario)) continue;
        if (filters.Accept(planned_tasks_)) batch.push_back(planned_.size());
      }
      if (batch.empty()) return {};
      // The recorded victims are evicted once per batch; each scenario rolls back to this point.
      std::unique_ptr<Statement> own_stmt;
      Statement* stmt = nullptr;
      if (keep_base_) {
        stmt = &AcquireBase(scenario.recorded_tasks());
      } else {
        own_stmt = NewStatement();
        stmt = own_stmt.get();
        EvictAll(*stmt, scenario.recorded_tasks());
      }
      const auto base = stmt->checkpoint();
      PartialResult r;
      CountBaseBlocks();
      touched_.clear();
      touched_epoch_ = ssn_.placement_epoch();
      for (size_t end : batch) {
        for (; added < end; ++added) {
          const auto tasks = planned_.tasks(added);
          scenario.AddPotentialVictims(ssn_, tasks);
        }
        ++stats_->scenarios;
        // (A scenario fills `r` only when it solves the prefix.)
        if (SolveScenario(scenario, *stmt, base, r)) {
          r.statement = std::move(own_stmt);
          return r;
        }
      }
      // (The kept base stays evicted: the next batch starts from the same recorded victims.)
      if (own_stmt) own_stmt->Discard();
      if (PopsEmpty(own)) return {};
    }
  }

  // What taking an entry's victims does to the victims queue, given the recorded victims: the
  // entry is skipped when it holds a recorded victim (then the rest of the entry, without the
  // recorded pods, goes back to the queue), otherwise its victims are planned and, when the entry
  // has more active pods, the rest goes back.
  struct PopStep {
    bool skip = false;
    bool push = false;
    std::vector<PodId> rest;
  };
  void DecideStep(const JobView& next, std::span<const PodId> victims, bool has_more,
                  const Scenario& scenario, PopStep& out) const {
    out.skip = false;
    out.push = false;
    out.rest.clear();
    const std::vector<PodId>& all = next.partial ? next.pods : ssn_.cluster().jobs[next.job].pods;
    for (PodId p : victims) {
      if (!scenario.IsRecorded(p)) continue;
      // Part of this job is already a recorded victim: consider only the rest later.
      out.skip = true;
      for (PodId q : all) {
        if (!scenario.IsRecorded(q)) out.rest.push_back(q);
      }
      out.push = !out.rest.empty();
      return;
    }
    if (has_more) {
      for (PodId q : all) {
        if (std::find(victims.begin(), victims.end(), q) == victims.end()) out.rest.push_back(q);
      }
      out.push = true;
    }
  }

  // One pop of the victims queue as the previous prefixes saw it: the entry, its victims
  // (pop_victims_[victims_begin, victims_end): one list for every record instead of a vector
  // each), and what went back to the queue after it.
  struct PopRecord {
    JobView view;
    size_t victims_begin = 0;
    size_t victims_end = 0;
    bool has_more = false;
    bool pushed = false;
    bool skipped = false;  // the prefix that made or last changed the record skipped the entry
    std::vector<PodId> rest;
  };

  std::span<const PodId> RecordVictims(const PopRecord& r) const {
    return std::span<const PodId>(pop_victims_)
        .subspan(r.victims_begin, r.victims_end - r.victims_begin);
  }

  // Whether the victims queue of the current prefix is empty (`own`: the prefix's own copy, with
  // the shortcuts off).
  bool PopsEmpty(const JobsByQueue* own) const {
    if (own) return own->empty();
    if (cursor_ < pops_.size()) return false;
    return live_ ? live_->empty() : base_queue_->empty();
  }

  // The live queue in the state after the first `i` records (their pops and pushes) and the pop
  // of record i.
  void RebuildLive(size_t i) {
    MakeClean();
    live_ = std::make_unique<JobsByQueue>(*base_queue_);
    for (size_t j = 0; j < i; ++j) {
      live_->PopNextView();
      if (pops_[j].pushed) live_->PushView(JobView{pops_[j].view.job, true, pops_[j].rest});
    }
    live_->PopNextView();
  }

  // KAI's addNextPotentialVictims: pops the next victim job entry and plans its tasks to evict
  // as the next potential victims (false when the entry holds a recorded victim: only the rest
  // of its job goes back to the queue). Called with no victim evicted.
  //
  // Every prefix starts from a fresh copy of the same victims queue on the same session state,
  // and the queue's next entry is a function of the operations done on it so far. So while a
  // prefix pushes back the same rests as the previous prefixes did, it pops the same entries
  // with the same victims: with the shortcuts on, those are replayed from a record (pops_),
  // and only where a prefix's push differs (its recorded victims differ) is the queue rebuilt
  // to that point and continued live; the live queue (live_) always stands after the last
  // record.
  bool AddNextPotentialVictims(JobsByQueue* own, const Scenario& scenario) {
    const JobView* view = nullptr;
    std::span<const PodId> victims;
    if (own) {
      if (own->empty()) return false;
      own_next_ = own->PopNextView();
      bool has_more = false;
      own_victims_ = TasksToEvict(ssn_, own_next_, has_more);
      DecideStep(own_next_, own_victims_, has_more, scenario, step_);
      if (step_.push) own->PushView(JobView{own_next_.job, true, step_.rest});
      view = &own_next_;
      victims = own_victims_;
    } else if (cursor_ < pops_.size()) {
      PopRecord& r = pops_[cursor_];
      const auto recorded_victims = RecordVictims(r);
      bool differs = false;
      if (!r.skipped && std::none_of(recorded_victims.begin(), recorded_victims.end(),
                                     [&](PodId p) { return scenario.IsRecorded(p); })) {
        // None of the entry's victims is recorded, as when the record was made or last changed
        // (then it pushed the entry's other pods when it had more): DecideStep would take that
        // same step, so the record holds.
        step_.skip = false;
        step_.push = r.pushed;
      } else {
        DecideStep(r.view, recorded_victims, r.has_more, scenario, step_);
        differs = step_.push != r.pushed || (step_.push && step_.rest != r.rest);
      }
      if (differs) {
        // This prefix leaves the queue differently: continue live from here.
        RebuildLive(cursor_);
        r.pushed = step_.push;
        r.skipped = step_.skip;
        r.rest = step_.rest;
        if (r.pushed) live_->PushView(JobView{r.view.job, true, r.rest});
        pops_.resize(cursor_ + 1);
        pop_victims_.resize(r.victims_end);
      }
      ++cursor_;
      view = &pops_[cursor_ - 1].view;
      victims = RecordVictims(pops_[cursor_ - 1]);
    } else {
      // Pops read the session, which must be clean. With the kept eviction base, cleaning costs
      // re-evicting it, so the record is extended by a fixed number of pops at once; they are
      // replayed above as the prefixes reach them. (Re-evicting the recorded victims costs about
      // as much as a few pops; extending by the record's size instead, to re-evict a logarithmic
      // number of times, popped up to twice the entries a search needed: 11% more instructions
      // over the 5,000-node cycle.)
      MakeClean();
      if (!live_) live_ = std::make_unique<JobsByQueue>(*base_queue_);
      if (live_->empty()) return false;
      const size_t count = keep_base_ ? kPopsPerExtension : 1;
      for (size_t i = 0; i < count && !live_->empty(); ++i) {
        PopRecord r;
        r.view = live_->PopNextView();
        r.victims_begin = pop_victims_.size();
        AppendTasksToEvict(ssn_, r.view, r.has_more, pop_victims_);
        r.victims_end = pop_victims_.size();
        DecideStep(r.view, RecordVictims(r), r.has_more, scenario, step_);
        r.pushed = step_.push;
        r.skipped = step_.skip;
        r.rest = step_.rest;
        if (r.pushed) live_->PushView(JobView{r.view.job, true, r.rest});
        pops_.push_back(std::move(r));
      }
      return AddNextPotentialVictims(own, scenario);  // replays the first of them
    }
    if (step_.skip) return false;
    if (!victims.empty()) {
      planned_.Add(view->job, victims);
      AppendPods(planned_tasks_, victims);
    }
    return true;
  }

  // The kept eviction base (keep_base_): one statement holding, as its only operations, the
  // evictions of base_seq_ in order (operation i evicts base_seq_[i]). A batch needs the recorded
  // victims evicted in their order: the base is rolled back to the longest common prefix of the
  // two sequences and the rest is evicted. Undo restores the state exactly (whole-number sums),
  // so this is the state a fresh statement evicting the recorded victims would reach, and a
  // solution's statement holds the same operations in the same order.
  Statement& AcquireBase(const std::vector<PodId>& recorded) {
    if (!base_stmt_) base_stmt_ = NewStatement();
    size_t common = 0;
    while (common < base_seq_.size() && common < recorded.size() &&
           base_seq_[common] == recorded[common]) {
      ++common;
    }
    base_stmt_->Rollback(common);
    base_seq_.resize(common);
    for (size_t i = common; i < recorded.size(); ++i) {
      base_stmt_->Evict(recorded[i]);
      base_seq_.push_back(recorded[i]);
    }
    return *base_stmt_;
  }

  // Undoes the kept eviction base (the session is as the search found it).
  void MakeClean() {
    if (base_stmt_) base_stmt_->Discard();
    base_seq_.clear();
  }

  void EvictAll(Statement& stmt, const std::vector<PodId>& pods) {
    for (PodId p : pods) stmt.Evict(p);
  }

  std::unique_ptr<Statement> NewStatement() {
    auto stmt = std::make_unique<Statement>(ssn_);
    stmt->SetEvictionMessageFn([&ssn = ssn_, action = spec_.action, job = job_](PodId p) {
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
    const std::span<const NodeId> job_nodes = NodesOfJob(latest);
    nodes.assign(job_nodes.begin(), job_nodes.end());
    // With several nodes, kFailed on one goes on to the next while kRejected ends the scenario.
    // When every node either fails the pre-check or is proven unsolvable before placing, the
    // scenario ends unsolved whichever of the two each proven node would have given, and (with
    // nothing added to the feasible nodes, or a list that cannot matter) leaves the same state
    // as if all had failed: then nothing is simulated.
    if (nodes.size() > 1 && ssn_.params().solver_shortcuts &&
        AllNodesProvenUnsolvable(scenario, stmt, nodes)) {
      stmt.Rollback(base);
      return false;
    }
    for (size_t ni = 0; ni < nodes.size(); ++ni) {
      const NodeId node = nodes[ni];
      const auto cp = stmt.checkpoint();
      std::vector<PodId>& potential = potential_scratch_;
      std::vector<NodeId>& added = added_scratch_;
      if (!EvictNodeVictims(scenario, stmt, node, potential, added,
                            /*may_prove=*/ni + 1 == nodes.size())) {
        continue;
      }
      // On the last node kFailed and kRejected both end the scenario unsolved. They differ only
      // in the nodes added to the feasible ones, which kRejected keeps (as KAI does): so a
      // simulation may be skipped when none were added or when the list cannot matter (see
      // FeasibleListInsensitive); it then ends as kFailed.
      const bool may_skip = ni + 1 == nodes.size() && (added.empty() || FeasibleListInsensitive());
      const Outcome o = Simulate(scenario, stmt, potential, out, may_skip);
      if (o == Outcome::kSolved) return true;
      if (o == Outcome::kRejected) {
        stmt.Rollback(base);
        return false;
      }
      UndoNodeVictims(stmt, cp, added);
    }
    stmt.Rollback(base);
    return false;
  }

  // The start of a node's simulation in a scenario: evicts the victims of the scenario's jobs
  // that have potential victims on `node` (into `potential`) and adds their nodes to the
  // feasible ones (those newly added into `added`). False, with nothing evicted, when the
  // pre-check the simulation would start with is known to fail without evicting (kFailed).
  //
  // `may_prove`: kFailed and kRejected would end the scenario alike on this node; then false is
  // also returned, with nothing evicted, when a rejection rule is proven certain without
  // evicting (ProvenUnsolvableWithoutEvicting) and the feasible nodes the evictions would add
  // cannot matter (FeasibleListInsensitive), as for a kUnsolvable simulation.
  bool EvictNodeVictims(const Scenario& scenario, Statement& stmt, NodeId node,
                        std::vector<PodId>& potential, std::vector<NodeId>& added, bool may_prove) {
    potential.clear();
    added.clear();
    verify_proven_ = false;
    TouchNodesOfNode(scenario, node);
    // Decided without evicting: the pre-check the simulation would start with fails.
    if (ssn_.params().solver_shortcuts && FailsPrecheckAfterEvicting()) {
      ++stats_->precheck;
      return false;
    }
    if (node != kNone) scenario.VictimTasksFromNode(node, potential);
    if (may_prove && ssn_.params().solver_shortcuts &&
        (FeasibleListInsensitive() ||
         std::all_of(touched_.begin(), touched_.end(),
                     [](const TouchedNode& t) { return t.was_feasible; })) &&
        ProvenUnsolvableWithoutEvicting(scenario, potential)) {
      ++stats_->proven_before;
      ++stats_->proven_without_evicting;
      // (Verify mode: simulated to the end, and the outcome checked; see Simulate.)
      if (!g_verify_proofs) return false;
      verify_proven_ = true;
    }
    EvictAll(stmt, potential);
    for (PodId p : potential) {
      const NodeId pn = ssn_.pod(p).node;
      if (pn != kNone && !feasible_[pn]) {
        AddFeasible(pn);
        added.push_back(pn);
      }
    }
    touched_epoch_ = ssn_.placement_epoch();
    return true;
  }

  // Lists the nodes of `potential` into touched_ with their free GPUs now (see TouchedNode)
  // and, in the prefix's base state, counts their free GPUs once `potential` is evicted on top
  // of it into hypothetical_free_: evicting an active pod adds its whole GPUs to its node's idle
  // + releasing, so this is known without evicting. hypothetical_exact_ tells whether the count
  // is exact: not when a pod is listed twice, is not active or on no node, or does not ask for
  // whole GPUs (a shared-GPU victim may free a whole device when it is the device's last user
  // and a DRA victim frees its claim's GPUs), nor when a sum is not exact.
  void TouchNodesOf(const std::vector<PodId>& potential) {
    const auto& c = ssn_.cluster();
    BeginTouch();
    if (pod_seen_.size() != c.pods.size()) pod_seen_.assign(c.pods.size(), 0);
    ++pod_seen_stamp_;
    const auto& briefs = ssn_.pod_briefs();
    bool exact = !potential.empty();
    for (PodId p : potential) {
      const PodState& st = ssn_.pod(p);
      if (st.node == kNone) {
        exact = false;
        continue;
      }
      const uint32_t at = Touch(st.node);
      if (!exact) continue;
      const double gpus = briefs[p].whole_gpus;
      uint64_t& seen = pod_seen_[static_cast<size_t>(p)];
      if (seen == pod_seen_stamp_ || !IsActiveAllocated(st.status) || std::isnan(gpus)) {
        exact = false;
        continue;
      }
      seen = pod_seen_stamp_;
      hypothetical_free_[at] += gpus;
    }
    EndTouch(exact);
  }

  // TouchNodesOf for the potential victims VictimTasksFromNode(node) lists, read from what the
  // scenario noted of them when they were added (Scenario::PodFree) instead of from the pods.
  // (A pod listed twice would be counted twice: the counts would only be higher, which makes the
  // pre-check pass and the proofs fail, never the other way.)
  void TouchNodesOfNode(const Scenario& scenario, NodeId node) {
    BeginTouch();
    bool exact = true;
    bool any = false;
    if (node != kNone) {
      scenario.ForEachFreeFromNode(node, [&](const Scenario::PodFree& pf) {
        any = true;
        if (pf.node == kNone) {
          exact = false;
          return;
        }
        const uint32_t at = Touch(pf.node);
        exact = exact && pf.counted;
        hypothetical_free_[at] += pf.gpus;
      });
    }
    EndTouch(exact && any);
  }

  // TouchNodesOf's steps: start a new list; list a node (once) and return its place; finish
  // (the counts are exact when `exact` holds, the base state's counts are and every sum is).
  void BeginTouch() {
    touched_.clear();
    hypothetical_free_.clear();
    hypothetical_blocks_.clear();
    touched_stamp_ = NextTouchStamp();
    const size_t nodes = ssn_.cluster().nodes.size();
    if (touched_at_.size() != nodes) touched_at_.assign(nodes, {0, 0});
  }
  uint32_t Touch(NodeId n) {
    auto& [stamp, at] = touched_at_[static_cast<size_t>(n)];
    if (stamp != touched_stamp_) {
      stamp = touched_stamp_;
      at = static_cast<uint32_t>(touched_.size());
      const double free = ssn_.non_allocated_gpus()[n];
      touched_.push_back({n, free, feasible_[n] != 0});
      hypothetical_free_.push_back(free);
    }
    return at;
  }
  void EndTouch(bool exact) {
    exact = exact && base_exact_;
    // (With `exact`, only whole GPUs were added to each base count: a whole base count stays
    // whole, so ExactlySummable of the sum is its magnitude check.)
    for (size_t i = 0; exact && i < touched_.size(); ++i) {
      exact = ExactlySummable(touched_[i].base_free) && std::abs(hypothetical_free_[i]) < 1e12;
    }
    hypothetical_exact_ = exact;
  }

  // Whether the pre-check fails for every node of `nodes` without evicting (see
  // AllNodesProvenUnsolvable): it fails for the potential victims of all of them at once. A
  // node's simulation evicts a part of those; evicting fewer never gives more free GPUs or blocks
  // of free GPUs (nor more feasible nodes), so its pre-check fails too.
  bool UnionFailsPrecheck(const Scenario& scenario, const std::vector<NodeId>& nodes) {
    std::vector<PodId>& potential = potential_scratch_;
    potential.clear();
    if (union_job_stamp_.size() != ssn_.cluster().jobs.size()) {
      union_job_stamp_.assign(ssn_.cluster().jobs.size(), 0);
    }
    ++union_stamp_;
    for (NodeId n : nodes) {
      if (n != kNone) scenario.VictimTasksFromNode(n, potential, &union_job_stamp_, union_stamp_);
    }
    TouchNodesOf(potential);
    return FailsPrecheckAfterEvicting();
  }

  // Blocks of g free GPUs (g = 0: free GPUs) of the feasible nodes in the prefix's base state
  // (the session must be in it): the batch's count, or counted now and kept.
  double BaseBlocks(double g) {
    for (const auto& [size, value] : base_blocks_) {
      if (size == g) return value;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = 0;
    for (NodeId n : feasible_list_) value += NodeBlocks(free[n], g);
    base_blocks_.emplace_back(g, value);
    return value;
  }

  // Whether a rejection rule is certain before placing for the scenario's evictions plus
  // `potential`, decided without evicting: the session is in the prefix's base state and
  // TouchNodesOf has just counted the touched nodes' free GPUs after the evictions (exactly).
  // The rules do not depend on the evictions (the validator's shares are frozen for the search
  // and a victim keeps its accepted GPUs); the tasks of a job with a pod in `potential` are not
  // known without evicting, so its victims count as possibly placed again.
  bool ProvenUnsolvableWithoutEvicting(const Scenario& scenario,
                                       const std::vector<PodId>& potential) {
    if (!hypothetical_exact_ || !base_exact_ || !spec_.rejection_rules) {
      return false;
    }
    auto blocks = [&](double g) { return HypotheticalBlocks(g); };
    const double free_after = blocks(0);
    if (ProvenByRecordedRules(scenario, potential, free_after, blocks)) {
      ++stats_->proven_by_recorded;
      return true;
    }
    PrepareRejecting(scenario, potential, &free_after, /*track=*/false);
    if (rules_.empty()) return false;
    const auto& c = ssn_.cluster();
    if (unknown_tasks_.size() != c.jobs.size()) unknown_tasks_.assign(c.jobs.size(), 0);
    ++unknown_stamp_;
    const auto& briefs = ssn_.pod_briefs();
    for (PodId p : potential) unknown_tasks_[briefs[p].job] = unknown_stamp_;
    const bool proven = free_after - pending_profile_.total >= 0 &&
                        RulesCertainBeforePlacing(scenario, free_after, blocks, &unknown_tasks_);
    ClearRejecting();
    return proven;
  }

  // The rules of the prefix's recorded victims alone, summed for ProvenByRecordedRules (kept for
  // the prefix): per rule, its saturation bound, the accepted GPUs of its victims below the
  // reclaimer's queue, those of its victims outside their job's tasks, and those of the others
  // per distinct joint requirement of their job's tasks with the pending pods (a job standing
  // for each in `shapes`).
  struct RecordedRule {
    QueueId sibling = kNone;
    size_t level = 0;
    SaturationBound saturation;
    double below = 0;
    double outside = 0;
    std::vector<std::pair<uint32_t, double>> by_shape;
  };
  struct RecordedRules {
    uint64_t prefix = 0;
    std::vector<RecordedRule> rules;
    std::vector<JobId> shapes;
  };
  const RecordedRules& RecordedRulesOf(const Scenario& scenario) {
    RecordedRules& rr = recorded_rules_;
    if (rr.prefix == prefix_serial_) return rr;
    rr.prefix = prefix_serial_;
    rr.rules.clear();
    last_holding_rule_ = 0;
    rr.shapes.clear();
    const auto& c = ssn_.cluster();
    if (recorded_job_mark_.size() != c.jobs.size()) recorded_job_mark_.assign(c.jobs.size(), 0);
    if (recorded_rule_of_.size() != c.queues.size()) recorded_rule_of_.assign(c.queues.size(), {});
    // (The session is in the prefix's base state; the free count given is not used by rules
    // prepared without tracking.)
    const double unused_free = 0;
    PrepareRejecting(scenario, {}, &unused_free, /*track=*/false, /*saturation=*/true);
    const auto& briefs = ssn_.pod_briefs();
    auto same_fit = [&](const JointFit& a, const JointFit& b) {
      if (a.always != b.always || a.total != b.total || a.end - a.begin != b.end - b.begin) {
        return false;
      }
      return std::equal(joint_steps_.begin() + a.begin, joint_steps_.begin() + a.end,
                        joint_steps_.begin() + b.begin);
    };
    for (const RejectionRule& rule : rules_) {
      if (!rule.has_saturation) continue;
      RecordedRule out;
      out.saturation = rule.saturation;
      out.sibling = rule.sibling;
      out.level = rule.level;
      bool own = false;
      rule.ForEachPod([&](PodId p) {
        const JobId j = briefs[p].job;
        own = own || j == job_;
        if (own) return;
        recorded_job_mark_[j] = prefix_serial_;
        const double gpus = briefs[p].whole_gpus;
        const JointFit& fit = BaseJointFit(j, scenario.pending());
        if (base_task_mark_[p] != prefix_serial_) {
          out.outside += gpus;
          return;
        }
        uint32_t shape = 0;
        while (shape < rr.shapes.size() && !same_fit(joint_fit_[rr.shapes[shape]], fit)) ++shape;
        if (shape == rr.shapes.size()) rr.shapes.push_back(j);
        auto it = std::find_if(out.by_shape.begin(), out.by_shape.end(),
                               [shape](const auto& e) { return e.first == shape; });
        if (it == out.by_shape.end()) {
          out.by_shape.emplace_back(shape, gpus);
        } else {
          it->second += gpus;
        }
      });
      // (A rule holding the preemptor's own pods is not used: their placement is not modelled.)
      if (own) continue;
      for (const std::span<const PodId> list : {rule.below_held, rule.below_more}) {
        for (PodId p : list) out.below += ssn_.AcceptedGpus(p);
      }
      if (out.sibling != kNone && out.level < PreemptorPath().size()) {
        recorded_rule_of_[out.sibling] = {prefix_serial_, static_cast<uint32_t>(rr.rules.size())};
      } else {
        out.sibling = kNone;
      }
      rr.rules.push_back(std::move(out));
    }
    ClearRejecting();
    return rr;
  }

  // The root path (root first) of the preemptor's queue, kept for the search.
  const std::vector<QueueId>& PreemptorPath() {
    if (!path_known_) {
      path_known_ = true;
      const auto& queues = ssn_.cluster().queues;
      for (QueueId q = ssn_.cluster().jobs[job_].queue; q != kNone; q = queues[q].parent) {
        preemptor_path_.push_back(q);
      }
      std::reverse(preemptor_path_.begin(), preemptor_path_.end());
    }
    return preemptor_path_;
  }
  // For a victim's queue: how many queues of the preemptor's root path are its ancestors or
  // itself, and its ancestor (or itself) right below the last of them (kNone when its path does
  // not part from the preemptor's), kept per queue for the search.
  std::pair<size_t, QueueId> PartingOf(QueueId q) {
    const auto& queues = ssn_.cluster().queues;
    if (parting_.size() != queues.size()) parting_.assign(queues.size(), {SIZE_MAX, kNone});
    auto& entry = parting_[static_cast<size_t>(q)];
    if (entry.first != SIZE_MAX) return entry;
    const std::vector<QueueId>& path = PreemptorPath();
    std::vector<QueueId>& own = victim_path_scratch_;
    own.clear();
    for (QueueId a = q; a != kNone; a = queues[a].parent) own.push_back(a);
    std::reverse(own.begin(), own.end());
    size_t i = 0;
    while (i < path.size() && i < own.size() && path[i] == own[i]) ++i;
    entry = {i, (i == path.size() || i == own.size()) ? kNone : own[i]};
    return entry;
  }

  // A cheaper sufficient condition for ProvenUnsolvableWithoutEvicting, from the rules of the
  // recorded victims alone (RecordedRulesOf), as RulesCertainBeforePlacing decides them. The
  // scenario's own victims, on top of those, can only add to a rule's victims left evicted
  // (which strengthens it) or, at most all of their accepted GPUs, to the victims below the
  // reclaimer's queue left evicted (which the rule's saturation bound is given); they do not
  // change what the recorded victims' jobs would place again unless one of those jobs has a pod
  // among them (then this is not decided here).
  template <typename Blocks>
  bool ProvenByRecordedRules(const Scenario& scenario, const std::vector<PodId>& potential,
                             double free_after, const Blocks& blocks) {
    if (scenario.recorded_tasks().empty()) return false;
    const RecordedRules& rr = RecordedRulesOf(scenario);
    if (rr.rules.empty()) return false;
    const double spare = free_after - pending_profile_.total;
    if (spare < 0) return false;
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    // The scenario's own victims: per rule, the whole GPUs of those under its sibling queue
    // (possibly placed again); per level of the preemptor's root path, the accepted GPUs of
    // those below its queue there.
    const size_t depth = PreemptorPath().size();
    below_added_.assign(depth + 1, 0.0);
    sibling_added_.assign(rr.rules.size(), 0.0);
    for (PodId p : potential) {
      const JobId j = briefs[p].job;
      if (recorded_job_mark_[j] == prefix_serial_) return false;
      const auto [common, sibling] = PartingOf(c.jobs[j].queue);
      below_added_[common] += ssn_.AcceptedGpus(p);
      if (sibling == kNone) continue;
      const auto& [stamp, r] = recorded_rule_of_[sibling];
      if (stamp == prefix_serial_ && ssn_.AcceptedGpus(p) == briefs[p].whole_gpus) {
        sibling_added_[r] += briefs[p].whole_gpus;
      }
    }
    // (below_added_[k]: below the path's first k queues; summed from the deepest level up.)
    for (size_t k = depth; k-- > 0;) below_added_[k] += below_added_[k + 1];
    // (Each shape's fit is decided when a rule first needs it: the first rule that holds ends
    // the check.)
    shape_fits_.assign(rr.shapes.size(), -1);
    auto shape_fits = [&](uint32_t shape) {
      int8_t& fits = shape_fits_[shape];
      if (fits < 0) fits = FitsJoint(joint_fit_[rr.shapes[shape]], free_after, blocks) ? 1 : 0;
      return fits != 0;
    };
    auto holds = [&](size_t r) {
      const RecordedRule& rule = rr.rules[r];
      double sure = rule.outside;
      double may_place = sibling_added_[r];
      for (const auto& [shape, gpus] : rule.by_shape)
        (shape_fits(shape) ? may_place : sure) += gpus;
      const double left = sure + std::max(0.0, may_place - spare);
      // (A victim below the path's queue at `level` is below its first level + 1 queues.)
      const double below =
          rule.below + (rule.sibling != kNone ? below_added_[rule.level + 1] : below_added_[0]);
      return left >= 1 && rule.saturation.Rejects(left, below);
    };
    // Any rule that holds proves the scenario: the one that proved the previous scenario of the
    // prefix is tried first (consecutive scenarios differ in a few victims).
    size_t& first = last_holding_rule_;
    if (first < rr.rules.size() && holds(first)) return true;
    for (size_t r = 0; r < rr.rules.size(); ++r) {
      if (r != first && holds(r)) {
        first = r;
        return true;
      }
    }
    return false;
  }

  // The distinct nodes of a job's pods (kNone first for pods on none, then in name order), kept
  // per thread with the session and the job's version they were listed at (a pod changes node
  // only with a change of its status, which bumps its job's version).
  std::span<const NodeId> NodesOfJob(JobId j) {
    // (A job of one pod: that pod's node, without the kept lists.)
    if (const PodId p = ssn_.single_pod(j); p != kNone) {
      single_job_node_ = ssn_.pod(p).node;
      return std::span<const NodeId>(&single_job_node_, 1);
    }
    struct Kept {
      uint64_t session = 0;
      std::vector<uint64_t> version;                     // per job; 0: not listed
      std::vector<std::pair<uint32_t, uint32_t>> range;  // per job: begin, end in `pool`
      std::vector<NodeId> pool;
    };
    thread_local Kept kept;
    const auto& c = ssn_.cluster();
    if (kept.session != ssn_.serial() || kept.pool.size() > 4 * c.pods.size() + 1024) {
      kept.session = ssn_.serial();
      kept.version.assign(c.jobs.size(), 0);
      kept.range.assign(c.jobs.size(), {0, 0});
      kept.pool.clear();
    }
    const size_t i = static_cast<size_t>(j);
    auto& [begin, end] = kept.range[i];
    if (kept.version[i] != ssn_.job_version(j)) {
      kept.version[i] = ssn_.job_version(j);
      begin = static_cast<uint32_t>(kept.pool.size());
      for (PodId p : c.jobs[j].pods) kept.pool.push_back(ssn_.pod(p).node);
      const auto first = kept.pool.begin() + begin;
      const auto& cluster_nodes = c.nodes;
      auto less = [&](NodeId a, NodeId b) {
        if (a == kNone || b == kNone) return a == kNone && b != kNone;
        return cluster_nodes[a].name_rank < cluster_nodes[b].name_rank;
      };
      std::sort(first, kept.pool.end(), less);
      kept.pool.erase(std::unique(first, kept.pool.end()), kept.pool.end());
      end = static_cast<uint32_t>(kept.pool.size());
    }
    return std::span<const NodeId>(kept.pool).subspan(begin, end - begin);
  }

  // Undoes EvictNodeVictims (the statement back to `cp`).
  void UndoNodeVictims(Statement& stmt, Statement::Checkpoint cp,
                       const std::vector<NodeId>& added) {
    // The nodes added last are at the end of the list.
    for (NodeId n : added) feasible_[n] = 0;
    feasible_list_.resize(feasible_list_.size() - added.size());
    ++feasible_version_;
    stmt.Rollback(cp);
  }

  // Whether no node of `nodes` can solve the scenario (see SolveScenario): each fails the
  // pre-checks Simulate starts with, or a rejection rule is certain before placing anything
  // and its added feasible nodes cannot matter. Leaves the statement and the feasible nodes as
  // it found them. With proofs verified, false (every node is simulated).
  bool AllNodesProvenUnsolvable(const Scenario& scenario, Statement& stmt,
                                const std::vector<NodeId>& nodes) {
    if (g_verify_proofs) return false;
    if (UnionFailsPrecheck(scenario, nodes)) {
      stats_->precheck += nodes.size();
      return true;
    }
    std::vector<PodId>& potential = potential_scratch_;
    std::vector<NodeId>& added = added_scratch_;
    for (NodeId node : nodes) {
      const auto cp = stmt.checkpoint();
      if (!EvictNodeVictims(scenario, stmt, node, potential, added, /*may_prove=*/true)) continue;
      bool proven = !CouldFitProfile(pending_profile_, [&](double g) { return ScenarioBlocks(g); });
      if (!proven && (added.empty() || FeasibleListInsensitive())) {
        PrepareRejecting(scenario, potential, nullptr, /*track=*/false);
        proven = RejectionCertainBeforePlacing(scenario);
        ClearRejecting();
      }
      UndoNodeVictims(stmt, cp, added);
      if (!proven) return false;
      ++stats_->proven_before;
    }
    return true;
  }

  // kUnsolvable: decided before placing anything that the outcome is kFailed or kRejected (not
  // which); only returned when the caller allows it (see Simulate's `may_skip`).
  enum class Outcome { kFailed, kRejected, kSolved, kUnsolvable };

  // Whether Simulate's pre-check would fail once the potential victims TouchNodesOf counted are
  // evicted on top of the current state (the prefix's base state). False whenever the count is
  // not exact (then the caller simulates as usual).
  bool FailsPrecheckAfterEvicting() {
    if (!hypothetical_exact_) return false;
    return !CouldFitProfile(pending_profile_, [&](double g) { return HypotheticalBlocks(g); });
  }

  // Blocks of g free GPUs (g = 0: free GPUs) of the feasible nodes once the scenario's
  // evictions are done, from the base counts and TouchNodesOf's exact counts of
  // the touched nodes (the session must be in the prefix's base state); each size is counted
  // once per scenario.
  double HypotheticalBlocks(double g) {
    for (const auto& [size, value] : hypothetical_blocks_) {
      if (size == g) return value;
    }
    double value = BaseBlocks(g);
    for (size_t i = 0; i < touched_.size(); ++i) {
      value += NodeBlocks(hypothetical_free_[i], g) -
               (touched_[i].was_feasible ? NodeBlocks(touched_[i].base_free, g) : 0);
    }
    hypothetical_blocks_.emplace_back(g, value);
    return value;
  }

  // Places the pending pods (and re-places victims that fit) with `victims` evicted, then asks
  // the validator. kFailed: the pods did not fit (the caller rolls back); kRejected: they fit
  // but the validator refused the scenario; kSolved: `out` holds the victims.
  // The victims are the scenario's recorded ones plus `potential` (those evicted on top).
  // `may_skip`: the caller treats kFailed and kRejected alike, so kUnsolvable may be returned
  // without simulating when the rejection rules prove that no placement can be accepted.
  Outcome Simulate(const Scenario& scenario, Statement& stmt, std::span<const PodId> potential,
                   PartialResult& out, bool may_skip) {
    const std::vector<NodeId>& nodes = feasible_list_;
    if (ssn_.params().solver_shortcuts &&
        !CouldFitProfile(pending_profile_, [&](double g) { return ScenarioBlocks(g); })) {
      ++stats_->precheck;
      return Outcome::kFailed;
    }
    const Statement::Checkpoint evict_end = stmt.checkpoint();
    PrepareRejecting(scenario, potential);
    // (Verify mode: proven before evicting (EvictNodeVictims) counts as proven before placing.)
    const bool proven_without_evicting = std::exchange(verify_proven_, false);
    const bool proven_before = (may_skip || g_verify_proofs) &&
                               (proven_without_evicting || RejectionCertainBeforePlacing(scenario));
    if (proven_before) {
      ++stats_->proven_before;
      if (!g_verify_proofs) {
        ClearRejecting();
        return Outcome::kUnsolvable;
      }
    }
    ++stats_->simulations;
    certain_by_saturation_ = false;
    bool proven = false;
    bool unsolvable = false;
    const bool placed =
        AllocatePreemptorAndVictims(stmt, nodes, scenario, potential, proven, may_skip, unsolvable);
    ClearRejecting();
    if (unsolvable) {
      ++stats_->proven_before;
      return Outcome::kUnsolvable;
    }
    if (proven_before && placed && !proven) {
      // (Verify mode: checked against the validator below.)
      proven = true;
    }
    if (!placed) {
      ++stats_->not_placed;
      return Outcome::kFailed;
    }
    if (proven && certain_by_saturation_) ++stats_->proven_by_saturation;
    if (proven && !g_verify_proofs) {
      ++stats_->rejected;
      ++stats_->proven;
      return Outcome::kRejected;
    }
    scenario.SetEvicted(potential);
    if (spec_.validator && !spec_.validator(ssn_, scenario.Info())) {
      ++stats_->rejected;
      if (proven) ++stats_->proven;
      return Outcome::kRejected;
    }
    if (proven) ++g_proof_violations;
    ++stats_->accepted;
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
    if (keep_base_) {
      out.evict_end = evict_end;
      out.evicted = scenario.recorded_tasks();
      out.evicted.insert(out.evicted.end(), potential.begin(), potential.end());
    }
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

  // The rejection rules of a simulation (SolverSpec::rejection_rules), followed while it runs:
  // per rule, the accepted GPUs of its victims known to stay evicted (their job had its chance
  // to be placed again, so their statuses are final) and of those whose job has not. Once the
  // pending pods are placed, a victim is placed again only onto the feasible nodes' free GPUs,
  // taking its own whole GPUs (equal to its accepted ones): so at least (unprocessed - free now)
  // of the unprocessed ones stay evicted, and a rule whose bound reaches its minimum holds at the
  // end of the simulation whatever happens in between.
  struct RuleState {
    double min_gpus = 0;
    double left = 0;         // GPUs of victims known to stay evicted
    bool any_left = false;   // some victim is known to stay evicted
    double unprocessed = 0;  // GPUs of victims whose job was not processed yet
    // With a saturation bound (RejectionRule::has_saturation): the same for its `below`
    // victims; at the end, b <= below_left + below_unprocessed.
    const SaturationBound* saturation = nullptr;
    double below_left = 0;
    double below_unprocessed = 0;
    // Whether the rule holds at the end when at least `x` GPUs of its victims stay evicted
    // (x >= 1 whole GPUs, from below) whatever happens to the victims not processed yet.
    // (2: only through the saturation bound, lowered by `below` victims placed again.)
    int Holds(double x) const {
      if (!(x >= 1)) return 0;
      if (x >= min_gpus) return 1;
      return saturation != nullptr && saturation->Rejects(x, below_left + below_unprocessed) ? 2
                                                                                             : 0;
    }
  };
  // `free_after`: the free GPUs of the feasible nodes after the scenario's evictions, when the
  // caller knows them without the evictions done (else counted from the session).
  // `track`: the rules are followed while a simulation runs (NoteProcessed, RejectionCertain);
  // otherwise only rules_ is filled (for RulesCertainBeforePlacing).
  // `saturation`: with `track` false, the rules' saturation bounds are wanted all the same.
  void PrepareRejecting(const Scenario& scenario, std::span<const PodId> potential,
                        const double* free_after = nullptr, bool track = true,
                        bool saturation = false) {
    ClearRejecting();
    if (!ssn_.params().solver_shortcuts || !spec_.rejection_rules || !base_exact_) return;
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    // Every pod placed in the simulation must take whole GPUs (so free counts stay exact).
    auto whole = [&](PodId p) {
      const double g = briefs[p].whole_gpus;
      return !std::isnan(g) && ExactlySummable(g);
    };
    if (whole_job_.size() != c.jobs.size()) whole_job_.assign(c.jobs.size(), -1);
    auto usable_victims = [&](std::span<const PodId> pods) {
      for (PodId p : pods) {
        if (!whole(p) || ssn_.AcceptedGpus(p) != briefs[p].whole_gpus) return false;
        // (What the victim's job may place again: a property of its pods' specs, kept per job.)
        const JobId j = briefs[p].job;
        int8_t& job_whole = whole_job_[j];
        if (job_whole < 0) {
          job_whole = 1;
          for (PodId q : c.jobs[j].pods) job_whole = job_whole && whole(q);
        }
        if (job_whole == 0) return false;
      }
      return true;
    };
    // The recorded victims are the same for the whole prefix, and whole-GPU pods keep their
    // accepted GPUs wherever they are placed: they are copied and checked once per prefix.
    if (recorded_prefix_ != prefix_serial_) {
      recorded_prefix_ = prefix_serial_;
      const auto& recorded = scenario.recorded_tasks();
      evicted_scratch_.assign(recorded.begin(), recorded.end());
      recorded_whole_ = std::all_of(recorded.begin(), recorded.end(), whole);
      recorded_usable_ = usable_victims(recorded);
    }
    evicted_scratch_.resize(scenario.recorded_tasks().size());
    evicted_scratch_.insert(evicted_scratch_.end(), potential.begin(), potential.end());
    for (PodId p : scenario.pending()) {
      if (!whole(p)) return;
    }
    // The recorded victims lead the list: when they all ask for whole GPUs they are offered as
    // the stable part.
    EvictedVictims evicted;
    evicted.pods = evicted_scratch_;
    if (recorded_whole_) {
      evicted.stable = scenario.recorded_tasks().size();
      evicted.stable_key = stable_key_base_ + prefix_serial_;
    }
    evicted.follow_below = track || saturation;
    spec_.rejection_rules(ssn_, job_, scenario.pending(), evicted, rules_);
    if (rules_.empty()) return;
    const bool usable = recorded_usable_ && usable_victims(potential);
    // Free counts exact now, and kept so by whole-GPU placements only.
    double free_now = 0;
    if (!usable || !(free_after != nullptr || ExactFreeAfterEvictions(free_now))) {
      rules_.clear();
      return;
    }
    if (!track) return;
    tracking_ = true;
    rule_of_pod_.resize(c.pods.size(), -1);
    rejecting_job_.resize(c.jobs.size(), 0);
    bool overlap = false;  // a pod listed twice (each pod is followed for one rule only)
    // (The `below` victims of rule r are flagged by bit r: at most 64 rules follow them.)
    below_mask_.resize(c.pods.size(), 0);
    const bool follow_below = rules_.size() <= 64;
    for (size_t r = 0; r < rules_.size(); ++r) {
      RuleState st;
      st.min_gpus = rules_[r].min_gpus;
      rules_[r].ForEachPod([&](PodId p) {
        overlap = overlap || rule_of_pod_[p] >= 0;
        rule_of_pod_[p] = static_cast<int32_t>(r);
        rejecting_job_[briefs[p].job] = 1;
        st.unprocessed += briefs[p].whole_gpus;
      });
      if (rules_[r].has_saturation && follow_below) {
        st.saturation = &rules_[r].saturation;
        for (const std::span<const PodId> list : {rules_[r].below_held, rules_[r].below_more}) {
          for (PodId p : list) {
            const uint64_t bit = uint64_t{1} << r;
            // (A pod listed twice: not followed.)
            overlap = overlap || (below_mask_[p] & bit) != 0 || !whole(p) ||
                      ssn_.AcceptedGpus(p) != briefs[p].whole_gpus;
            below_mask_[p] |= bit;
            rejecting_job_[briefs[p].job] = 1;
            st.below_unprocessed += briefs[p].whole_gpus;
          }
        }
      }
      rule_states_.push_back(st);
    }
    if (overlap) ClearRejecting();
  }

  void ClearRejecting() {
    const auto& briefs = ssn_.pod_briefs();
    if (tracking_) {
      for (const RejectionRule& rule : rules_) {
        rule.ForEachPod([&](PodId p) {
          rule_of_pod_[p] = -1;
          rejecting_job_[briefs[p].job] = 0;
        });
        if (!rule.has_saturation || below_mask_.empty()) continue;
        for (const std::span<const PodId> list : {rule.below_held, rule.below_more}) {
          for (PodId p : list) {
            below_mask_[p] = 0;
            rejecting_job_[briefs[p].job] = 0;
          }
        }
      }
      tracking_ = false;
    }
    rules_.clear();
    rule_states_.clear();
  }

  // Victim job j had its chance to be placed again: its victims' statuses are final.
  void NoteProcessed(JobId j) {
    if (rules_.empty() || !rejecting_job_[j]) return;
    rejecting_job_[j] = 0;  // (a job is processed once)
    const auto& c = ssn_.cluster();
    for (PodId p : c.jobs[j].pods) {
      const bool releasing = ssn_.pod(p).status == PodStatus::kReleasing;
      for (uint64_t mask = below_mask_.empty() ? 0 : below_mask_[p]; mask != 0; mask &= mask - 1) {
        RuleState& st = rule_states_[static_cast<size_t>(std::countr_zero(mask))];
        st.below_unprocessed -= c.pods[p].request.gpus;
        if (releasing) st.below_left += c.pods[p].request.gpus;
      }
      const int32_t r = rule_of_pod_[p];
      if (r < 0) continue;
      RuleState& st = rule_states_[static_cast<size_t>(r)];
      st.unprocessed -= c.pods[p].request.gpus;
      if (releasing) {
        st.left += c.pods[p].request.gpus;
        st.any_left = true;
      }
    }
  }

  // With the pending pods placed: whether some rule certainly holds at the end.
  bool RejectionCertain(const std::vector<NodeId>& nodes) const {
    if (rules_.empty()) return false;
    const double free = FreeBlocks(nodes, 0);
    for (const RuleState& st : rule_states_) {
      const double surely_left = std::max(0.0, st.unprocessed - free);
      if (!(st.any_left || surely_left > 0)) continue;
      if (const int h = st.Holds(st.left + surely_left); h != 0) {
        certain_by_saturation_ = h == 2;
        return true;
      }
    }
    return false;
  }

  // Before the pending pods' turn: whether some rule will be certain once they are placed. Each
  // rule's (left + unprocessed - free GPUs) never decreases while victims are processed (a
  // victim placed again takes its GPUs from the free ones; one left evicted moves from
  // unprocessed to left), and placing the pending pods takes their GPUs from the free ones: so
  // right after, left + max(0, unprocessed - free) is at least what this computes with the
  // pending pods' GPUs taken off the free ones now.
  bool RejectionCertainOncePlaced(const std::vector<NodeId>& nodes) const {
    if (rules_.empty() || pending_profile_.always_fits) return false;
    const double spare = FreeBlocks(nodes, 0) - pending_profile_.total;
    for (const RuleState& st : rule_states_) {
      if (const int h = st.Holds(st.left + std::max(0.0, st.unprocessed - spare)); h != 0) {
        certain_by_saturation_ = h == 2;
        return true;
      }
    }
    return false;
  }

  // Before anything is placed (the scenario's evictions done, rules prepared): whether some rule
  // is certain to hold at the end of any simulation that places the pending pods.
  //
  // A victim job is processed once: it places exactly its TasksToAllocate (as they are now: its
  // pods do not change before) or nothing. So a rule's victims outside those tasks stay evicted,
  // and so do the tasks of a job that cannot be placed together with the pending pods: every
  // whole-GPU placement of s GPUs on a node with f >= s free takes at least floor(s / g) of its
  // blocks of g GPUs (floor(f / g) - floor((f - s) / g) >= floor(s / g)) and nothing frees
  // GPUs during a simulation, so pods placed in one simulation need, for every size g, at most
  // the blocks of g there are now, and at most the free GPUs there are now. The rest of a rule's
  // victims are placed again only into what the pending pods leave free.
  bool RejectionCertainBeforePlacing(const Scenario& scenario) {
    if (rules_.empty()) return false;
    double free_now = 0;
    if (!ExactFreeAfterEvictions(free_now)) return false;
    return RulesCertainBeforePlacing(
        scenario, free_now, [&](double g) { return BlocksAfterEvictions(g); }, nullptr);
  }

  // RejectionCertainBeforePlacing from the free GPUs (`free_now`) and blocks of g free GPUs
  // (`blocks(g)`) of the feasible nodes after the scenario's evictions. The tasks of a job
  // flagged in `unknown_tasks` are not asked for (its pods are not in the state the simulation
  // would start from): its victims count as possibly placed again.
  template <typename Blocks>
  bool RulesCertainBeforePlacing(const Scenario& scenario, double free_now, const Blocks& blocks,
                                 const std::vector<uint64_t>* unknown_tasks) {
    const auto& c = ssn_.cluster();
    const auto& briefs = ssn_.pod_briefs();
    const double spare = free_now - pending_profile_.total;
    if (spare < 0) return false;  // (the pending pods cannot be placed: the pre-check's case)
    if (task_mark_.size() != c.pods.size()) task_mark_.assign(c.pods.size(), 0);
    if (job_mark_.size() != c.jobs.size()) job_mark_.assign(c.jobs.size(), 0);
    for (const RejectionRule& rule : rules_) {
      if (std::isinf(rule.min_gpus)) continue;  // (a saturation bound only: not before placing)
      ++mark_stamp_;
      double sure = 0;       // GPUs of the rule's victims certain to stay evicted
      double may_place = 0;  // GPUs of those that might be placed again
      for (const std::span<const PodId> list : {rule.held, std::span<const PodId>(rule.pods)}) {
        for (PodId p : list) {
          const JobId j = briefs[p].job;
          if (j == job_) return false;
          const bool unknown = unknown_tasks != nullptr && (*unknown_tasks)[j] == unknown_stamp_;
          if (!unknown && job_mark_[j] != mark_stamp_) {
            job_mark_[j] = mark_stamp_;
            if (unknown_tasks != nullptr) {
              // (Its pods are as in the prefix's base state: what it would place is kept.)
              const JointFit& fit = BaseJointFit(j, scenario.pending());
              job_fits_[j] = FitsJoint(fit, free_now, blocks) ? mark_stamp_ : 0;
            } else {
              ssn_.TasksToAllocate(j, tasks_scratch_, /*real=*/false, /*ordered=*/false);
              const bool fits =
                  FitsWithPending(tasks_scratch_, scenario.pending(), free_now, blocks);
              for (PodId t : tasks_scratch_) task_mark_[t] = fits ? mark_stamp_ : 0;
            }
          }
          const double gpus = briefs[p].whole_gpus;
          const bool may_be_placed =
              unknown || (unknown_tasks != nullptr
                              ? job_fits_[j] == mark_stamp_ && base_task_mark_[p] == prefix_serial_
                              : task_mark_[p] == mark_stamp_);
          if (may_be_placed) {
            may_place += gpus;
          } else {
            sure += gpus;
          }
        }
      }
      const double left = sure + std::max(0.0, may_place - spare);
      if (left >= std::max(1.0, rule.min_gpus)) return true;
    }
    return false;
  }

  // FitsWithPending of a job's tasks in the prefix's base state, as their joint requirement with
  // the pending pods (computed once per job and prefix): not modelled (always true), or their
  // total GPUs and, per distinct size g, the blocks of g they need.
  struct JointFit {
    uint64_t prefix = 0;  // prefix_serial_ it was computed for
    bool always = true;
    double total = 0;
    uint32_t begin = 0, end = 0;  // its steps in joint_steps_
  };
  const JointFit& BaseJointFit(JobId j, const std::vector<PodId>& pending) {
    const auto& c = ssn_.cluster();
    if (joint_fit_.size() != c.jobs.size()) joint_fit_.assign(c.jobs.size(), {});
    if (base_task_mark_.size() != c.pods.size()) base_task_mark_.assign(c.pods.size(), 0);
    if (job_fits_.size() != c.jobs.size()) job_fits_.assign(c.jobs.size(), 0);
    if (joint_prefix_ != prefix_serial_) {
      joint_prefix_ = prefix_serial_;
      joint_steps_.clear();
    }
    JointFit& fit = joint_fit_[j];
    if (fit.prefix == prefix_serial_) return fit;
    ssn_.TasksToAllocate(j, tasks_scratch_, /*real=*/false, /*ordered=*/false);
    for (PodId t : tasks_scratch_) base_task_mark_[t] = prefix_serial_;
    fit = JointFitOf(tasks_scratch_, pending);
    fit.prefix = prefix_serial_;
    return fit;
  }
  // The joint requirement of `tasks` and the whole-GPU `pending` pods, its steps appended to
  // joint_steps_: not modelled (always) when some task is not a whole-GPU pod or none asks for
  // GPUs; otherwise the total and, per distinct size g (ascending), the blocks of g needed.
  JointFit JointFitOf(const std::vector<PodId>& tasks, const std::vector<PodId>& pending) {
    JointFit fit;
    const auto& briefs = ssn_.pod_briefs();
    std::vector<double>& sizes = joint_sizes_;
    sizes.clear();
    for (PodId t : tasks) {
      const double g = briefs[t].whole_gpus;
      if (std::isnan(g) || !ExactlySummable(g)) return fit;
      if (g > 0) sizes.push_back(g);
    }
    if (sizes.empty()) return fit;
    for (PodId t : pending) {
      if (briefs[t].whole_gpus > 0) sizes.push_back(briefs[t].whole_gpus);
    }
    fit.always = false;
    for (double g : sizes) fit.total += g;
    std::sort(sizes.begin(), sizes.end());
    fit.begin = static_cast<uint32_t>(joint_steps_.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i > 0 && sizes[i] == sizes[i - 1]) continue;
      const double g = sizes[i];
      double count = 0;
      for (size_t k = i; k < sizes.size(); ++k) count += FloorOfNonNegative(sizes[k] / g);
      joint_steps_.emplace_back(g, count);
    }
    fit.end = static_cast<uint32_t>(joint_steps_.size());
    return fit;
  }
  template <typename Blocks>
  bool FitsJoint(const JointFit& fit, double free_now, const Blocks& blocks) const {
    if (fit.always) return true;
    if (fit.total > free_now) return false;
    for (uint32_t i = fit.begin; i < fit.end; ++i) {
      if (joint_steps_[i].second > blocks(joint_steps_[i].first)) return false;
    }
    return true;
  }

  // A necessary condition for placing `tasks` and the whole-GPU `pending` pods in one
  // simulation from the current state (see RejectionCertainBeforePlacing): true when some task
  // is not a whole-GPU pod (not modelled).
  template <typename Blocks>
  bool FitsWithPending(const std::vector<PodId>& tasks, const std::vector<PodId>& pending,
                       double free_now, const Blocks& blocks) {
    // (Its steps are appended for the check only.)
    const size_t kept = joint_steps_.size();
    const bool fits = FitsJoint(JointFitOf(tasks, pending), free_now, blocks);
    joint_steps_.resize(kept);
    return fits;
  }

  // Whether the feasible-node list can change no simulation of this search beyond the nodes
  // with free GPUs it holds: every pod of the cluster asks for whole GPUs and is ranked over all
  // nodes by class when placed in a simulation (Session::RankFittingNodesCoveringFreeGpus), and
  // a node added to the list and left there has no free GPU in the states simulations start
  // from.
  bool FeasibleListInsensitive() const {
    return ssn_.params().solver_shortcuts && ssn_.AllPodsWholeGpuRankableByClass();
  }

  // Free GPUs of the feasible nodes in the scenario's state right after its evictions (before
  // anything is placed), when that count is exact (ScenarioBlocks's correction of the base count).
  bool ExactFreeAfterEvictions(double& out) const {
    if (!base_exact_ || base_blocks_.empty() || base_blocks_.front().first != 0 ||
        touched_epoch_ != ssn_.placement_epoch()) {
      return false;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = base_blocks_.front().second;
    for (const TouchedNode& t : touched_) {
      if (!ExactlySummable(free[t.node])) return false;
      value += NodeBlocks(free[t.node], 0) - (t.was_feasible ? NodeBlocks(t.base_free, 0) : 0);
    }
    out = value;
    return true;
  }

  // The whole-GPU requests of a set of pods, as CouldFitProfile checks them: their total and, per
  // distinct request size g (largest first), how many pods ask for at least g GPUs.
  struct SizeProfile {
    bool always_fits = true;  // no GPU request, or one not modelled (shared GPUs, MIG)
    double total = 0;
    std::vector<std::pair<double, double>> steps;  // (g, pods asking >= g)
  };

  // A necessary condition for placing whole-GPU `pods` on `nodes` (pipelining onto idle and
  // releasing GPUs): for every request size g, the pods asking for at least g GPUs must fit in
  // the nodes' free GPUs counted in blocks of g. Cheap, and it skips hopeless simulations.
  bool CouldFit(const std::vector<PodId>& pods, const std::vector<NodeId>& nodes) const {
    SortedGpuSizes(pods, sizes_scratch_);
    MakeProfile(sizes_scratch_, profile_scratch_);
    return CouldFitProfile(profile_scratch_, [&](double g) { return FreeBlocks(nodes, g); });
  }

  // The whole-GPU requests of `pods`, largest first. Shared-GPU, MIG and DRA requests are left
  // out: they can only make placing the whole-GPU pods harder, so the check stays a necessary
  // condition.
  void SortedGpuSizes(const std::vector<PodId>& pods, std::vector<double>& sizes) const {
    sizes.clear();
    for (PodId p : pods) {
      const Pod& pod = ssn_.cluster().pods[p];
      if (pod.IsSharedGpu()) continue;
      if (pod.request.gpus > 0) sizes.push_back(pod.request.gpus);
    }
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
  }

  static void MakeProfile(const std::vector<double>& sizes, SizeProfile& out) {
    out.steps.clear();
    out.total = 0;
    out.always_fits = sizes.empty() || sizes.front() < 0;
    if (out.always_fits) return;
    for (double g : sizes) out.total += g;
    size_t i = 0;
    while (i < sizes.size()) {
      const double g = sizes[i];
      while (i < sizes.size() && sizes[i] == g) ++i;  // i = number of pods asking >= g
      out.steps.emplace_back(g, static_cast<double>(i));
    }
  }

  // `blocks(g)`: free GPUs (g = 0) or blocks of g free GPUs of the candidate nodes.
  template <typename Blocks>
  static bool CouldFitProfile(const SizeProfile& profile, const Blocks& blocks) {
    if (profile.always_fits) return true;
    if (profile.total > blocks(0)) return false;
    for (const auto& [g, count] : profile.steps) {
      if (count > blocks(g)) return false;
    }
    return true;
  }

  // Free GPUs (g = 0) or blocks of g free GPUs of one node, as FreeBlocks counts them.
  static double NodeBlocks(double free, double g) {
    const double f = std::max(0.0, free);
    return g == 0 ? f : FloorOfNonNegative(f / g);
  }
  // std::floor for a quotient known to be at least 0 (or NaN): truncation, without the library
  // call the generic x86-64 target makes for std::floor (the counts here are in the hot loop).
  static double FloorOfNonNegative(double q) {
    return q < 9e15 ? static_cast<double>(static_cast<int64_t>(q)) : std::floor(q);
  }
  // Sums of NodeBlocks are exact (so independent of the order of the terms) while every free
  // count is a whole number well inside the range of consecutive integers of a double.
  static bool ExactlySummable(double free) {
    return std::abs(free) < 1e12 && free == static_cast<double>(static_cast<int64_t>(free));
  }

  // The prefix's base state: the recorded victims evicted, nothing else. Counts the blocks of
  // the feasible nodes once, for every size the pending pods ask for.
  void CountBaseBlocks() {
    base_blocks_.clear();
    base_exact_ = !pending_profile_.always_fits;
    if (!base_exact_) return;
    const auto free = ssn_.non_allocated_gpus();
    for (NodeId n : feasible_list_) base_exact_ = base_exact_ && ExactlySummable(free[n]);
    if (!base_exact_) return;
    base_blocks_.emplace_back(0.0, 0.0);
    for (const auto& step : pending_profile_.steps) base_blocks_.emplace_back(step.first, 0.0);
    for (NodeId n : feasible_list_) {
      for (auto& [g, value] : base_blocks_) value += NodeBlocks(free[n], g);
    }
  }

  // Blocks of g free GPUs of the feasible nodes in a scenario's state: the base state plus the
  // evictions on the nodes of `touched_` (some of them newly feasible). With exact sums this is
  // the base count corrected on those nodes; otherwise the nodes are counted again.
  double ScenarioBlocks(double g) const {
    if (base_exact_ && touched_epoch_ == ssn_.placement_epoch()) {
      const auto free = ssn_.non_allocated_gpus();
      for (const auto& [size, base_value] : base_blocks_) {
        if (size != g) continue;
        double value = base_value;
        bool exact = true;
        for (const TouchedNode& t : touched_) {
          exact = exact && ExactlySummable(free[t.node]);
          value += NodeBlocks(free[t.node], g) - (t.was_feasible ? NodeBlocks(t.base_free, g) : 0);
        }
        if (exact) return value;
        break;
      }
    }
    return FreeBlocks(feasible_list_, g);
  }

  // ScenarioBlocks for any size, right after the scenario's evictions: a size the base counts
  // lack is counted once over the feasible nodes (less the scenario's changes) and kept for the
  // rest of the batch.
  double BlocksAfterEvictions(double g) {
    if (base_exact_ && touched_epoch_ == ssn_.placement_epoch() &&
        std::none_of(base_blocks_.begin(), base_blocks_.end(),
                     [g](const auto& entry) { return entry.first == g; })) {
      const auto free = ssn_.non_allocated_gpus();
      double base = 0;
      bool exact = true;
      for (NodeId n : feasible_list_) {
        exact = exact && ExactlySummable(free[n]);
        base += NodeBlocks(free[n], g);
      }
      for (const TouchedNode& t : touched_) {
        base -= NodeBlocks(free[t.node], g) - (t.was_feasible ? NodeBlocks(t.base_free, g) : 0);
      }
      if (exact) base_blocks_.emplace_back(g, base);
    }
    return ScenarioBlocks(g);
  }

  // Free GPUs of `nodes` (g = 0) or the number of blocks of g free GPUs, cached until something
  // is placed or removed (the node list is fixed within a simulation).
  // With the solver shortcuts on and whole-number counts, the cached counts of the feasible
  // nodes follow the session's node-change log instead (same sums: exact in any order).
  double FreeBlocks(const std::vector<NodeId>& nodes, double g) const {
    const uint64_t epoch = ssn_.placement_epoch();
    const bool same_nodes = nodes.data() == blocks_nodes_ && nodes.size() == blocks_count_ &&
                            feasible_version_ == blocks_version_;
    if (!same_nodes || epoch != blocks_epoch_) {
      if (!(same_nodes && &nodes == &feasible_list_ && CatchUpBlocks())) {
        blocks_cache_.clear();
        blocks_synced_ = false;
        node_log_.clear();
      }
      blocks_epoch_ = epoch;
      blocks_nodes_ = nodes.data();
      blocks_count_ = nodes.size();
      blocks_version_ = feasible_version_;
    }
    for (const auto& [size, value] : blocks_cache_) {
      if (size == g) return value;
    }
    const auto free = ssn_.non_allocated_gpus();
    double value = 0;
    for (NodeId n : nodes) {
      const double f = std::max(0.0, free[n]);
      value += g == 0 ? f : FloorOfNonNegative(f / g);
    }
    blocks_cache_.emplace_back(g, value);
    if (!blocks_synced_ && ssn_.params().solver_shortcuts && &nodes == &feasible_list_) {
      // Remember what the counts were made of, to follow later changes.
      blocks_synced_ = true;
      for (NodeId n : nodes) {
        blocks_free_[n] = free[n];
        blocks_synced_ = blocks_synced_ && ExactlySummable(free[n]);
      }
      node_log_.clear();
    }
    return value;
  }

  // Brings the cached counts up to date with the nodes changed since they were made. False
  // (the caller counts again) when that is not exact.
  bool CatchUpBlocks() const {
    if (!blocks_synced_ || node_log_.size() > (1u << 20)) return false;
    const auto free = ssn_.non_allocated_gpus();
    for (NodeId n : node_log_) {
      if (!feasible_[n]) continue;
      const double f = free[n];
      if (!ExactlySummable(f)) return false;
      // (Unchanged since counted, e.g. a node logged again after an earlier entry brought it up
      // to date: every count would move by exactly 0.)
      if (f == blocks_free_[n]) continue;
      for (auto& [size, value] : blocks_cache_) {
        value += NodeBlocks(f, size) - NodeBlocks(blocks_free_[n], size);
      }
      blocks_free_[n] = f;
    }
    node_log_.clear();
    return true;
  }

  // KAI's TryToVirtuallyAllocatePreemptorAndGetVictims: every pending job, victim job and the
  // preemptor in queue order; only victims and the preemptor are placed (pipelined).
  // `proven`: stopped once the pending pods were placed because the rejection bound
  // (PrepareRejecting) proves the validator would reject the outcome.
  //
  // `may_skip` (see Simulate): the simulation may also stop before the pending pods' turn once
  // a rejection rule is certain for any placement of them (`unsolvable`; false is returned).
  bool AllocatePreemptorAndVictims(Statement& stmt, const std::vector<NodeId>& nodes,
                                   const Scenario& scenario, std::span<const PodId> potential,
                                   bool& proven, bool may_skip, bool& unsolvable) {
    const auto& jobs = ssn_.cluster().jobs;
    is_victim_job_.resize(jobs.size(), 0);
    // (Scratch lists sized up front and written by index: this runs for every victim of every
    // simulation.)
    std::vector<JobId>& victim_jobs = victim_jobs_scratch_;
    victim_jobs.resize(scenario.recorded_tasks().size() + potential.size());
    size_t num_victim_jobs = 0;
    bool victims_need_gpus = true;  // every victim pod asks for whole GPUs
    auto note_victim = [&](PodId p) {
      const Pod& pod = ssn_.cluster().pods[p];
      victims_need_gpus = victims_need_gpus && !pod.IsSharedGpu() && pod.request.gpus > 0;
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
    if (pending_jobs_.empty() && !pending_jobs_known_) {
      for (JobId j : ssn_.jobs_pending_at_open()) {
        if (j != job_ && ssn_.HasPendingPods(j)) pending_jobs_.push_back(j);
      }
      pending_jobs_known_ = true;
    }
    // When the job order depends only on each job's own pods and no two entries are equivalent,
    // the pops do not depend on how the heaps were built: the entries of the pending jobs with no
    // active pod (their pods are the same in every simulation: nothing of theirs is evicted or
    // placed) are ordered once per search and copied, and each simulation adds the rest.
    const bool from_base = ssn_.params().solver_shortcuts && ssn_.JobOrderDependsOnlyOnOwnPods() &&
                           ssn_.JobTieBreakersDistinct();
    if (from_base && !order_base_) {
      in_order_base_.assign(jobs.size(), 0);
      std::vector<JobId>& base_jobs = to_order_scratch_;
      base_jobs.clear();
      for (JobId j : pending_jobs_) {
        bool active = false;
        for (PodId p : jobs[j].pods) active = active || IsActiveAllocated(ssn_.pod(p).status);
        // (A victim's pods are active in the clean session; evicted ones here are releasing.)
        if (!active && !is_victim_job_[j]) {
          base_jobs.push_back(j);
          in_order_base_[j] = 1;
        }
      }
      order_base_ = std::make_unique<JobsByQueue>(ssn_, options);
      order_base_->PushMany(base_jobs);
      order_base_->Freeze();  // copies share its entries
    }
    // (From the base, the order of the previous simulation is overwritten: its lists' storage is
    // reused.)
    std::optional<JobsByQueue> fresh;
    if (from_base) {
      if (order_) {
        order_->AssignFrom(*order_base_);
      } else {
        order_ = std::make_unique<JobsByQueue>(*order_base_);
      }
    } else {
      fresh.emplace(ssn_, options);
    }
    JobsByQueue& order = from_base ? *order_ : *fresh;
    std::vector<JobId>& to_order = to_order_scratch_;
    to_order.resize(pending_jobs_.size() + victim_jobs.size());
    size_t num_to_order = 0;
    for (JobId j : pending_jobs_) {
      if (!is_victim_job_[j] && !(from_base && in_order_base_[j])) to_order[num_to_order++] = j;
    }
    size_t victim_entries = 0;
    for (JobId j : victim_jobs) {
      if (j == job_) continue;
      ++victim_entries;
      if (!(from_base && in_order_base_[j])) to_order[num_to_order++] = j;
    }
    to_order.resize(num_to_order);
    order.PushMany(to_order);
    order.PushView(JobView{job_, true, scenario.pending()});
    // The entries that do something: the preemptor and the victim jobs. Once all are popped the
    // rest of the order only skips pending jobs. (An entry the order did not take is never
    // popped, so the count then never reaches zero.)
    size_t to_act = 1 + victim_entries;
    bool placed = false;
    bool ok = true;
    while (!order.empty()) {
      if (ssn_.params().solver_shortcuts && to_act == 0) break;
      JobView v = order.PopNextView();
      if ((v.job == job_ || is_victim_job_[v.job]) && to_act > 0) --to_act;
      if (v.job == job_) {
        if (!AllocateJobTaskList(ssn_, stmt, nodes, job_, scenario.pending(), true,
                                 /*nodes_cover_free_gpus=*/true)) {
          ok = false;
          break;
        }
        placed = true;
        if (RejectionCertain(nodes)) {
          proven = true;
          if (!g_verify_proofs) break;
        }
        // Nothing left for victims that all need GPUs: the rest of the order changes nothing.
        if (ssn_.params().solver_shortcuts && victims_need_gpus && FreeBlocks(nodes, 0) <= 0) {
          break;
        }
        continue;
      }
      if (!is_victim_job_[v.job]) continue;
      // Would fail, and failures change nothing. (The check looks only at the pods' sizes.)
      // The tasks are asked for once, in order, and placed as they are (AllocateJobTasks would
      // ask for the same list).
      const bool shortcuts = ssn_.params().solver_shortcuts;
      if (shortcuts) {
        ssn_.TasksToAllocate(v.job, tasks_scratch_, /*real=*/false, /*ordered=*/true);
        if (!CouldFit(tasks_scratch_, nodes)) {
          NoteProcessed(v.job);
          if (placed && RejectionCertain(nodes)) {
            proven = true;
            if (!g_verify_proofs) break;
          }
          continue;
        }
      }
      const bool victim_placed =
          shortcuts ? AllocateJobTaskList(ssn_, stmt, nodes, v.job, tasks_scratch_,
                                          /*pipeline_only=*/true,
                                          /*nodes_cover_free_gpus=*/true)
                    : AllocateJobTasks(ssn_, stmt, nodes, v.job, /*pipeline_only=*/true,
                                       /*nodes_cover_free_gpus=*/true);
      NoteProcessed(v.job);
      // Before the pending pods' turn, a victim placed again only takes free GPUs away: once
      // the necessary condition for placing them fails, their turn will fail (kFailed).
      if (!placed && victim_placed && shortcuts &&
          !CouldFitProfile(pending_profile_, [&](double g) { return FreeBlocks(nodes, g); })) {
        ok = false;
        break;
      }
      if (!placed && may_skip && !g_verify_proofs && RejectionCertainOncePlaced(nodes)) {
        ok = false;
        unsolvable = true;
        break;
      }
      if (placed && RejectionCertain(nodes)) {
        proven = true;
        if (!g_verify_proofs) break;
      }
    }
    for (JobId j : victim_jobs) is_victim_job_[j] = 0;
    return ok && placed;
  }

  Session& ssn_;
  JobId job_;
  SolverSpec& spec_;
  SolverActionStats* stats_ = nullptr;  // this action's counters
  VictimGroups recorded_groups_;
  std::vector<PodId> preempted_scratch_, pipelined_scratch_;
  std::vector<char> seen_scratch_;
  // (Kept per thread between searches: its per-pod and per-job arrays are sized once and each
  // scenario resets the entries it touched. Searches do not nest.)
  // The idle-GPU capacities of the session as it is (clean), kept per thread with the session
  // and state version they were computed at: searches that leave the session as they found it
  // (every failed one, e.g. most preempt searches) do not count them again. (A pod joins or
  // leaves a node, or turns releasing, only through a change of its status, which the state
  // version follows.)
  static const IdleGpuCapacities& SharedCapacities(const Session& ssn) {
    struct Kept {
      uint64_t session = 0;
      uint64_t version = 0;
      IdleGpuCapacities capacities;
    };
    thread_local Kept kept;
    if (!kept.capacities.computed || kept.session != ssn.serial() ||
        kept.version != ssn.state_version()) {
      kept.capacities.Compute(ssn);
      kept.session = ssn.serial();
      kept.version = ssn.state_version();
    }
    return kept.capacities;
  }

  static ScenarioIndex& SharedIndex() {
    thread_local ScenarioIndex index;
    return index;
  }
  ScenarioIndex& index_ = SharedIndex();
  std::vector<char> feasible_;
  std::unique_ptr<JobsByQueue> base_queue_;
  // The record of victims-queue pops shared by the prefixes, the queue standing after it, and
  // the current prefix's position in it (see AddNextPotentialVictims).
  std::vector<PopRecord> pops_;
  std::vector<PodId> pop_victims_;  // the records' victims (see PopRecord)
  std::unique_ptr<JobsByQueue> live_;
  size_t cursor_ = 0;
  // The kept eviction base (see AcquireBase).
  bool keep_base_ = false;
  std::unique_ptr<Statement> base_stmt_;
  std::vector<PodId> base_seq_;
  PopStep step_;
  JobView own_next_;
  NodeId single_job_node_ = kNone;  // NodesOfJob's answer for a job of one pod
  std::vector<PodId> own_victims_;
  // Scenario generation: the victim groups popped so far for the current prefix (every
  // scenario adds the next one), all their tasks in order, and the per-solve node capacities
  // of the idle-GPU filters.
  VictimGroups planned_;
  std::vector<PodId> planned_tasks_;
  const IdleGpuCapacities* capacities_ = nullptr;  // of the clean session (SharedCapacities)

  std::vector<PodId> tasks_scratch_;
  mutable std::vector<double> sizes_scratch_;
  mutable SizeProfile profile_scratch_;
  SizeProfile pending_profile_;  // the current prefix's GPU requests
  // Blocks of free GPUs of the feasible nodes in the prefix's base state, per size (0 = GPUs),
  // when they are exact sums; and the nodes a scenario changed, with their base free GPUs.
  struct TouchedNode {
    NodeId node;
    double base_free;
    bool was_feasible;
  };
  std::vector<std::pair<double, double>> base_blocks_;
  bool base_exact_ = false;
  std::vector<TouchedNode> touched_;
  // Per node: where it is in touched_ (valid where the stamp is touched_stamp_); per pod: seen
  // in the current potential list (where equal to pod_seen_stamp_).
  // (touched_at_ is shared by the searches of the thread, which do not nest, and sized once
  // instead of filled for every search: the stamps are unique per thread, so an entry a previous
  // search left never matches.)
  std::vector<std::pair<uint64_t, uint32_t>>& touched_at_ = SharedTouchedAt();
  uint64_t touched_stamp_ = 0;
  static std::vector<std::pair<uint64_t, uint32_t>>& SharedTouchedAt() {
    thread_local std::vector<std::pair<uint64_t, uint32_t>> at;
    return at;
  }
  static uint64_t NextTouchStamp() {
    thread_local uint64_t next = 0;
    return ++next;
  }
  std::vector<uint64_t> pod_seen_;
  uint64_t pod_seen_stamp_ = 0;
  std::vector<double> hypothetical_free_;
  // Scratch lists of SolveScenario (it is not re-entered).
  std::vector<NodeId> victim_nodes_scratch_;
  std::vector<PodId> potential_scratch_;
  std::vector<NodeId> added_scratch_;
  uint64_t touched_epoch_ = 0;  // placement epoch right after the scenario's evictions
  std::vector<char> is_victim_job_;
  std::vector<JobId> victim_jobs_scratch_, to_order_scratch_;  // (AllocatePreemptorAndVictims)
  // The rejection rules of the current simulation (see PrepareRejecting).
  std::vector<RejectionRule> rules_;
  std::vector<RuleState> rule_states_;
  std::vector<PodId> evicted_scratch_;  // the recorded victims of prefix recorded_prefix_,
                                        // then the node's
  uint64_t prefix_serial_ = 0;          // SolvePartial calls so far
  // PrepareRejecting's checks of the recorded victims of prefix recorded_prefix_: all ask for
  // whole GPUs (then they are the rules' stable part, see EvictedVictims), and all can be
  // followed by the rules. Stable keys are unique per process.
  uint64_t recorded_prefix_ = 0;
  RecordedRules recorded_rules_;
  std::vector<std::pair<uint64_t, uint32_t>> recorded_rule_of_;  // per sibling queue (prefix)
  std::vector<double> below_added_, sibling_added_;
  bool path_known_ = false;
  std::vector<QueueId> preemptor_path_, victim_path_scratch_;
  std::vector<std::pair<size_t, QueueId>> parting_;
  std::vector<uint64_t>
      recorded_job_mark_;  // jobs with victims in recorded_rules_ (prefix_serial_)
  std::vector<int8_t> shape_fits_;  // per shape: 1 fits, 0 does not, -1 not decided yet
  // The recorded rule that last proved a scenario of the prefix (see ProvenByRecordedRules).
  size_t last_holding_rule_ = 0;
  std::vector<uint64_t> union_job_stamp_;  // UnionFailsPrecheck's jobs taken (union_stamp_)
  uint64_t union_stamp_ = 0;
  bool recorded_whole_ = false;
  bool recorded_usable_ = false;
  const uint64_t stable_key_base_ = NextStableKeyBase();
  static uint64_t NextStableKeyBase() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(uint64_t{1} << 32);
  }
  std::vector<int32_t> rule_of_pod_;
  std::vector<char> rejecting_job_;
  mutable std::vector<std::pair<double, double>> blocks_cache_;
  // Free GPUs of each feasible node when the cached counts were last brought up to date, and
  // whether they are (then the node-change log is followed).
  std::vector<double>& blocks_free_ = SharedBlocksFree();  // (per thread, see Solve)
  static std::vector<double>& SharedBlocksFree() {
    thread_local std::vector<double> free;
    return free;
  }
  mutable bool blocks_synced_ = false;
  mutable std::vector<NodeId> node_log_;
  mutable uint64_t blocks_epoch_ = ~0ULL;
  mutable const NodeId* blocks_nodes_ = nullptr;
  mutable size_t blocks_count_ = 0;
  mutable uint64_t blocks_version_ = 0;
  // Nodes the pending job may use, as flags and as a list (the list is what simulations rank).
  std::vector<NodeId> feasible_list_;
  uint64_t feasible_version_ = 0;

  void AddFeasible(NodeId n) {
    if (feasible_[n]) return;
    feasible_[n] = 1;
    feasible_list_.push_back(n);
    ++feasible_version_;
  }
  // RejectionCertainBeforePlacing's marks (per pod and per job, valid where equal to the
  // stamp) and sizes.
  std::vector<uint64_t> task_mark_, job_mark_;
  // ProvenUnsolvableWithoutEvicting's jobs whose tasks are not known (where equal to the stamp),
  // and whether TouchNodesOf's hypothetical_free_ is exact.
  std::vector<uint64_t> unknown_tasks_;
  std::vector<std::pair<double, double>> hypothetical_blocks_;  // (size, blocks), one scenario
  uint64_t unknown_stamp_ = 0;
  bool hypothetical_exact_ = false;
  // Per job (-1: not known yet): every pod asks for whole GPUs (PrepareRejecting's `whole`).
  std::vector<int8_t> whole_job_;
  uint64_t mark_stamp_ = 0;
  // The last rule found certain held only through its saturation bound (see RuleState::Holds).
  mutable bool certain_by_saturation_ = false;
  // Per pod: the rules (bit r for rule r) that count it among their `below` victims.
  std::vector<uint64_t> below_mask_;
  // PrepareRejecting's rules are followed (rule_of_pod_ and rejecting_job_ are set).
  bool tracking_ = false;
  // Verify mode: the node simulation about to run was proven hopeless before evicting.
  bool verify_proven_ = false;
  std::vector<double> joint_sizes_;
  std::vector<JointFit> joint_fit_;
  std::vector<std::pair<double, double>> joint_steps_;
  uint64_t joint_prefix_ = 0;
  std::vector<uint64_t> base_task_mark_, job_fits_;
  // Jobs with pending pods (other than the preemptor). Fixed for the whole solve: each
  // simulation starts from the same session state, and simulations only pipeline.
  std::vector<JobId> pending_jobs_;
  std::vector<char> in_order_base_;  // per job: its entry is in order_base_
  bool pending_jobs_known_ = false;
  // The simulations' job order holding the pending jobs (see AllocatePreemptorAndVictims).
  std::unique_ptr<JobsByQueue> order_base_;
  std::unique_ptr<JobsByQueue> order_;  // the last simulation's order (a copy of order_base_)
};

}  // namespace

const SolverStats& GetSolverStats() { return g_stats; }

void ResetSolverStats() { g_stats = SolverStats(); }

void SetVerifyRejectionProofs(bool verify) { g_verify_proofs = verify; }

uint64_t RejectionProofViolations() { return g_proof_violations; }

SolverResult SolveJob(Session& ssn, JobId job, SolverSpec& spec) {
  SolverActionStats& st = g_stats.by_action[static_cast<int>(spec.action)];
  const uint64_t simulations_before = st.simulations;
  const auto start = std::chrono::steady_clock::now();
  SolverResult r = Solver(ssn, job, spec).Solve();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ++st.jobs;
  st.solved += r.solved ? 1 : 0;
  st.ms += ms;
  if (st.slowest_job == kNone || ms > st.slowest_ms) {
    st.slowest_job = job;
    st.slowest_ms = ms;
    st.slowest_solved = r.solved;
    st.slowest_simulations = st.simulations - simulations_before;
  }
  return r;
}

std::vector<NodeId> FeasibleNodesForJob(const Session& ssn, JobId job) {
  const auto& c = ssn.cluster();
  bool all = false;
  for (PodId p : c.jobs[job].pods) all = all || c.pods[p].IsCpuOnly();
  if (all) return {ssn.all_nodes().begin(), ssn.all_nodes().end()};
  // The nodes with GPUs to offer depend only on the pods' states: kept per thread with the
  // session and state version they were listed at (the searches of an action that commit
  // nothing see the same list).
  struct Kept {
    uint64_t session = 0;
    uint64_t version = 0;
    std::vector<NodeId> nodes;
  };
  thread_local Kept kept;
  if (kept.session != ssn.serial() || kept.version != ssn.state_version()) {
    kept.session = ssn.serial();
    kept.version = ssn.state_version();
    kept.nodes.clear();
    for (NodeId n = 0; n < static_cast<NodeId>(c.nodes.size()); ++n) {
      if (ssn.node(n).idle.gpus > 0 || ssn.node(n).releasing.gpus > 0 ||
          ssn.IdleGpuSum(n).first > 0 || ssn.ReleasingGpuSum(n).first > 0) {
        kept.nodes.push_back(n);
      }
    }
  }
  return kept.nodes;
}

std::vector<PodId> TasksToEvict(const Session& ssn, const JobView& view, bool& has_more) {
  std::vector<PodId> out;
  AppendTasksToEvict(ssn, view, has_more, out);
  return out;
}

void AppendTasksToEvict(const Session& ssn, const JobView& view, bool& has_more,
                        std::vector<PodId>& out) {
  if (const PodId p = ssn.single_pod(view.job); p != kNone && !view.partial) {
    // (The usual victim: one pod, evicted alone if active; read without the job's spec.)
    has_more = false;
    if (IsActiveAllocated(ssn.pod(p).status)) out.push_back(p);
    return;
  }
  const Job& job = ssn.cluster().jobs[view.job];
  const int32_t num_sets = static_cast<int32_t>(job.pod_sets.size());
  const std::vector<PodId>& pods = view.partial ? view.pods : job.pods;
  // One pod set when some pod set is above its minimum (elastic pods go one by one), else all.
  int max_sets = num_sets;
  for (int32_t s = 0; s < num_sets && num_sets > 1; ++s) {
    if (ssn.ViewCounters(view, s).active_allocated > job.pod_sets[s].min_available) {
      max_sets = 1;
      break;
    }
  }
  // Reverse pod-set order (the last to be allocated is the first to give up pods).
  // (Scratch lists reused between calls.)
  thread_local std::vector<int32_t> order;
  thread_local std::vector<PodId> active;
  order.resize(static_cast<size_t>(num_sets));
  std::iota(order.begin(), order.end(), 0);
  if (num_sets > 1) {
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return ssn.PodSetViewLess(view, b, a); });
  }
  const auto& briefs = ssn.pod_briefs();
  const size_t start = out.size();
  int total_active = 0;
  for (PodId p : pods) total_active += IsActiveAllocated(ssn.pod(p).status);
  int taken_sets = 0;
  for (int32_t s : order) {
    if (taken_sets >= max_sets) break;
    active.clear();
    for (PodId p : pods) {
      if (briefs[p].pod_set == s && IsActiveAllocated(ssn.pod(p).status)) active.push_back(p);
    }
    std::sort(active.begin(), active.end(), [&](PodId a, PodId b) { return ssn.TaskLess(b, a); });
    const int allocated = static_cast<int>(active.size());
    const size_t take = allocated > job.pod_sets[s].min_available ? 1 : active.size();
    for (size_t i = 0; i < take && i < active.size(); ++i) out.push_back(active[i]);
    ++taken_sets;
  }
  has_more = static_cast<int>(out.size() - start) < total_active;
}

namespace {
std::string QueueDetailsText(const Queue& queue, const std::optional<Quantities>& allocated,
                             const std::optional<Quantities>& deserved,
                             const std::optional<Quantities>& fair_share) {
  auto text = [](const std::optional<Quantities>& v) {
    if (!v) return std::string("?");
    return "GPU: " + Humanize((*v)[QueueResource::kGpu], 1) +
           ", CPU: " + Humanize((*v)[QueueResource::kCpu], 1000) +
           " (cores), memory: " + Humanize((*v)[QueueResource::kMemory], 1e9) + " (GB)";
  };
  return queue.name + " uses <" + text(allocated) + "> with a quota of <" + text(deserved) +
         ">, fair-share of <" + text(fair_share) + "> and queue priority of <" +
         std::to_string(queue.priority) + ">.";
}

bool SameBits(const std::optional<Quantities>& a, const std::optional<Quantities>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  for (auto res : kQueueResources) {
    if (std::bit_cast<uint64_t>((*a)[res]) != std::bit_cast<uint64_t>((*b)[res])) return false;
  }
  return true;
}

// The text is a function of the queue's name, priority and three quantities: the last text per
// queue id is kept with its inputs and reused when they are all the same (eviction messages of
// one decision name the same two queues again and again).
std::string QueueDetails(const Session& ssn, QueueId q) {
  struct Memo {
    bool valid = false;
    std::string name;
    int priority = 0;
    std::optional<Quantities> allocated, deserved, fair_share;
    std::string text;
  };
  thread_local std::vector<Memo> memos;
  const Queue& queue = ssn.cluster().queues[q];
  const auto allocated = ssn.QueueAllocated(q);
  const auto deserved = ssn.QueueDeserved(q);
  const auto fair_share = ssn.QueueFairShare(q);
  if (!ssn.params().solver_shortcuts) {
    return QueueDetailsText(queue, allocated, deserved, fair_share);
  }
  if (memos.size() <= static_cast<size_t>(q)) memos.resize(static_cast<size_t>(q) + 1);
  Memo& m = memos[static_cast<size_t>(q)];
  if (!m.valid || m.name != queue.name || m.priority != queue.priority ||
      !SameBits(m.allocated, allocated) || !SameBits(m.deserved, deserved) ||
      !SameBits(m.fair_share, fair_share)) {
    m = {true,
         queue.name,
         queue.priority,
         allocated,
         deserved,
         fair_share,
         QueueDetailsText(queue, allocated, deserved, fair_share)};
  }
  return m.text;
}
}  // namespace

std::string EvictionMessage(const Session& ssn, EvictionAction action, PodId victim,
                            JobId preemptor) {
  const auto& c = ssn.cluster();
  const Pod& pod = c.pods[victim];
  const Job& job = c.jobs[preemptor];
  switch (action) {
    case EvictionAction::kPreempt:
      return "Pod " + pod.namespace_ + "/" + pod.name +
             " was preempted by higher priority workload " + job.namespace_ + "/" + job.name;
    case EvictionAction::kConsolidation:
      return "Pod " + pod.namespace_ + "/" + pod.name +
             " was preempted and rescheduled due to bin packing (resource consolidation) "
             "procedure";
    case EvictionAction::kReclaim: {
      std::string msg = "Pod " + pod.namespace_ + "/" + pod.name + " was preempted by workload " +
                        job.namespace_ + "/" + job.name + ".";
      QueueId reclaimer_q = job.queue;
      QueueId reclaimee_q = c.jobs[pod.job].queue;
      if (c.queues[reclaimer_q].parent != c.queues[reclaimee_q].parent) {
        reclaimer_q = c.queues[reclaimer_q].parent;
        reclaimee_q = c.queues[reclaimee_q].parent;
      }
      if (reclaimer_q == kNone || reclaimee_q == kNone) return msg + "\n";
      return msg + "\n" + QueueDetails(ssn, reclaimee_q) + "\n" + QueueDetails(ssn, reclaimer_q);
    }
  }
  return "";
}

}  // namespace gantry
