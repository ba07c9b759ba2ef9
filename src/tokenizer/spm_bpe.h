// SentencePiece-style BPE ("llama" vocabularies in GGUF), as llama.cpp's SPM
// tokenizer does it. Internal to src/tokenizer.
//
// Algorithm: the fragment's spaces become U+2581 (after an optional leading
// space), the text is cut into UTF-8 characters, then the adjacent pair whose
// concatenation is a vocabulary token with the highest score is merged until
// no pair is a token. Ties go to the leftmost pair. Symbols that are not
// tokens (characters missing from the vocabulary) fall back to <0xXX> byte
// tokens, or to the unknown token when the vocabulary has no byte tokens.
// Cost: O(n log n) in the fragment length (a heap of candidate pairs over a
// linked list of symbols). Thread-safe: Encode is const and keeps its state on
// the stack.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/piece_index.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

class SpmBpeEncoder {
 public:
  // `data` and `index` must outlive the encoder.
  SpmBpeEncoder(const TokenizerData& data, const PieceIndex& index);

  // Encodes one raw-text fragment. add_space_prefix: prepend one space
  // (llama.cpp does this for a fragment at the start or after a special token).
  void Encode(std::string_view text, bool add_space_prefix, std::vector<int32_t>* out) const;

 private:
  void EmitSymbol(std::string_view text, std::vector<int32_t>* out) const;

  const TokenizerData& data_;
  const PieceIndex& index_;
  std::array<int32_t, 256> byte_tokens_;  // byte -> <0xXX> id (or the 1-char token, or unk)
};

}  // namespace deepinfer
