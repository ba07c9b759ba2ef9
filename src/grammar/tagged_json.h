// Tagged JSON: literal text around JSON values that follow JSON Schemas, the
// shape of a model's native tool calls (`<tool_call>{"name": "f",
// "arguments": ` JSON `}</tool_call>`, DeepSeek's call tokens, Mistral's
// [TOOL_CALLS] list). The grammar is
//   prefix item (separator item){min_items-1, max_items-1} suffix
//   item := tags[0] | tags[1] | ...,  tag := begin <JSON under schema> end
// with each schema compiled by the JSON Schema front end (json_schema.h,
// same options) and embedded whole (Grammar::Import).
// Errors: those of the schemas (naming the tag), InvalidArgument for no tags
// or bad counts. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace deepinfer::grammar {

struct TaggedJsonFormat {
  struct Tag {
    std::string begin;
    std::string schema;  // JSON Schema text
    std::string end;
  };
  std::vector<Tag> tags;
  std::string prefix, separator, suffix;
  int32_t min_items = 1;
  int32_t max_items = 1;  // Grammar::kUnbounded: no limit

  // A stable key of every field (the compile cache's).
  std::string CacheKey() const;
};

StatusOr<Grammar> TaggedJsonToGrammar(const TaggedJsonFormat& format, const JsonSchemaOptions& options = {});

}  // namespace deepinfer::grammar
