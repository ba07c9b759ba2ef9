// Pre-tokenizer for byte-level BPE: cuts text into pieces ("words") with a
// sequence of HF-style steps (Split / Digits / ByteLevel, see
// PreTokenizerStep), then maps bytes to the GPT-2 alphabet. Internal to
// src/tokenizer.
//
// Regexes run on PCRE2 (UTF + UCP, JIT when available). Each piece is matched
// on its own, so lookarounds never see across piece boundaries (as in HF and
// llama.cpp). Invalid UTF-8 never matches a regex and ends up in the gaps,
// which Isolated splitting keeps, so no byte is lost.
// Thread-safety: Run is const; match data is allocated per call.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

// A compiled PCRE2 pattern. Movable, not copyable.
class Regex {
 public:
  // literal: match `pattern` as plain text (HF {"String": ...}).
  static StatusOr<Regex> Compile(std::string_view pattern, bool literal);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends the [begin, end) byte ranges of all non-empty, non-overlapping
  // matches in `subject`, left to right.
  void FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>* matches) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
};

class PreTokenizer {
 public:
  // Compiles `steps`; the last step must be kByteLevel (byte-level BPE needs
  // the byte alphabet). InvalidArgument naming the step on a bad regex.
  static StatusOr<PreTokenizer> Create(const std::vector<PreTokenizerStep>& steps);
  // The steps llama.cpp uses for a GGUF tokenizer.ggml.pre name; Unimplemented
  // for names it does not know.
  static StatusOr<std::vector<PreTokenizerStep>> StepsForGgufPre(const std::string& pre);

  // Splits `text` into pieces, each already mapped to the byte-level alphabet.
  std::vector<std::string> Run(std::string_view text) const;

 private:
  struct CompiledStep {
    PreTokenizerStep step;
    std::unique_ptr<Regex> regex;  // kSplit, kDigits, kByteLevel with use_regex
  };
  std::vector<CompiledStep> steps_;
};

}  // namespace deepinfer
