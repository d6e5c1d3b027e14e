// A statement: a tentative sequence of allocate / pipeline / evict operations on a session.
//
// Every operation changes the session at once (so later checks see it) and is recorded with what
// it replaced, making the statement an undo log: Rollback(checkpoint) undoes back to a checkpoint,
// Discard() undoes everything, Commit() turns the operations into decisions (bind requests,
// evictions, pipelined notifications). Nothing is copied up front, so trying a move costs only the
// move itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/session.h"
#include "model/cluster.h"

namespace gantry {

class Session;

class Statement {
 public:
  using Checkpoint = size_t;

  explicit Statement(Session& ssn) : ssn_(ssn) {}
  ~Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Places a pending pod on the node's idle resources (status allocated). A shared-GPU pod
  // passes the devices chosen for it (Session::SelectSharedGpus); others pass none.
  void Allocate(PodId p, NodeId n, std::vector<int32_t> gpu_groups = {});
  // Places a pod on resources that are still being released (status pipelined). A pod this
  // statement evicted keeps its releasing footprint on its old node; placed back on that same
  // node (and `update_if_on_node` false) the eviction is simply undone instead - unless a
  // shared-GPU pod comes back onto other devices than it had.
  void Pipeline(PodId p, NodeId n, bool update_if_on_node = true,
                std::vector<int32_t> gpu_groups = {});
  // Marks an occupying pod as releasing (its resources become releasing on its node).
  void Evict(PodId p, std::string message);
  // Same, with the message produced only if the eviction is committed (see
  // SetEvictionMessageFn): simulations evict far more than they commit.
  void Evict(PodId p);
  void SetEvictionMessageFn(std::function<std::string(PodId)> fn) { message_fn_ = std::move(fn); }
  // Turns every pod of `j` that this statement allocated into a pipelined one.
  void ConvertAllAllocatedToPipelined(JobId j);

  Checkpoint checkpoint() const { return ops_.size(); }
  // Undoes every operation after `cp`, newest first.
  void Rollback(Checkpoint cp);
  // Undoes everything.
  void Discard() { Rollback(0); }
  // Records the operations as decisions: allocated pods become binding (a bind request),
  // pipelined pods are announced, evictions are issued.
  void Commit();

  bool empty() const { return ops_.empty(); }

 private:
  enum class Kind : uint8_t { kAllocate, kPipeline, kEvict, kUnevict };
  struct Op {
    Op(Kind k, PodId p, NodeId n, PodStatus ps, NodeId pn, bool pv, std::string m)
        : kind(k),
          pod(p),
          node(n),
          prev_status(ps),
          prev_node(pn),
          prev_virtual(pv),
          message(std::move(m)) {}
    Kind kind;
    PodId pod;
    NodeId node;  // node the operation put the pod on (or evicted it from)
    PodStatus prev_status;
    NodeId prev_node;
    bool prev_virtual;
    std::string message;
    bool kept_old_footprint = false;   // pipeline of an evicted pod: still releasing on prev_node
    bool cancelled = false;            // evict undone by a later kUnevict
    size_t target = 0;                 // kUnevict: index of the evict operation it cancels
    bool groups_changed = false;       // the operation replaced the pod's shared-GPU groups
    std::vector<int32_t> prev_groups;  // ... which were these
    // The session's state versions of the pod around the operation (undo gives them back).
    Session::VersionMark versions_before{};
    Session::VersionMark versions_after{};
  };
  // Gives the pod `groups` if any were chosen, noting the previous ones in `op`.
  void SwapGroups(Op& op, std::vector<int32_t>& groups);
  // Records the versions around the last operation (`before`: taken before it started).
  void MarkVersions(const Session::VersionMark& before);
  void Undo(Op& op);
  void ApplyEvict(PodId p, std::string message);

  Session& ssn_;
  std::vector<Op> ops_;
  std::function<std::string(PodId)> message_fn_;
};

}  // namespace gantry
