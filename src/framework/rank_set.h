// RankSets: many sets of small non-negative integers (ranks below a fixed bound) in one flat
// pool, each a two-level bitset: inserting and erasing cost a few instructions, and the smallest
// member is found by scanning a handful of summary words. The session keeps the members of each
// class of equivalent nodes in one, by node name rank (the smallest is the class's
// representative).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace gantry {

class RankSets {
 public:
  // Forgets every set; ranks of later sets are below `bound`.
  void Reset(int32_t bound) {
    words_ = (bound + 63) / 64;
    summary_ = (words_ + 63) / 64;
    stride_ = summary_ + words_;
    bits_.clear();
    counts_.clear();
    mins_.clear();
  }
  // Adds an empty set; returns its index (0, 1, ...).
  int32_t Add() {
    bits_.resize(bits_.size() + static_cast<size_t>(stride_), 0);
    counts_.push_back(0);
    mins_.push_back(kUnknown);
    return static_cast<int32_t>(counts_.size()) - 1;
  }
  int32_t num_sets() const { return static_cast<int32_t>(counts_.size()); }
  // Inserts rank r (not a member yet) into set s.
  void Insert(int32_t s, int32_t r) {
    uint64_t* b = Base(s);
    const int32_t w = r >> 6;
    b[summary_ + w] |= uint64_t{1} << (r & 63);
    b[w >> 6] |= uint64_t{1} << (w & 63);
    int32_t& min = mins_[static_cast<size_t>(s)];
    if (counts_[static_cast<size_t>(s)]++ == 0 || (min != kUnknown && r < min)) min = r;
  }
  // Erases rank r (a member) from set s.
  void Erase(int32_t s, int32_t r) {
    uint64_t* b = Base(s);
    const int32_t w = r >> 6;
    uint64_t& word = b[summary_ + w];
    word &= ~(uint64_t{1} << (r & 63));
    if (word == 0) b[w >> 6] &= ~(uint64_t{1} << (w & 63));
    --counts_[static_cast<size_t>(s)];
    int32_t& min = mins_[static_cast<size_t>(s)];
    if (min == r) min = kUnknown;
  }
  int32_t Size(int32_t s) const { return counts_[static_cast<size_t>(s)]; }
  // The smallest member of set s, or -1 when it is empty. (Kept until that member is erased,
  // then found again from the bits.)
  int32_t Min(int32_t s) {
    int32_t& min = mins_[static_cast<size_t>(s)];
    if (min == kUnknown) min = ScanMin(s);
    return min;
  }

 private:
  static constexpr int32_t kUnknown = -2;
  int32_t ScanMin(int32_t s) const {
    const uint64_t* b = Base(s);
    for (int32_t i = 0; i < summary_; ++i) {
      if (b[i] == 0) continue;
      const int32_t w = i * 64 + std::countr_zero(b[i]);
      return w * 64 + std::countr_zero(b[summary_ + w]);
    }
    return -1;
  }
  uint64_t* Base(int32_t s) { return bits_.data() + static_cast<size_t>(s) * stride_; }
  const uint64_t* Base(int32_t s) const { return bits_.data() + static_cast<size_t>(s) * stride_; }
  int32_t words_ = 0;    // bitset words per set
  int32_t summary_ = 0;  // summary words per set (bit w: word w is not zero)
  int32_t stride_ = 0;   // summary_ + words_
  std::vector<uint64_t> bits_;
  std::vector<int32_t> counts_;
  std::vector<int32_t> mins_;  // per set: its smallest member, -1 (empty) or kUnknown
};

}  // namespace gantry
