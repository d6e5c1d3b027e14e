#include "statusctl/queue_controller.h"

#include <cmath>
#include <memory>

#include "kube/informer.h"
#include "statusctl/workers.h"

namespace gantry::statusctl {

namespace {

constexpr double kUnlimited = -1;

double Rounded(double v) { return std::round(v * 10000) / 10000; }

double NumberAt(const Object& o, std::initializer_list<const char*> path) {
  const Object* cur = &o;
  for (const char* key : path) {
    if (!cur->is_object()) return 0;
    auto it = cur->find(key);
    if (it == cur->end()) return 0;
    cur = &*it;
  }
  if (cur->is_number()) return cur->get<double>();
  if (cur->is_string()) {
    auto q = kube::Quantity::Parse(cur->get<std::string>());
    if (q.ok()) return q.value().Value();
  }
  return 0;
}

class QueueTerm final : public Term {
 public:
  QueueTerm(const QueueControllerOptions& options, std::shared_ptr<kube::Client> client,
            QueueMetrics& metrics)
      : options_(options),
        client_(std::move(client)),
        metrics_(metrics),
        workers_("queue-controller", [this](const std::string& key) { return Reconcile(key); }) {
    queues_.AddIndex("parent", [](const Object& q) {
      const std::string parent = kube::StringAt(q, {"spec", "parentQueue"});
      if (parent.empty()) return std::vector<std::string>{};
      return std::vector<std::string>{parent};
    });
    pod_groups_.AddIndex("queue", [](const Object& pg) {
      const std::string queue = kube::StringAt(pg, {"spec", "queue"});
      if (queue.empty()) return std::vector<std::string>{};
      return std::vector<std::string>{queue};
    });
    queues_.AddListener([this](kube::EventType type, const Object& q) {
      workers_.Add(kube::NameOf(q));
      for (const auto& key :
           parent_of_.Update(kube::NameOf(q), kube::StringAt(q, {"spec", "parentQueue"}),
                             type == kube::EventType::kDeleted)) {
        workers_.Add(key);
      }
    });
    pod_groups_.AddListener([this](kube::EventType type, const Object& pg) {
      for (const auto& key : queue_of_.Update(
               kube::ObjectKey(kube::NamespaceOf(pg), kube::NameOf(pg)),
               kube::StringAt(pg, {"spec", "queue"}), type == kube::EventType::kDeleted)) {
        workers_.Add(key);
      }
    });
    queue_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kQueues,
                                                       kube::ListWatchOptions{}, queues_);
    pg_informer_ = std::make_unique<kube::Informer>(client_, kube::resources::kPodGroups,
                                                    kube::ListWatchOptions{}, pod_groups_);
  }

  void Start() override {
    pg_informer_->Start();
    queue_informer_->Start();
    workers_.Start(options_.process.workers);
  }
  void Stop() override {
    workers_.Stop();
    queue_informer_->Stop();
    pg_informer_->Stop();
  }
  bool synced() const override { return queues_.synced() && pod_groups_.synced(); }

 private:
  ReconcileOutcome Reconcile(const std::string& name) {
    if (!synced()) return {ReconcileOutcome::kConflict, ""};  // sums without PodGroups are wrong
    kube::ObjectPtr queue = queues_.Get("", name);
    if (queue == nullptr) {
      metrics_.Reset(name);
      return {};
    }
    auto update = QueueStatusUpdate(*queue, queues_.ByIndex("parent", name),
                                    pod_groups_.ByIndex("queue", name));
    if (!update.ok()) return {ReconcileOutcome::kFailed, update.error()};
    if (!update.value()) {
      metrics_.Set(*queue);
      return {};
    }
    auto written = client_->UpdateStatus(kube::resources::kQueues, "", *update.value());
    if (written.ok()) {
      metrics_.Set(*update.value());
      return {};
    }
    if (written.error().IsConflict()) return {ReconcileOutcome::kConflict, ""};
    if (written.error().IsNotFound()) return {};
    return {ReconcileOutcome::kFailed,
            "queue " + name + ": writing status: " + written.error().ToString()};
  }

  const QueueControllerOptions& options_;
  std::shared_ptr<kube::Client> client_;
  QueueMetrics& metrics_;
  kube::Store queues_, pod_groups_;
  FiledUnder parent_of_;  // queue -> its parent queue
  FiledUnder queue_of_;   // PodGroup -> its queue
  KeyWorkers workers_;
  std::unique_ptr<kube::Informer> queue_informer_, pg_informer_;
};

}  // namespace

Result<std::map<std::string, std::string>> ParseStringMapFlag(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(start, end - start);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{"\"" + entry + "\": expected key=value"};
    }
    out[entry.substr(0, eq)] = entry.substr(eq + 1);
    start = end + 1;
  }
  return out;
}

Result<std::optional<Object>> QueueStatusUpdate(const Object& queue,
                                                const std::vector<kube::ObjectPtr>& child_queues,
                                                const std::vector<kube::ObjectPtr>& pod_groups) {
  const std::string name = kube::NameOf(queue);
  auto current = ParseQueueStatus(queue);
  if (!current.ok()) return Error{"queue " + name + ": " + current.error()};
  std::vector<std::string> child_names;
  std::vector<ResourcesStatus> children;
  for (const auto& child : child_queues) {
    if (kube::StringAt(*child, {"spec", "parentQueue"}) != name) continue;
    auto s = ParseQueueStatus(*child);
    if (!s.ok())
      return Error{"queue " + name + ": child queue " + kube::NameOf(*child) + ": " + s.error()};
    child_names.push_back(kube::NameOf(*child));
    children.push_back(s.value().resources);
  }
  std::vector<ResourcesStatus> groups;
  for (const auto& pg : pod_groups) {
    const Object* status = nullptr;
    if (auto st = pg->find("status"); st != pg->end() && st->is_object()) {
      if (auto rs = st->find("resourcesStatus"); rs != st->end()) status = &*rs;
    }
    auto s = ParseResourcesStatus(status, "status.resourcesStatus");
    if (!s.ok()) {
      return Error{"queue " + name + ": podgroup " + kube::NamespaceOf(*pg) + "/" +
                   kube::NameOf(*pg) + ": " + s.error()};
    }
    groups.push_back(std::move(s).value());
  }
  QueueStatus wanted = QueueStatusFrom(std::move(child_names), children, groups);
  if (wanted == current.value()) return std::optional<Object>();
  Object updated = queue;
  SetQueueStatus(updated, wanted);
  return std::optional<Object>(std::move(updated));
}

QueueMetrics::QueueMetrics(obs::Registry& registry, const QueueControllerOptions& options)
    : defaults_(options.queue_label_to_default_metric_value) {
  std::vector<std::string> labels = {"queue_name", "queue_metadata_name", "queue_display_name"};
  for (const auto& [queue_label, metric_label] : options.queue_label_to_metric_label) {
    queue_label_keys_.push_back(queue_label);  // std::map: sorted, as KAI sorts them
    labels.push_back(metric_label);
  }
  const std::string ns = options.metrics_namespace.empty() ? "" : options.metrics_namespace + "_";
  const std::pair<const char*, const char*> families[] = {
      {"queue_info", "Queues info"},
      {"queue_deserved_gpus", "Queue deserved GPUs"},
      {"queue_quota_cpu_cores", "Queue quota CPU"},
      {"queue_quota_memory_bytes", "Queue quota memory"},
      {"queue_allocated_gpus", "Queue allocated GPUs"},
      {"queue_allocated_cpu_cores", "Queue allocated CPUs"},
      {"queue_allocated_memory_bytes", "Queue allocated memory"},
  };
  for (const auto& [name, help] : families) {
    families_.push_back(&registry.AddGauge(ns + name, help, labels));
  }
}

void QueueMetrics::Set(const Object& queue) {
  const std::string name = kube::NameOf(queue);
  std::vector<std::string> values = {name, name, kube::StringAt(queue, {"spec", "displayName"})};
  for (const auto& key : queue_label_keys_) {
    const std::string* label = nullptr;
    if (auto l = queue.find("metadata"); l != queue.end() && l->is_object()) {
      if (auto ls = l->find("labels"); ls != l->end() && ls->is_object()) {
        if (auto v = ls->find(key); v != ls->end() && v->is_string()) {
          label = v->get_ptr<const std::string*>();
        }
      }
    }
    if (label != nullptr) {
      values.push_back(*label);
    } else if (auto d = defaults_.find(key); d != defaults_.end()) {
      values.push_back(d->second);
    } else {
      values.emplace_back();
    }
  }
  double cpu_quota = NumberAt(queue, {"spec", "resources", "cpu", "quota"});
  if (cpu_quota != kUnlimited) cpu_quota /= 1000;
  double memory_quota = NumberAt(queue, {"spec", "resources", "memory", "quota"});
  if (memory_quota != kUnlimited) memory_quota *= 1e6;
  double gpus = 0, cpus = 0, memory = 0;
  if (auto status = ParseQueueStatus(queue); status.ok()) {
    const auto& allocated = status.value().resources.allocated;
    for (const auto& [resource, q] : allocated) {
      if (resource.ends_with("/gpu")) {
        gpus = Rounded(q.Value());
        break;
      }
    }
    if (auto c = allocated.find("cpu"); c != allocated.end()) cpus = Rounded(c->second.Value());
    if (auto m = allocated.find("memory"); m != allocated.end()) {
      memory = Rounded(m->second.Value());
    }
  }
  const double samples[] = {1,         NumberAt(queue, {"spec", "resources", "gpu", "quota"}),
                            cpu_quota, memory_quota,
                            gpus,      cpus,
                            memory};
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < families_.size(); ++i) {
    families_[i]->RemoveMatching(0, name);
    families_[i]->With(values).Set(samples[i]);
  }
}

void QueueMetrics::Reset(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto* f : families_) f->RemoveMatching(0, name);
}

int RunQueueController(const QueueControllerOptions& options, std::ostream& err) {
  obs::Registry registry;
  QueueMetrics metrics(registry, options);
  return RunControllerProcess(
      "queue-controller", options.process, registry,
      [&options, &metrics](std::shared_ptr<kube::Client> client) -> std::unique_ptr<Term> {
        return std::make_unique<QueueTerm>(options, std::move(client), metrics);
      },
      err);
}

}  // namespace gantry::statusctl
