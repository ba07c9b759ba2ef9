#include "grammar/regex.h"

#include "grammar/utf8.h"

namespace deepinfer::grammar {

namespace {

using Ranges = std::vector<CodepointRange>;

Ranges DigitRanges() { return {{'0', '9'}}; }
Ranges WordRanges() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
Ranges SpaceRanges() {
  // ECMAScript WhiteSpace + LineTerminator.
  return {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}

class RegexParser {
 public:
  RegexParser(std::vector<uint32_t> cps, const RegexOptions& options, Grammar* g)
      : cps_(std::move(cps)), options_(options), g_(g) {}

  StatusOr<ExprId> Parse() {
    stack_.push_back(Frame{});
    stack_.back().top = true;
    while (pos_ < cps_.size()) {
      uint32_t c = cps_[pos_];
      switch (c) {
        case '(':
          DI_RETURN_IF_ERROR(OpenGroup());
          break;
        case ')': {
          if (stack_.size() == 1) return Error("unmatched ')'");
          ++pos_;
          ExprId e = FinishFrame(stack_.back());
          stack_.pop_back();
          DI_RETURN_IF_ERROR(PushAtom(e));
          break;
        }
        case '|':
          ++pos_;
          stack_.back().done.push_back(std::move(stack_.back().cur));
          stack_.back().cur = Branch{};
          break;
        case '*':
        case '+':
        case '?':
          ++pos_;
          DI_RETURN_IF_ERROR(Quantify(c == '+' ? 1 : 0, c == '?' ? 1 : Grammar::kUnbounded));
          break;
        case '{': {
          int32_t min = 0, max = 0;
          size_t save = pos_;
          DI_ASSIGN_OR_RETURN(bool is_quantifier, TryParseBraces(&min, &max));
          if (is_quantifier) {
            DI_RETURN_IF_ERROR(Quantify(min, max));
          } else {
            pos_ = save + 1;
            DI_RETURN_IF_ERROR(PushAtom(Class({{'{', '{'}})));
          }
          break;
        }
        case '^': {
          Branch& b = stack_.back().cur;
          if (!stack_.back().top || !b.items.empty() || b.anchored_end) {
            return Unimplemented(Where() + "'^' anchor that is not at the start of the pattern");
          }
          b.anchored_start = true;
          ++pos_;
          break;
        }
        case '$':
          if (!stack_.back().top) {
            return Unimplemented(Where() + "'$' anchor that is not at the end of the pattern");
          }
          stack_.back().cur.anchored_end = true;
          ++pos_;
          break;
        case '.':
          ++pos_;
          DI_RETURN_IF_ERROR(
              PushAtom(Class(ComplementRanges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}))));
          break;
        case '[': {
          DI_ASSIGN_OR_RETURN(Ranges r, ParseClass());
          DI_RETURN_IF_ERROR(PushAtom(Class(r)));
          break;
        }
        case '\\': {
          ++pos_;
          Ranges r;
          DI_RETURN_IF_ERROR(ParseEscape(/*in_class=*/false, &r));
          DI_RETURN_IF_ERROR(PushAtom(Class(r)));
          break;
        }
        default:
          ++pos_;
          DI_RETURN_IF_ERROR(PushAtom(Class({{c, c}})));
      }
    }
    if (stack_.size() != 1) return Error("missing ')'");
    return FinishFrame(stack_.back());
  }

 private:
  struct Branch {
    std::vector<ExprId> items;
    bool anchored_start = false;
    bool anchored_end = false;
  };
  struct Frame {
    std::vector<Branch> done;
    Branch cur;
    bool top = false;
  };

  std::string Where() const { return "regex offset " + std::to_string(pos_) + ": "; }
  Status Error(const std::string& msg) const { return InvalidArgument(Where() + msg); }

  ExprId Class(const Ranges& r) {
    return options_.json_string_content ? JsonEscapedClass(g_, r) : Utf8Class(g_, r);
  }

  Status PushAtom(ExprId e) {
    Branch& b = stack_.back().cur;
    if (b.anchored_end) return Unimplemented(Where() + "text after a '$' anchor");
    b.items.push_back(e);
    return Status::Ok();
  }

  Status OpenGroup() {
    ++pos_;
    if (pos_ < cps_.size() && cps_[pos_] == '?') {
      uint32_t k = pos_ + 1 < cps_.size() ? cps_[pos_ + 1] : 0;
      if (k == ':') {
        pos_ += 2;
      } else if (k == '<' || (k == 'P' && pos_ + 2 < cps_.size() && cps_[pos_ + 2] == '<')) {
        uint32_t after = pos_ + 2 < cps_.size() ? cps_[pos_ + 2] : 0;
        if (k == '<' && (after == '=' || after == '!')) {
          return Unimplemented(Where() + "lookbehind assertions are not supported");
        }
        while (pos_ < cps_.size() && cps_[pos_] != '>') ++pos_;
        if (pos_ == cps_.size()) return Error("unterminated group name");
        ++pos_;
      } else if (k == '=' || k == '!') {
        return Unimplemented(Where() + "lookahead assertions are not supported");
      } else {
        return Unimplemented(Where() + "group syntax '(?" + std::string(1, static_cast<char>(k)) +
                             "' (inline flags?) is not supported");
      }
    }
    if (static_cast<int>(stack_.size()) > options_.max_group_depth) {
      return ResourceExhausted(Where() + "groups nested deeper than " +
                               std::to_string(options_.max_group_depth));
    }
    stack_.push_back(Frame{});
    return Status::Ok();
  }

  ExprId FinishFrame(Frame& f) {
    f.done.push_back(std::move(f.cur));
    std::vector<ExprId> alts;
    for (Branch& b : f.done) {
      if (f.top && options_.search) {
        ExprId any = g_->Star(Class({{0, kMaxCodepoint}}));
        if (!b.anchored_start) b.items.insert(b.items.begin(), any);
        if (!b.anchored_end) b.items.push_back(any);
      }
      alts.push_back(g_->Sequence(std::move(b.items)));
    }
    return g_->Choice(std::move(alts));
  }

  Status Quantify(int32_t min, int32_t max) {
    Branch& b = stack_.back().cur;
    if (b.items.empty()) return Error("quantifier with nothing to repeat");
    if (b.anchored_end) return Unimplemented(Where() + "quantifier after a '$' anchor");
    // Lazy quantifiers accept the same language; a mask is about the language.
    if (pos_ < cps_.size() && cps_[pos_] == '?') ++pos_;
    b.items.back() = g_->Repeat(b.items.back(), min, max);
    return Status::Ok();
  }

  // At '{': parses {n}, {n,}, {n,m}. Returns false if it is not one (then
  // ECMAScript reads '{' as a literal).
  StatusOr<bool> TryParseBraces(int32_t* min, int32_t* max) {
    size_t p = pos_ + 1;
    auto number = [&](int64_t* out) {
      size_t start = p;
      int64_t v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
        v = std::min<int64_t>(v * 10 + (cps_[p] - '0'), int64_t{1} << 40);
        ++p;
      }
      *out = v;
      return p > start;
    };
    int64_t lo = 0, hi = 0;
    if (!number(&lo)) return false;
    if (p < cps_.size() && cps_[p] == '}') {
      hi = lo;
    } else if (p < cps_.size() && cps_[p] == ',') {
      ++p;
      if (!number(&hi)) hi = -1;
      if (p >= cps_.size() || cps_[p] != '}') return false;
    } else {
      return false;
    }
    pos_ = p + 1;
    if (hi != -1 && hi < lo) return Error("quantifier {n,m} with m < n");
    if (lo > options_.max_repeat || hi > options_.max_repeat) {
      return Status(
          ResourceExhausted(Where() + "repetition count above " + std::to_string(options_.max_repeat)));
    }
    *min = static_cast<int32_t>(lo);
    *max = hi == -1 ? Grammar::kUnbounded : static_cast<int32_t>(hi);
    return true;
  }

  StatusOr<Ranges> ParseClass() {
    ++pos_;  // '['
    bool negate = false;
    if (pos_ < cps_.size() && cps_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    Ranges out;
    while (pos_ < cps_.size() && cps_[pos_] != ']') {
      Ranges atom;
      DI_RETURN_IF_ERROR(ParseClassAtom(&atom));
      bool single = atom.size() == 1 && atom[0].lo == atom[0].hi;
      if (single && pos_ + 1 < cps_.size() && cps_[pos_] == '-' && cps_[pos_ + 1] != ']') {
        ++pos_;
        Ranges hi_atom;
        DI_RETURN_IF_ERROR(ParseClassAtom(&hi_atom));
        if (hi_atom.size() != 1 || hi_atom[0].lo != hi_atom[0].hi) {
          return Error("class range ends in a class escape");
        }
        if (hi_atom[0].lo < atom[0].lo) return Error("class range out of order");
        out.push_back({atom[0].lo, hi_atom[0].lo});
      } else {
        out.insert(out.end(), atom.begin(), atom.end());
      }
    }
    if (pos_ >= cps_.size()) return Status(Error("unterminated character class"));
    ++pos_;  // ']'
    return negate ? ComplementRanges(out) : NormalizeRanges(out);
  }

  Status ParseClassAtom(Ranges* out) {
    uint32_t c = cps_[pos_++];
    if (c == '\\') return ParseEscape(/*in_class=*/true, out);
    out->push_back({c, c});
    return Status::Ok();
  }

  bool ReadHex(size_t digits, uint32_t* value) {
    if (pos_ + digits > cps_.size()) return false;
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      uint32_t c = cps_[pos_ + i];
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    pos_ += digits;
    *value = v;
    return true;
  }

  // After the backslash. Produces a class (one range for a single char).
  Status ParseEscape(bool in_class, Ranges* out) {
    if (pos_ >= cps_.size()) return Error("pattern ends with '\\'");
    uint32_t c = cps_[pos_++];
    auto single = [&](uint32_t cp) {
      out->push_back({cp, cp});
      return Status::Ok();
    };
    switch (c) {
      case 'd':
        *out = DigitRanges();
        return Status::Ok();
      case 'D':
        *out = ComplementRanges(DigitRanges());
        return Status::Ok();
      case 'w':
        *out = WordRanges();
        return Status::Ok();
      case 'W':
        *out = ComplementRanges(WordRanges());
        return Status::Ok();
      case 's':
        *out = SpaceRanges();
        return Status::Ok();
      case 'S':
        *out = ComplementRanges(SpaceRanges());
        return Status::Ok();
      case 'n':
        return single('\n');
      case 'r':
        return single('\r');
      case 't':
        return single('\t');
      case 'f':
        return single('\f');
      case 'v':
        return single('\v');
      case 'b':
        if (in_class) return single('\b');
        return Unimplemented(Where() + "word boundary \\b is not supported");
      case 'B':
        return Unimplemented(Where() + "word boundary \\B is not supported");
      case 'p':
      case 'P':
        return Unimplemented(Where() + "Unicode property escapes (\\p{...}) are not supported");
      case 'k':
        return Unimplemented(Where() + "named backreferences are not supported");
      case '0':
        if (pos_ < cps_.size() && cps_[pos_] >= '0' && cps_[pos_] <= '9') {
          return Unimplemented(Where() + "octal escapes are not supported");
        }
        return single(0);
      case 'c':
        if (pos_ < cps_.size() && ((cps_[pos_] | 0x20) >= 'a' && (cps_[pos_] | 0x20) <= 'z')) {
          return single(cps_[pos_++] % 32);
        }
        return single('\\');  // Annex B: "\c" not followed by a letter
      case 'x': {
        uint32_t v;
        if (!ReadHex(2, &v)) return Error("bad \\x escape");
        return single(v);
      }
      case 'u': {
        uint32_t v;
        if (pos_ < cps_.size() && cps_[pos_] == '{') {
          ++pos_;
          v = 0;
          size_t start = pos_;
          while (pos_ < cps_.size() && cps_[pos_] != '}' && pos_ - start < 8) {
            uint32_t d;
            if (!ReadHex(1, &d)) return Error("bad \\u{...} escape");
            v = v * 16 + d;
          }
          if (pos_ >= cps_.size() || cps_[pos_] != '}' || v > kMaxCodepoint) {
            return Error("bad \\u{...} escape");
          }
          ++pos_;
          return single(v);
        }
        if (!ReadHex(4, &v)) return Error("bad \\u escape");
        if (v >= 0xD800 && v <= 0xDBFF && pos_ + 1 < cps_.size() && cps_[pos_] == '\\' &&
            cps_[pos_ + 1] == 'u') {
          size_t save = pos_;
          pos_ += 2;
          uint32_t low;
          if (ReadHex(4, &low) && low >= 0xDC00 && low <= 0xDFFF) {
            return single(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
          }
          pos_ = save;
        }
        if (v >= 0xD800 && v <= 0xDFFF) return Error("lone surrogate escape");
        return single(v);
      }
      default:
        if (c >= '1' && c <= '9' && !in_class) {
          return Unimplemented(Where() + "backreferences are not supported");
        }
        return single(c);  // identity escape: \. \\ \/ \- ...
    }
  }

  std::vector<uint32_t> cps_;
  const RegexOptions& options_;
  Grammar* g_;
  size_t pos_ = 0;
  std::vector<Frame> stack_;
};

}  // namespace

StatusOr<ExprId> ParseRegex(std::string_view pattern, const RegexOptions& options, Grammar* g) {
  std::vector<uint32_t> cps;
  for (size_t pos = 0; pos < pattern.size();) {
    uint32_t cp;
    if (!DecodeUtf8(pattern, &pos, &cp)) {
      return InvalidArgument("regex is not valid UTF-8 at byte " + std::to_string(pos));
    }
    cps.push_back(cp);
  }
  RegexParser parser(std::move(cps), options, g);
  return parser.Parse();
}

StatusOr<Grammar> RegexToGrammar(std::string_view pattern) {
  Grammar g;
  DI_ASSIGN_OR_RETURN(ExprId e, ParseRegex(pattern, RegexOptions{}, &g));
  g.set_root(g.DefineRule("root", e));
  return g;
}

}  // namespace deepinfer::grammar
