// A per-thread pool of fixed-size chunks of default-constructed values.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace gantry {

// A per-thread free list of fixed-size arrays of N T's, so that structures built and dropped many
// times per cycle (the victims queues' entries) reuse the same chunks instead of allocating,
// constructing, destroying and freeing them each time.
//
// A chunk handed out by Take holds N valid T's of any values: those its last user left (the user
// resets an entry before using it). At most kMaxKept chunks are kept per thread; the others are
// freed.
template <typename T, size_t N, size_t kMaxKept>
class ChunkPool {
 public:
  // A chunk of N T's (default ones when new, left over when kept).
  static std::unique_ptr<T[]> Take() {
    auto* kept = Kept();
    if (kept == nullptr || kept->empty()) return std::make_unique<T[]>(N);
    std::unique_ptr<T[]> chunk = std::move(kept->back());
    kept->pop_back();
    return chunk;
  }
  // Takes back a chunk, its entries as they are.
  static void Give(std::unique_ptr<T[]> chunk) {
    auto* kept = Kept();
    if (!chunk || kept == nullptr || kept->size() >= kMaxKept) return;  // (freed here)
    kept->push_back(std::move(chunk));
  }
  // Chunks kept by this thread now.
  static size_t KeptCount() {
    const auto* kept = Kept();
    return kept == nullptr ? 0 : kept->size();
  }

 private:
  using Chunks = std::vector<std::unique_ptr<T[]>>;
  // This thread's kept chunks, or null once the thread's objects are being destroyed. (The
  // pointer is trivially destructible, so it can still be read when other thread-local objects
  // holding chunks are destroyed after the guard: their chunks are then simply freed.)
  static Chunks* Kept() {
    thread_local Chunks* kept = nullptr;
    thread_local bool ended = false;
    if (kept == nullptr && !ended) {
      struct Guard {
        ~Guard() {
          delete kept;
          kept = nullptr;
          ended = true;
        }
      };
      thread_local Guard guard;
      kept = new Chunks();
    }
    return kept;
  }
};

}  // namespace gantry
