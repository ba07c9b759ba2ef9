// Internal helpers of the JSON Schema front end (not a public API):
// keyword tables, $ref resolution and allOf merging on ordered_json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::grammar::json_schema_internal {

using Json = nlohmann::ordered_json;

// Prefix of the keywords the front end itself writes into rewritten schemas
// (e.g. "$deepinfer:notIn"); never read from user schemas as assertions
// unless written there, where they mean the same.
inline constexpr const char* kInternalPrefix = "$deepinfer:";
// Extra patterns (beyond `pattern`) a string must all match.
inline constexpr const char* kPatternsKeyword = "$deepinfer:patterns";

// Keywords that never constrain an instance: anything that is not an
// assertion or applicator of a JSON Schema vocabulary (annotations, $defs,
// vendor keywords such as x-*, javaType, self, id).
bool IsAnnotation(const std::string& keyword);
// True if `schema` has any keyword other than annotations.
bool HasConstraints(const Json& schema);
// Copy of `schema` without `keyword`.
Json Without(const Json& schema, const std::string& keyword);

// Resolves a local reference ("#", "#/$defs/a", "#/definitions/a/properties/b")
// or a plain-name anchor ("#node": $anchor, or draft-07 $id "#node").
StatusOr<const Json*> ResolveRef(const Json& root, const std::string& ref);

// kInvalidArgument naming the JSON pointer of the first subschema (reached
// through applicators, $defs and definitions) whose own bounds contradict:
// minLength > maxLength, minItems > maxItems, minProperties or the number of
// required names > maxProperties, minimum > maximum.
Status CheckContradictoryBounds(const Json& root);

// Schema accepting exactly the instances both accept, where expressible.
// Nested subschemas are combined lazily as {"allOf": [a, b]}. Errors
// (kUnimplemented) name the keyword that cannot be merged.
StatusOr<Json> MergeSchemas(const Json& a, const Json& b);

}  // namespace deepinfer::grammar::json_schema_internal
