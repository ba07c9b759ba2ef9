#include "jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace deepinfer::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    // Whitespace effects a tag has on the text that follows it.
    bool strip_next = false;    // "-}}" / "-%}" / "-#}"
    bool trim_newline = false;  // trim_blocks after a block or comment tag
    while (pos < src_.size()) {
      const size_t open = FindTagOpen(pos);
      std::string text = src_.substr(pos, open - pos);
      const size_t text_start = pos;
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && IsSpace(text[k])) ++k;
        text.erase(0, k);
      } else if (trim_newline && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
      }
      strip_next = trim_newline = false;
      if (open == src_.size()) {
        EmitText(std::move(text), text_start);
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      const char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (modifier == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: drop spaces/tabs between the line start and the tag.
        size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
        // Judged on the source: the preceding newline may already be trimmed.
        const size_t run_start = open - (text.size() - k);
        if (run_start == 0 || src_[run_start - 1] == '\n') text.erase(k);
      }
      EmitText(std::move(text), text_start);
      pos = open + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      if (kind == '#') {
        const size_t close = src_.find("#}", pos);
        if (close == std::string::npos) return Error(open, "unterminated comment");
        strip_next = close > pos && src_[close - 1] == '-';
        trim_newline = true;
        pos = close + 2;
        continue;
      }
      const bool is_block = kind == '%';
      if (is_block && IsRawBlock(pos)) {
        DI_ASSIGN_OR_RETURN(pos, LexRaw(open, pos, &strip_next, &trim_newline));
        continue;
      }
      tokens_.push_back(MakeToken(is_block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, open));
      DI_ASSIGN_OR_RETURN(pos, LexTag(open, pos, is_block ? '%' : '}', &strip_next));
      trim_newline = is_block;
    }
    tokens_.push_back(MakeToken(TokenKind::kEof, src_.size()));
    return std::move(tokens_);
  }

 private:
  size_t FindTagOpen(size_t pos) const {
    while (true) {
      const size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return src_.size();
      const char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  void EmitText(std::string text, size_t offset) {
    if (text.empty()) return;
    Token t = MakeToken(TokenKind::kText, offset);
    t.value = std::move(text);
    tokens_.push_back(std::move(t));
  }

  Token MakeToken(TokenKind kind, size_t offset) const {
    Token t;
    t.kind = kind;
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.column = static_cast<int>(offset - line_starts_[line - 1]) + 1;
    return t;
  }

  Status Error(size_t offset, const std::string& what) const {
    const Token t = MakeToken(TokenKind::kEof, offset);
    return InvalidArgument("chat template line " + std::to_string(t.line) + ":" + std::to_string(t.column) +
                           ": " + what);
  }

  // "{% raw %}...{% endraw %}" keeps its body verbatim.
  bool IsRawBlock(size_t pos) const {
    size_t p = pos;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  StatusOr<size_t> LexRaw(size_t open, size_t pos, bool* strip_next, bool* trim_newline) {
    size_t body = src_.find("%}", pos) + 2;
    const bool strip_body_start = src_[body - 3] == '-';
    size_t search = body;
    while (true) {
      const size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) return Error(open, "unterminated raw block (missing endraw)");
      size_t p = tag + 2;
      const bool strip_body_end = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") == 0) {
        p += 6;
        while (p < src_.size() && IsSpace(src_[p])) ++p;
        const bool strip_after = src_.compare(p, 3, "-%}") == 0;
        if (!strip_after && src_.compare(p, 2, "%}") != 0) return Error(tag, "expected '%}' after endraw");
        std::string text = src_.substr(body, tag - body);
        if (strip_body_start) {
          size_t k = 0;
          while (k < text.size() && IsSpace(text[k])) ++k;
          text.erase(0, k);
        }
        if (strip_body_end) {
          while (!text.empty() && IsSpace(text.back())) text.pop_back();
        }
        EmitText(std::move(text), body);
        *strip_next = strip_after;
        *trim_newline = true;
        return p + (strip_after ? 3 : 2);
      }
      search = tag + 2;
    }
  }

  // Lexes expression tokens up to the closing "}}" or "%}" (end_char is '}'
  // or '%'). Closers inside open brackets do not end the tag, so a dict
  // literal's "}}" is read as two braces.
  StatusOr<size_t> LexTag(size_t open, size_t pos, char end_char, bool* strip_next) {
    std::vector<char> brackets;
    while (true) {
      while (pos < src_.size() && IsSpace(src_[pos])) ++pos;
      if (pos >= src_.size()) {
        return Error(open, "unterminated tag (missing '" + std::string(1, end_char) + "}')");
      }
      if (brackets.empty()) {
        const bool dash =
            src_[pos] == '-' && pos + 2 < src_.size() && src_[pos + 1] == end_char && src_[pos + 2] == '}';
        if (dash || (src_[pos] == end_char && pos + 1 < src_.size() && src_[pos + 1] == '}')) {
          tokens_.push_back(MakeToken(end_char == '%' ? TokenKind::kBlockEnd : TokenKind::kVarEnd, pos));
          *strip_next = dash;
          return pos + (dash ? 3 : 2);
        }
      }
      const char c = src_[pos];
      if (c == '\'' || c == '"') {
        DI_ASSIGN_OR_RETURN(pos, LexString(pos));
      } else if (IsDigit(c)) {
        DI_ASSIGN_OR_RETURN(pos, LexNumber(pos));
      } else if (IsNameStart(c)) {
        size_t end = pos;
        while (end < src_.size() && IsNameChar(src_[end])) ++end;
        Token t = MakeToken(TokenKind::kName, pos);
        t.value = src_.substr(pos, end - pos);
        tokens_.push_back(std::move(t));
        pos = end;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                           "/",  "%",  "~",  "<",  ">",  "=",  ".", ",", ":",
                                           "|",  "(",  ")",  "[",  "]",  "{",  "}"};
        const char* op = nullptr;
        for (const char* candidate : kOps) {
          if (src_.compare(pos, std::strlen(candidate), candidate) == 0) {
            op = candidate;
            break;
          }
        }
        if (op == nullptr) return Error(pos, std::string("unexpected character '") + c + "'");
        const std::string o = op;
        if (o == "(" || o == "[" || o == "{") brackets.push_back(o[0]);
        if (o == ")" || o == "]" || o == "}") {
          const char want = o == ")" ? '(' : o == "]" ? '[' : '{';
          if (brackets.empty() || brackets.back() != want) return Error(pos, "unbalanced '" + o + "'");
          brackets.pop_back();
        }
        Token t = MakeToken(TokenKind::kOp, pos);
        t.value = o;
        tokens_.push_back(std::move(t));
        pos += o.size();
      }
    }
  }

  StatusOr<size_t> LexString(size_t start) {
    const char quote = src_[start];
    std::string value;
    size_t p = start + 1;
    while (true) {
      if (p >= src_.size()) return Error(start, "unterminated string literal");
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return Error(start, "unterminated string literal");
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case 'a':
          value += '\a';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case '\n':
          break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const int d = p + k < src_.size() ? HexDigit(src_[p + k]) : -1;
            if (d < 0) return Error(p - 2, std::string("bad \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          p += n;
          AppendUtf8(cp, &value);
          break;
        }
        default:  // Python keeps unknown escapes verbatim
          value += '\\';
          value += e;
      }
    }
    Token t = MakeToken(TokenKind::kString, start);
    t.value = std::move(value);
    tokens_.push_back(std::move(t));
    return p + 1;
  }

  StatusOr<size_t> LexNumber(size_t start) {
    size_t p = start;
    std::string digits;
    auto take_digits = [&] {
      while (p < src_.size() &&
             (IsDigit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && IsDigit(src_[p + 1])))) {
        if (src_[p] != '_') digits += src_[p];
        ++p;
      }
    };
    take_digits();
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
      is_float = true;
      digits += '.';
      ++p;
      take_digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        is_float = true;
        digits += 'e';
        digits.append(src_, p + 1, q - p - 1);
        p = q;
        take_digits();
      }
    }
    Token t = MakeToken(is_float ? TokenKind::kFloat : TokenKind::kInt, start);
    const char* first = digits.data();
    const char* last = digits.data() + digits.size();
    if (is_float) {
      auto res = std::from_chars(first, last, t.float_value);
      if (res.ec != std::errc() || res.ptr != last) return Error(start, "bad number literal");
    } else {
      auto res = std::from_chars(first, last, t.int_value);
      if (res.ec != std::errc() || res.ptr != last) return Error(start, "integer literal out of range");
    }
    tokens_.push_back(std::move(t));
    return p;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

std::string NormalizeSource(const std::string& source) {
  // Jinja reads "\r\n" and "\r" as "\n" and, with keep_trailing_newline off,
  // drops a single newline at the very end.
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

StatusOr<std::vector<Token>> Lex(const std::string& source) {
  Lexer lexer(NormalizeSource(source));
  return lexer.Run();
}

}  // namespace deepinfer::jinja
