// SharedList: an immutable list that pods carrying the same one hold once, and the pool that
// makes them share it.
//
// Most pods of a cluster carry the same few lists: the two NoExecute tolerations every pod gets
// from admission, the kube-root-ca.crt ConfigMap of the service-account volume. Held as a
// std::vector per pod they cost about 400 bytes of heap each; at a million pods, 0.4 GiB of the
// watch cache and as much again in every model it assembles. A SharedList holds a pointer to one
// list; copying a pod copies the pointer.
//
// It reads like a const std::vector (range-for, size, empty, [], front, back, == with a vector).
// Writing to it (Mutable, push_back, clear, assigning a vector) gives this holder a list of its
// own first when another holder shares it, so no other holder ever sees the change. Holders share
// a list only when something made them share it: copies of one holder, or SharedListPool::Intern.
// Like a std::vector, one holder is not written and read from two threads at once; holders of
// one list on different threads are independent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gantry {

template <typename T>
class SharedList {
 public:
  // The standard container names, which range-for and test matchers look for. Elements are
  // never written in place, so `iterator` is the const one.
  // NOLINTBEGIN(readability-identifier-naming)
  using value_type = T;
  using const_iterator = typename std::vector<T>::const_iterator;
  using iterator = const_iterator;
  // NOLINTEND(readability-identifier-naming)

  SharedList() = default;
  SharedList(std::vector<T> items)  // NOLINT(google-explicit-constructor): reads as a vector
      : block_(items.empty() ? nullptr : new Block(std::move(items))) {}
  SharedList(std::initializer_list<T> items) : SharedList(std::vector<T>(items)) {}
  SharedList(const SharedList& other) : block_(other.block_) { Retain(block_); }
  SharedList(SharedList&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  SharedList& operator=(const SharedList& other) {
    if (this == &other) return *this;
    Retain(other.block_);
    Release(block_);
    block_ = other.block_;
    return *this;
  }
  SharedList& operator=(SharedList&& other) noexcept {
    if (this != &other) {
      Release(block_);
      block_ = std::exchange(other.block_, nullptr);
    }
    return *this;
  }
  ~SharedList() { Release(block_); }

  // The list, as a vector (an empty one when there is none).
  const std::vector<T>& items() const { return block_ ? block_->items : Empty(); }

  const_iterator begin() const { return items().begin(); }
  const_iterator end() const { return items().end(); }
  size_t size() const { return block_ ? block_->items.size() : 0; }
  bool empty() const { return size() == 0; }
  const T& operator[](size_t i) const { return block_->items[i]; }
  const T& front() const { return block_->items.front(); }
  const T& back() const { return block_->items.back(); }

  // Writes: this holder's own list changes, never one another holder shares (a shared list is
  // copied first).
  std::vector<T>& Mutable() {
    if (block_ == nullptr) {
      block_ = new Block({});
    } else if (UseCount() > 1) {
      Block* own = new Block(block_->items);
      Release(block_);
      block_ = own;
    }
    return block_->items;
  }
  void push_back(T item) { Mutable().push_back(std::move(item)); }
  void clear() {
    Release(block_);
    block_ = nullptr;
  }

  // Whether this holder and `other` hold the very same list (not merely equal ones).
  bool SharesWith(const SharedList& other) const { return block_ == other.block_; }

  friend bool operator==(const SharedList& a, const SharedList& b) {
    return a.block_ == b.block_ || a.items() == b.items();
  }
  friend bool operator==(const SharedList& a, const std::vector<T>& b) { return a.items() == b; }

 private:
  template <typename U, typename H>
  friend class SharedListPool;

  // The list and how many holders it has. A holder is one pointer (8 bytes; a std::shared_ptr
  // would be 16), which is what lets a pod's converted record fit a smaller allocation (see
  // cache/watch_cache.h, Entry).
  struct Block {
    explicit Block(std::vector<T> v) : items(std::move(v)) {}
    std::atomic<uint32_t> holders{1};
    std::vector<T> items;
  };
  static void Retain(Block* b) {
    if (b != nullptr) b->holders.fetch_add(1, std::memory_order_relaxed);
  }
  static void Release(Block* b) {
    if (b != nullptr && b->holders.fetch_sub(1, std::memory_order_acq_rel) == 1) delete b;
  }
  // The holders of this holder's list (0 for none). 1 means no other holder: nothing can start
  // sharing it but through this one, so it may be written in place.
  uint32_t UseCount() const {
    return block_ == nullptr ? 0 : block_->holders.load(std::memory_order_acquire);
  }
  static const std::vector<T>& Empty() {
    static const std::vector<T> none;
    return none;
  }
  Block* block_ = nullptr;  // null: empty
};

// An optional value held out of line and shared by copies, for values most holders leave unset:
// 8 bytes where a std::optional would hold the whole value. Reads like a const std::optional.
template <typename T>
class SharedOptional {
 public:
  SharedOptional() = default;
  SharedOptional(std::optional<T> value)  // NOLINT(google-explicit-constructor): as optional
      : list_(value ? SharedList<T>(std::vector<T>{std::move(*value)}) : SharedList<T>()) {}
  bool has_value() const { return !list_.empty(); }
  explicit operator bool() const { return has_value(); }
  const T& operator*() const { return list_.front(); }
  const T* operator->() const { return &list_.front(); }
  std::optional<T> ToOptional() const {
    return has_value() ? std::optional<T>(list_.front()) : std::nullopt;
  }
  friend bool operator==(const SharedOptional& a, const SharedOptional& b) {
    return a.list_ == b.list_;
  }

 private:
  SharedList<T> list_;  // none or one
};

// Makes equal lists one: Intern(list) gives a holder of the pool's copy of an equal list, adding
// `list` as that copy when the pool has none. `Hash` hashes one element. Not thread-safe: the
// owner serializes calls (the watch cache calls it under its lock). Lists no holder outside the
// pool uses any more are dropped as the pool grows (the pool never holds more than twice the
// lists in use after its last sweep, plus a few).
template <typename T, typename Hash>
class SharedListPool {
 public:
  SharedList<T> Intern(SharedList<T> list) {
    if (list.empty()) return SharedList<T>();
    const size_t h = HashOf(list.items());
    auto [lo, hi] = lists_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      if (it->second.items() == list.items()) return it->second;
    }
    if (lists_.size() >= sweep_at_) Sweep();
    lists_.emplace(h, list);
    return list;
  }
  size_t size() const { return lists_.size(); }

 private:
  static size_t HashOf(const std::vector<T>& items) {
    size_t h = items.size();
    for (const T& item : items) h = h * 1'000'003u ^ Hash {}(item);
    return h;
  }
  // Drops the lists only the pool holds.
  void Sweep() {
    for (auto it = lists_.begin(); it != lists_.end();) {
      it = it->second.UseCount() == 1 ? lists_.erase(it) : std::next(it);
    }
    sweep_at_ = 2 * lists_.size() + 64;
  }
  std::unordered_multimap<size_t, SharedList<T>> lists_;
  size_t sweep_at_ = 64;
};

// Hashes a pair of strings (a label), for SharedListPool.
struct StringPairHash {
  size_t operator()(const std::pair<std::string, std::string>& p) const {
    const std::hash<std::string> h;
    return h(p.first) * 31 + h(p.second);
  }
};

}  // namespace gantry
