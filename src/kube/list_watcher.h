// Keeping a local copy of one resource type in step with the API server: list, then watch from
// the list's resourceVersion; relist when the server says that version is gone (HTTP 410 or an
// ERROR event with code 410); reconnect with exponential backoff and jitter on other failures.
//
// A cache implements WatchHandler. After every (re)list it receives OnSync with the complete set
// of objects — replace everything it holds with them (objects it has that are absent were
// deleted while nobody watched) and consider itself synced. Between syncs it receives one
// OnOwnedEvent (by default forwarded to OnEvent) per change, in server order.
//
// Threading: Run() blocks the calling thread and calls the handler on it; Stop() may be called
// from any thread and makes Run() return promptly (an open watch or a backoff wait is cut short;
// a list request in flight finishes first, bounded by the client's request timeout).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/client.h"

namespace gantry::kube {

class WatchHandler {
 public:
  virtual ~WatchHandler() = default;
  // The complete state at `resource_version` after a (re)list: replace everything with `items`.
  virtual void OnSync(std::vector<Object> items, const std::string& resource_version) = 0;
  // One change after the last sync: kAdded, kModified or kDeleted (the object's last state).
  virtual void OnEvent(EventType type, const Object& object) = 0;
  // The same event with an object the handler may keep (move from): the ListWatcher calls this
  // one. The default forwards to OnEvent; a handler that stores objects overrides it to save a
  // copy of each.
  virtual void OnOwnedEvent(EventType type, Object&& object) {
    OnEvent(type, static_cast<const Object&>(object));
  }
  // A list or watch failed; the watcher retries after `retry_in` (zero: relists at once).
  // Informational (logging, metrics).
  virtual void OnError(const ApiError& /*error*/, Clock::Duration /*retry_in*/) {}
};

struct ListWatchOptions {
  std::string ns;  // empty: every namespace (or a cluster-scoped type)
  std::string label_selector;
  std::string field_selector;
  // The fields to build of each object listed or watched (json_parse.h); null: all. It must keep
  // metadata (name, namespace, resourceVersion: the store's keys and where a watch resumes).
  std::shared_ptr<const FieldFilter> filter;
  int64_t page_size = 500;  // list page size (limit); 0: one response
  // The server ends each watch after a random time in [watch_timeout, 2 * watch_timeout), and
  // the watcher then resumes from the last resourceVersion seen (no relist).
  std::chrono::seconds watch_timeout{300};
  BackoffPolicy backoff;
};

class ListWatcher {
 public:
  ListWatcher(std::shared_ptr<Client> client, ResourceType type, ListWatchOptions options,
              WatchHandler& handler, ClockPtr clock = RealClock(),
              uint64_t seed = std::random_device{}());
  ~ListWatcher() = default;
  ListWatcher(const ListWatcher&) = delete;
  ListWatcher& operator=(const ListWatcher&) = delete;

  // Lists and watches until Stop(). Runs at most once.
  void Run();
  // Thread-safe; idempotent. Run() returns soon after.
  void Stop();

  // The resourceVersion the next watch would start from (last list, event or bookmark).
  std::string resource_version() const;
  // Number of completed lists (the first sync and every relist).
  int lists() const { return lists_.load(); }

 private:
  // Lists every page; on success calls OnSync and returns true.
  bool ListAndSync();
  enum class Next { kRewatch, kRelist, kStop };
  // One watch connection; says whether to watch again, relist, or stop.
  Next WatchOnce();
  void SetResourceVersion(std::string rv);
  // Sleeps for the next backoff delay after `error`; false when stopped meanwhile.
  bool BackOff(const ApiError& error);

  std::shared_ptr<Client> client_;
  ResourceType type_;
  ListWatchOptions options_;
  WatchHandler& handler_;
  ClockPtr clock_;
  Backoff backoff_;
  std::mt19937_64 rng_;
  StopSignal stop_;
  std::atomic<bool> cancel_{false};
  std::atomic<int> lists_{0};
  mutable std::mutex mu_;
  std::string resource_version_;
};

}  // namespace gantry::kube
