// The pod-grouper's reconcile step (KAI's PodReconciler.Reconcile) for one pod:
//   1. skip pods of another scheduler, pods (or owners) with kai.scheduler/skip-podgrouper=true,
//      and bare pods that already name a PodGroup (created by someone else);
//   2. resolve the owners (owners.h) and pick the plugin by the top owner's group/version/kind;
//   3. create the PodGroup, or update it when it differs (metadata.h: idempotent, fields other
//      components own kept), unless the existing PodGroup carries skip-podgrouper itself;
//   4. write the pod's pod-group-name annotation and kai.scheduler/subgroup-name label back.
// A failure is returned with a message naming the object and field; the caller sends it as a
// Warning event "PodGrouperWarning" on the pod and retries with backoff.
#pragma once

#include <memory>
#include <string>

#include "kube/client.h"
#include "podgrouper/grouper.h"

namespace gantry::podgrouper {

struct ReconcilerOptions {
  std::string scheduler_name = "kai-scheduler";
  std::string node_pool_label_key = kDefaultNodePoolLabelKey;
  std::string queue_label_key = kDefaultQueueLabelKey;
};

enum class Outcome {
  kSkipped,    // not ours, opted out, or nothing to do
  kUnchanged,  // the PodGroup and the pod already say it
  kCreated,    // created the PodGroup
  kUpdated,    // updated the PodGroup and/or the pod
  kConflict,   // a write conflicted: retry soon (no event)
  kFailed,     // `error` says why: an event on the pod, retry with backoff
};

struct ReconcileResult {
  Outcome outcome = Outcome::kSkipped;
  std::string error;
  std::string pod_group;  // the PodGroup's name when grouped
};

class Reconciler {
 public:
  Reconciler(std::shared_ptr<kube::Client> client, const Hub& hub, ReconcilerOptions options)
      : client_(std::move(client)), hub_(hub), options_(std::move(options)) {}
  // `pod` as served (apiVersion and kind are filled in if the list omitted them).
  ReconcileResult Reconcile(kube::Object pod) const;
  // Metadata only, without writing (for tests and dry runs). nullopt: the pod is skipped.
  Result<std::optional<Metadata>> Plan(const kube::Object& pod) const;

 private:
  std::shared_ptr<kube::Client> client_;
  const Hub& hub_;
  ReconcilerOptions options_;
};

}  // namespace gantry::podgrouper
