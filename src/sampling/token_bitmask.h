// TokenBitmask: one bit per token id of a vocabulary, the layout every
// structured-output mask uses (grammar masks, cached per-position masks, the
// sampler's allowed set).
//
// Layout: ceil(size() / 32) uint32 words; bit (id % 32) of word (id / 32) is
// set iff token id is in the set. Bits past size() in the last word are always
// clear (SetAll keeps them clear), so word-wise Union and count() are exact
// and a word loop never has to special-case the tail.
//
// A value type: owns its words, copyable and movable. Not thread-safe.
// Preconditions (unchecked, hot paths): ids passed to Test/Set/Clear lie in
// [0, size()); Union's argument has the same size().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace deepinfer {

class TokenBitmask {
 public:
  // Words of a mask over `num_tokens` ids.
  static constexpr size_t WordsFor(size_t num_tokens) { return (num_tokens + 31) / 32; }

  TokenBitmask() = default;
  // All clear.
  explicit TokenBitmask(size_t num_tokens) : size_(num_tokens), words_(WordsFor(num_tokens), 0) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t num_words() const { return words_.size(); }

  bool Test(int32_t id) const { return (words_[Word(id)] >> Bit(id)) & 1u; }
  void Set(int32_t id) { words_[Word(id)] |= uint32_t{1} << Bit(id); }
  void Clear(int32_t id) { words_[Word(id)] &= ~(uint32_t{1} << Bit(id)); }
  // Every id in [0, size()).
  void SetAll() {
    std::fill(words_.begin(), words_.end(), ~uint32_t{0});
    if (const size_t tail = size_ % 32; tail != 0) words_.back() = (uint32_t{1} << tail) - 1;
  }
  void ClearAll() { std::fill(words_.begin(), words_.end(), uint32_t{0}); }
  // Resizes to `num_tokens` ids, all clear (keeps the allocation when it fits).
  void Reset(size_t num_tokens) {
    size_ = num_tokens;
    words_.assign(WordsFor(num_tokens), 0);
  }

  // this |= other.
  void Union(const TokenBitmask& other) {
    uint32_t* dst = words_.data();
    const uint32_t* src = other.words_.data();
    for (size_t w = 0, n = words_.size(); w < n; ++w) dst[w] |= src[w];
  }
  // Bit id = other.Test(id) for the ids both masks have; the rest are clear.
  // For masks over vocabularies of different sizes (a model's logit rows vs
  // its tokenizer's ids).
  void CopyCommon(const TokenBitmask& other) {
    ClearAll();
    const size_t common = std::min(size_, other.size_);
    std::memcpy(words_.data(), other.words_.data(), (common / 32) * sizeof(uint32_t));
    if (const size_t tail = common % 32; tail != 0) {
      words_[common / 32] = other.words_[common / 32] & ((uint32_t{1} << tail) - 1);
    }
  }

  // Number of ids in the set.
  size_t count() const {
    size_t n = 0;
    for (uint32_t w : words_) n += static_cast<size_t>(__builtin_popcount(w));
    return n;
  }
  // Calls f(id) for every id in the set, ascending.
  template <typename F>
  void ForEachSet(F&& f) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      for (uint32_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        f(static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits))));
      }
    }
  }

  // Raw words (num_words() of them, layout above) for word-at-a-time loops.
  // A writer must keep the bits past size() clear.
  uint32_t* words() { return words_.data(); }
  const uint32_t* words() const { return words_.data(); }

  friend bool operator==(const TokenBitmask& a, const TokenBitmask& b) {
    return a.size_ == b.size_ && a.words_ == b.words_;
  }

 private:
  static size_t Word(int32_t id) { return static_cast<size_t>(id) >> 5; }
  static uint32_t Bit(int32_t id) { return static_cast<uint32_t>(id) & 31u; }

  size_t size_ = 0;
  std::vector<uint32_t> words_;
};

}  // namespace deepinfer
