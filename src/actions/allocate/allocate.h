// allocate: places pending jobs on free (or releasing) resources, all-or-nothing per gang.
//
// Jobs are visited in queue / job order (framework/jobs_by_queue.h). For each job one allocation
// attempt takes the pods KAI's GetTasksToAllocate picks, checks the queue's capacity, and places
// them through the job's sub-group tree inside a statement: if any pod cannot be placed the whole
// attempt is rolled back. A job that lands partly on releasing resources below its gang minimum is
// pipelined as a whole. Elastic jobs with pods left go back into their queue.
#pragma once

#include <span>
#include <vector>

#include "framework/plugin.h"
#include "model/cluster.h"

namespace gantry {

class Session;
class Statement;

class AllocateAction : public Action {
 public:
  std::string_view name() const override { return "allocate"; }
  void Execute(Session& ssn) override;
};

// Places `tasks` of job `j` on `nodes` through the job's sub-group tree, recording fit errors.
// Shared by the eviction actions, which place a preemptor after simulating evictions. With
// `pipeline_only`, pods are only pipelined and no fit errors are recorded. Returns false (leaving
// the statement at its state before the call) when some task cannot be placed.
// `nodes_cover_free_gpus`: `nodes` holds every node with unallocated GPUs (see
// Session::RankFittingNodesCoveringFreeGpus).
bool AllocateJobTasks(Session& ssn, Statement& stmt, std::span<const NodeId> nodes, JobId j,
                      bool pipeline_only, bool nodes_cover_free_gpus = false);
// Same, for an explicit list of the job's pods (a partial job in victim simulations).
bool AllocateJobTaskList(Session& ssn, Statement& stmt, std::span<const NodeId> nodes, JobId j,
                         std::vector<PodId> tasks, bool pipeline_only,
                         bool nodes_cover_free_gpus = false);

}  // namespace gantry
