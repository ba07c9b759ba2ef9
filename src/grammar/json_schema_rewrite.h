// Rewrites of JSON Schema applicators the grammar cannot take directly into
// ones it can (internal to the JSON Schema front end):
//
//   not S                  -> anyOf of schemas covering exactly the complement
//   if I then T else E     -> anyOf [allOf [I, T], allOf [not I, E]]
//   dependentRequired A:[B] / dependencies A:[B]
//                          -> anyOf [not {required:[A]}, {required:[A, B]}]
//   dependentSchemas A:S / dependencies A:S
//                          -> anyOf [not {required:[A]}, allOf [{required:[A]}, S]]
//
// Negation is exact for type (not integer-only), enum/const, required,
// properties, pattern, known formats, numeric / length / count bounds, not,
// anyOf, allOf, if/then/else and $ref; complements of enum values and
// patterns are written as internal keywords ("$deepinfer:notIn",
// "$deepinfer:notPattern") that the string/number builders enforce. Anything
// else is kUnimplemented naming the keyword, and the caller relaxes it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "grammar/json_schema_util.h"

namespace deepinfer::grammar::json_schema_internal {

inline constexpr const char* kNotIn = "$deepinfer:notIn";              // array of excluded values
inline constexpr const char* kNotPattern = "$deepinfer:notPattern";    // array of patterns none may match
inline constexpr const char* kNotIntegral = "$deepinfer:notIntegral";  // true: numbers with a fraction

// Schemas whose union is exactly the instances `schema` rejects.
StatusOr<std::vector<Json>> Negate(const Json& schema, const Json& root, int depth = 0);

// True if `schema` has a keyword RewriteApplicators rewrites.
bool NeedsRewrite(const Json& schema);

// `schema` with not / if-then-else / dependencies rewritten (top level only)
// as allOf items of anyOf groups. A keyword that cannot be rewritten is
// dropped and appended to `relaxed` as (what, JSON pointer under `path`).
Json RewriteApplicators(const Json& schema, const Json& root, const std::string& path,
                        std::vector<std::pair<std::string, std::string>>* relaxed);

// The branches of a oneOf (with `base`, the rest of its schema) as anyOf
// branches that exclude each other: unchanged where pairs are provably
// disjoint (types, enum/const sets, a required discriminator property),
// else each conjoined with the negation of the branches it may overlap.
// kUnimplemented when a branch cannot be negated.
StatusOr<std::vector<Json>> ExclusiveOneOf(const Json& base, const Json& branches, const Json& root);

}  // namespace deepinfer::grammar::json_schema_internal
