#include "sampling/token_bitmask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/token_constraint.h"

namespace deepinfer {
namespace {

std::vector<int32_t> SetIds(const TokenBitmask& m) {
  std::vector<int32_t> ids;
  m.ForEachSet([&](int32_t id) { ids.push_back(id); });
  return ids;
}

TEST(TokenBitmaskTest, WordsForRoundsUp) {
  EXPECT_EQ(TokenBitmask::WordsFor(0), 0u);
  EXPECT_EQ(TokenBitmask::WordsFor(1), 1u);
  EXPECT_EQ(TokenBitmask::WordsFor(32), 1u);
  EXPECT_EQ(TokenBitmask::WordsFor(33), 2u);
  EXPECT_EQ(TokenBitmask::WordsFor(64), 2u);
  EXPECT_EQ(TokenBitmask::WordsFor(65), 3u);
  EXPECT_EQ(TokenBitmask::WordsFor(128256), 4008u);
}

TEST(TokenBitmaskTest, StartsClear) {
  TokenBitmask m(70);
  EXPECT_EQ(m.size(), 70u);
  EXPECT_EQ(m.num_words(), 3u);
  EXPECT_EQ(m.count(), 0u);
  for (int32_t id = 0; id < 70; ++id) EXPECT_FALSE(m.Test(id)) << id;
  EXPECT_TRUE(TokenBitmask().empty());
}

// Bit (id % 32) of word (id / 32), checked against hand-computed words at the
// word boundaries.
TEST(TokenBitmaskTest, LayoutAtWordBoundaries) {
  TokenBitmask m(100);
  for (int32_t id : {0, 5, 31, 32, 63, 64, 99}) m.Set(id);
  EXPECT_EQ(m.words()[0], 0x80000021u);  // ids 0, 5, 31
  EXPECT_EQ(m.words()[1], 0x80000001u);  // ids 32, 63
  EXPECT_EQ(m.words()[2], 0x00000001u);  // id 64
  EXPECT_EQ(m.words()[3], 0x00000008u);  // id 99 = 3 * 32 + 3
  EXPECT_EQ(m.count(), 7u);
  EXPECT_EQ(SetIds(m), (std::vector<int32_t>{0, 5, 31, 32, 63, 64, 99}));
  EXPECT_TRUE(m.Test(31));
  EXPECT_TRUE(m.Test(32));
  EXPECT_FALSE(m.Test(30));
  EXPECT_FALSE(m.Test(33));
  EXPECT_FALSE(m.Test(62));
  EXPECT_FALSE(m.Test(65));

  m.Clear(31);
  m.Clear(64);
  m.Clear(64);  // clearing a clear bit is a no-op
  EXPECT_EQ(m.words()[0], 0x00000021u);
  EXPECT_EQ(m.words()[2], 0u);
  EXPECT_EQ(m.count(), 5u);
  m.Set(0);  // setting a set bit is a no-op
  EXPECT_EQ(m.count(), 5u);
}

// SetAll sets exactly [0, size()): the tail bits of the last word stay clear,
// so count() and word-wise unions are exact.
TEST(TokenBitmaskTest, SetAllLeavesTailClear) {
  for (size_t n : {1u, 31u, 32u, 33u, 63u, 64u, 65u, 100u}) {
    TokenBitmask m(n);
    m.SetAll();
    EXPECT_EQ(m.count(), n) << n;
    for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) ASSERT_TRUE(m.Test(id)) << n << " " << id;
    const uint32_t tail = n % 32 == 0 ? ~0u : (1u << (n % 32)) - 1;
    EXPECT_EQ(m.words()[m.num_words() - 1], tail) << n;
    m.ClearAll();
    EXPECT_EQ(m.count(), 0u) << n;
  }
  TokenBitmask m(100);
  m.SetAll();
  EXPECT_EQ(m.words()[3], 0xFu);  // ids 96..99
}

TEST(TokenBitmaskTest, UnionAndReset) {
  TokenBitmask a(40), b(40);
  a.Set(1);
  a.Set(33);
  b.Set(33);
  b.Set(39);
  a.Union(b);
  EXPECT_EQ(SetIds(a), (std::vector<int32_t>{1, 33, 39}));
  EXPECT_EQ(SetIds(b), (std::vector<int32_t>{33, 39}));
  a.Reset(10);
  EXPECT_EQ(a.size(), 10u);
  EXPECT_EQ(a.num_words(), 1u);
  EXPECT_EQ(a.count(), 0u);
}

// CopyCommon between a tokenizer-sized and a model-sized mask, both ways.
TEST(TokenBitmaskTest, CopyCommonTruncatesAndPads) {
  TokenBitmask tokenizer(70);
  for (int32_t id : {0, 31, 32, 63, 64, 69}) tokenizer.Set(id);

  TokenBitmask model(100);
  model.SetAll();  // stale bits must not survive
  model.CopyCommon(tokenizer);
  EXPECT_EQ(SetIds(model), (std::vector<int32_t>{0, 31, 32, 63, 64, 69}));

  TokenBitmask small(40);
  small.CopyCommon(tokenizer);
  EXPECT_EQ(SetIds(small), (std::vector<int32_t>{0, 31, 32}));
  EXPECT_EQ(small.words()[1], 1u);  // ids >= 40 of word 1 dropped

  TokenBitmask exact(64);
  exact.CopyCommon(tokenizer);
  EXPECT_EQ(SetIds(exact), (std::vector<int32_t>{0, 31, 32, 63}));
}

TEST(TokenBitmaskTest, EqualityComparesSizeAndBits) {
  TokenBitmask a(33), b(33), c(34);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  a.Set(32);
  EXPECT_FALSE(a == b);
  b.Set(32);
  EXPECT_EQ(a, b);
}

// The sampler's mask application: -inf exactly where the bit is clear, the
// other logits untouched (a vocabulary that is not a multiple of 32).
TEST(TokenBitmaskTest, ApplyAllowedMaskMasksClearIds) {
  const size_t vocab = 45;
  TokenBitmask m(vocab);
  for (int32_t id : {0, 31, 32, 44}) m.Set(id);
  std::vector<float> logits(vocab + 1);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i);
  ApplyAllowedMask(m, logits.data());
  for (int32_t id = 0; id < static_cast<int32_t>(vocab); ++id) {
    if (m.Test(id)) {
      EXPECT_EQ(logits[id], static_cast<float>(id)) << id;
    } else {
      EXPECT_TRUE(std::isinf(logits[id]) && logits[id] < 0) << id;
    }
  }
  EXPECT_EQ(logits[vocab], static_cast<float>(vocab));  // past the mask: untouched
}

}  // namespace
}  // namespace deepinfer
