// The binder's plugin seam: steps that run around the bind of one pod.
//
//   PreBind   in registration order, before the pods/binding call: checks and preparations
//             (validate the request, reserve something). A step that fails must leave nothing
//             behind itself; the chain stops there.
//   PostBind  in registration order, after a successful bind: best effort, cannot fail it.
//   Rollback  when a later PreBind or the bind itself failed: the steps whose PreBind completed,
//             in reverse order, so each undoes its preparation on the state it left.
//
// KAI's binder plugins (GPU sharing, DRA, volume binding) have the same three hooks. Steps are
// shared by every worker and must be thread-safe; per-attempt state goes into BindAttempt.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "binder/bind_request.h"
#include "binder/cache.h"
#include "binder/node_fit.h"
#include "kube/client.h"

namespace gantry::binder {

// One bind attempt: what the reconciler read, plus scratch state for steps.
struct BindAttempt {
  const BindRequest& request;
  const nlohmann::json& pod;
  const nlohmann::json& node;
  // Per-attempt scratch of the steps, by step name (what PreBind did, for Rollback).
  nlohmann::json state = nlohmann::json::object();
};

// A step failure: the message becomes the BindRequest's reason; `retryable` false means retrying
// cannot help (an invalid request), so the request fails at once.
struct StepError {
  std::string message;
  bool retryable = true;
};

class BindStep {
 public:
  virtual ~BindStep() = default;
  virtual std::string Name() const = 0;
  virtual std::optional<StepError> PreBind(BindAttempt& attempt) = 0;
  virtual void PostBind(BindAttempt& /*attempt*/) {}
  // Undoes what PreBind did. Errors are reported, not retried.
  virtual std::optional<std::string> Rollback(BindAttempt& /*attempt*/) { return std::nullopt; }
};

class BindSteps {
 public:
  void Add(std::shared_ptr<BindStep> step) { steps_.push_back(std::move(step)); }
  const std::vector<std::shared_ptr<BindStep>>& steps() const { return steps_; }

  // Runs every PreBind in order. On a failure, rolls back the steps that completed (reverse
  // order) and returns the error prefixed with the step's name. On success, `completed` is the
  // number of steps to roll back should the bind fail.
  std::optional<StepError> PreBind(BindAttempt& attempt, size_t& completed,
                                   std::vector<std::string>& rollback_errors) const;
  void PostBind(BindAttempt& attempt) const;
  // Rolls back the first `completed` steps, last first; returns their errors.
  std::vector<std::string> Rollback(BindAttempt& attempt, size_t completed) const;

 private:
  std::vector<std::shared_ptr<BindStep>> steps_;
};

// "noderesources": the node still has room for the pod (node_fit.h), counting the pods bound to
// it as the binder's pod cache shows them, including binds of its own the cache does not show
// yet (BinderCache::PodsOnNode). No API call.
class NodeResourcesStep : public BindStep {
 public:
  // `cache` must outlive the step.
  explicit NodeResourcesStep(const BinderCache& cache) : cache_(cache) {}
  std::string Name() const override { return "noderesources"; }
  std::optional<StepError> PreBind(BindAttempt& attempt) override;

 private:
  const BinderCache& cache_;
  PodRequestsMemo memo_;  // the bound pods' requests, parsed once per pod version
};

class ReservationSync;
struct GpuSharingOptions;

// The steps `gantry binder` runs, in order: gpusharing (gpu_sharing_step.h; `sync` is its
// reservation clean-up, null for one of its own without node syncs), dynamicresources
// (dra_step.h), noderesources. Declared here, defined in steps.cc. `cache` must outlive them.
BindSteps DefaultSteps(std::shared_ptr<kube::Client> client, const BinderCache& cache,
                       std::shared_ptr<ReservationSync> sync, GpuSharingOptions gpu_sharing);
// The same with no reservation clean-up of nodes and KAI's default options (tests).
BindSteps DefaultSteps(std::shared_ptr<kube::Client> client, const BinderCache& cache);

}  // namespace gantry::binder
