#include "actions/allocate/allocate.h"

#include <algorithm>
#include <string>

#include "actions/builtin.h"
#include "framework/jobs_by_queue.h"
#include "framework/session.h"
#include "framework/statement.h"

namespace gantry {

namespace {

class JobAllocator {
 public:
  JobAllocator(Session& ssn, Statement& stmt, JobId j, bool pipeline_only,
               bool nodes_cover_free_gpus)
      : ssn_(ssn),
        stmt_(stmt),
        job_(ssn.cluster().jobs[j]),
        j_(j),
        pipeline_only_(pipeline_only),
        nodes_cover_free_gpus_(nodes_cover_free_gpus) {}

  bool Run(std::span<const NodeId> nodes) {
    ssn_.TasksToAllocate(j_, tasks_, /*real=*/!pipeline_only_);
    return RunTasks(nodes);
  }

  bool RunTasks(std::span<const NodeId> nodes, std::vector<PodId> tasks) {
    tasks_ = std::move(tasks);
    return RunTasks(nodes);
  }

 private:
  bool RunTasks(std::span<const NodeId> nodes) {
    ssn_.PreJobAllocation(j_);
    if (auto result = ssn_.IsJobOverQueueCapacity(j_, tasks_); !result.schedulable) {
      if (!pipeline_only_) {
        ssn_.AddJobFitError(j_, JobFitError{result.reason, {result.message}, "default"});
      }
      return false;
    }
    const auto cp = stmt_.checkpoint();
    std::vector<PodId> all;
    all.reserve(tasks_.size());
    TasksUnderGroup(0, all);
    if (AllocateGroup(0, all, nodes)) return true;
    stmt_.Rollback(cp);
    return false;
  }

  // The tasks of `tasks_` that belong to pod sets under group `g`.
  void TasksUnderGroup(int32_t g, std::vector<PodId>& out) const {
    out.clear();
    for (PodId p : tasks_) {
      int32_t grp = job_.pod_sets[ssn_.cluster().pods[p].pod_set].parent_group;
      while (grp != kNone && grp != g) grp = job_.groups[grp].parent;
      if (grp == g) out.push_back(p);
    }
  }

  // KAI's allocateSubGroupSet: the group's node sets (topology domains) are tried in order; in
  // each, child groups and then pod sets are allocated, and a failure rolls back to the set's
  // start.
  bool AllocateGroup(int32_t g, const std::vector<PodId>& tasks, std::span<const NodeId> nodes) {
    std::vector<std::vector<NodeId>> sets;
    if (!ssn_.SubsetNodes(SubGroupRef{j_, false, g}, tasks, nodes, !pipeline_only_, sets)) {
      return AllocateGroupOn(g, nodes);
    }
    for (const auto& set : sets) {
      const auto cp = stmt_.checkpoint();
      if (AllocateGroupOn(g, set)) return true;
      stmt_.Rollback(cp);
    }
    return false;
  }

  bool AllocateGroupOn(int32_t g, std::span<const NodeId> nodes) {
    const SubGroup& group = job_.groups[g];
    std::vector<int32_t> child_groups = group.child_groups;
    std::sort(child_groups.begin(), child_groups.end(),
              [&](int32_t a, int32_t b) { return job_.groups[a].name < job_.groups[b].name; });
    std::vector<PodId> child_tasks;
    for (int32_t child : child_groups) {
      TasksUnderGroup(child, child_tasks);
      if (!AllocateGroup(child, child_tasks, nodes)) return false;
    }
    if (group.child_pod_sets.size() == 1) {
      // (The common case: one pod set, nothing to order and no copy.)
      return AllocatePodSet(group.child_pod_sets.front(), nodes);
    }
    std::vector<int32_t> pod_sets = group.child_pod_sets;
    std::sort(pod_sets.begin(), pod_sets.end(),
              [&](int32_t a, int32_t b) { return ssn_.PodSetLess(j_, a, b); });
    for (int32_t s : pod_sets) {
      if (!AllocatePodSet(s, nodes)) return false;
    }
    return true;
  }

  bool AllocatePodSet(int32_t s, std::span<const NodeId> nodes) {
    std::vector<PodId> tasks;
    tasks.reserve(tasks_.size());
    for (PodId p : tasks_) {
      if (ssn_.cluster().pods[p].pod_set == s) tasks.push_back(p);
    }
    std::vector<std::vector<NodeId>> sets;
    if (!ssn_.SubsetNodes(SubGroupRef{j_, true, s}, tasks, nodes, !pipeline_only_, sets)) {
      return AllocateTasks(tasks, nodes);
    }
    for (const auto& set : sets) {
      const auto cp = stmt_.checkpoint();
      if (AllocateTasks(tasks, set)) return true;
      stmt_.Rollback(cp);
    }
    return false;
  }

  bool AllocateTasks(const std::vector<PodId>& tasks, std::span<const NodeId> nodes) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!AllocateTask(tasks[i], nodes)) {
        if (!pipeline_only_) RecordFailure(tasks[i], static_cast<int>(i));
        return false;
      }
    }
    return true;
  }

  bool AllocateTask(PodId p, std::span<const NodeId> nodes) {
    if (auto err = ssn_.PrePredicate(p)) {
      ssn_.SetTaskFitError(p, *err);
      return false;
    }
    if (nodes_cover_free_gpus_ && pipeline_only_) {
      ssn_.RankFittingNodesCoveringFreeGpus(p, nodes);
    } else {
      ssn_.RankFittingNodes(p, nodes, !pipeline_only_);
    }
    const bool shared = ssn_.cluster().pods[p].IsSharedGpu();
    for (NodeId n = ssn_.NextRankedNode(); n != kNone; n = ssn_.NextRankedNode()) {
      if (shared) {
        // Devices first: the node may still lack them (then the next node is tried).
        bool needs_releasing = false;
        if (!ssn_.SelectSharedGpus(p, n, pipeline_only_, groups_, needs_releasing)) continue;
        if (pipeline_only_ || needs_releasing) {
          stmt_.Pipeline(p, n, /*update_if_on_node=*/false, std::move(groups_));
        } else {
          stmt_.Allocate(p, n, std::move(groups_));
        }
        groups_.clear();
        return true;
      }
      if (!pipeline_only_ && ssn_.FitsIdle(p, n)) {
        stmt_.Allocate(p, n);
      } else {
        stmt_.Pipeline(p, n, /*update_if_on_node=*/!pipeline_only_);
      }
      return true;
    }
    return false;
  }

  void RecordFailure(PodId p, int num_schedulable) {
    const Pod& pod = ssn_.cluster().pods[p];
    const auto& fit = ssn_.job_state(j_).task_fit_errors;
    auto it = fit.find(p);
    const std::string cause = it == fit.end() ? TaskFitErrors{}.Render() : it->second.Render();

    bool gang = false;
    for (const PodSet& ps : job_.pod_sets) gang = gang || ps.min_available > 1;
    const PodSet& ps = job_.pod_sets[pod.pod_set];
    const auto& c = ssn_.counters(j_, pod.pod_set);
    std::string message;
    if (!gang || c.active_used >= ps.min_available) {
      message = "Resources were not found for pod " + pod.namespace_ + "/" + pod.name +
                " due to: " + cause;
    } else if (job_.pod_sets.size() == 1 && ps.name == "default") {
      message = "Resources were found for " + std::to_string(num_schedulable) + " pods while " +
                std::to_string(ps.min_available) +
                " are required for gang scheduling. Additional pods cannot be scheduled due "
                "to: " +
                cause;
    } else {
      message = "Resources were found for " + std::to_string(num_schedulable) +
                " pods from all sub-groups while sub-group " + ps.name + " requires " +
                std::to_string(ps.min_available) +
                " pods for gang scheduling. Additional pods cannot be scheduled in this "
                "sub-group due to: " +
                cause;
    }
    ssn_.AddJobFitError(j_, JobFitError{std::string(kPodSchedulingErrors), {message}, ""});
  }

  Session& ssn_;
  Statement& stmt_;
  const Job& job_;
  JobId j_;
  bool pipeline_only_;
  bool nodes_cover_free_gpus_;
  std::vector<PodId> tasks_;
  std::vector<int32_t> groups_;  // shared-GPU devices chosen for the pod being placed
};

}  // namespace

bool AllocateJobTasks(Session& ssn, Statement& stmt, std::span<const NodeId> nodes, JobId j,
                      bool pipeline_only, bool nodes_cover_free_gpus) {
  return JobAllocator(ssn, stmt, j, pipeline_only, nodes_cover_free_gpus).Run(nodes);
}

bool AllocateJobTaskList(Session& ssn, Statement& stmt, std::span<const NodeId> nodes, JobId j,
                         std::vector<PodId> tasks, bool pipeline_only, bool nodes_cover_free_gpus) {
  return JobAllocator(ssn, stmt, j, pipeline_only, nodes_cover_free_gpus)
      .RunTasks(nodes, std::move(tasks));
}

void AllocateAction::Execute(Session& ssn) {
  JobsByQueue jobs(ssn, AllocateJobsOrderOptions(ssn));
  jobs.InitializeWithAllJobs();
  while (!jobs.empty()) {
    const JobId j = jobs.PopNext();
    if (j == kNone) break;
    Statement stmt(ssn);
    const bool already_allocated = ssn.NumAllocatedLike(j) > 0;
    if (!AllocateJobTasks(ssn, stmt, ssn.all_nodes(), j, /*pipeline_only=*/false)) {
      stmt.Discard();
      continue;
    }
    bool pipelined = false;
    if (ssn.ShouldPipelineJob(j)) {
      stmt.ConvertAllAllocatedToPipelined(j);
      pipelined = true;
    }
    ++ssn.action_counts().podgroups_scheduled;
    stmt.Commit();
    if (!pipelined && !already_allocated) ssn.job_state(j).last_start_ms = ssn.now_ms();
    if (ssn.HasPendingPods(j)) jobs.Push(j);
  }
}

void RegisterAllocateAction(ActionRegistry& registry) {
  registry.Register("allocate", [] { return ActionPtr(std::make_unique<AllocateAction>()); });
}

}  // namespace gantry
