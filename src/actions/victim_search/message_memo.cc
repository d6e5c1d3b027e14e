#include "actions/victim_search/message_memo.h"

#include <bit>
#include <cstdint>
#include <vector>

namespace gantry::victim_search {

namespace {
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
}  // namespace

std::string MemoizedQueueDetails(QueueId q, const Queue& queue,
                                 const std::optional<Quantities>& allocated,
                                 const std::optional<Quantities>& deserved,
                                 const std::optional<Quantities>& fair_share,
                                 const QueueDetailsFn& text) {
  struct Memo {
    bool valid = false;
    std::string name;
    int priority = 0;
    std::optional<Quantities> allocated, deserved, fair_share;
    std::string text;
  };
  thread_local std::vector<Memo> memos;
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
         text(queue, allocated, deserved, fair_share)};
  }
  return m.text;
}

}  // namespace gantry::victim_search
