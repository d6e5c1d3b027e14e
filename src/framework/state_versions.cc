// Versions of the pods' states (Session::state_version, queue_version): what a statement's
// undo gives back.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "framework/session.h"
#include "framework/session_internal.h"

namespace gantry {

Session::VersionMark Session::Versions(PodId p) const {
  VersionMark m;
  m.session = state_version_;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return m;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone && level < m.queues.size();
       q = cluster_.queues[q].parent) {
    m.queues[level++] = queue_versions_[q];
  }
  return m;
}

void Session::RestoreVersions(PodId p, const VersionMark& before, const VersionMark& after,
                              const VersionMark& now) {
  const uint64_t fresh = ++last_version_;
  state_version_ = now.session == after.session ? before.session : fresh;
  const JobId j = cluster_.pods[p].job;
  if (j == kNone) return;
  size_t level = 0;
  for (QueueId q = cluster_.jobs[j].queue; q != kNone; q = cluster_.queues[q].parent, ++level) {
    // (Queues deeper than a mark holds always get a new number.)
    const bool same = level < now.queues.size() && now.queues[level] == after.queues[level];
    queue_versions_[q] = same ? before.queues[level] : fresh;
  }
}

}  // namespace gantry
