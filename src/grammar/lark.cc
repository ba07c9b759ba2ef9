#include "grammar/lark.h"

#include <map>
#include <set>

#include "grammar/regex.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar {

namespace {

constexpr int kMaxNesting = 1000;
constexpr int kMaxRepeat = 100000;

// Lark's common.lark terminals, as regexes (full match).
const std::map<std::string, std::string>& CommonTerminals() {
  static const std::map<std::string, std::string> kCommon = {
      {"DIGIT", "[0-9]"},
      {"HEXDIGIT", "[a-fA-F0-9]"},
      {"INT", "[0-9]+"},
      {"SIGNED_INT", "[+-]?[0-9]+"},
      {"DECIMAL", "[0-9]+\\.[0-9]*|\\.[0-9]+"},
      {"FLOAT", "[0-9]+[eE][+-]?[0-9]+|([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?"},
      {"SIGNED_FLOAT", "[+-]?([0-9]+[eE][+-]?[0-9]+|([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?)"},
      {"NUMBER", "[0-9]+[eE][+-]?[0-9]+|([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+"},
      {"SIGNED_NUMBER", "[+-]?([0-9]+[eE][+-]?[0-9]+|([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+)"},
      {"ESCAPED_STRING", "\"([^\"\\\\\\n]|\\\\[^\\n])*\""},
      {"LCASE_LETTER", "[a-z]"},
      {"UCASE_LETTER", "[A-Z]"},
      {"LETTER", "[a-zA-Z]"},
      {"WORD", "[a-zA-Z]+"},
      {"CNAME", "[_a-zA-Z][_a-zA-Z0-9]*"},
      {"WS_INLINE", "[ \\t]+"},
      {"WS", "[ \\t\\f\\r\\n]+"},
      {"CR", "\\r"},
      {"LF", "\\n"},
      {"NEWLINE", "(\\r?\\n)+"},
  };
  return kCommon;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

class LarkParser {
 public:
  explicit LarkParser(std::string_view text) : s_(text) {}

  StatusOr<Grammar> Parse() {
    while (true) {
      SkipBlank(/*newlines=*/true);
      if (pos_ >= s_.size()) break;
      if (s_[pos_] == '%') {
        DI_RETURN_IF_ERROR(ParseDirective());
        continue;
      }
      if (s_[pos_] == '?' || s_[pos_] == '!') ++pos_;
      std::string name = ReadName();
      if (name.empty()) return Error("expected a rule or terminal name");
      if (pos_ < s_.size() && s_[pos_] == '.') {  // priority: ignored
        ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      }
      SkipBlank(false);
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':' after '" + name + "'");
      ++pos_;
      RuleId rule = RuleNamed(name);
      if (defined_.count(rule)) return Error("'" + name + "' defined twice");
      defined_.insert(rule);
      DI_ASSIGN_OR_RETURN(ExprId body, ParseBody());
      g_.SetBody(rule, body);
    }
    for (auto& [name, rule] : rules_) {
      if (!defined_.count(rule)) return InvalidArgument("lark: undefined rule or terminal '" + name + "'");
    }
    auto start = rules_.find("start");
    if (start == rules_.end()) return InvalidArgument("lark: no 'start' rule");
    g_.set_root(start->second);
    return std::move(g_);
  }

 private:
  struct Frame {
    std::vector<ExprId> alts;
    std::vector<ExprId> seq;
    char close = 0;  // ')' or ']' (optional group); 0 for the body
  };

  Status Error(const std::string& msg) const {
    size_t line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    return InvalidArgument("lark line " + std::to_string(line) + ": " + msg);
  }

  RuleId RuleNamed(const std::string& name) {
    auto it = rules_.find(name);
    if (it != rules_.end()) return it->second;
    RuleId r = g_.AddRule(name);
    rules_.emplace(name, r);
    return r;
  }

  bool SkipBlank(bool newlines) {
    bool crossed = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
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

  Status DefineCommon(const std::string& name) {
    auto it = CommonTerminals().find(name);
    if (it == CommonTerminals().end()) return Error("unknown common terminal '" + name + "'");
    RuleId rule = RuleNamed(name);
    if (defined_.count(rule)) return Status::Ok();
    DI_ASSIGN_OR_RETURN(ExprId e, ParseRegex(it->second, RegexOptions{}, &g_));
    g_.SetBody(rule, e);
    defined_.insert(rule);
    return Status::Ok();
  }

  Status ParseDirective() {
    ++pos_;
    std::string word = ReadName();
    if (word != "import") return Unimplemented("lark: %" + word + " is not supported");
    SkipBlank(false);
    std::string module = ReadName();
    if (module != "common") return Unimplemented("lark: %import from '" + module + "' is not supported");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      return DefineCommon(ReadName());
    }
    SkipBlank(false);
    if (pos_ >= s_.size() || s_[pos_] != '(') return Error("expected '.' or '(' after %import common");
    ++pos_;
    while (true) {
      SkipBlank(true);
      std::string name = ReadName();
      if (name.empty()) return Error("expected a terminal name in %import");
      DI_RETURN_IF_ERROR(DefineCommon(name));
      SkipBlank(true);
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
      } else if (pos_ < s_.size() && s_[pos_] == ')') {
        ++pos_;
        return Status::Ok();
      } else {
        return Error("expected ',' or ')' in %import");
      }
    }
  }

  ExprId Close(Frame& f) {
    f.alts.push_back(g_.Sequence(std::move(f.seq)));
    ExprId e = g_.Choice(std::move(f.alts));
    return f.close == ']' ? g_.Optional(e) : e;
  }

  // Definition body: ends at a newline (outside brackets) unless the next
  // line starts with '|'.
  StatusOr<ExprId> ParseBody() {
    std::vector<Frame> stack(1);
    while (true) {
      size_t save = pos_;
      bool crossed = SkipBlank(true);
      if (crossed && stack.size() == 1 && !(pos_ < s_.size() && s_[pos_] == '|')) {
        pos_ = save;
        break;
      }
      if (pos_ >= s_.size()) break;
      char c = s_[pos_];
      Frame& f = stack.back();
      if (c == '"') {
        DI_ASSIGN_OR_RETURN(std::string a, ReadString());
        SkipBlank(false);
        if (s_.substr(pos_, 2) == "..") {  // "a".."z"
          pos_ += 2;
          SkipBlank(false);
          DI_ASSIGN_OR_RETURN(std::string b, ReadString());
          size_t pa = 0, pb = 0;
          uint32_t lo, hi;
          if (!DecodeUtf8(a, &pa, &lo) || !DecodeUtf8(b, &pb, &hi) || pa != a.size() || pb != b.size() ||
              hi < lo) {
            return Error("bad character range");
          }
          f.seq.push_back(Utf8Class(&g_, {{lo, hi}}));
        } else {
          f.seq.push_back(g_.Literal(a));
        }
      } else if (c == '/') {
        DI_ASSIGN_OR_RETURN(ExprId e, ReadRegex());
        f.seq.push_back(e);
      } else if (c == '(' || c == '[') {
        ++pos_;
        if (static_cast<int>(stack.size()) > kMaxNesting) return Error("groups nested too deeply");
        stack.emplace_back();
        stack.back().close = c == '(' ? ')' : ']';
      } else if (c == ')' || c == ']') {
        if (stack.size() == 1 || stack.back().close != c) return Error(std::string("unmatched '") + c + "'");
        ++pos_;
        ExprId e = Close(stack.back());
        stack.pop_back();
        stack.back().seq.push_back(e);
      } else if (c == '|') {
        ++pos_;
        f.alts.push_back(g_.Sequence(std::move(f.seq)));
        f.seq.clear();
      } else if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {  // alias
        pos_ += 2;
        SkipBlank(false);
        ReadName();
      } else if (c == '?' || c == '*' || c == '+' || c == '~') {
        if (f.seq.empty()) return Error("repetition with nothing to repeat");
        int32_t min = 0, max = Grammar::kUnbounded;
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '~') DI_RETURN_IF_ERROR(ReadRange(&min, &max));
        f.seq.back() = g_.Repeat(f.seq.back(), min, max);
      } else if (IsNameChar(c)) {
        f.seq.push_back(g_.Ref(RuleNamed(ReadName())));
      } else {
        return Error(std::string("unexpected character '") + c + "'");
      }
    }
    if (stack.size() != 1) return Error("missing ')' or ']'");
    return Close(stack.back());
  }

  Status ReadRange(int32_t* min, int32_t* max) {
    SkipBlank(false);
    auto number = [&](int64_t* v) {
      size_t start = pos_;
      *v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (s_[pos_++] - '0'), int64_t{1} << 40);
      }
      return pos_ > start;
    };
    int64_t lo, hi;
    if (!number(&lo)) return Error("expected a count after '~'");
    hi = lo;
    if (s_.substr(pos_, 2) == "..") {
      pos_ += 2;
      if (!number(&hi)) return Error("expected a count after '..'");
    }
    if (hi < lo) return Error("repetition ~n..m with m < n");
    if (hi > kMaxRepeat) {
      return ResourceExhausted("lark: repetition count above " + std::to_string(kMaxRepeat));
    }
    *min = static_cast<int32_t>(lo);
    *max = static_cast<int32_t>(hi);
    return Status::Ok();
  }

  StatusOr<std::string> ReadString() {
    ++pos_;  // '"'
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        default:
          out.push_back(e);
      }
    }
    if (pos_ >= s_.size()) return Status(Error("unterminated string"));
    ++pos_;
    if (pos_ < s_.size() && s_[pos_] == 'i') {
      return Status(Unimplemented("lark: case-insensitive literals (\"...\"i)"));
    }
    return out;
  }

  StatusOr<ExprId> ReadRegex() {
    ++pos_;  // '/'
    std::string pattern;
    while (pos_ < s_.size() && s_[pos_] != '/' && s_[pos_] != '\n') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
        pattern.push_back('/');
        pos_ += 2;
        continue;
      }
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) pattern.push_back(s_[pos_++]);
      pattern.push_back(s_[pos_++]);
    }
    if (pos_ >= s_.size() || s_[pos_] != '/') return Status(Error("unterminated /regex/"));
    ++pos_;
    if (pos_ < s_.size() && IsNameChar(s_[pos_])) return Status(Unimplemented("lark: regex flags"));
    auto e = ParseRegex(pattern, RegexOptions{}, &g_);
    if (!e.ok()) return Status(e.status().code(), "lark /" + pattern + "/: " + e.status().message());
    return *e;
  }

  std::string_view s_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, RuleId> rules_;
  std::set<RuleId> defined_;
};

}  // namespace

StatusOr<Grammar> LarkToGrammar(std::string_view text) {
  LarkParser parser(text);
  return parser.Parse();
}

}  // namespace deepinfer::grammar
