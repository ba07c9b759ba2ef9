#include "grammar/gbnf.h"

#include <map>
#include <set>

#include "grammar/utf8.h"

namespace deepinfer::grammar {

namespace {

constexpr int kMaxNesting = 1000;
constexpr int kMaxRepeat = 100000;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : s_(text) {}

  StatusOr<Grammar> Parse() {
    SkipSpace(/*newlines=*/true);
    while (pos_ < s_.size()) {
      std::string name = ReadName();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace(false);
      if (s_.substr(pos_, 3) != "::=") return Error("expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      RuleId rule = RuleNamed(name);
      if (defined_.count(rule)) return Error("rule '" + name + "' defined twice");
      defined_.insert(rule);
      DI_ASSIGN_OR_RETURN(ExprId body, ParseBody());
      g_.SetBody(rule, body);
      SkipSpace(true);
    }
    for (auto& [name, rule] : rules_) {
      if (!defined_.count(rule)) return InvalidArgument("gbnf: undefined rule '" + name + "'");
    }
    auto root = rules_.find("root");
    if (root == rules_.end()) return InvalidArgument("gbnf: no 'root' rule");
    g_.set_root(root->second);
    return std::move(g_);
  }

 private:
  struct Frame {
    std::vector<ExprId> alts;
    std::vector<ExprId> seq;
  };

  Status Error(const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgument("gbnf line " + std::to_string(line) + " col " + std::to_string(col) + ": " + msg);
  }

  RuleId RuleNamed(const std::string& name) {
    auto it = rules_.find(name);
    if (it != rules_.end()) return it->second;
    RuleId r = g_.AddRule(name);
    rules_.emplace(name, r);
    return r;
  }

  // Skips blanks and comments; returns true if a newline was crossed.
  bool SkipSpace(bool newlines) {
    bool crossed = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (c == '\n' && newlines) {
        crossed = true;
        ++pos_;
      } else {
        break;
      }
    }
    return crossed;
  }

  std::string ReadName() {
    size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // Rule body. A newline ends it unless inside parentheses, right after
  // '::=' or '|', or when the next line starts with '|'.
  StatusOr<ExprId> ParseBody() {
    std::vector<Frame> stack(1);
    bool newline_ok = true;
    while (true) {
      size_t save = pos_;
      bool crossed = SkipSpace(true);
      if (crossed && stack.size() == 1 && !newline_ok) {
        if (pos_ < s_.size() && s_[pos_] == '|') {
          // continuation line
        } else {
          pos_ = save;
          break;
        }
      }
      if (pos_ >= s_.size()) break;
      newline_ok = false;
      char c = s_[pos_];
      Frame& f = stack.back();
      if (c == '"') {
        DI_ASSIGN_OR_RETURN(ExprId e, ParseLiteral());
        f.seq.push_back(e);
      } else if (c == '[') {
        DI_ASSIGN_OR_RETURN(ExprId e, ParseClass());
        f.seq.push_back(e);
      } else if (c == '.') {
        ++pos_;
        f.seq.push_back(Utf8Class(&g_, {{0, kMaxCodepoint}}));
      } else if (c == '(') {
        ++pos_;
        if (static_cast<int>(stack.size()) > kMaxNesting) return Error("groups nested too deeply");
        stack.emplace_back();
        newline_ok = true;
      } else if (c == ')') {
        if (stack.size() == 1) return Error("unmatched ')'");
        ++pos_;
        ExprId e = Finish(stack.back());
        stack.pop_back();
        stack.back().seq.push_back(e);
      } else if (c == '|') {
        ++pos_;
        f.alts.push_back(g_.Sequence(std::move(f.seq)));
        f.seq.clear();
        newline_ok = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (f.seq.empty()) return Error("repetition with nothing to repeat");
        int32_t min = 0, max = Grammar::kUnbounded;
        if (c == '{') {
          DI_RETURN_IF_ERROR(ParseBraces(&min, &max));
        } else {
          ++pos_;
          if (c == '+') min = 1;
          if (c == '?') max = 1;
        }
        f.seq.back() = g_.Repeat(f.seq.back(), min, max);
      } else if (IsNameChar(c)) {
        size_t name_pos = pos_;
        std::string name = ReadName();
        size_t after = pos_;
        SkipSpace(false);
        if (s_.substr(pos_, 3) == "::=") {
          pos_ = name_pos;
          return Error("rule '" + name + "' starts before the previous rule ended");
        }
        pos_ = after;
        f.seq.push_back(g_.Ref(RuleNamed(name)));
      } else {
        return Error(std::string("unexpected character '") + c + "'");
      }
    }
    if (stack.size() != 1) return Error("missing ')'");
    return Finish(stack.back());
  }

  ExprId Finish(Frame& f) {
    f.alts.push_back(g_.Sequence(std::move(f.seq)));
    return g_.Choice(std::move(f.alts));
  }

  Status ParseBraces(int32_t* min, int32_t* max) {
    ++pos_;  // '{'
    auto number = [&](int64_t* v) {
      SkipSpace(false);
      size_t start = pos_;
      *v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (s_[pos_] - '0'), int64_t{1} << 40);
        ++pos_;
      }
      SkipSpace(false);
      return pos_ > start;
    };
    int64_t lo = 0, hi = -1;
    bool has_lo = number(&lo);
    if (pos_ < s_.size() && s_[pos_] == '}') {
      if (!has_lo) return Error("empty repetition braces");
      hi = lo;
    } else if (pos_ < s_.size() && s_[pos_] == ',') {
      ++pos_;
      if (!number(&hi)) hi = -1;
      if (pos_ >= s_.size() || s_[pos_] != '}') return Error("expected '}'");
    } else {
      return Error("bad repetition braces");
    }
    ++pos_;
    if (hi != -1 && hi < lo) return Error("repetition {m,n} with n < m");
    if (lo > kMaxRepeat || hi > kMaxRepeat) {
      return ResourceExhausted("gbnf: repetition count above " + std::to_string(kMaxRepeat));
    }
    *min = static_cast<int32_t>(lo);
    *max = hi == -1 ? Grammar::kUnbounded : static_cast<int32_t>(hi);
    return Status::Ok();
  }

  // One (possibly escaped) code point inside a literal or class.
  Status ParseChar(uint32_t* cp) {
    if (pos_ >= s_.size()) return Error("unexpected end of grammar");
    if (s_[pos_] != '\\') {
      if (!DecodeUtf8(s_, &pos_, cp)) return Error("invalid UTF-8");
      return Status::Ok();
    }
    ++pos_;
    if (pos_ >= s_.size()) return Error("unexpected end after '\\'");
    char c = s_[pos_++];
    auto hex = [&](int digits) -> Status {
      uint32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        if (pos_ >= s_.size()) return Error("truncated escape");
        char h = s_[pos_++];
        int d = (h >= '0' && h <= '9')   ? h - '0'
                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                         : -1;
        if (d < 0) return Error("bad hex digit in escape");
        v = v * 16 + d;
      }
      if (v > kMaxCodepoint) return Error("escape beyond U+10FFFF");
      *cp = v;
      return Status::Ok();
    };
    switch (c) {
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      case 'n':
        *cp = '\n';
        return Status::Ok();
      case 'r':
        *cp = '\r';
        return Status::Ok();
      case 't':
        *cp = '\t';
        return Status::Ok();
      default:
        *cp = static_cast<uint8_t>(c);
        return Status::Ok();  // \\ \" \[ \] \- ...
    }
  }

  StatusOr<ExprId> ParseLiteral() {
    ++pos_;  // '"'
    std::string bytes;
    while (true) {
      if (pos_ >= s_.size()) return Status(Error("unterminated string literal"));
      if (s_[pos_] == '"') break;
      uint32_t cp;
      DI_RETURN_IF_ERROR(ParseChar(&cp));
      AppendUtf8(cp, &bytes);
    }
    ++pos_;
    return g_.Literal(bytes);
  }

  StatusOr<ExprId> ParseClass() {
    ++pos_;  // '['
    bool negate = pos_ < s_.size() && s_[pos_] == '^';
    if (negate) ++pos_;
    std::vector<CodepointRange> ranges;
    while (true) {
      if (pos_ >= s_.size()) return Status(Error("unterminated character class"));
      if (s_[pos_] == ']') break;
      uint32_t lo, hi;
      DI_RETURN_IF_ERROR(ParseChar(&lo));
      hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        DI_RETURN_IF_ERROR(ParseChar(&hi));
        if (hi < lo) return Status(Error("class range out of order"));
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return Utf8Class(&g_, negate ? ComplementRanges(ranges) : NormalizeRanges(ranges));
  }

  std::string_view s_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, RuleId> rules_;
  std::set<RuleId> defined_;
};

}  // namespace

StatusOr<Grammar> GbnfToGrammar(std::string_view text) {
  GbnfParser parser(text);
  return parser.Parse();
}

}  // namespace deepinfer::grammar
