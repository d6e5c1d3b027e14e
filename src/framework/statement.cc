#include "framework/statement.h"

#include "framework/session.h"

namespace gantry {

void Statement::Allocate(PodId p, NodeId n) {
  const PodState before = ssn_.pod(p);
  ssn_.SetPodStatus(p, PodStatus::kAllocated);
  ssn_.SetPodNode(p, n);
  ssn_.AddPodToNode(p, n);
  ssn_.FireAllocate(p);
  ops_.push_back({Kind::kAllocate, p, n, before.status, before.node, before.virtual_status, {}});
  ssn_.SetVirtual(p, true);
}

void Statement::Pipeline(PodId p, NodeId n) {
  const PodState before = ssn_.pod(p);
  const bool was_on_node = IsActiveUsed(before.status) && before.node != kNone;
  if (was_on_node) ssn_.RemovePodFromNode(p, before.node);
  ssn_.SetPodStatus(p, PodStatus::kPipelined);
  ssn_.SetPodNode(p, n);
  ssn_.AddPodToNode(p, n);
  ssn_.FireAllocate(p);
  const auto& pod = ssn_.cluster().pods[p];
  ops_.push_back({Kind::kPipeline, p, n, before.status, before.node, before.virtual_status,
                  "Pod " + pod.namespace_ + "/" + pod.name + " was pipelined to node " +
                      ssn_.cluster().nodes[n].name});
  ssn_.SetVirtual(p, true);
}

void Statement::Evict(PodId p, std::string message) {
  const PodState before = ssn_.pod(p);
  const NodeId n = before.node;
  ssn_.RemovePodFromNode(p, n);
  ssn_.SetPodStatus(p, PodStatus::kReleasing);
  ssn_.AddPodToNode(p, n);
  ssn_.FireDeallocate(p);
  ops_.push_back({Kind::kEvict, p, n, before.status, before.node, before.virtual_status,
                  std::move(message)});
  ssn_.SetVirtual(p, true);
}

void Statement::ConvertAllAllocatedToPipelined(JobId j) {
  std::vector<Op> kept;
  std::vector<std::pair<PodId, NodeId>> to_pipeline;
  kept.reserve(ops_.size());
  for (const Op& op : ops_) {
    if (op.kind == Kind::kAllocate && ssn_.cluster().pods[op.pod].job == j) {
      Undo(op);
      to_pipeline.emplace_back(op.pod, op.node);
    } else {
      kept.push_back(op);
    }
  }
  ops_ = std::move(kept);
  for (auto [p, n] : to_pipeline) Pipeline(p, n);
}

void Statement::Undo(const Op& op) {
  switch (op.kind) {
    case Kind::kAllocate:
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      // KAI clears the node of a pod whose allocation is rolled back.
      ssn_.SetPodNode(op.pod, kNone);
      ssn_.FireDeallocate(op.pod);
      break;
    case Kind::kPipeline: {
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      ssn_.SetPodNode(op.pod, op.prev_node);
      if (IsActiveUsed(op.prev_status) && op.prev_node != kNone) {
        ssn_.AddPodToNode(op.pod, op.prev_node);
      }
      ssn_.FireDeallocate(op.pod);
      break;
    }
    case Kind::kEvict:
      ssn_.RemovePodFromNode(op.pod, op.node);
      ssn_.SetPodStatus(op.pod, op.prev_status);
      ssn_.SetPodNode(op.pod, op.prev_node);
      ssn_.AddPodToNode(op.pod, op.node);
      ssn_.FireAllocate(op.pod);
      break;
  }
  ssn_.SetVirtual(op.pod, op.prev_virtual);
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
        ssn_.RecordEviction(op.pod, std::move(op.message));
        break;
      case Kind::kPipeline:
        ssn_.RecordPipelined(op.pod, std::move(op.message));
        break;
      case Kind::kAllocate:
        ssn_.RecordBind(op.pod);
        break;
    }
    ssn_.SetVirtual(op.pod, false);
  }
  ops_.clear();
}

}  // namespace gantry
