// Accelerator of the victim search's eviction messages: the queue details line memoized per queue.
//
// A reclaim message ends with the details of two queues (name, allocation, quota, fair share,
// priority), and the messages of one decision name the same queues again and again. The text is a
// function of those inputs only, so the last text per queue is kept with its inputs (compared bit
// for bit) and reused while they are all the same: the messages are the same strings. Used only
// with the solver shortcuts on; without them every message formats its text again, as KAI does.
#pragma once

#include <optional>
#include <string>

#include "model/cluster.h"

namespace gantry::victim_search {

using QueueDetailsFn = std::string (*)(const Queue&, const std::optional<Quantities>&,
                                       const std::optional<Quantities>&,
                                       const std::optional<Quantities>&);

// `text(queue, allocated, deserved, fair_share)`, reusing the last text of queue `q` when all
// four are the same as then.
std::string MemoizedQueueDetails(QueueId q, const Queue& queue,
                                 const std::optional<Quantities>& allocated,
                                 const std::optional<Quantities>& deserved,
                                 const std::optional<Quantities>& fair_share,
                                 const QueueDetailsFn& text);

}  // namespace gantry::victim_search
