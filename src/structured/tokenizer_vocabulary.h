// The grammar vocabulary of a tokenizer: the one place that turns a Tokenizer
// into what structured output needs (grammar/vocabulary.h), so the server,
// `deepinfer generate` and `deepinfer constrain` judge the same vocabulary.
//
// The rule, for ids [0, n) with n = min(tokenizer ids, model logit rows):
//  - bytes: Tokenizer::TokenBytes(id) (control / unknown / unused tokens have
//    none, so a mask never allows them as text);
//  - end of generation: every id with Tokenizer::IsEndOfGeneration, ascending:
//    the tokenizer's EOS plus its extra end-of-generation ids (GGUF eot/eom
//    keys, HF generation_config eos ids, control tokens such as <|eot_id|> or
//    <|im_end|>). This is exactly the set the engine stops on, so a grammar
//    allows ending with the same tokens that end a request.
// The vocabulary does not depend on the model beyond the clip: a model with
// padding rows past the tokenizer gets the same vocabulary as the tokenizer
// alone (the padding ids are cleared when the mask is widened to the model,
// see GrammarConstraint::FillAllowedMask); a model with fewer rows than the
// tokenizer has ids drops the ids it cannot produce, so jump-forward and
// finish-soon never offer one.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/structured_output.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

// The arguments of StructuredOutput::Create / grammar::Vocabulary.
struct TokenizerVocabulary {
  std::vector<std::string> token_bytes;        // [n]
  std::vector<int32_t> end_of_generation_ids;  // ascending, all < n
};

// max_ids: the model's logit rows (Model::config().vocab_size); pass
// tok.vocab_size() when there is no model. Must be >= 0.
TokenizerVocabulary GrammarVocabularyOf(const Tokenizer& tok, int64_t max_ids);

// StructuredOutput::Create over GrammarVocabularyOf(tok, max_ids).
StatusOr<std::unique_ptr<StructuredOutput>> StructuredOutputFor(const Tokenizer& tok, int64_t max_ids);

}  // namespace deepinfer
