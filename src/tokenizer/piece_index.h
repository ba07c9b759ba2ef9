// Flat hash tables for the encoders' hot lookups. Internal to src/tokenizer.
//
// Node-based std::unordered_map costs an allocation per entry and two or three
// cache misses per lookup; with 128k-token vocabularies and 280k merges that
// dominated tokenizer load time. Both tables here are built once, never
// erased from, and use linear probing over a power-of-two array.
// Thread-safety: const lookups may run concurrently; building is not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer {

// Token text -> id. Stores only ids (and a hash tag); the texts stay in the
// caller's vector, which must outlive the index and not change.
class PieceIndex {
 public:
  PieceIndex() = default;
  // Indexes pieces[i] -> i for every non-empty piece; on duplicate texts the
  // highest id wins (llama.cpp's behaviour).
  explicit PieceIndex(const std::vector<std::string>* pieces) : pieces_(pieces) {
    size_t capacity = 16;
    while (capacity < pieces->size() * 2) capacity <<= 1;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (size_t id = 0; id < pieces->size(); ++id) {
      const std::string& piece = (*pieces)[id];
      if (piece.empty()) continue;
      const uint64_t h = Hash(piece);
      size_t i = h & mask_;
      while (slots_[i].id >= 0 && !(slots_[i].tag == Tag(h) && (*pieces_)[slots_[i].id] == piece)) {
        i = (i + 1) & mask_;
      }
      slots_[i] = Slot{static_cast<int32_t>(id), Tag(h)};
    }
  }

  // -1 when `text` is not a token.
  int32_t Find(std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t h = Hash(text);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == Tag(h) && (*pieces_)[s.id] == text) return s.id;
    }
  }

 private:
  struct Slot {
    int32_t id = -1;
    uint32_t tag = 0;  // high hash bits: most mismatches are rejected without touching the text
  };
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  static uint32_t Tag(uint64_t h) { return static_cast<uint32_t>(h >> 32); }

  const std::vector<std::string>* pieces_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

inline int32_t FindPiece(const PieceIndex& index, std::string_view text) { return index.Find(text); }

// (left id, right id) -> merge rank and merged id, for byte-level BPE.
class MergeTable {
 public:
  struct Merge {
    int32_t rank = -1;
    int32_t result = -1;
  };

  void Reserve(size_t n) {
    size_t capacity = 16;
    while (capacity < n * 2) capacity <<= 1;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
  }
  // Keeps the first insertion of a pair (the lowest rank). Reserve first.
  void Insert(int32_t left, int32_t right, Merge merge) {
    const uint64_t key = Key(left, right);
    for (size_t i = Mix(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].merge.rank < 0) {
        slots_[i] = Slot{key, merge};
        return;
      }
      if (slots_[i].key == key) return;
    }
  }
  // nullptr when the pair does not merge.
  const Merge* Find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = Key(left, right);
    for (size_t i = Mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.merge.rank < 0) return nullptr;
      if (s.key == key) return &s.merge;
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Merge merge;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t Mix(uint64_t x) {  // splitmix64 finalizer: ids are dense, so spread them
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace deepinfer
