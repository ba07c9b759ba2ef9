// Splits text around special / added tokens before the BPE algorithms run.
// Internal to src/tokenizer.
//
// Which tokens take part (llama.cpp's rule, which also matches HF, where
// non-special added tokens are always extracted):
//   kUserDefined                -> always
//   kControl, kUnknown          -> only when parse_special
// Matching is leftmost-longest over a byte trie, so "<|im_end|>" wins over a
// shorter token that is its prefix. Thread-safe after construction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace deepinfer {

class SpecialTokenMatcher {
 public:
  // One piece of the partitioned text: either a matched token or raw text.
  struct Fragment {
    int32_t token = -1;     // >= 0: a matched special token
    std::string_view text;  // token < 0: raw text (never empty)
  };

  SpecialTokenMatcher() = default;
  // Uses data.pieces, data.types, data.lstrip_ids and data.rstrip_ids (ids
  // already validated).
  explicit SpecialTokenMatcher(const TokenizerData& data);

  // Appends the fragments of `text`, in order, to *out.
  void Partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Match {
    size_t length = 0;
    uint32_t node = 0;  // terminal node of the match; 0: no match
  };
  // Longest token starting at text[pos] that is enabled for parse_special.
  Match LongestAt(std::string_view text, size_t pos, bool parse_special) const;

  // Trie over token bytes: key (node << 8 | byte) -> child node. Node 0 is the root.
  std::unordered_map<uint64_t, uint32_t> children_;
  struct Terminal {
    int32_t token = -1;
    bool always = false;  // user-defined: matched even without parse_special
    bool lstrip = false;  // drop ASCII whitespace before the match
    bool rstrip = false;  // drop ASCII whitespace after the match
  };
  std::vector<Terminal> terminals_{Terminal{}};  // node -> token ending there
  bool first_byte_[256] = {};                    // quick reject for the common case
};

}  // namespace deepinfer
