// Which pods of a victim job are evicted next (KAI's GetTasksToEvict), and the nodes a pending
// job may use: the two questions the victim search asks of the session before it simulates.
#pragma once

#include <span>
#include <vector>

#include "framework/jobs_by_queue.h"
#include "framework/session.h"

namespace gantry {

// The nodes a job may use: every node if some pod needs no GPU, otherwise nodes with idle or
// releasing GPUs.
std::vector<NodeId> FeasibleNodesForJob(const Session& ssn, JobId job);

// The pods of an entry that would be evicted next (KAI's GetTasksToEvict) and whether the entry
// has active pods left after them.
std::vector<PodId> TasksToEvict(const Session& ssn, const JobView& view, bool& has_more);
// TasksToEvict appending the pods to `out`.
void AppendTasksToEvict(const Session& ssn, const JobView& view, bool& has_more,
                        std::vector<PodId>& out);

// The distinct nodes of a job's pods (kNone first for pods on none, then in name order), kept
// per thread with the session and the job's version they were listed at (a pod changes node
// only with a change of its status, which bumps its job's version).
// `single` holds the answer for a job of one pod.
std::span<const NodeId> NodesOfJob(const Session& ssn, JobId j, NodeId& single);

}  // namespace gantry
