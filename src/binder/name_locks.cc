#include "binder/name_locks.h"

namespace gantry::binder {

void NameLocks::Lock(const std::string& name) {
  std::unique_lock<std::mutex> lock(mu_);
  std::unique_ptr<Slot>& slot = slots_[name];
  if (slot == nullptr) slot = std::make_unique<Slot>();
  Slot& s = *slot;  // stays put: a slot with waiters or a holder is never erased
  ++s.waiters;
  s.cv.wait(lock, [&] { return !s.held; });
  --s.waiters;
  s.held = true;
}

bool NameLocks::TryLock(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Slot>& slot = slots_[name];
  if (slot == nullptr) slot = std::make_unique<Slot>();
  if (slot->held) return false;
  slot->held = true;
  return true;
}

void NameLocks::Unlock(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(name);
  if (it == slots_.end()) return;
  Slot& s = *it->second;
  s.held = false;
  if (s.waiters > 0) {
    s.cv.notify_one();  // under the lock: the slot outlives the call
  } else {
    slots_.erase(it);
  }
}

}  // namespace gantry::binder
