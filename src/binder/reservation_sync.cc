#include "binder/reservation_sync.h"

#include <algorithm>
#include <map>

#include "binder/bind_request.h"
#include "binder/gpu_sharing_step.h"
#include "binder/log.h"

namespace gantry::binder {

namespace {

using nlohmann::json;

const std::string kGroupPrefix = std::string(kGpuGroupLabel) + "/";

// A user of a group: Pending or Running (a pod the server has not given a phase yet is pending).
bool ActiveUser(const json& pod) {
  const std::string phase = kube::StringAt(pod, {"status", "phase"});
  return phase.empty() || phase == "Pending" || phase == "Running";
}

bool Deleting(const json& pod) {
  return !kube::StringAt(pod, {"metadata", "deletionTimestamp"}).empty();
}

bool Completed(const json& pod) {
  const std::string phase = kube::StringAt(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

GpuGroupLock::GpuGroupLock(GpuGroupLocks& locks, std::vector<std::string> groups)
    : locks_(locks), groups_(std::move(groups)) {
  std::sort(groups_.begin(), groups_.end());
  groups_.erase(std::unique(groups_.begin(), groups_.end()), groups_.end());
  for (const std::string& g : groups_) locks_.Lock(g);
}

GpuGroupLock::~GpuGroupLock() {
  for (const std::string& g : groups_) locks_.Unlock(g);
}

std::vector<std::string> GpuGroupsOf(const kube::Object& pod) {
  std::vector<std::string> groups;
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return groups;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return groups;
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    if (!it.value().is_string()) continue;
    const std::string& key = it.key();
    if (key == kGpuGroupLabel) {
      groups.push_back(it.value().get<std::string>());
    } else if (key.size() > kGroupPrefix.size() && key.starts_with(kGroupPrefix)) {
      groups.push_back(key.substr(kGroupPrefix.size()));
    }
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  return groups;
}

ReservationSync::ReservationSync(std::shared_ptr<kube::Client> client,
                                 std::string reservation_namespace, BinderCache* cache)
    : client_(std::move(client)), namespace_(std::move(reservation_namespace)), cache_(cache) {}

ReservationSync::~ReservationSync() { Stop(); }

std::optional<std::string> ReservationSync::SyncGroupLocked(const std::string& group,
                                                            const std::string& exclude,
                                                            const std::string& node) {
  std::vector<std::string> reservations;
  bool used = false;
  for (const std::string& selector :
       {std::string(kGpuGroupLabel) + "=" + group, kGroupPrefix + group + "=" + group}) {
    kube::ListOptions options;
    options.label_selector = selector;
    auto list = client_->ListAll(kube::resources::kPods, "", options);
    if (!list.ok()) {
      return "listing the pods of GPU group " + group + ": " + list.error().ToString();
    }
    const json& items = list.value().contains("items") ? list.value()["items"] : json::array();
    if (!items.is_array()) continue;
    for (const json& pod : items) {
      const std::string ns = kube::NamespaceOf(pod);
      if (ns == namespace_) {
        if (!Deleting(pod) && (node.empty() || kube::StringAt(pod, {"spec", "nodeName"}) == node)) {
          reservations.push_back(kube::NameOf(pod));
        }
        continue;
      }
      if (!exclude.empty() && kube::ObjectKey(ns, kube::NameOf(pod)) == exclude) continue;
      if (ActiveUser(pod)) used = true;
    }
  }
  if (used || reservations.empty()) return std::nullopt;
  std::string errors;
  for (const std::string& name : reservations) {
    kube::DeleteOptions now;
    now.grace_period_seconds = 0;
    auto deleted = client_->Delete(kube::resources::kPods, namespace_, name, now);
    if (deleted.ok() || deleted.error().IsNotFound()) {
      Log("binder: GPU group " + group + " has no pod left: deleted its reservation pod " +
          namespace_ + "/" + name);
      std::lock_guard<std::mutex> lock(mu_);
      ++deleted_;
      continue;
    }
    errors += (errors.empty() ? "" : "; ") + std::string("deleting reservation pod ") + namespace_ +
              "/" + name + ": " + deleted.error().ToString();
  }
  if (errors.empty()) return std::nullopt;
  return errors;
}

std::optional<std::string> ReservationSync::SyncGroup(const std::string& group,
                                                      const std::string& exclude,
                                                      const std::string& node) {
  GpuGroupLock lock(locks_, {group});
  return SyncGroupLocked(group, exclude, node);
}

std::optional<std::string> ReservationSync::SyncNode(const std::string& node,
                                                     const std::set<std::string>& skip) {
  if (cache_ == nullptr || node.empty()) return std::nullopt;
  struct Seen {
    bool reserved = false;
    bool used = false;
  };
  std::map<std::string, Seen> groups;
  for (const kube::ObjectPtr& pod : cache_->PodsOnNode(node)) {
    const bool reservation = kube::NamespaceOf(*pod) == namespace_;
    if (reservation ? Deleting(*pod) : !ActiveUser(*pod)) continue;
    for (const std::string& g : GpuGroupsOf(*pod)) {
      Seen& seen = groups[g];
      (reservation ? seen.reserved : seen.used) = true;
    }
  }
  std::string errors;
  for (const auto& [group, seen] : groups) {
    if (!seen.reserved || seen.used || skip.count(group)) continue;
    // A bind in progress holds the group: it cleans up after itself should it fail.
    if (!locks_.TryLock(group)) continue;
    auto err = SyncGroupLocked(group, "", node);
    locks_.Unlock(group);
    if (err) errors += (errors.empty() ? "" : "; ") + *err;
  }
  if (errors.empty()) return std::nullopt;
  return errors;
}

void ReservationSync::Watch() {
  if (cache_ == nullptr) return;
  cache_->pods().AddListener([this](kube::EventType type, const kube::Object& pod) {
    if (type != kube::EventType::kDeleted && type != kube::EventType::kModified) return;
    if (kube::NamespaceOf(pod) == namespace_) return;
    if (type == kube::EventType::kModified && !Completed(pod)) return;
    const std::string node = kube::StringAt(pod, {"spec", "nodeName"});
    if (node.empty() || GpuGroupsOf(pod).empty()) return;
    Enqueue(node);
  });
  cache_->bind_requests().AddListener([this](kube::EventType type, const kube::Object& object) {
    if (type != kube::EventType::kDeleted) return;
    if (kube::StringAt(object, {"spec", "receivedResourceType"}) != kReceivedTypeFraction) return;
    Enqueue(kube::StringAt(object, {"spec", "selectedNode"}));
  });
}

void ReservationSync::Enqueue(const std::string& node) {
  if (node.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.insert(node);
  }
  cv_.notify_all();
}

void ReservationSync::Start() {
  if (cache_ == nullptr || worker_.joinable()) return;
  worker_ = std::thread([this] { Work(); });
}

void ReservationSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

size_t ReservationSync::deleted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deleted_;
}

size_t ReservationSync::node_syncs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return node_syncs_;
}

void ReservationSync::Work() {
  // Start-up: once the pods are listed, every node holding a reservation pod.
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_ && !cache_->pods().synced()) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (stopping_) return;
  }
  std::set<std::string> nodes;
  for (const kube::ObjectPtr& pod : cache_->pods().List()) {
    if (kube::NamespaceOf(*pod) != namespace_) continue;
    const std::string node = kube::StringAt(*pod, {"spec", "nodeName"});
    if (!node.empty()) nodes.insert(node);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.insert(nodes.begin(), nodes.end());
  }
  while (true) {
    std::string node;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      node = *queued_.begin();
      queued_.erase(queued_.begin());
    }
    if (auto err = SyncNode(node))
      Log("binder: syncing the GPU reservations of node " + node + ": " + *err);
    std::lock_guard<std::mutex> lock(mu_);
    ++node_syncs_;
  }
}

}  // namespace gantry::binder
