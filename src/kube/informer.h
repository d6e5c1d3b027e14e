// A local, indexed copy of one resource type kept current by a ListWatcher (client-go's informer
// and indexer, reduced to what Gantry's controllers need).
//
//   Store pods({.transform = TrimPod});
//   pods.AddIndex("node", [](const Object& p) { return std::vector<std::string>{NodeOf(p)}; });
//   pods.AddListener([](EventType type, const Object& pod) { ... });
//   Informer informer(client, resources::kPods, {}, pods);
//   informer.Start();                     // list + watch on a thread of its own
//   pods.synced();                        // the first list is in
//   ObjectPtr p = pods.Get("ns", "name"); // shared, immutable: no copy
//   informer.Stop();
//
// Objects are keyed "namespace/name" ("name" for cluster-scoped types) and stored immutable
// behind shared pointers, so readers hold them without copying and without the lock. A
// transform may trim each object before it is stored (fields nobody reads cost memory and copy
// time); indexes file objects under computed values (a pod under its node name).
//
// Listeners see every change after it is stored, on the watch thread, outside the store's lock:
// an added / modified object, a deleted one (its last state), and after each (re)list every
// object held then as kAdded plus every object that vanished as kDeleted. A listener may read
// the store but must not block for long (it holds up the watch).
//
// Threading: every method is thread-safe. AddIndex, AddListener and the transform are set before
// the store receives objects.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kube/list_watcher.h"

namespace gantry::kube {

using ObjectPtr = std::shared_ptr<const Object>;

// "namespace/name", or "name" when the object has no namespace.
std::string ObjectKey(std::string_view ns, std::string_view name);

struct StoreOptions {
  // Builds the object to store from the one served (default: the object itself). It receives the
  // served object by value: moved in when the store owns it (a watch event), else a copy.
  std::function<Object(Object)> transform;
};

class Store : public WatchHandler {
 public:
  using IndexFunc = std::function<std::vector<std::string>(const Object&)>;
  using Listener = std::function<void(EventType type, const Object& object)>;
  using ErrorHandler = std::function<void(const ApiError& error, Clock::Duration retry_in)>;

  explicit Store(StoreOptions options = {});
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  void AddIndex(const std::string& name, IndexFunc fn);
  void AddListener(Listener listener);
  // Called with list and watch failures (for logging).
  void SetErrorHandler(ErrorHandler handler);

  // The object named `name` (in `ns`; "" for cluster-scoped types), or null.
  ObjectPtr Get(std::string_view ns, std::string_view name) const;
  // The objects filed under `value` in index `index` (unknown index: none).
  std::vector<ObjectPtr> ByIndex(const std::string& index, const std::string& value) const;
  // Every object held.
  std::vector<ObjectPtr> List() const;
  size_t size() const;
  // The first list has been stored.
  bool synced() const;

  // Stores `object` (what the server returned for a write of ours) in place of the stored
  // version if that is still `replaced_resource_version`, i.e. the watch has not delivered
  // anything newer: readers see the write at once instead of after the watch event. No listener
  // is called (the watch event follows). Returns whether it was stored.
  bool ReplaceIfVersion(const Object& object, const std::string& replaced_resource_version);

  // WatchHandler
  void OnSync(std::vector<Object> items, const std::string& resource_version) override;
  void OnEvent(EventType type, const Object& object) override;
  void OnOwnedEvent(EventType type, Object&& object) override;  // stores it without a copy
  void OnError(const ApiError& error, Clock::Duration retry_in) override;

 private:
  struct Index {
    IndexFunc fn;
    std::unordered_map<std::string, std::set<std::string>> keys;
  };
  ObjectPtr Make(const Object& object) const;
  ObjectPtr Make(Object&& object) const;  // moves unless there is a transform
  void Apply(EventType type, std::string key, ObjectPtr now, const Object& object);
  // Under the write lock: files `now` (may be null) in place of `old` (may be null).
  void Reindex(const std::string& key, const ObjectPtr& old, const ObjectPtr& now);

  StoreOptions options_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, ObjectPtr> objects_;
  std::unordered_map<std::string, Index> indexes_;
  std::vector<Listener> listeners_;
  ErrorHandler on_error_;
  bool synced_ = false;
};

// A ListWatcher feeding a Store, on a thread of its own.
class Informer {
 public:
  Informer(std::shared_ptr<Client> client, ResourceType type, ListWatchOptions options,
           Store& store, ClockPtr clock = RealClock());
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Stops the watch and joins the thread. Idempotent.
  void Stop();
  Store& store() { return store_; }

 private:
  Store& store_;
  ListWatcher watcher_;
  std::thread thread_;
};

}  // namespace gantry::kube
