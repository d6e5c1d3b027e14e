#include "binder/gpu_sharing_step.h"

#include <chrono>
#include <cstdlib>

#include "util/json_fields.h"

namespace gantry::binder {

namespace {

using nlohmann::json;

constexpr const char* kFractionDevicesAnnotation = "gpu-fraction-num-devices";
constexpr const char* kDoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt";
constexpr const char* kVisibleDevices = "NVIDIA_VISIBLE_DEVICES";
constexpr const char* kVisibleDevicesOld = "RUNAI-VISIBLE-DEVICES";
constexpr const char* kGpuPortionEnv = "GPU_PORTION";
constexpr const char* kNumOfGpusEnv = "RUNAI_NUM_OF_GPUS";

std::string Annotation(const json& object, const std::string& key) {
  return kube::StringAt(object, {"metadata", "annotations", key});
}

// The pod spans several devices (KAI's multi-fraction pods): one label per group.
bool MultiFraction(const json& pod) {
  const std::string n = Annotation(pod, kFractionDevicesAnnotation);
  return !n.empty() && std::atoi(n.c_str()) > 1;
}

std::string GroupLabelKey(const json& pod, const std::string& group) {
  return MultiFraction(pod) ? std::string(kGpuGroupLabel) + "/" + group : kGpuGroupLabel;
}

json Items(const json& list) {
  if (list.contains("items") && list["items"].is_array()) return list["items"];
  return json::array();
}

}  // namespace

GpuSharingStep::GpuSharingStep(std::shared_ptr<kube::Client> client, GpuSharingOptions options,
                               std::shared_ptr<ReservationSync> sync)
    : client_(std::move(client)),
      options_(std::move(options)),
      sync_(sync != nullptr
                ? std::move(sync)
                : std::make_shared<ReservationSync>(client_, options_.reservation_namespace)),
      random_state_(
          static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          reinterpret_cast<uintptr_t>(this)) {}

std::string GpuSharingStep::RandomSuffix() {
  // Kubernetes' rand.String alphabet (no vowels, no confusable characters).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (int i = 0; i < 5; ++i) {
    random_state_ += 0x9e3779b97f4a7c15ULL;  // splitmix64
    uint64_t z = random_state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    out += kAlphabet[z % (sizeof(kAlphabet) - 1)];
  }
  return out;
}

std::optional<StepError> GpuSharingStep::Validate(const BindRequest& br) {
  auto invalid = [](std::string message) { return StepError{std::move(message), false}; };
  if (br.selected_gpu_groups.empty()) {
    return invalid("a fractional GPU allocation without spec.selectedGPUGroups");
  }
  std::set<std::string> seen;
  for (const auto& g : br.selected_gpu_groups) {
    if (g.empty()) return invalid("an empty name in spec.selectedGPUGroups");
    if (!seen.insert(g).second) return invalid("GPU group " + g + " selected twice");
  }
  if (br.received_gpu_count > 0 &&
      static_cast<size_t>(br.received_gpu_count) != br.selected_gpu_groups.size()) {
    return invalid("spec.receivedGPU.count is " + std::to_string(br.received_gpu_count) + " but " +
                   std::to_string(br.selected_gpu_groups.size()) + " GPU groups are selected");
  }
  const std::string& portion = br.received_gpu_portion;
  char* end = nullptr;
  double p = portion.empty() ? 0 : std::strtod(portion.c_str(), &end);
  if (portion.empty() || end != portion.c_str() + portion.size() || !(p > 0 && p <= 1)) {
    return invalid("spec.receivedGPU.portion \"" + portion + "\" is not a number in (0, 1]");
  }
  return std::nullopt;
}

std::optional<StepError> GpuSharingStep::PreBind(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  // As KAI's binder, before every bind: the node's leftover reservation pods go (the request's
  // own groups are reused instead).
  const std::set<std::string> own(br.selected_gpu_groups.begin(), br.selected_gpu_groups.end());
  if (auto err = sync_->SyncNode(br.selected_node, own)) {
    return StepError{"syncing the GPU reservations of node " + br.selected_node + ": " + *err};
  }
  if (br.received_resource_type != kReceivedTypeFraction) return std::nullopt;
  if (auto err = Validate(br)) return err;
  json& state = attempt.state[Name()];
  state = {{"reservation_pods", json::array()},
           {"configmaps", json::array()},
           {"labels", json::array()}};
  auto fail = [&](StepError err) -> std::optional<StepError> {
    if (auto r = Rollback(attempt)) err.message += "; cleaning up: " + *r;
    return err;
  };
  std::string devices;
  if (auto err = ReserveAndLabel(attempt, devices)) return fail(*err);
  if (auto err = WriteConfigMaps(attempt, devices, state["configmaps"])) return fail(*err);
  return std::nullopt;
}

std::optional<StepError> GpuSharingStep::ReserveAndLabel(BindAttempt& attempt,
                                                         std::string& devices) {
  const BindRequest& br = attempt.request;
  json& state = attempt.state[Name()];
  // No sync may judge these groups until the pod carries their labels.
  GpuGroupLock lock(sync_->locks(), br.selected_gpu_groups);
  for (const std::string& group : br.selected_gpu_groups) {
    std::string index;
    if (auto err = ReserveGroup(br.selected_node, group, index, state["reservation_pods"])) {
      return err;
    }
    devices += (devices.empty() ? "" : ",") + index;
  }

  // The pod joins its groups (KAI's label) and records what it received.
  json labels = json::object();
  for (const std::string& group : br.selected_gpu_groups) {
    const std::string key = GroupLabelKey(attempt.pod, group);
    labels[key] = group;
    state["labels"].push_back(key);
  }
  json patch = {
      {"metadata",
       {{"labels", labels},
        {"annotations", {{kReceivedResourceTypeAnnotation, br.received_resource_type}}}}}};
  auto patched =
      client_->Patch(kube::resources::kPods, br.ns, br.pod_name, kube::PatchType::kMerge, patch);
  if (!patched.ok()) {
    return StepError{"labelling pod " + br.ns + "/" + br.pod_name +
                     " with its GPU groups: " + patched.error().ToString()};
  }
  return std::nullopt;
}

std::optional<StepError> GpuSharingStep::ReserveGroup(const std::string& node,
                                                      const std::string& group, std::string& index,
                                                      json& created) {
  kube::ListOptions options;
  options.label_selector = std::string(kGpuGroupLabel) + "=" + group;
  auto list = client_->ListAll(kube::resources::kPods, options_.reservation_namespace, options);
  if (!list.ok()) {
    return StepError{"listing the reservation pods of GPU group " + group + ": " +
                     list.error().ToString()};
  }
  for (const json& pod : Items(list.value())) {
    if (!kube::StringAt(pod, {"metadata", "deletionTimestamp"}).empty()) continue;
    const std::string name = kube::NameOf(pod);
    const std::string on = kube::StringAt(pod, {"spec", "nodeName"});
    if (on != node) {
      std::string message = "the reservation pod ";
      message += options_.reservation_namespace;
      message += "/";
      message += name;
      message += " of GPU group ";
      message += group;
      message += " is on node ";
      message += on;
      message += ", not ";
      message += node;
      return StepError{std::move(message)};
    }
    index = Annotation(pod, kGpuIndexAnnotation);
    if (!index.empty()) return std::nullopt;
    return WaitForIndex(name, index);
  }

  json pod;
  std::string name;
  for (int tries = 0;; ++tries) {
    name = std::string(kReservationPodPrefix) + "-" + node + "-" + RandomSuffix();
    json env = json::array(
        {{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
         {{"name", "POD_NAMESPACE"},
          {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}}});
    json one_gpu = {{"nvidia.com/gpu", "1"}};
    pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name},
          {"namespace", options_.reservation_namespace},
          {"labels", {{kReservationAppLabel, kReservationAppValue}, {kGpuGroupLabel, group}}},
          {"annotations", {{kDoNotDisruptAnnotation, "true"}}}}},
        {"spec",
         {{"nodeName", node},
          {"serviceAccountName", options_.service_account},
          {"containers", json::array({{{"name", "resource-reservation"},
                                       {"image", options_.reservation_image},
                                       {"imagePullPolicy", "IfNotPresent"},
                                       {"resources", {{"limits", one_gpu}, {"requests", one_gpu}}},
                                       {"env", env}}})}}}};
    auto made = client_->Create(kube::resources::kPods, options_.reservation_namespace, pod);
    if (made.ok()) break;
    if (made.error().IsAlreadyExists() && tries < 3) continue;  // a name clash: draw again
    std::string message = "creating the reservation pod of GPU group ";
    message += group;
    message += " on node ";
    message += node;
    message += ": ";
    message += made.error().ToString();
    return StepError{std::move(message)};
  }
  created.push_back({{"name", name}, {"group", group}});
  if (auto err = WaitForIndex(name, index)) {
    kube::DeleteOptions now;
    now.grace_period_seconds = 0;
    auto deleted =
        client_->Delete(kube::resources::kPods, options_.reservation_namespace, name, now);
    if (deleted.ok() || deleted.error().IsNotFound()) created.erase(created.size() - 1);
    return err;
  }
  return std::nullopt;
}

std::optional<StepError> GpuSharingStep::WaitForIndex(const std::string& pod_name,
                                                      std::string& index) {
  kube::Clock& clock = *client_->options().clock;
  const auto deadline = clock.Now() + options_.allocation_timeout;
  const std::string who = options_.reservation_namespace + "/" + pod_name;
  while (true) {
    auto pod = client_->Get(kube::resources::kPods, options_.reservation_namespace, pod_name);
    if (!pod.ok()) {
      if (pod.error().IsNotFound()) {
        return StepError{"the GPU reservation pod " + who + " was deleted before it allocated"};
      }
    } else {
      index = Annotation(pod.value(), kGpuIndexAnnotation);
      if (!index.empty()) return std::nullopt;
    }
    if (clock.Now() >= deadline) {
      return StepError{"failed waiting for GPU reservation pod to allocate: " + who};
    }
    clock.SleepFor(options_.poll_interval, nullptr);
  }
}

std::optional<StepError> GpuSharingStep::WriteConfigMaps(BindAttempt& attempt,
                                                         const std::string& devices,
                                                         json& created) {
  const json& pod = attempt.pod;
  const std::string prefix = Annotation(pod, kSharedGpuConfigMapAnnotation);
  if (prefix.empty()) return std::nullopt;  // no KAI webhook: nothing refers to configmaps
  const BindRequest& br = attempt.request;

  // The fraction container: named by an annotation, else the first container.
  const json* container = nullptr;
  std::string suffix;
  const std::string wanted = Annotation(pod, kGpuFractionContainerAnnotation);
  auto find_in = [&](const char* list, const std::string& mark) {
    static const json no_spec = json::object();
    const json& spec = pod.contains("spec") ? pod["spec"] : no_spec;
    if (!spec.contains(list) || !spec[list].is_array()) return;
    for (size_t i = 0; i < spec[list].size() && !container; ++i) {
      if (wanted.empty() ? (i == 0 && mark.empty()) : StringOr(spec[list][i], "name") == wanted) {
        container = &spec[list][i];
        suffix = mark + std::to_string(i);
      }
    }
  };
  if (!wanted.empty()) find_in("initContainers", "i");
  find_in("containers", "");
  if (!container) {
    return StepError{"container with name " + wanted + " not found for fraction request", false};
  }
  const std::string capabilities = prefix + "-" + suffix;
  const std::string direct = capabilities + "-evar";
  bool visible_in_capabilities = false;
  if (container->contains("env") && (*container)["env"].is_array()) {
    for (const json& e : (*container)["env"]) {
      if (StringOr(e, "name") == kVisibleDevices && e.contains("valueFrom") &&
          e["valueFrom"].contains("configMapKeyRef")) {
        visible_in_capabilities = true;
      }
    }
  }

  auto upsert = [&](const std::string& name, json data) -> std::optional<StepError> {
    auto got = client_->Get(kube::resources::kConfigMaps, br.ns, name);
    if (!got.ok() && !got.error().IsNotFound()) {
      return StepError{"reading configmap " + br.ns + "/" + name + ": " + got.error().ToString()};
    }
    if (got.ok()) {
      if (data.contains(kVisibleDevices) &&
          !kube::StringAt(got.value(), {"data", kVisibleDevicesOld}).empty()) {
        data[kVisibleDevicesOld] = data[kVisibleDevices];
      }
      auto patched = client_->Patch(kube::resources::kConfigMaps, br.ns, name,
                                    kube::PatchType::kMerge, {{"data", data}});
      if (!patched.ok()) {
        return StepError{"updating configmap " + br.ns + "/" + name + ": " +
                         patched.error().ToString()};
      }
      return std::nullopt;
    }
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", name},
                 {"namespace", br.ns},
                 {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                                   {"kind", "Pod"},
                                                   {"name", br.pod_name},
                                                   {"uid", kube::UidOf(pod)}}})}}},
               {"data", data}};
    auto made = client_->Create(kube::resources::kConfigMaps, br.ns, cm);
    if (!made.ok()) {
      return StepError{"creating configmap " + br.ns + "/" + name + ": " + made.error().ToString()};
    }
    created.push_back(name);
    return std::nullopt;
  };
  json capabilities_data = {{kGpuPortionEnv, br.received_gpu_portion},
                            {kNumOfGpusEnv, br.received_gpu_portion}};
  json direct_data = json::object();
  (visible_in_capabilities ? capabilities_data : direct_data)[kVisibleDevices] = devices;
  if (auto err = upsert(capabilities, capabilities_data)) return err;
  return upsert(direct, direct_data);
}

std::optional<std::string> GpuSharingStep::Rollback(BindAttempt& attempt) {
  const BindRequest& br = attempt.request;
  auto it = attempt.state.find(Name());
  if (it == attempt.state.end()) return std::nullopt;
  json& state = *it;
  std::string errors;
  auto note = [&](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };

  // The pod leaves its groups.
  if (!state["labels"].empty()) {
    json labels = json::object();
    for (const json& key : state["labels"]) labels[key.get<std::string>()] = nullptr;
    auto patched = client_->Patch(kube::resources::kPods, br.ns, br.pod_name,
                                  kube::PatchType::kMerge, {{"metadata", {{"labels", labels}}}});
    if (!patched.ok() && !patched.error().IsNotFound()) {
      note("removing the GPU group labels of pod " + br.ns + "/" + br.pod_name + ": " +
           patched.error().ToString());
    }
    state["labels"] = json::array();
  }
  for (const json& name : state["configmaps"]) {
    auto deleted = client_->Delete(kube::resources::kConfigMaps, br.ns, name.get<std::string>());
    if (!deleted.ok() && !deleted.error().IsNotFound()) {
      note("deleting configmap " + br.ns + "/" + name.get<std::string>() + ": " +
           deleted.error().ToString());
    }
  }
  state["configmaps"] = json::array();

  // The request's groups: those with no pod left but this one lose their reservation pods on the
  // node (the ones this attempt made, and any left over), as KAI syncs the node.
  json kept = json::array();
  for (const std::string& group : br.selected_gpu_groups) {
    if (auto err = sync_->SyncGroup(group, br.ns + "/" + br.pod_name, br.selected_node)) {
      note(*err);
      for (const json& r : state["reservation_pods"]) {
        if (r["group"] == group) kept.push_back(r);
      }
    }
  }
  state["reservation_pods"] = kept;
  if (errors.empty()) return std::nullopt;
  return errors;
}

}  // namespace gantry::binder
