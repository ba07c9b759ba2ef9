#include "structured/tokenizer_vocabulary.h"

#include <algorithm>

namespace deepinfer {

TokenizerVocabulary GrammarVocabularyOf(const Tokenizer& tok, int64_t max_ids) {
  const auto n = static_cast<int32_t>(std::min<int64_t>(tok.vocab_size(), std::max<int64_t>(max_ids, 0)));
  TokenizerVocabulary v;
  v.token_bytes.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    v.token_bytes[static_cast<size_t>(id)] = tok.TokenBytes(id);
    if (tok.IsEndOfGeneration(id)) v.end_of_generation_ids.push_back(id);
  }
  return v;
}

StatusOr<std::unique_ptr<StructuredOutput>> StructuredOutputFor(const Tokenizer& tok, int64_t max_ids) {
  TokenizerVocabulary v = GrammarVocabularyOf(tok, max_ids);
  return StructuredOutput::Create(std::move(v.token_bytes), v.end_of_generation_ids);
}

}  // namespace deepinfer
