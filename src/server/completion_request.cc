// /v1/completions body -> ParsedRequest.
#include <limits>

#include "server/request_fields.h"

namespace deepinfer::server {
namespace {

using fields::json;
using fields::MaybeError;

constexpr int64_t kMaxPrompts = 256;

MaybeError ParseTokenPrompt(const json& v, int64_t vocab, PromptInput* out) {
  std::string what = "'prompt' token ids must be integers in [0, " + std::to_string(vocab) + ")";
  if (v.empty()) return BadRequest("'prompt' must not be empty", "prompt");
  out->is_tokens = true;
  for (const json& id : v) {
    if (!id.is_number_integer()) return BadRequest(what, "prompt");
    int64_t t = id.get<int64_t>();
    if (t < 0 || t >= vocab) return BadRequest(what, "prompt");
    out->tokens.push_back(static_cast<int32_t>(t));
  }
  return std::nullopt;
}

// prompt: "text" | [id, ...] | ["text", ...] | [[id, ...], ...]
MaybeError ParsePrompts(const json& body, int64_t vocab, std::vector<PromptInput>* out) {
  const json* p = fields::Find(body, "prompt");
  const char* what = "'prompt' must be a string, a list of token ids, or a list of either";
  if (!p) return BadRequest("'prompt' is required", "prompt");
  if (p->is_string()) {
    out->push_back({false, p->get<std::string>(), {}});
    return std::nullopt;
  }
  if (!p->is_array() || p->empty()) return BadRequest(what, "prompt");
  if ((*p)[0].is_number()) {
    PromptInput in;
    if (auto e = ParseTokenPrompt(*p, vocab, &in)) return e;
    out->push_back(std::move(in));
    return std::nullopt;
  }
  if (static_cast<int64_t>(p->size()) > kMaxPrompts) {
    return BadRequest("'prompt' has more than " + std::to_string(kMaxPrompts) + " prompts", "prompt");
  }
  for (const json& item : *p) {
    PromptInput in;
    if (item.is_string()) {
      in.text = item.get<std::string>();
    } else if (item.is_array()) {
      if (auto e = ParseTokenPrompt(item, vocab, &in)) return e;
    } else {
      return BadRequest(what, "prompt");
    }
    out->push_back(std::move(in));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseCompletionRequest(const json& body, const RequestLimits& limits,
                                               ParsedRequest* out) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  out->api = ParsedRequest::Api::kCompletion;
  if (auto e = fields::CheckFieldNames(
          body, {"prompt", "max_tokens", "logprobs", "echo", "best_of", "prompt_logprobs"},
          {"suffix", "truncate_prompt_tokens"})) {
    return e;
  }
  if (auto e = ParsePrompts(body, limits.vocab_size, &out->prompts)) return e;
  if (auto e = fields::ParseCommonFields(body, limits, out)) return e;
  int64_t max_tokens = -1;
  if (auto e = fields::Int(body, "max_tokens", 1, std::numeric_limits<int32_t>::max(), &max_tokens)) return e;
  out->max_tokens = max_tokens < 0 ? 16 : static_cast<int32_t>(max_tokens);  // OpenAI's default
  int64_t logprobs = -1;
  if (auto e = fields::Int(body, "logprobs", 0, limits.max_logprobs, &logprobs)) return e;
  out->logprobs = static_cast<int32_t>(logprobs);
  if (auto e = fields::Bool(body, "echo", &out->echo)) return e;
  if (auto e = fields::PromptLogprobs(body, limits, out)) return e;
  int64_t best_of = out->n;
  if (auto e = fields::Int(body, "best_of", 1, limits.max_n, &best_of)) return e;
  if (best_of != out->n) return BadRequest("'best_of' different from 'n' is not supported", "best_of");
  if (static_cast<int64_t>(out->prompts.size()) * out->n > 1024) {
    return BadRequest("prompts x n must be at most 1024", "n");
  }
  return std::nullopt;
}

}  // namespace deepinfer::server
