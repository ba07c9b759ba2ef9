// Vocabulary: what the grammar engine needs to know about a tokenizer.
//
// Token id -> the raw bytes it decodes to (byte-fallback tokens are single
// bytes, byte-level BPE tokens already mapped back to bytes), plus the ids
// that end generation (EOS). Special/control tokens listed as `special_ids`
// and tokens with no bytes are never allowed by a mask; EOS ids are allowed
// exactly when the grammar can end.
//
// Built once per tokenizer; immutable; safe to share across threads. The
// tokenizer module provides the bytes; this type does not depend on it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::grammar {

class Vocabulary {
 public:
  Vocabulary(std::vector<std::string> token_bytes, const std::vector<int32_t>& eos_ids,
             const std::vector<int32_t>& special_ids = {});

  size_t size() const { return tokens_.size(); }
  const std::string& token(int32_t id) const { return tokens_[id]; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < size() && is_eos_[id]; }
  // Non-special, non-EOS token with at least one byte.
  bool is_maskable(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < size() && maskable_[id]; }

  // Maskable tokens (non-special, non-empty) sorted by bytes: walking them
  // in this order with a stack of parser states shares common prefixes,
  // which is a walk of the vocabulary trie. sorted_lcp()[i] is the length
  // of the common prefix of sorted token i and i-1 (0 for i = 0).
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }
  const std::vector<uint16_t>& sorted_lcp() const { return sorted_lcp_; }
  // Bytes of sorted token i, from one contiguous buffer in sorted order (a
  // trie walk then reads memory sequentially instead of chasing 128k strings).
  std::string_view sorted_token(uint32_t i) const {
    return std::string_view(sorted_bytes_.data() + sorted_offset_[i],
                            sorted_offset_[i + 1] - sorted_offset_[i]);
  }
  size_t max_token_length() const { return max_len_; }

  // Trie nodes, so a mask walk can treat a whole subtree at once. Every
  // prefix (length >= 1) of a maskable token is a node, numbered by the
  // sorted token that first has it: node(i, len) for sorted_lcp()[i] < len
  // <= length of sorted token i. Its subtree is the sorted tokens
  // [i, node_end(node)) (sorted order is trie preorder), and
  // node_bytes_below(node) is the 256-bit set of the bytes that follow the
  // prefix in them (empty when no token extends it).
  uint32_t node(uint32_t i, size_t prefix_len) const {
    return node_base_[i] + static_cast<uint32_t>(prefix_len - sorted_lcp_[i] - 1);
  }
  uint32_t node_end(uint32_t node) const { return node_end_[node]; }
  const uint64_t* node_bytes_below(uint32_t node) const { return &node_below_[size_t{node} * 4]; }

  // Stable hash of the contents, for compile-cache keys.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  std::vector<std::string> tokens_;
  std::vector<int32_t> eos_ids_;
  std::vector<uint8_t> is_eos_;
  std::vector<uint8_t> maskable_;
  std::vector<int32_t> sorted_ids_;
  void BuildTrie();

  std::vector<uint16_t> sorted_lcp_;
  std::string sorted_bytes_;
  std::vector<uint32_t> sorted_offset_;  // [sorted_ids_.size() + 1]
  size_t max_len_ = 0;
  std::vector<uint32_t> node_base_;   // [sorted_ids_.size()]
  std::vector<uint32_t> node_end_;    // [num nodes]
  std::vector<uint64_t> node_below_;  // [num nodes * 4]
  uint64_t fingerprint_ = 0;
};

}  // namespace deepinfer::grammar
