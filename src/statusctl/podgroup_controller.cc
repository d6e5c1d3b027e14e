#include "statusctl/podgroup_controller.h"

#include <memory>

#include "kube/informer.h"
#include "kube/quantity.h"
#include "statusctl/workers.h"
#include "util/json_fields.h"

namespace gantry::statusctl {

namespace {

// The fields of a pod this controller reads (its PodGroup, requests, GPU-sharing annotations,
// node, phase and conditions); the rest is dropped before the pod is stored.
Object TrimPod(Object pod) {
  Object out = Object::object();
  auto copy = [](Object& from, Object& to, std::initializer_list<const char*> keys) {
    if (!from.is_object()) return;
    for (const char* key : keys) {
      if (auto it = from.find(key); it != from.end()) to[key] = std::move(*it);
    }
  };
  if (auto m = pod.find("metadata"); m != pod.end()) {
    copy(*m, out["metadata"], {"name", "namespace", "uid", "resourceVersion", "annotations"});
  }
  if (auto sp = pod.find("spec"); sp != pod.end() && sp->is_object()) {
    Object& spec = out["spec"];
    copy(*sp, spec, {"nodeName", "overhead"});
    for (const char* list : {"containers", "initContainers"}) {
      auto cs = sp->find(list);
      if (cs == sp->end() || !cs->is_array()) continue;
      Object trimmed = Object::array();
      for (auto& c : *cs) {
        Object kept = Object::object();
        copy(c, kept, {"name", "resources", "restartPolicy"});
        trimmed.push_back(std::move(kept));
      }
      spec[list] = std::move(trimmed);
    }
  }
  if (auto st = pod.find("status"); st != pod.end()) {
    copy(*st, out["status"], {"phase", "conditions"});
  }
  return out;
}

std::string KeyOf(const Object& o) {
  return kube::ObjectKey(kube::NamespaceOf(o), kube::NameOf(o));
}

class PodGroupTerm final : public Term {
 public:
  PodGroupTerm(const PodGroupControllerOptions& options, std::shared_ptr<kube::Client> client)
      : options_(options),
        client_(std::move(client)),
        pods_(kube::StoreOptions{.transform = TrimPod}),
        workers_("podgroup-controller", [this](const std::string& key) { return Reconcile(key); }) {
    pods_.AddIndex("podgroup", [](const Object& pod) {
      const std::string pg = kube::StringAt(pod, {"metadata", "annotations", kPodGroupAnnotation});
      if (pg.empty()) return std::vector<std::string>{};
      return std::vector<std::string>{kube::ObjectKey(kube::NamespaceOf(pod), pg)};
    });
    pods_.AddListener([this](kube::EventType type, const Object& pod) {
      const std::string pg = kube::StringAt(pod, {"metadata", "annotations", kPodGroupAnnotation});
      const std::string owner = pg.empty() ? "" : kube::ObjectKey(kube::NamespaceOf(pod), pg);
      for (const auto& key :
           pod_group_of_.Update(KeyOf(pod), owner, type == kube::EventType::kDeleted)) {
        workers_.Add(key);
      }
    });
    pod_groups_.AddListener([this](kube::EventType type, const Object& pg) {
      if (type != kube::EventType::kDeleted) workers_.Add(KeyOf(pg));
    });
    // A PriorityClass changing its value (or becoming the global default) can change a
    // PodGroup's preemptibility: every PodGroup of that class is looked at again.
    priority_classes_.AddListener([this](kube::EventType, const Object& pc) {
      const std::string name = kube::NameOf(pc);
      for (const auto& pg : pod_groups_.List()) {
        if (kube::StringAt(*pg, {"spec", "priorityClassName"}) == name ||
            BoolOr(pc, "globalDefault")) {
          workers_.Add(KeyOf(*pg));
        }
      }
    });
    pod_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kPods,
                                                     kube::ListWatchOptions{}, pods_);
    pg_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kPodGroups,
                                                    kube::ListWatchOptions{}, pod_groups_);
    node_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kNodes,
                                                      kube::ListWatchOptions{}, nodes_);
    pc_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kPriorityClasses,
                                                    kube::ListWatchOptions{}, priority_classes_);
  }

  void Start() override {
    node_informer_->Start();
    pc_informer_->Start();
    pod_informer_->Start();
    pg_informer_->Start();
    workers_.Start(options_.process.workers);
  }
  void Stop() override {
    workers_.Stop();
    pg_informer_->Stop();
    pod_informer_->Stop();
    pc_informer_->Stop();
    node_informer_->Stop();
  }
  bool synced() const override {
    return pods_.synced() && pod_groups_.synced() && nodes_.synced() && priority_classes_.synced();
  }

 private:
  ReconcileOutcome Reconcile(const std::string& key) {
    // Reconciling before the pods are listed would write a status without them.
    if (!pods_.synced() || !nodes_.synced() || !priority_classes_.synced()) {
      return {ReconcileOutcome::kConflict, ""};
    }
    const auto slash = key.find('/');
    kube::ObjectPtr pg = pod_groups_.Get(key.substr(0, slash), key.substr(slash + 1));
    if (pg == nullptr) return {};
    auto update = PodGroupStatusUpdate(
        *pg, pods_.ByIndex("podgroup", key),
        [this](const std::string& node) -> std::optional<double> {
          kube::ObjectPtr n = nodes_.Get("", node);
          if (n == nullptr) return std::nullopt;
          auto q = kube::Quantity::Parse(
              kube::StringAt(*n, {"metadata", "labels", kNodeGpuMemoryLabel}));
          if (!q.ok()) return std::nullopt;
          return q.value().Value();
        },
        [this](const std::string& name) { return Priority(name); });
    if (!update.ok()) return {ReconcileOutcome::kFailed, update.error()};
    if (!update.value()) return {};
    auto written =
        client_->UpdateStatus(kube::resources::kPodGroups, kube::NamespaceOf(*pg), *update.value());
    if (written.ok()) return {};
    if (written.error().IsConflict()) return {ReconcileOutcome::kConflict, ""};
    if (written.error().IsNotFound()) return {};
    return {ReconcileOutcome::kFailed,
            "podgroup " + key + ": writing status: " + written.error().ToString()};
  }

  int32_t Priority(const std::string& name) const {
    if (!name.empty()) {
      if (kube::ObjectPtr pc = priority_classes_.Get("", name)) return pc->value("value", 0);
    }
    for (const auto& pc : priority_classes_.List()) {
      if (pc->value("globalDefault", false)) return pc->value("value", 0);
    }
    return kDefaultPodGroupPriority;
  }

  const PodGroupControllerOptions& options_;
  std::shared_ptr<kube::Client> client_;
  kube::Store pods_, pod_groups_, nodes_, priority_classes_;
  FiledUnder pod_group_of_;  // pod -> its PodGroup's key
  KeyWorkers workers_;
  std::unique_ptr<kube::Informer> pod_informer_, pg_informer_, node_informer_, pc_informer_;
};

}  // namespace

Result<std::optional<Object>> PodGroupStatusUpdate(const Object& pod_group,
                                                   const std::vector<kube::ObjectPtr>& pods,
                                                   const NodeGpuMemory& node_gpu_memory,
                                                   const PriorityOf& priority_of) {
  const std::string name = "podgroup " + KeyOf(pod_group);
  const Object* status = nullptr;
  if (auto s = pod_group.find("status"); s != pod_group.end() && s->is_object()) {
    if (auto rs = s->find("resourcesStatus"); rs != s->end()) status = &*rs;
  }
  auto current = ParseResourcesStatus(status, "status.resourcesStatus");
  if (!current.ok()) return Error{name + ": " + current.error()};
  std::vector<PodResources> shares;
  for (const auto& pod : pods) {
    auto share = PodStatusResources(*pod, node_gpu_memory);
    if (!share.ok()) return Error{name + ": pod " + KeyOf(*pod) + ": " + share.error()};
    shares.push_back(std::move(share).value());
  }
  const bool preemptible =
      IsPreemptible(kube::StringAt(pod_group, {"spec", "preemptibility"}),
                    priority_of(kube::StringAt(pod_group, {"spec", "priorityClassName"})));
  ResourcesStatus wanted = PodGroupResourcesStatus(shares, preemptible, current.value());
  if (wanted == current.value()) return std::optional<Object>();
  Object updated = pod_group;
  SetPodGroupResourcesStatus(updated, wanted);
  return std::optional<Object>(std::move(updated));
}

int RunPodGroupController(const PodGroupControllerOptions& options, std::ostream& err) {
  obs::Registry registry;
  return RunControllerProcess(
      "podgroup-controller", options.process, registry,
      [&options](std::shared_ptr<kube::Client> client) -> std::unique_ptr<Term> {
        return std::make_unique<PodGroupTerm>(options, std::move(client));
      },
      err);
}

}  // namespace gantry::statusctl
