#include "kube/informer.h"

#include <mutex>

namespace gantry::kube {

std::string ObjectKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

namespace {

std::string KeyOf(const Object& object) { return ObjectKey(NamespaceOf(object), NameOf(object)); }

}  // namespace

Store::Store(StoreOptions options) : options_(std::move(options)) {}

void Store::AddIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(mu_);
  Index& index = indexes_[name];
  index.fn = std::move(fn);
  index.keys.clear();
  for (const auto& [key, object] : objects_) {
    for (const std::string& value : index.fn(*object)) index.keys[value].insert(key);
  }
}

void Store::AddListener(Listener listener) {
  std::unique_lock lock(mu_);
  listeners_.push_back(std::move(listener));
}

void Store::SetErrorHandler(ErrorHandler handler) {
  std::unique_lock lock(mu_);
  on_error_ = std::move(handler);
}

ObjectPtr Store::Get(std::string_view ns, std::string_view name) const {
  std::string key = ObjectKey(ns, name);
  std::shared_lock lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::vector<ObjectPtr> out;
  std::shared_lock lock(mu_);
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.keys.find(value);
  if (keys == idx->second.keys.end()) return out;
  out.reserve(keys->second.size());
  for (const std::string& key : keys->second) {
    auto it = objects_.find(key);
    if (it != objects_.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<ObjectPtr> Store::List() const {
  std::vector<ObjectPtr> out;
  std::shared_lock lock(mu_);
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(object);
  return out;
}

size_t Store::size() const {
  std::shared_lock lock(mu_);
  return objects_.size();
}

bool Store::synced() const {
  std::shared_lock lock(mu_);
  return synced_;
}

ObjectPtr Store::Make(const Object& object) const {
  if (options_.transform) return std::make_shared<const Object>(options_.transform(object));
  return std::make_shared<const Object>(object);
}

ObjectPtr Store::Make(Object&& object) const {
  if (options_.transform) {
    return std::make_shared<const Object>(options_.transform(std::move(object)));
  }
  return std::make_shared<const Object>(std::move(object));
}

void Store::Reindex(const std::string& key, const ObjectPtr& old, const ObjectPtr& now) {
  for (auto& [name, index] : indexes_) {
    std::vector<std::string> before, after;
    if (old) before = index.fn(*old);
    if (now) after = index.fn(*now);
    if (before == after) continue;
    for (const std::string& value : before) {
      auto it = index.keys.find(value);
      if (it == index.keys.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.keys.erase(it);
    }
    for (const std::string& value : after) index.keys[value].insert(key);
  }
}

bool Store::ReplaceIfVersion(const Object& object, const std::string& replaced_resource_version) {
  std::string key = KeyOf(object);
  ObjectPtr now = Make(object);
  std::unique_lock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end() || ResourceVersionOf(*it->second) != replaced_resource_version) {
    return false;
  }
  ObjectPtr old = std::move(it->second);
  it->second = now;
  Reindex(key, old, now);
  return true;
}

void Store::OnSync(std::vector<Object> items, const std::string& /*resource_version*/) {
  std::unordered_map<std::string, ObjectPtr> next;
  next.reserve(items.size());
  for (Object& item : items) {
    std::string key = KeyOf(item);
    next[std::move(key)] = Make(std::move(item));
  }
  items.clear();
  std::vector<ObjectPtr> vanished;
  {
    std::unique_lock lock(mu_);
    for (auto& [key, old] : objects_) {
      auto it = next.find(key);
      if (it == next.end()) vanished.push_back(old);
      Reindex(key, old, it == next.end() ? nullptr : it->second);
    }
    for (const auto& [key, now] : next) {
      if (objects_.count(key) == 0) Reindex(key, nullptr, now);
    }
    objects_ = next;
    synced_ = true;
  }
  // listeners_ is only changed before objects arrive: read without the lock.
  for (const Listener& listener : listeners_) {
    for (const ObjectPtr& gone : vanished) listener(EventType::kDeleted, *gone);
    for (const auto& [key, now] : next) listener(EventType::kAdded, *now);
  }
}

void Store::OnEvent(EventType type, const Object& object) {
  if (type != EventType::kAdded && type != EventType::kModified && type != EventType::kDeleted) {
    return;
  }
  Apply(type, KeyOf(object), type == EventType::kDeleted ? nullptr : Make(object), object);
}

void Store::OnOwnedEvent(EventType type, Object&& object) {
  if (type != EventType::kAdded && type != EventType::kModified && type != EventType::kDeleted) {
    return;
  }
  std::string key = KeyOf(object);
  if (type == EventType::kDeleted) {
    Apply(type, std::move(key), nullptr, object);
    return;
  }
  ObjectPtr now = Make(std::move(object));
  const Object& seen = *now;
  Apply(type, std::move(key), std::move(now), seen);
}

// `object` is the event's object (read only when `now` is null and nothing was stored).
void Store::Apply(EventType type, std::string key, ObjectPtr now, const Object& object) {
  ObjectPtr old;
  {
    std::unique_lock lock(mu_);
    auto it = objects_.find(key);
    if (it != objects_.end()) old = it->second;
    Reindex(key, old, now);
    if (now) {
      objects_[key] = now;
    } else if (it != objects_.end()) {
      objects_.erase(it);
    }
  }
  if (listeners_.empty()) return;
  const Object& seen = now ? *now : old ? *old : object;
  for (const Listener& listener : listeners_) listener(type, seen);
}

void Store::OnError(const ApiError& error, Clock::Duration retry_in) {
  ErrorHandler handler;
  {
    std::shared_lock lock(mu_);
    handler = on_error_;
  }
  if (handler) handler(error, retry_in);
}

Informer::Informer(std::shared_ptr<Client> client, ResourceType type, ListWatchOptions options,
                   Store& store, ClockPtr clock)
    : store_(store),
      watcher_(std::move(client), std::move(type), std::move(options), store, std::move(clock)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { watcher_.Run(); });
}

void Informer::Stop() {
  watcher_.Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gantry::kube
