// The vocabulary of `deepinfer synth` models: a GPT-2 style byte-level BPE
// learnt deterministically from a small built-in English text.
//
// Layout: 0 <unk>, 1 <s> (BOS), 2 </s> (EOS), 3..258 the 256 byte tokens
// (byte b is token 3 + b, spelt with GPT-2's byte-to-code-point map), then
// one token per learnt merge, then "<unused_N>" fillers up to the requested
// size. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepinfer {

struct SynthVocab {
  std::vector<std::string> tokens;   // byte-level spelling (space is "Ġ")
  std::vector<int32_t> token_types;  // llama.cpp: 1 normal, 2 unknown, 3 control, 5 unused
  std::vector<std::string> merges;   // "left right", highest priority first
  int32_t unk_id = 0, bos_id = 1, eos_id = 2;
};

// Token types as llama.cpp's gguf `tokenizer.ggml.token_type` defines them.
inline constexpr int32_t kTokenNormal = 1, kTokenUnknown = 2, kTokenControl = 3, kTokenUnused = 5;

// GPT-2's printable spelling of one byte, as UTF-8 (e.g. ' ' -> "Ġ", '\n' -> "Ċ").
std::string ByteLevelSpelling(uint8_t byte);

// vocab_size must be >= 259. Merges stop early when no pair occurs twice in
// the training text; the rest is filled with unused tokens.
SynthVocab BuildSynthVocab(int64_t vocab_size);

// The HF tokenizer.json text for `v` (BPE model, ByteLevel pre-tokenizer and
// decoder, BOS prepended by the post-processor).
std::string SynthTokenizerJson(const SynthVocab& v);

}  // namespace deepinfer
