// StructuredOutput: the one entry point the engine, the server and the CLI use
// to turn a user's constraint (JSON Schema, regex, grammar, choice list, any
// JSON object) into a TokenConstraint over a model's vocabulary.
//
// Usage:
//   DI_ASSIGN_OR_RETURN(auto so, StructuredOutput::Create(token_bytes, eos_ids));
//   StructuredOutputSpec spec{StructuredOutputSpec::Kind::kJsonSchema, schema_text};
//   DI_ASSIGN_OR_RETURN(auto constraint, so->MakeConstraint(spec));  // per request
//
// Compiling is cached by (kind, text): a repeated schema costs one lookup.
// Errors are InvalidArgument (malformed constraint, with the reason),
// Unimplemented (unsupported feature; with strict, an assertion that cannot
// be enforced exactly) or ResourceExhausted (compile time limit).
//
// Thread-safety: MakeConstraint may be called from several threads; each
// returned constraint belongs to one request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "grammar/tagged_json.h"
#include "sampling/token_constraint.h"

namespace deepinfer {

struct StructuredOutputSpec {
  enum class Kind { kJsonSchema, kJsonObject, kRegex, kGbnf, kLark, kChoice, kTaggedJson };
  Kind kind = Kind::kJsonObject;
  std::string text;                    // schema / regex / grammar source
  std::vector<std::string> choices;    // kChoice
  bool any_whitespace = false;         // JSON: allow (bounded) whitespace between tokens
  grammar::TaggedJsonFormat tagged{};  // kTaggedJson (tool calls; grammar/tagged_json.h)
  // JSON Schema, OpenAI semantics (response_format.json_schema.strict,
  // `constrain --strict`): true refuses a schema with an assertion that
  // cannot be enforced exactly (kUnimplemented, HTTP 400, the message names
  // every such keyword with its JSON pointer); false (best effort) leaves
  // such assertions out and reports them (MadeConstraint::relaxed).
  bool strict = false;
};

// A JSON Schema assertion the constraint does not enforce (strict = false):
// the output may violate it.
struct RelaxedSchemaAssertion {
  std::string keyword;  // e.g. "uniqueItems (items is not a finite set)"
  std::string pointer;  // JSON pointer of the subschema, e.g. "#/properties/ids"
};

struct MadeConstraint {
  std::unique_ptr<TokenConstraint> constraint;
  std::vector<RelaxedSchemaAssertion> relaxed;  // empty when strict or fully enforced
  // One line for a warning field / log: "relaxed JSON Schema assertions
  // (not enforced): uniqueItems (...) at #/properties/ids; ..."; empty
  // when nothing was relaxed.
  std::string Warning() const;
};

class StructuredOutput {
 public:
  // token_bytes[id] = the raw bytes token id contributes to the text ("" for
  // special/control tokens that never match); eos_ids end generation.
  static StatusOr<std::unique_ptr<StructuredOutput>> Create(std::vector<std::string> token_bytes,
                                                            const std::vector<int32_t>& eos_ids);
  virtual ~StructuredOutput() = default;
  // The constraint and what it relaxes (the same list on every call for a
  // cached schema).
  virtual StatusOr<MadeConstraint> Make(const StructuredOutputSpec& spec) = 0;
  // The constraint alone.
  StatusOr<std::unique_ptr<TokenConstraint>> MakeConstraint(const StructuredOutputSpec& spec) {
    DI_ASSIGN_OR_RETURN(MadeConstraint made, Make(spec));
    return std::move(made.constraint);
  }
  virtual int64_t vocab_size() const = 0;
};

}  // namespace deepinfer
