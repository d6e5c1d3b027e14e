#include "framework/statement.h"

#include "framework/session.h"

namespace gantry {

void Statement::MarkVersions(const Session::VersionMark& before) {
  Op& op = ops_.back();
  op.versions_before = before;
  op.versions_after = ssn_.Versions(op.pod);
}

void Statement::SwapGroups(Op& op, std::vector<int32_t>& groups) {
  if (groups.empty()) return;
  op.groups_changed = true;
  op.prev_groups = ssn_.pod_groups(op.pod);
  ssn_.SetPodGroups(op.pod, std::move(groups));
}

void Statement::Allocate(PodId p, NodeId n, std::vector<int32_t> gpu_groups) {
  const auto versions = ssn_.Versions(p);
  const PodState before = ssn_.pod(p);
  // (Built in place; `op` is not used once anything else could be added to ops_.)
  Op& op = ops_.emplace_back(Kind::kAllocate, p, n, before.status, before.node,
                             before.virtual_status, std::string());
  SwapGroups(op, gpu_groups);
  ssn_.SetPodStatus(p, PodStatus::kAllocated);
  ssn_.SetPodNode(p, n);
  ssn_.AddPodToNode(p, n);
  ssn_.FireAllocate(p);
  ssn_.SetVirtual(p, true);
  MarkVersions(versions);
}

void Statement::Pipeline(PodId p, NodeId n, bool update_if_on_node,
                         std::vector<int32_t> gpu_groups) {
  const auto versions = ssn_.Versions(p);
  const PodState before = ssn_.pod(p);
  const bool evicted_here =
      before.status == PodStatus::kReleasing && before.node != kNone && before.virtual_status;
  const bool other_devices = !gpu_groups.empty() && gpu_groups != ssn_.pod_groups(p);
  if (evicted_here && before.node == n && !update_if_on_node && !other_devices) {
    // Back on its own node: cancel the earliest live eviction of this pod.
    for (size_t i = 0; i < ops_.size(); ++i) {
      Op& op = ops_[i];
      if (op.kind != Kind::kEvict || op.cancelled || op.pod != p) continue;
      op.cancelled = true;
      ssn_.RemovePodFromNode(p, op.node);
      ssn_.SetPodStatus(p, op.prev_status);
      ssn_.SetPodNode(p, op.prev_node);
      ssn_.AddPodToNode(p, op.node);
      ssn_.FireAllocate(p);
      const bool restored_virtual = op.prev_virtual;
      Op undo{Kind::kUnevict,        p,         op.node, PodStatus::kReleasing, op.node,
              before.virtual_status, op.message};
      undo.target = i;
      ops_.push_back(std::move(undo));  // may reallocate: `op` is not used past this point
      ssn_.SetVirtual(p, restored_virtual);
      MarkVersions(versions);
      return;
    }
  }
  const bool was_on_node = IsActiveUsed(before.status) && before.node != kNone;
  // An evicted pod keeps its releasing footprint where it was; any other occupying pod moves.
  const bool keep_old = was_on_node && before.status == PodStatus::kReleasing;
  if (was_on_node && !keep_old) ssn_.RemovePodFromNode(p, before.node);
  // (The message is written on commit: it depends only on the pod and the node.)
  Op& op = ops_.emplace_back(Kind::kPipeline, p, n, before.status, before.node,
                             before.virtual_status, std::string());
  op.kept_old_footprint = keep_old;
  SwapGroups(op, gpu_groups);
  ssn_.SetPodStatus(p, PodStatus::kPipelined);
  ssn_.SetPodNode(p, n);
  ssn_.AddPodToNode(p, n);
  ssn_.FireAllocate(p);
  ssn_.SetVirtual(p, true);
  MarkVersions(versions);
}

void Statement::Evict(PodId p, std::string message) { ApplyEvict(p, std::move(message)); }

void Statement::Evict(PodId p) { ApplyEvict(p, std::string()); }

void Statement::ApplyEvict(PodId p, std::string message) {
  const auto versions = ssn_.Versions(p);
  const PodState before = ssn_.pod(p);
  const NodeId n = before.node;
  ssn_.RemovePodFromNode(p, n);
  ssn_.SetPodStatus(p, PodStatus::kReleasing);
  ssn_.AddPodToNode(p, n);
  ssn_.FireDeallocate(p);
  ops_.emplace_back(Kind::kEvict, p, n, before.status, before.node, before.virtual_status,
                    std::move(message));
  ssn_.SetVirtual(p, true);
  MarkVersions(versions);
}

void Statement::ConvertAllAllocatedToPipelined(JobId j) {
  std::vector<Op> kept;
  std::vector<Op> to_convert;
  kept.reserve(ops_.size());
  for (Op& op : ops_) {  // (no kUnevict can be present: allocate evicts nothing)
    if (op.kind == Kind::kAllocate && ssn_.cluster().pods[op.pod].job == j) {
      to_convert.push_back(std::move(op));
    } else {
      kept.push_back(std::move(op));
    }
  }
  ops_ = std::move(kept);
  // One pod at a time, as KAI does: its allocation is undone and it is pipelined at once, before
  // the next pod's allocation is undone. The order matters on shared GPUs: undoing every
  // allocation first can empty a shared device for a moment, which hands it back to the node's
  // idle GPUs and later leaves the idle and releasing counters off by one.
  for (Op& op : to_convert) {
    // The pod keeps the devices it was given (they are restored after the undo).
    std::vector<int32_t> groups =
        op.groups_changed ? ssn_.pod_groups(op.pod) : std::vector<int32_t>{};
    const PodId pod = op.pod;
    const NodeId node = op.node;
    Undo(op);
    Pipeline(pod, node, true, std::move(groups));
  }
}

void Statement::Undo(Op& op) {
  const auto now = ssn_.Versions(op.pod);
  switch (op.kind) {
    case Kind::kAllocate:
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      // KAI clears the node of a pod whose allocation is rolled back.
      ssn_.SetPodNode(op.pod, kNone);
      if (op.groups_changed) ssn_.SetPodGroups(op.pod, op.prev_groups);
      ssn_.FireDeallocate(op.pod);
      break;
    case Kind::kPipeline: {
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      ssn_.SetPodNode(op.pod, op.prev_node);
      if (op.groups_changed) ssn_.SetPodGroups(op.pod, op.prev_groups);
      if (IsActiveUsed(op.prev_status) && op.prev_node != kNone && !op.kept_old_footprint) {
        ssn_.AddPodToNode(op.pod, op.prev_node);
      }
      ssn_.FireDeallocate(op.pod);
      break;
    }
    case Kind::kUnevict: {
      // Re-apply the eviction the unevict cancelled.
      Op& evict = ops_[op.target];
      evict.cancelled = false;
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, PodStatus::kReleasing);
      ssn_.SetPodNode(op.pod, op.node);
      ssn_.AddPodToNode(op.pod, op.node);
      ssn_.FireDeallocate(op.pod);
      break;
    }
    case Kind::kEvict:
      if (op.cancelled) break;  // already undone by an unevict
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      ssn_.SetPodNode(op.pod, op.prev_node);
      ssn_.AddPodToNode(op.pod, op.node);
      ssn_.FireAllocate(op.pod);
      break;
  }
  ssn_.SetVirtual(op.pod, op.prev_virtual);
  ssn_.RestoreVersions(op.pod, op.versions_before, op.versions_after, now);
}

void Statement::Rollback(Checkpoint cp) {
  while (ops_.size() > cp) {
    Undo(ops_.back());
    ops_.pop_back();
  }
}

void Statement::Commit() {
  for (Op& op : ops_) {
    switch (op.kind) {
      case Kind::kEvict:
        if (op.cancelled) break;
        if (op.message.empty() && message_fn_) op.message = message_fn_(op.pod);
        ssn_.RecordEviction(op.pod, op.node, std::move(op.message));
        break;
      case Kind::kUnevict:
        break;
      case Kind::kPipeline: {
        const auto& pod = ssn_.cluster().pods[op.pod];
        ssn_.RecordPipelined(op.pod, "Pod " + pod.namespace_ + "/" + pod.name +
                                         " was pipelined to node " +
                                         ssn_.cluster().nodes[op.node].name);
        break;
      }
      case Kind::kAllocate:
        ssn_.RecordBind(op.pod);
        break;
    }
    ssn_.SetVirtual(op.pod, false);
  }
  ops_.clear();
}

}  // namespace gantry
