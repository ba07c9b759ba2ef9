// JSON Schema front end (drafts 2020-12, 2019-09, 07, 06, 04) -> IR.
//
// The grammar accepts exactly the JSON texts valid under the schema, written
// with the whitespace policy below, object properties in schema order
// (declared properties first, then additional ones where the schema allows
// them), strings with JSON's escapes, and numbers under bounds or multipleOf
// without exponent. Every keyword that is not an assertion or applicator of
// a JSON Schema vocabulary (title, $id, id, self, javaType, x-*, ...) is an
// annotation and ignored. The supported-keyword table, with what is enforced
// exactly and what is relaxed, is in docs/structured-output.md.
//
// An assertion that cannot be enforced exactly is either an error
// (options.strict, the default: kUnimplemented listing each keyword with its
// JSON pointer) or relaxed -- left out of the grammar, so the output may
// violate it -- and reported in JsonSchemaGrammar::relaxed.
// Invalid schemas are kInvalidArgument naming the JSON pointer; a schema no
// instance satisfies compiles to a grammar matching nothing, which the
// automaton build reports as an error.
//
// Never rejects a valid instance because of a default: additionalProperties
// defaults to true, as in the specification.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

struct JsonSchemaOptions {
  // false: compact JSON (no whitespace; separators "," and ":").
  // true: up to `max_whitespace` bytes of [ \t\n\r] wherever JSON allows it.
  bool any_whitespace = false;
  int max_whitespace = 16;
  // true: an assertion that cannot be enforced exactly fails the compile;
  // false: it is relaxed and reported (JsonSchemaGrammar::relaxed).
  bool strict = true;
  // Limit on schema nesting / $ref expansion (the converter's stack depth).
  int max_depth = 128;

  std::string CacheKey() const;
};

// An assertion left out of the grammar (strict = false).
struct RelaxedAssertion {
  std::string keyword;  // the keyword, or what about it is not enforced
  std::string pointer;  // JSON pointer of the schema holding it ("#/properties/a")
};

struct JsonSchemaGrammar {
  Grammar grammar;
  std::vector<RelaxedAssertion> relaxed;  // empty when strict
};

StatusOr<JsonSchemaGrammar> CompileJsonSchemaGrammar(std::string_view schema_text,
                                                     const JsonSchemaOptions& options = {});

// "kw at #/ptr; kw2 at #/ptr2": the list as messages and logs name it.
std::string FormatRelaxed(const std::vector<RelaxedAssertion>& relaxed);

// The grammar alone (relaxed assertions, if any, are logged once).
StatusOr<Grammar> JsonSchemaToGrammar(std::string_view schema_text, const JsonSchemaOptions& options = {});

}  // namespace deepinfer::grammar
