#include "grammar/structured_output.h"

#include <string>
#include <utility>

#include "grammar/compiler.h"
#include "grammar/grammar_constraint.h"
#include "grammar/vocabulary.h"

namespace deepinfer {

namespace {

using grammar::GrammarCompiler;
using grammar::JsonSchemaOptions;

class StructuredOutputImpl : public StructuredOutput {
 public:
  explicit StructuredOutputImpl(std::shared_ptr<const grammar::Vocabulary> vocab)
      : vocab_(vocab), compiler_(std::move(vocab)) {
    // Fills the shared any-JSON mask entries (strings, numbers, keys) once
    // per vocabulary (~50-150 ms on 128k tokens), so a schema's first
    // request does not pay for them.
    compiler_.WarmUp();
  }

  StatusOr<MadeConstraint> Make(const StructuredOutputSpec& spec) override {
    using Kind = StructuredOutputSpec::Kind;
    JsonSchemaOptions json;
    json.any_whitespace = spec.any_whitespace;
    json.strict = spec.strict;
    GrammarCompiler::Result compiled = InvalidArgument("structured output: unknown constraint kind");
    switch (spec.kind) {
      case Kind::kJsonSchema:
        compiled = compiler_.CompileJsonSchema(spec.text, json);
        break;
      case Kind::kJsonObject:
        compiled = compiler_.CompileJsonObject(json);
        break;
      case Kind::kRegex:
        compiled = compiler_.CompileRegex(spec.text);
        break;
      case Kind::kGbnf:
        compiled = compiler_.CompileGbnf(spec.text);
        break;
      case Kind::kLark:
        compiled = compiler_.CompileLark(spec.text);
        break;
      case Kind::kChoice:
        compiled = compiler_.CompileChoice(spec.choices);
        break;
      case Kind::kTaggedJson:
        compiled = compiler_.CompileTaggedJson(spec.tagged, json);
        break;
    }
    if (!compiled.ok()) return compiled.status();
    MadeConstraint made;
    for (const grammar::RelaxedAssertion& r : (*compiled)->relaxed())
      made.relaxed.push_back({r.keyword, r.pointer});
    made.constraint = std::make_unique<grammar::GrammarConstraint>(*compiled);
    return made;
  }

  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_->size()); }

 private:
  std::shared_ptr<const grammar::Vocabulary> vocab_;
  GrammarCompiler compiler_;
};

}  // namespace

std::string MadeConstraint::Warning() const {
  if (relaxed.empty()) return std::string();
  std::string out = "relaxed JSON Schema assertions (not enforced): ";
  for (size_t i = 0; i < relaxed.size(); ++i) {
    out += (i ? "; " : "") + relaxed[i].keyword + " at " + relaxed[i].pointer;
  }
  return out;
}

StatusOr<std::unique_ptr<StructuredOutput>> StructuredOutput::Create(std::vector<std::string> token_bytes,
                                                                     const std::vector<int32_t>& eos_ids) {
  if (token_bytes.empty()) return InvalidArgument("structured output: empty vocabulary");
  if (token_bytes.size() > 0x7FFFFFFFu) return InvalidArgument("structured output: vocabulary too large");
  for (int32_t id : eos_ids) {
    if (id < 0 || static_cast<size_t>(id) >= token_bytes.size()) {
      return InvalidArgument("structured output: eos id " + std::to_string(id) +
                             " outside the vocabulary of " + std::to_string(token_bytes.size()));
    }
  }
  auto vocab = std::make_shared<const grammar::Vocabulary>(std::move(token_bytes), eos_ids);
  return std::unique_ptr<StructuredOutput>(std::make_unique<StructuredOutputImpl>(std::move(vocab)));
}

}  // namespace deepinfer
