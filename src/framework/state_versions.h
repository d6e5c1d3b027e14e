// Versions of the session's state (Session derives from SessionVersions; Session::Versions and
// RestoreVersions are in state_versions.cc): numbers that change with the pods' states, so that a
// cache notices a change without comparing states.
//
// - placement_epoch() changes whenever a pod is added to or removed from a node (plugin caches);
//   node_version(n) whenever that happens on node n (per-node caches).
// - state_version() and queue_version(q): every change of a pod's status or virtual flag gets a new
//   number, for the whole session and for each queue whose subtree holds the pod's job. A
//   statement's rollback gives a change's numbers back only where nothing changed since (else new
//   ones), so two moments with the same version have the same states (of the queue's pods).
// - job_version(j) changes whenever the status or virtual flag of one of the job's pods is set (it
//   never goes back).
// - serial() is distinct for every session of the process (versions of two sessions may
//   coincide).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/cluster.h"

namespace gantry {

class SessionVersions {
 public:
  uint64_t placement_epoch() const { return placement_epoch_; }
  uint32_t node_version(NodeId n) const { return node_version_[n]; }
  // How many node changes (a pod added to or removed from a node, a node's counters replayed)
  // the session has seen, and the count right after node n last changed (0: never since the
  // session opened). A node with node_changed_at(n) <= node_changes() taken at some moment is in
  // the state it was in at that moment.
  uint64_t node_changes() const { return node_changes_; }
  uint64_t node_changed_at(NodeId n) const { return node_changed_at_[n]; }
  // While set, every node a pod is added to or removed from is appended to `log` (a consumer
  // keeping per-node sums follows the changes instead of counting again). Null: no log.
  void SetNodeChangeLog(std::vector<NodeId>* log) { node_log_ = log; }
  // The node journal, for consumers that follow the changes from positions of their own (several
  // at once, unlike the log above): once enabled, every node a pod is added to or removed from is
  // appended. It is bounded: past about four entries per node it starts empty again under a new
  // generation, and a consumer whose generation differs counts everything again.
  void EnableNodeJournal() { node_journal_on_ = true; }
  bool NodeJournalEnabled() const { return node_journal_on_; }
  const std::vector<NodeId>& node_journal() const { return node_journal_; }
  uint64_t node_journal_generation() const { return node_journal_generation_; }
  uint64_t state_version() const { return state_version_; }
  uint64_t serial() const { return serial_; }
  uint64_t queue_version(QueueId q) const { return queue_versions_[q]; }
  uint64_t job_version(JobId j) const { return job_version_[j]; }

  // The versions a change of pod p touches: the session's and its queues' (innermost first).
  struct VersionMark {
    uint64_t session = 0;
    std::array<uint64_t, 4> queues{};
    bool operator==(const VersionMark&) const = default;
  };

 protected:
  // A change of pod p's state: new versions for the session and the queues above its job.
  void BumpVersionsOf(const Cluster& c, PodId p) {
    const uint64_t v = ++last_version_;
    state_version_ = v;
    const JobId j = c.pods[p].job;
    if (j == kNone) return;
    for (QueueId q = c.jobs[j].queue; q != kNone; q = c.queues[q].parent) queue_versions_[q] = v;
  }

  // A change on node n, for the log and the journal.
  // (`state_changed`: false when the node's state is known to be the same as before the change,
  // node_changed_at's count then kept.)
  void LogNodeChange(NodeId n, bool state_changed = true) {
    if (state_changed) node_changed_at_[n] = ++node_changes_;
    if (node_log_ != nullptr) node_log_->push_back(n);
    if (!node_journal_on_) return;
    if (node_journal_.size() >= 4 * node_version_.size() + 64) {
      node_journal_.clear();
      ++node_journal_generation_;
    }
    node_journal_.push_back(n);
  }

  uint64_t placement_epoch_ = 0;
  std::vector<uint32_t> node_version_;
  uint64_t node_changes_ = 0;
  std::vector<uint64_t> node_changed_at_;
  std::vector<NodeId>* node_log_ = nullptr;
  bool node_journal_on_ = false;
  std::vector<NodeId> node_journal_;
  uint64_t node_journal_generation_ = 0;
  uint64_t last_version_ = 0;
  uint64_t state_version_ = 0;
  std::vector<uint64_t> queue_versions_;
  std::vector<uint64_t> job_version_;
  uint64_t serial_ = 0;
};

}  // namespace gantry
