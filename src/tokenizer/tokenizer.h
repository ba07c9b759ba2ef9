// Tokenizer: text <-> token ids, exactly as the checkpoint's reference
// tokenizer does it (llama.cpp for GGUF vocabularies, HF tokenizers for
// tokenizer.json).
//
// Two algorithms:
//  - kSentencePieceBpe: SentencePiece-style BPE ("llama" in GGUF): spaces
//    become U+2581, pieces merge by score, unknown bytes fall back to <0xXX>.
//  - kByteLevelBpe: GPT-2-style byte-level BPE ("gpt2" in GGUF, HF
//    tokenizer.json model BPE + ByteLevel): a pre-tokenizer regex splits the
//    text, bytes map to printable code points, pieces merge by merge rank.
// Special / added tokens are matched before either algorithm: user-defined
// (HF non-special added) tokens always, control and unknown tokens only when
// parse_special is set (llama.cpp's rule).
//
// Errors: the factories return a Status naming the file and the field that is
// wrong (e.g. "tok/tokenizer.json: model.merges[3]: expected a string or a
// pair of strings"); nothing here throws or aborts on bad input.
// Thread-safety: a Tokenizer is immutable after construction; Encode, Decode
// and TokenBytes are const and may be called concurrently.
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
  kControl = 3,      // BOS/EOS and other specials, never produced by plain text
  kUserDefined = 4,  // added tokens matched literally in text
  kUnused = 5,
  kByte = 6,  // <0xXX> byte-fallback
};

// One step of a byte-level BPE pre-tokenizer (HF pre_tokenizers semantics).
// A pre-tokenizer is a sequence of steps; each step re-splits every piece the
// previous steps produced, independently of its neighbours.
struct PreTokenizerStep {
  enum class Kind {
    kSplit,      // split by `pattern` (HF "Split")
    kDigits,     // HF "Digits": isolate runs of \p{N} (or single ones)
    kByteLevel,  // HF "ByteLevel": optional GPT-2 regex split, then byte -> code point mapping
  };
  // How a Split keeps the matches (HF SplitDelimiterBehavior).
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

  Kind kind = Kind::kSplit;
  std::string pattern;              // kSplit: PCRE2 pattern (UTF + UCP), or a literal
  bool pattern_is_literal = false;  // kSplit: HF {"String": ...} patterns
  Behavior behavior = Behavior::kIsolated;
  bool invert = false;             // kSplit: the pattern matches the pieces to keep
  bool individual_digits = false;  // kDigits
  bool add_prefix_space = false;   // kByteLevel: prepend ' ' to a piece not starting with one
  bool use_regex = true;           // kByteLevel: split with the GPT-2 regex first
};

// Format-neutral description of a vocabulary, filled by a loader (GGUF or
// tokenizer.json) and turned into a Tokenizer by Tokenizer::Create.
struct TokenizerData {
  TokenizerKind kind = TokenizerKind::kSentencePieceBpe;
  // Pre-tokenizer name: "default", "gpt-2", "llama3"/"llama-bpe", "qwen2", "deepseek-v3", ...
  std::string pre;
  // Byte-level BPE: explicit steps (from tokenizer.json); empty -> derived from `pre`.
  std::vector<PreTokenizerStep> pre_steps;
  // id -> piece as stored: U+2581 or byte-level code points for normal tokens,
  // raw text for control / user-defined ones, "<0xXX>" for byte tokens.
  std::vector<std::string> pieces;
  std::vector<float> scores;        // SPM merge scores (may be empty for byte-level)
  std::vector<TokenType> types;     // id -> type (defaults to kNormal)
  std::vector<std::string> merges;  // byte-level BPE merges "a b", rank order
  // Byte-level BPE: a pre-token that is itself a (normal) token is emitted
  // whole, without merging (llama3, HF model.ignore_merges).
  bool ignore_merges = false;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  // e.g. <|eot_id|>, <|im_end|>; Create adds control / user-defined tokens
  // whose text is a known end-of-turn marker.
  std::vector<int32_t> extra_eos_ids;
  bool add_bos = false;  // prepend BOS when encoding a prompt
  bool add_eos = false;
  bool add_space_prefix = true;  // SPM: prepend U+2581 to the text
  // Special / added tokens that, when matched in text, swallow the ASCII
  // whitespace on their left / right (HF AddedToken lstrip / rstrip;
  // llama.cpp's rule for Phi-3 GGUF files).
  std::vector<int32_t> lstrip_ids, rstrip_ids;
  std::string chat_template;  // Jinja template text, if the checkpoint has one
};

class Tokenizer {
 public:
  // Validates `data` (ids in range, merges well-formed, regexes compile) and
  // builds the lookup tables. InvalidArgument on a bad description.
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
  // `text`; otherwise it is tokenized as plain text. `text` may hold any bytes;
  // invalid UTF-8 is encoded byte by byte (byte tokens / byte-level alphabet).
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const = 0;

  // Concatenated bytes of the tokens (control tokens render as nothing unless
  // render_special). May end in the middle of a UTF-8 sequence.
  // Out-of-range ids are skipped (they contribute no bytes).
  // SentencePiece vocabularies with add_space_prefix drop the one leading
  // space of the first piece that follows only non-rendered control tokens
  // (e.g. BOS), so Decode(Encode(s, ...)) == s.
  virtual std::string Decode(const std::vector<int32_t>& ids, bool render_special = false) const = 0;

  // The raw bytes token `id` contributes to the text (what Decode would emit
  // for it alone, with no SPM leading-space stripping). The grammar engine
  // builds its vocabulary trie from these. Control, unknown and unused tokens
  // and out-of-range ids yield "".
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
// sequence completes; bytes that can never form a valid sequence become U+FFFD
// (one per maximal invalid subpart); Flush emits U+FFFD for a dangling tail.
// For valid UTF-8 output, the concatenation of everything Push and Flush
// return equals Decode(ids) (with sequence_start as described below).
// Not thread-safe; one per stream. `tok` must outlive it.
class IncrementalDetokenizer {
 public:
  // sequence_start: the ids begin a sequence (e.g. BOS, then the prompt), so
  // SentencePiece's leading space of the first text piece is dropped exactly as
  // Decode does. Leave it false when the ids continue text decoded elsewhere
  // (generated tokens after a prompt): nothing is stripped then.
  explicit IncrementalDetokenizer(const Tokenizer& tok, bool sequence_start = false);
  // Returns the newly completed text (possibly empty). Control tokens render
  // as nothing; out-of-range ids are skipped.
  std::string Push(int32_t id);
  std::string Flush();

 private:
  const Tokenizer& tok_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
  bool first_ = true;    // SPM: strip the leading space of the very first piece
};

}  // namespace deepinfer
