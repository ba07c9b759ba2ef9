// Jinja lexer: template source -> flat token stream. Text between tags
// becomes kText tokens with whitespace control already applied the way
// Hugging Face configures Jinja for chat templates: trim_blocks (the first
// newline after a block or comment tag is dropped), lstrip_blocks (spaces
// and tabs before a block or comment tag on its own line are dropped),
// "-" on a tag strips all whitespace on that side, "+" disables lstrip,
// and one trailing newline of the template is dropped
// (keep_trailing_newline=False). Comments vanish.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::jinja {

enum class TokenKind {
  kText,        // literal template text (value)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword (value)
  kString,      // string literal, escapes decoded (value)
  kInt,         // integer literal (int_value)
  kFloat,       // float literal (float_value)
  kOp,          // operator or punctuation (value): + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  kEof,
};

struct Token {
  TokenKind kind;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;  // 1-based position of the token's first byte in the source
  int column = 1;
};

// Tokenizes `source`. InvalidArgument "line L:C: ..." for an unterminated
// tag, comment or string, a bad number or an unexpected character.
StatusOr<std::vector<Token>> Lex(const std::string& source);

}  // namespace deepinfer::jinja
