// JSON Schema front end (draft 2020-12 and draft-07 subset) -> IR.
//
// The grammar accepts exactly the JSON texts valid under the schema, written
// with the whitespace policy below, object properties in schema order
// (declared properties first, then additional ones where the schema allows
// them), and strings with JSON's escapes. Keywords that cannot be enforced
// are an error listing them (kUnimplemented), unless `lenient` is set, in
// which case they are ignored with a warning (the output may then violate
// them). Annotations (title, description, examples, $comment, default,
// deprecated, readOnly, writeOnly, $schema, $id, $anchor, contentMediaType,
// contentEncoding) are ignored.
//
// Never rejects a valid instance because of a default: additionalProperties
// defaults to true, as in the specification.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

struct JsonSchemaOptions {
  // false: compact JSON (no whitespace; separators "," and ":").
  // true: up to `max_whitespace` bytes of [ \t\n\r] wherever JSON allows it.
  bool any_whitespace = false;
  int max_whitespace = 16;
  // Ignore unsupported keywords (warn) instead of failing.
  bool lenient = false;
  // Limit on schema nesting / $ref expansion (the converter's stack depth).
  int max_depth = 128;

  std::string CacheKey() const;
};

StatusOr<Grammar> JsonSchemaToGrammar(std::string_view schema_text, const JsonSchemaOptions& options = {});

}  // namespace deepinfer::grammar
