// Keys ("namespace/name" or "name") reconciled by a pool of workers from a work queue (the
// binder's: a key at most once in the queue and on one worker at a time). A reconcile that hits
// a write conflict is retried after 100 ms (the watch has a newer object by then); one that fails
// is retried with exponential backoff (1 s doubling to 1 min, as KAI's controllers), and logged.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "binder/work_queue.h"

namespace gantry::statusctl {

struct ReconcileOutcome {
  enum Kind { kDone, kConflict, kFailed } kind = kDone;
  std::string error;  // kFailed: what failed, naming the object
};

// The key each watched object was last filed under (a pod's PodGroup, a PodGroup's queue, a
// queue's parent), so that when an object moves, or is deleted, the one it left is reconciled
// too. Thread-safe.
class FiledUnder {
 public:
  // The keys to reconcile after an event of `object` (its key), now filed under `owner` ("" for
  // none, or when `deleted`): `owner` and the one it was filed under before, if different.
  std::vector<std::string> Update(const std::string& object, const std::string& owner,
                                  bool deleted);

 private:
  std::mutex mu_;
  std::map<std::string, std::string> owner_of_;
};

class KeyWorkers {
 public:
  using Reconcile = std::function<ReconcileOutcome(const std::string& key)>;
  KeyWorkers(std::string log_prefix, Reconcile reconcile);
  ~KeyWorkers();

  void Add(const std::string& key) { queue_.Add(key); }
  void Start(int workers);
  // Shuts the queue down and joins the workers. Idempotent.
  void Stop();

 private:
  void Work();

  std::string log_prefix_;
  Reconcile reconcile_;
  binder::WorkQueue queue_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::map<std::string, int> failures_;
};

}  // namespace gantry::statusctl
