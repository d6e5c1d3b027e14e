#include "podgrouper/kube_cluster.h"

#include <algorithm>

#include "podgrouper/json_util.h"

namespace gantry::podgrouper {

namespace {

struct KnownKind {
  const char* group;
  const char* kind;
  const char* resource;
  bool namespaced;
};

// Plurals of the kinds the plugins read (the rest are derived).
constexpr KnownKind kKnown[] = {
    {"", "Pod", "pods", true},
    {"", "ConfigMap", "configmaps", true},
    {"apps", "ReplicaSet", "replicasets", true},
    {"apps", "Deployment", "deployments", true},
    {"apps", "StatefulSet", "statefulsets", true},
    {"batch", "Job", "jobs", true},
    {"batch", "CronJob", "cronjobs", true},
    {"scheduling.k8s.io", "PriorityClass", "priorityclasses", false},
    {"scheduling.run.ai", "PodGroup", "podgroups", true},
    {"serving.knative.dev", "Service", "services", true},
    {"serving.knative.dev", "Revision", "revisions", true},
    {"kubevirt.io", "VirtualMachineInstance", "virtualmachineinstances", true},
    {"amlarc.azureml.com", "AmlJob", "amljobs", true},
    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkersets", true},
    {"ray.io", "RayCluster", "rayclusters", true},
    {"ray.io", "RayJob", "rayjobs", true},
    {"ray.io", "RayService", "rayservices", true},
    {"egx.nvidia.io", "SPOTRequest", "spotrequests", true},
};

std::string Plural(std::string kind) {
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (kind.empty()) return kind;
  if (kind.back() == 'y' && kind.size() > 1 &&
      std::string("aeiou").find(kind[kind.size() - 2]) == std::string::npos) {
    return kind.substr(0, kind.size() - 1) + "ies";
  }
  if (kind.back() == 's' || kind.back() == 'x' || kind.ends_with("ch") || kind.ends_with("sh")) {
    return kind + "es";
  }
  return kind + "s";
}

// Kinds cached by informers: the built-in owner kinds (always served, read for most pods),
// PriorityClasses, and PodGroups (read before every create or update, as KAI's cached client).
struct CachedKind {
  const char* group;
  const char* version;
  const char* kind;
  const char* resource;
  bool namespaced;
};
constexpr CachedKind kCachedKinds[] = {
    {"apps", "v1", "ReplicaSet", "replicasets", true},
    {"apps", "v1", "Deployment", "deployments", true},
    {"apps", "v1", "StatefulSet", "statefulsets", true},
    {"batch", "v1", "Job", "jobs", true},
    {"batch", "v1", "CronJob", "cronjobs", true},
    {"scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false},
    {"scheduling.run.ai", "v2alpha2", "PodGroup", "podgroups", true},
};

// What the groupers read of a cached owner: metadata and spec (no status).
kube::Object Trim(kube::Object object) {
  object.erase("status");
  return object;
}

ReadError FromApi(const kube::ApiError& error, const std::string& what) {
  ReadError out;
  out.kind = error.IsNotFound()         ? ReadError::Kind::kNotFound
             : error.http_status == 403 ? ReadError::Kind::kForbidden
                                        : ReadError::Kind::kOther;
  out.message = what + ": " + error.ToString();
  return out;
}

}  // namespace

kube::ResourceType KubeCluster::ResourceFor(const std::string& api_version,
                                            const std::string& kind) {
  auto [group, version] = SplitApiVersion(api_version);
  for (const KnownKind& k : kKnown) {
    if (group == k.group && kind == k.kind) return {group, version, k.resource, kind, k.namespaced};
  }
  return {group, version, Plural(kind), kind, true};
}

KubeCluster::KubeCluster(std::shared_ptr<kube::Client> client) : client_(std::move(client)) {
  for (const CachedKind& k : kCachedKinds) {
    Cached c;
    c.api_version = std::string(k.group) + "/" + k.version;
    c.kind = k.kind;
    // A PodGroup's status is written by the scheduler; the pod-grouper never reads it.
    c.store = std::make_unique<kube::Store>(kube::StoreOptions{.transform = Trim});
    kube::ResourceType type{k.group, k.version, k.resource, k.kind, k.namespaced};
    c.informer =
        std::make_unique<kube::Informer>(client_, type, kube::ListWatchOptions{}, *c.store);
    if (std::string(k.kind) == "PriorityClass") priority_classes_ = c.store.get();
    cached_.push_back(std::move(c));
  }
}

KubeCluster::~KubeCluster() { Stop(); }

void KubeCluster::Start() {
  for (auto& c : cached_) c.informer->Start();
}

void KubeCluster::Stop() {
  for (auto& c : cached_) c.informer->Stop();
}

bool KubeCluster::synced() const {
  return std::all_of(cached_.begin(), cached_.end(),
                     [](const Cached& c) { return c.store->synced(); });
}

ReadResult<ObjectPtr> KubeCluster::Get(const std::string& api_version, const std::string& kind,
                                       const std::string& ns, const std::string& name) {
  std::string what = kind + " " + (ns.empty() ? "" : ns + "/") + name;
  for (const Cached& c : cached_) {
    if (c.api_version != api_version || c.kind != kind || !c.store->synced()) continue;
    ObjectPtr got = c.store->Get(c.kind == "PriorityClass" ? "" : ns, name);
    if (got != nullptr) {
      if (!got->contains("apiVersion") || !got->contains("kind")) {
        kube::Object copy = *got;
        copy["apiVersion"] = api_version;
        copy["kind"] = kind;
        return {std::make_shared<const kube::Object>(std::move(copy)), std::nullopt};
      }
      return {got, std::nullopt};
    }
    // Not in the synced cache. A PodGroup is then taken as absent (a create that races the
    // watch fails with AlreadyExists and is retried); another kind may be newer than the watch:
    // ask the server below.
    if (kind == "PodGroup") {
      return {nullptr, ReadError{ReadError::Kind::kNotFound, what + " not found"}};
    }
    break;
  }
  kube::ResourceType type = ResourceFor(api_version, kind);
  auto got = client_->Get(type, type.namespaced ? ns : "", name);
  if (!got.ok()) return {nullptr, FromApi(got.error(), what)};
  kube::Object object = std::move(got).value();
  if (!object.contains("apiVersion")) object["apiVersion"] = api_version;
  if (!object.contains("kind")) object["kind"] = kind;
  return {std::make_shared<const kube::Object>(std::move(object)), std::nullopt};
}

ReadResult<std::vector<ObjectPtr>> KubeCluster::ListPods(
    const std::string& ns, const std::map<std::string, std::string>& labels) {
  kube::ListOptions options;
  for (const auto& [k, v] : labels) {
    if (!options.label_selector.empty()) options.label_selector += ",";
    options.label_selector.append(k).append("=").append(v);
  }
  auto list = client_->ListAll(kube::resources::kPods, ns, options);
  ReadResult<std::vector<ObjectPtr>> out;
  if (!list.ok()) {
    out.error = FromApi(list.error(), "pods in " + ns + " labelled " + options.label_selector);
    return out;
  }
  for (auto& item : list.value()["items"]) {
    out.value.push_back(std::make_shared<const kube::Object>(std::move(item)));
  }
  return out;
}

ReadResult<std::vector<ObjectPtr>> KubeCluster::ListKartas(
    const std::map<std::string, std::string>& labels) {
  static const kube::ResourceType kartas_resource{"run.ai", "v1alpha1", "kartas", "Karta", false};
  kube::ListOptions options;
  for (const auto& [k, v] : labels) {
    if (!options.label_selector.empty()) options.label_selector += ",";
    options.label_selector.append(k).append("=").append(v);
  }
  auto list = client_->ListAll(kartas_resource, "", options);
  ReadResult<std::vector<ObjectPtr>> out;
  if (!list.ok()) {
    out.error = FromApi(list.error(), "kartas.run.ai labelled " + options.label_selector);
    return out;
  }
  for (auto& item : list.value()["items"]) {
    out.value.push_back(std::make_shared<const kube::Object>(std::move(item)));
  }
  return out;
}

bool KubeCluster::PriorityClassExists(const std::string& name) {
  if (name.empty()) return false;
  if (priority_classes_ != nullptr && priority_classes_->synced()) {
    return priority_classes_->Get("", name) != nullptr;
  }
  return client_->Get(kube::resources::kPriorityClasses, "", name).ok();
}

}  // namespace gantry::podgrouper
