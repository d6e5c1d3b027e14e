// ChunkPool: chunks given back are handed out again (with their entries as left), new chunks hold
// default entries, and at most the bound is kept.
#include "framework/chunk_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace gantry {
namespace {

struct Entry {
  int id = -1;
  std::vector<int> list;
};

TEST(ChunkPool, GivenChunksAreReused) {
  using Pool = ChunkPool<Entry, 8, 2>;
  auto chunk = Pool::Take();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(chunk[i].id, -1);  // a new chunk: default entries
  Entry* first = chunk.get();
  chunk[3] = Entry{3, {3, 4}};
  Pool::Give(std::move(chunk));
  EXPECT_EQ(Pool::KeptCount(), 1u);
  auto again = Pool::Take();
  EXPECT_EQ(again.get(), first);  // the same chunk, its entries as left
  EXPECT_EQ(again[3].id, 3);
  EXPECT_EQ(again[3].list.size(), 2u);
  EXPECT_EQ(Pool::KeptCount(), 0u);
  Pool::Give(std::move(again));
}

TEST(ChunkPool, KeepsAtMostTheBound) {
  using Pool = ChunkPool<Entry, 4, 2>;
  auto a = Pool::Take();
  auto b = Pool::Take();
  auto c = Pool::Take();
  Pool::Give(std::move(a));
  Pool::Give(std::move(b));
  Pool::Give(std::move(c));
  EXPECT_EQ(Pool::KeptCount(), 2u);
}

}  // namespace
}  // namespace gantry
