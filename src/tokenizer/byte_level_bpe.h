// GPT-2-style byte-level BPE (GGUF "gpt2" vocabularies and HF tokenizer.json
// model BPE), as llama.cpp and HF tokenizers do it. Internal to src/tokenizer.
//
// A fragment is cut into pre-tokens by the PreTokenizer (already mapped to the
// byte alphabet). Each pre-token starts as one symbol per byte; the adjacent
// pair with the lowest merge rank is merged until no pair has a rank (ties:
// leftmost pair). With ignore_merges a pre-token that is itself a token is
// emitted whole first (llama3).
// Merges are keyed by the two token ids (one hash lookup per candidate pair,
// no string building); cost is O(n log n) per pre-token.
// Thread-safe: Encode is const and keeps its state on the stack.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/piece_index.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

class ByteLevelBpeEncoder {
 public:
  // Parses data.merges ("a b") against `index`; builds the pre-tokenizer from
  // data.pre_steps, or from data.pre when there are none. `data` (validated
  // by Tokenizer::Create) and `index` must outlive the encoder.
  // InvalidArgument on a malformed merge or regex.
  static StatusOr<std::unique_ptr<ByteLevelBpeEncoder>> Create(const TokenizerData& data,
                                                               const PieceIndex& index);

  // Encodes one raw-text fragment (special tokens already split off).
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

 private:
  ByteLevelBpeEncoder(const PieceIndex& index, PreTokenizer pre) : index_(index), pre_(std::move(pre)) {}
  void EncodeWord(const std::string& word, std::vector<int32_t>* out) const;

  const PieceIndex& index_;
  PreTokenizer pre_;
  bool ignore_merges_ = false;
  const std::vector<TokenType>* types_ = nullptr;  // data.types (outlives the encoder)
  MergeTable merges_;
  std::array<int32_t, 256> byte_tokens_{};  // byte -> id of its alphabet character (-1 if absent)
};

}  // namespace deepinfer
