// Tokenizer: text <-> token ids, exactly as the checkpoint's reference
// tokenizer does it (llama.cpp / HF tokenizers).
//
// Two algorithms:
//  - kSentencePieceBpe: SentencePiece-style BPE ("llama" in GGUF): spaces
//    become U+2581, pieces merge by score, unknown bytes fall back to <0xXX>.
//  - kByteLevelBpe: GPT-2-style byte-level BPE ("gpt2" in GGUF, HF
//    tokenizer.json model BPE + ByteLevel): a pre-tokenizer regex splits the
//    text, bytes map to printable code points, pieces merge by merge rank.
// Special / added tokens are matched before either algorithm when requested.
//
// Thread-safety: immutable after construction; Encode/Decode are const and
// may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace deepinfer {

class GgufFile;

enum class TokenizerKind { kSentencePieceBpe, kByteLevelBpe };

// Token attribute, following GGUF tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,       // BOS/EOS and other specials, never produced by plain text
  kUserDefined = 4,   // added tokens matched literally in text
  kUnused = 5,
  kByte = 6,          // <0xXX> byte-fallback
};

// Format-neutral description of a vocabulary, filled by a loader (GGUF or
// tokenizer.json) and turned into a Tokenizer by Tokenizer::Create.
struct TokenizerData {
  TokenizerKind kind = TokenizerKind::kSentencePieceBpe;
  std::string pre;                    // pre-tokenizer name: "default", "gpt-2", "llama3"/"llama-bpe", "qwen2", "deepseek-v3", ...
  std::vector<std::string> pieces;    // id -> piece (as stored: U+2581 or byte-level code points)
  std::vector<float> scores;          // SPM merge scores (may be empty for byte-level)
  std::vector<TokenType> types;       // id -> type (defaults to kNormal)
  std::vector<std::string> merges;    // byte-level BPE merges "a b", rank order
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  std::vector<int32_t> extra_eos_ids;  // e.g. <|eot_id|>, <|im_end|>
  bool add_bos = false;               // prepend BOS when encoding a prompt
  bool add_eos = false;
  bool add_space_prefix = true;       // SPM: prepend U+2581 to the text
  std::string chat_template;          // Jinja template text, if the checkpoint has one
};

class Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerData data);
  // Reads tokenizer.ggml.* keys.
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& gguf);
  // Reads an HF tokenizer.json (or tokenizer.json.gz) plus, when present,
  // tokenizer_config.json beside it (bos/eos, add_bos_token, chat_template).
  static StatusOr<std::unique_ptr<Tokenizer>> FromHfFile(const std::string& tokenizer_json_path);
  // A directory holding tokenizer.json or tokenizer.json.gz.
  static StatusOr<std::unique_ptr<Tokenizer>> FromHfDir(const std::string& dir);

  virtual ~Tokenizer() = default;

  // add_special: prepend BOS (and append EOS) when the vocabulary asks for it.
  // parse_special: recognize special/added token text (e.g. "<|eot_id|>") in
  // `text`; otherwise it is tokenized as plain text.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;

  // Concatenated bytes of the tokens (control tokens render as nothing unless
  // render_special). May end in the middle of a UTF-8 sequence.
  virtual std::string Decode(const std::vector<int32_t>& ids, bool render_special = false) const = 0;

  // The raw bytes token `id` contributes to the text (what Decode would emit
  // for it alone, with no SPM leading-space stripping). The grammar engine
  // builds its vocabulary trie from these.
  virtual std::string TokenBytes(int32_t id) const = 0;

  virtual const TokenizerData& data() const = 0;
  int32_t vocab_size() const { return static_cast<int32_t>(data().pieces.size()); }
  int32_t bos_id() const { return data().bos_id; }
  int32_t eos_id() const { return data().eos_id; }
  // EOS plus any extra end-of-generation ids.
  bool IsEndOfGeneration(int32_t id) const;
};

// Turns a stream of token ids into text pieces without ever emitting a broken
// UTF-8 sequence: bytes of an incomplete code point are held back until the
// sequence completes (or Flush, which emits U+FFFD for a dangling tail).
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok);
  // Returns the newly completed text (possibly empty).
  std::string Push(int32_t id);
  std::string Flush();

 private:
  const Tokenizer& tok_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
  bool first_ = true;    // SPM: strip the leading space of the very first piece
};

}  // namespace deepinfer
