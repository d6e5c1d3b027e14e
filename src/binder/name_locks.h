// Exclusive use of names (nodes, GPU groups) between the binder's threads: one holder per name,
// the others wait. Each name wakes only its own waiters, since contention comes in runs on one
// name (binds to a node the scheduler is filling) while other names go on.
//
//   NameLocks locks;
//   {
//     NameLock held(locks, "node-1");   // waits while another thread holds node-1
//     ...
//   }
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gantry::binder {

class NameLocks {
 public:
  void Lock(const std::string& name);
  // Takes `name` if nobody holds it; false (and nothing taken) otherwise.
  bool TryLock(const std::string& name);
  void Unlock(const std::string& name);

 private:
  struct Slot {
    bool held = false;
    int waiters = 0;
    std::condition_variable cv;
  };
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Slot>> slots_;  // names held or awaited
};

// Holds one name of a NameLocks while alive.
class NameLock {
 public:
  NameLock(NameLocks& locks, std::string name) : locks_(locks), name_(std::move(name)) {
    locks_.Lock(name_);
  }
  ~NameLock() { locks_.Unlock(name_); }
  NameLock(const NameLock&) = delete;
  NameLock& operator=(const NameLock&) = delete;

 private:
  NameLocks& locks_;
  std::string name_;
};

}  // namespace gantry::binder
