#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <algorithm>

#include "tokenizer/unicode.h"

namespace deepinfer {

namespace {

pcre2_code* Code(void* p) { return static_cast<pcre2_code*>(p); }

// HF ByteLevel's split regex (GPT-2's, plus a final \s+ so that no whitespace
// is left in a gap).
constexpr const char* kGpt2HfRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// llama.cpp's GPT-2 regex (no final \s+; gaps are kept anyway).
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM's letter class: its list of cased-letter ranges, written as
// code points because, as literal text, Unicode normalization of the source
// would turn singletons such as U+212A (Kelvin sign) into K and break the ranges.
constexpr const char* kDeepseekLlmLetters =
    R"(\s?[)"
    R"(\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF})"
    R"(\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386})"
    R"(\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F})"
    R"(\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA})"
    R"(\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15})"
    R"(\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126})"
    R"(\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E})"
    R"(\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3})"
    R"(\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E})"
    R"(\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2})"
    R"(\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943})"
    R"(]+)";

}  // namespace

// ---------------------------------------------------------------------------
// Regex

StatusOr<Regex> Regex::Compile(std::string_view pattern, bool literal) {
  // MATCH_INVALID_UTF: arbitrary bytes are allowed in subjects (they never
  // match). DOLLAR_ENDONLY: '$' means the end of the piece, as in llama.cpp's
  // std::regex, not "before a final newline".
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  options |= literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_DOLLAR_ENDONLY;  // LITERAL rejects the others
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                   &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidArgument("regex '" + std::string(pattern) + "': " + reinterpret_cast<const char*>(message) +
                           " at offset " + std::to_string(error_offset));
  }
  // JIT is an optimisation only: pcre2_match falls back to the interpreter.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex regex;
  regex.code_ = code;
  return regex;
}

Regex::Regex(Regex&& other) noexcept : code_(other.code_) { other.code_ = nullptr; }

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (code_ != nullptr) pcre2_code_free(Code(code_));
    code_ = other.code_;
    other.code_ = nullptr;
  }
  return *this;
}

Regex::~Regex() {
  if (code_ != nullptr) pcre2_code_free(Code(code_));
}

void Regex::FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>* matches) const {
  if (subject.empty()) return;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(Code(code_), nullptr);
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t offset = 0;
  while (offset < subject.size()) {
    int rc = pcre2_match(Code(code_), data, subject.size(), offset, 0, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Very long runs can exhaust the JIT's machine stack; the interpreter
      // keeps its backtracking state on the heap.
      rc = pcre2_match(Code(code_), data, subject.size(), offset, PCRE2_NO_JIT, md, nullptr);
    }
    if (rc < 0) break;  // no match (or a match limit): the rest stays one gap
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches->emplace_back(begin, end);
      offset = end;
    } else {
      // Empty match: step over one character and try again.
      offset = begin + std::min(unicode::Utf8SequenceLength(static_cast<uint8_t>(subject[begin])),
                                subject.size() - begin);
    }
  }
  pcre2_match_data_free(md);
}

// ---------------------------------------------------------------------------
// PreTokenizer

namespace {

PreTokenizerStep IsolatedRegex(const char* pattern) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kSplit;
  step.pattern = pattern;
  step.behavior = PreTokenizerStep::Behavior::kIsolated;
  return step;
}

PreTokenizerStep ByteLevelMapOnly() {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kByteLevel;
  step.use_regex = false;
  return step;
}

struct Segment {
  size_t begin, end;
  bool is_match;
};

// HF Split semantics: cut `piece` into matches and gaps, then keep or glue
// the matches according to `behavior`.
void SplitPiece(const Regex& regex, PreTokenizerStep::Behavior behavior, bool invert,
                const std::string& piece, std::vector<std::string>* out) {
  std::vector<std::pair<size_t, size_t>> matches;
  regex.FindAll(piece, &matches);
  std::vector<Segment> segments;
  size_t pos = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > pos) segments.push_back(Segment{pos, begin, invert});
    segments.push_back(Segment{begin, end, !invert});
    pos = end;
  }
  if (pos < piece.size()) segments.push_back(Segment{pos, piece.size(), invert});

  using Behavior = PreTokenizerStep::Behavior;
  std::vector<Segment> kept;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated:
      kept = std::move(segments);
      break;
    case Behavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) kept.push_back(s);
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !kept.empty()) {
          kept.back().end = s.end;
        } else {
          kept.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !kept.empty()) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::kContiguous:
      for (const Segment& s : segments) {
        if (s.is_match && previous_match && !kept.empty()) {
          kept.back().end = s.end;
        } else {
          kept.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
  }
  for (const Segment& s : kept) {
    if (s.end > s.begin) out->push_back(piece.substr(s.begin, s.end - s.begin));
  }
}

}  // namespace

StatusOr<std::vector<PreTokenizerStep>> PreTokenizer::StepsForGgufPre(const std::string& pre) {
  std::vector<PreTokenizerStep> steps;
  auto add = [&](std::initializer_list<const char*> patterns) {
    for (const char* p : patterns) steps.push_back(IsolatedRegex(p));
  };
  // The regex lists follow llama.cpp's llm_tokenizer_bpe for each name.
  if (pre == "default" || pre.empty()) {
    add({R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Regex, R"(\p{N}+)", "[0-9][0-9][0-9]"});
  } else if (pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo" || pre == "jais" ||
             pre == "roberta-bpe" || pre == "gigachat" || pre.rfind("jina-", 0) == 0) {
    add({kGpt2Regex});
  } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
             pre == "dbrx" || pre == "smaug-bpe" || pre == "chatglm-bpe") {
    add({kLlama3Regex});
  } else if (pre == "qwen2" || pre == "stablelm2" || pre == "megrez") {
    add({kQwen2Regex});
  } else if (pre == "deepseek-llm") {
    add({"[\r\n]", kDeepseekLlmLetters,
         "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$",
         "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}+"});
  } else if (pre == "deepseek-coder") {
    add({"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
         "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"});
  } else if (pre == "deepseek-v3") {
    add({"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
         "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
         "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"});
  } else if (pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "smollm" ||
             pre == "codeshell" || pre == "exaone" || pre == "minerva-7b") {
    add({"\\p{N}", kGpt2Regex});
  } else if (pre == "falcon") {
    add({"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Regex, "[0-9][0-9][0-9]"});
  } else {
    return Unimplemented("pre-tokenizer '" + pre + "' is not supported");
  }
  steps.push_back(ByteLevelMapOnly());
  return steps;
}

StatusOr<PreTokenizer> PreTokenizer::Create(const std::vector<PreTokenizerStep>& steps) {
  PreTokenizer pt;
  bool has_byte_level = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    CompiledStep compiled{steps[i], nullptr};
    const PreTokenizerStep& s = steps[i];
    std::string pattern;
    bool literal = false;
    switch (s.kind) {
      case PreTokenizerStep::Kind::kSplit:
        pattern = s.pattern;
        literal = s.pattern_is_literal;
        if (pattern.empty()) {
          return InvalidArgument("pre-tokenizer step " + std::to_string(i) + ": empty pattern");
        }
        break;
      case PreTokenizerStep::Kind::kDigits:
        pattern = s.individual_digits ? "\\p{N}" : "\\p{N}+";
        break;
      case PreTokenizerStep::Kind::kByteLevel:
        has_byte_level = true;
        if (s.use_regex) pattern = kGpt2HfRegex;
        break;
    }
    if (!pattern.empty()) {
      auto regex = Regex::Compile(pattern, literal);
      if (!regex.ok()) return regex.status().WithContext("pre-tokenizer step " + std::to_string(i));
      compiled.regex = std::make_unique<Regex>(std::move(regex).value());
    }
    pt.steps_.push_back(std::move(compiled));
  }
  if (!has_byte_level) {
    return Unimplemented("pre-tokenizer has no ByteLevel step; only byte-level BPE is supported");
  }
  return pt;
}

std::vector<std::string> PreTokenizer::Run(std::string_view text) const {
  std::vector<std::string> pieces;
  if (text.empty()) return pieces;
  pieces.emplace_back(text);
  std::vector<std::string> next;
  for (const CompiledStep& c : steps_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    const PreTokenizerStep& s = c.step;
    for (std::string& piece : pieces) {
      switch (s.kind) {
        case PreTokenizerStep::Kind::kSplit:
          SplitPiece(*c.regex, s.behavior, s.invert, piece, &next);
          break;
        case PreTokenizerStep::Kind::kDigits:
          SplitPiece(*c.regex, PreTokenizerStep::Behavior::kIsolated, false, piece, &next);
          break;
        case PreTokenizerStep::Kind::kByteLevel: {
          if (s.add_prefix_space && piece[0] != ' ') piece.insert(piece.begin(), ' ');
          std::vector<std::string> words;
          if (c.regex) {
            SplitPiece(*c.regex, PreTokenizerStep::Behavior::kIsolated, false, piece, &words);
          } else {
            words.push_back(std::move(piece));
          }
          for (const std::string& w : words) next.push_back(unicode::ByteLevelEncode(w));
          break;
        }
      }
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace deepinfer
