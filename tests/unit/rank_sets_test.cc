// RankSets (the members of each node class by name rank) against a std::set model under random
// inserts and erases: sizes and smallest members must agree after every step.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "framework/rank_set.h"

namespace gantry {
namespace {

TEST(RankSets, EmptySetHasNoMin) {
  RankSets sets;
  sets.Reset(100);
  const int32_t s = sets.Add();
  EXPECT_EQ(sets.Size(s), 0);
  EXPECT_EQ(sets.Min(s), -1);
  sets.Insert(s, 99);
  EXPECT_EQ(sets.Min(s), 99);
  sets.Erase(s, 99);
  EXPECT_EQ(sets.Min(s), -1);
}

TEST(RankSets, MatchesOrderedSetsUnderRandomMoves) {
  // Bounds around word and summary-word edges (64, 4096) and a cluster-sized one.
  for (int32_t bound : {1, 63, 64, 65, 4096, 4097, 5000, 9000}) {
    std::mt19937_64 rng(static_cast<uint64_t>(bound));
    RankSets sets;
    sets.Reset(bound);
    constexpr int kSets = 7;
    std::vector<std::set<int32_t>> model(kSets);
    for (int i = 0; i < kSets; ++i) ASSERT_EQ(sets.Add(), i);
    // Every rank lives in one set at a time (as a node in one class); moves go to random sets,
    // biased towards taking a set's smallest member away (the representative changes).
    std::vector<int32_t> where(static_cast<size_t>(bound));
    for (int32_t r = 0; r < bound; ++r) {
      where[static_cast<size_t>(r)] = static_cast<int32_t>(rng() % kSets);
      sets.Insert(where[static_cast<size_t>(r)], r);
      model[static_cast<size_t>(where[static_cast<size_t>(r)])].insert(r);
    }
    for (int step = 0; step < 4000; ++step) {
      int32_t r = static_cast<int32_t>(rng() % static_cast<uint64_t>(bound));
      if (rng() % 2 == 0) {
        const auto& from = model[rng() % kSets];
        if (!from.empty()) r = *from.begin();
      }
      const int32_t old = where[static_cast<size_t>(r)];
      const auto to = static_cast<int32_t>(rng() % kSets);
      sets.Erase(old, r);
      model[static_cast<size_t>(old)].erase(r);
      // Ask between erase and insert too: a stale smallest member must not survive.
      ASSERT_EQ(sets.Min(old), model[static_cast<size_t>(old)].empty()
                                   ? -1
                                   : *model[static_cast<size_t>(old)].begin());
      sets.Insert(to, r);
      model[static_cast<size_t>(to)].insert(r);
      where[static_cast<size_t>(r)] = to;
      for (int s = 0; s < kSets; ++s) {
        const auto& m = model[static_cast<size_t>(s)];
        ASSERT_EQ(sets.Size(s), static_cast<int32_t>(m.size())) << "bound " << bound;
        ASSERT_EQ(sets.Min(s), m.empty() ? -1 : *m.begin()) << "bound " << bound << " set " << s;
      }
    }
  }
}

}  // namespace
}  // namespace gantry
