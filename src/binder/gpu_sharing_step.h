// "gpusharing": the binder step for shared (fractional) GPU allocations, KAI's way.
//
// A BindRequest with spec.receivedResourceType "Fraction" names the shared-GPU groups the
// scheduler put the pod in (spec.selectedGPUGroups, one per device) and the portion of each
// device (spec.receivedGPU.portion). Before the pod is bound, for each group in turn:
//
//   1. The group's reservation pod: a pod in namespace `kai-resource-reservation` labelled
//      `runai-gpu-group=<group>`, bound to the node and asking one nvidia.com/gpu, holds the
//      physical device for every pod of the group. When there is none the step creates it
//      (name `gpu-reservation-<node>-<5 random characters>`, labels `app=kai-resource-reservation`
//      and the group, annotation `karpenter.sh/do-not-disrupt: "true"`, service account
//      `kai-resource-reservation`, one container `resource-reservation`).
//   2. The device's index: the reservation pod's container finds which GPU the device plugin gave
//      it and writes the index into its own annotation `run.ai/reserve_for_gpu_index`. The step
//      polls the pod until the annotation appears (at most `allocation_timeout`); when it does not,
//      the step deletes the reservation pod it created and the attempt fails (retryable).
//
// Then one merge patch on the pod: the group label (`runai-gpu-group=<group>`; a pod spanning
// several devices, gpu-fraction-num-devices > 1, gets `runai-gpu-group/<group>=<group>` per
// group instead) and KAI's annotation `received-resource-type`. If the pod carries KAI's
// `runai/shared-gpu-configmap` annotation (set by KAI's admission webhook, which also points the
// fraction container's environment at these configmaps), the configmaps `<prefix>-<container>`
// and `<prefix>-<container>-evar` are created or updated with NVIDIA_VISIBLE_DEVICES (the
// comma-separated GPU indexes), GPU_PORTION and RUNAI_NUM_OF_GPUS, owned by the pod.
//
// Before all that, for every request (fractional or not), as KAI's binder does: the selected
// node's leftover reservation pods (groups with no pod left) are deleted (ReservationSync::
// SyncNode, reservation_sync.h), except those of the request's own groups, which are reused.
//
// Rollback (the bind or a later step failed): the group labels are removed from the pod, the
// configmaps this attempt created are deleted, and the request's groups are synced: a group
// with no active (Pending / Running) pod left but this one loses its reservation pods on the node.
//
// Idempotent: an existing reservation pod of the group is reused, never recreated; a repeated
// attempt finds its own earlier labels and configmaps. The groups of a request are locked
// (ReservationSync::locks()) from looking for their reservation pods until the pod carries their
// labels, so two attempts never create two reservation pods for one group and a sync never
// deletes a reservation pod a pod is about to join.
//
// Invalid requests (no groups, duplicates, a count that differs from the groups, a portion
// outside (0, 1]) fail without retries, before anything is touched.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "binder/reservation_sync.h"
#include "binder/steps.h"
#include "kube/client.h"

namespace gantry::binder {

inline constexpr const char* kReservationNamespace = "kai-resource-reservation";
// KAI's binder default for --resource-reservation-pod-image (the deployments set a real one).
inline constexpr const char* kDefaultReservationImage =
    "registry/local/kai-scheduler/resource-reservation";
inline constexpr const char* kReservationAppLabel = "app";
inline constexpr const char* kReservationAppValue = "kai-resource-reservation";
inline constexpr const char* kReservationServiceAccount = "kai-resource-reservation";
inline constexpr const char* kReservationPodPrefix = "gpu-reservation";
inline constexpr const char* kGpuIndexAnnotation = "run.ai/reserve_for_gpu_index";
inline constexpr const char* kGpuGroupLabel = "runai-gpu-group";
inline constexpr const char* kReceivedResourceTypeAnnotation = "received-resource-type";
inline constexpr const char* kSharedGpuConfigMapAnnotation = "runai/shared-gpu-configmap";
inline constexpr const char* kGpuFractionContainerAnnotation = "gpu-fraction-container-name";

struct GpuSharingOptions {
  std::string reservation_namespace = kReservationNamespace;
  std::string reservation_image = kDefaultReservationImage;
  std::string service_account = kReservationServiceAccount;
  // How long to wait for a reservation pod's GPU index, and how often to look.
  std::chrono::milliseconds allocation_timeout{60'000};
  std::chrono::milliseconds poll_interval{200};
};

class GpuSharingStep : public BindStep {
 public:
  // `sync`: the reservation clean-up to use (sharing its group locks); null: one of its own,
  // without a cache (no node syncs before binds).
  explicit GpuSharingStep(std::shared_ptr<kube::Client> client, GpuSharingOptions options = {},
                          std::shared_ptr<ReservationSync> sync = nullptr);
  std::string Name() const override { return "gpusharing"; }
  std::optional<StepError> PreBind(BindAttempt& attempt) override;
  std::optional<std::string> Rollback(BindAttempt& attempt) override;

  // Checks a fractional request without touching anything (exposed for tests).
  static std::optional<StepError> Validate(const BindRequest& request);

 private:
  // Under the locks of the request's groups: their GPU indexes (comma-separated into `devices`)
  // and the pod's group labels.
  std::optional<StepError> ReserveAndLabel(BindAttempt& attempt, std::string& devices);
  // The GPU index of `group` on `node`: from its reservation pod, created when missing (its
  // name is then added to `created`). The caller holds the group's lock.
  std::optional<StepError> ReserveGroup(const std::string& node, const std::string& group,
                                        std::string& index, nlohmann::json& created);
  std::optional<StepError> WaitForIndex(const std::string& pod_name, std::string& index);
  std::optional<StepError> WriteConfigMaps(BindAttempt& attempt, const std::string& devices,
                                           nlohmann::json& created);
  std::string RandomSuffix();

  std::shared_ptr<kube::Client> client_;
  GpuSharingOptions options_;
  std::shared_ptr<ReservationSync> sync_;
  std::mutex mu_;  // random_state_
  uint64_t random_state_;
};

}  // namespace gantry::binder
