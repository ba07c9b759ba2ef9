// Test/bench helper: builds a grammar Vocabulary from a HuggingFace
// tokenizer.json (optionally gzipped). Not part of the engine: the real
// vocabulary comes from the tokenizer module (TokenBytes(id)).
//
// Byte-level BPE tokens (GPT-2 alphabet, e.g. llama3, qwen) are mapped back
// to raw bytes; SentencePiece-style tokens get U+2581 -> ' ' and <0xHH> ->
// the byte. Added tokens marked "special" become special ids; ids named in
// `eos_tokens` (by content) become EOS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar::testing {

StatusOr<std::shared_ptr<const Vocabulary>> LoadTokenizerJson(const std::string& path,
                                                              const std::vector<std::string>& eos_tokens);

// GPT-2 byte-level alphabet: code point -> byte; false if not in it.
bool ByteLevelDecode(const std::string& utf8, std::string* bytes);

}  // namespace deepinfer::grammar::testing
