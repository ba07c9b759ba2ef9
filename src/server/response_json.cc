#include "server/response_json.h"

namespace deepinfer::server {
namespace {

json NullIfEmpty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// Token text for JSON: keys and strings are sanitized by Dump, but JSON object
// keys must be strings nlohmann can hold, which any std::string is.
json BytesArray(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

const char* ObjectName(const ResponseContext& ctx, bool chunk) {
  if (ctx.api == ParsedRequest::Api::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json Envelope(const ResponseContext& ctx, bool chunk) {
  return json{
      {"id", ctx.id}, {"object", ObjectName(ctx, chunk)}, {"created", ctx.created}, {"model", ctx.model}};
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string SseEvent(const json& j) { return "data: " + Dump(j) + "\n\n"; }

json UsageJson(const Usage& usage) {
  return json{{"prompt_tokens", usage.prompt_tokens},
              {"completion_tokens", usage.completion_tokens},
              {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json CompletionLogprobsJson(const std::vector<TokenLogprob>& lps, const TokenTextFn& token_text,
                            int64_t text_offset, const EchoLogprobs* echo) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  auto add = [&](int32_t token, json logprob, json alternatives) {
    std::string text = token_text(token);
    tokens.push_back(text);
    token_logprobs.push_back(std::move(logprob));
    top.push_back(std::move(alternatives));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(text.size());
  };
  auto alternatives = [&](const TokenLogprob& lp, size_t k) {
    json out = json::object();
    for (size_t j = 0; j < lp.top.size() && j < k; ++j) out[token_text(lp.top[j].first)] = lp.top[j].second;
    return out;
  };
  if (echo != nullptr && echo->first_token >= 0) {
    add(echo->first_token, nullptr, nullptr);  // nothing precedes it
    for (const RankedTokenLogprob& lp : *echo->prompt) {
      add(lp.token, lp.logprob, alternatives(lp, static_cast<size_t>(echo->top_k)));
    }
  }
  for (const TokenLogprob& lp : lps) add(lp.token, lp.logprob, alternatives(lp, lp.top.size()));
  return json{{"tokens", tokens},
              {"token_logprobs", token_logprobs},
              {"top_logprobs", top},
              {"text_offset", offsets}};
}

json PromptLogprobsJson(const std::vector<RankedTokenLogprob>& entries, int32_t top_k,
                        const TokenTextFn& token_text) {
  json out = json::array({nullptr});  // the first prompt token has no context
  for (const RankedTokenLogprob& e : entries) {
    json entry = json::object();
    entry[std::to_string(e.token)] = {
        {"logprob", e.logprob}, {"rank", e.rank}, {"decoded_token", token_text(e.token)}};
    for (size_t j = 0; j < e.top.size() && j < static_cast<size_t>(top_k); ++j) {
      const auto& [id, logprob] = e.top[j];
      if (id == e.token) continue;  // listed with its own rank
      entry[std::to_string(id)] = {
          {"logprob", logprob}, {"rank", static_cast<int64_t>(j) + 1}, {"decoded_token", token_text(id)}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

json ChatLogprobsJson(const std::vector<TokenLogprob>& lps, const TokenTextFn& token_text) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) {
    std::string text = token_text(lp.token);
    json top = json::array();
    for (const auto& [id, logprob] : lp.top) {
      std::string alt = token_text(id);
      top.push_back({{"token", alt}, {"logprob", logprob}, {"bytes", BytesArray(alt)}});
    }
    content.push_back(
        {{"token", text}, {"logprob", lp.logprob}, {"bytes", BytesArray(text)}, {"top_logprobs", top}});
  }
  return json{{"content", content}};
}

json FullResponseJson(const ResponseContext& ctx, const std::vector<ChoiceResult>& choices,
                      const Usage& usage, const TokenTextFn& token_text) {
  json out = Envelope(ctx, /*chunk=*/false);
  json list = json::array();
  for (const ChoiceResult& c : choices) {
    json choice = {{"index", c.index}, {"finish_reason", NullIfEmpty(c.finish_reason)}};
    if (ctx.api == ParsedRequest::Api::kChat) {
      json message = {{"role", "assistant"}, {"content", c.text}};
      // OpenAI sends null content beside tool calls when there is no text.
      if (!c.tool_calls.empty() && c.text.empty()) message["content"] = nullptr;
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) message["tool_calls"] = c.tool_calls;
      choice["message"] = std::move(message);
      choice["logprobs"] = c.want_logprobs ? ChatLogprobsJson(c.logprobs, token_text) : json(nullptr);
    } else {
      choice["text"] = c.text;
      const EchoLogprobs echo{c.first_prompt_token, &c.prompt_entries, c.echo_logprobs};
      choice["logprobs"] = c.want_logprobs ? CompletionLogprobsJson(c.logprobs, token_text, 0,
                                                                    c.echo_logprobs >= 0 ? &echo : nullptr)
                                           : json(nullptr);
      if (c.prompt_logprobs >= 0) {
        choice["prompt_logprobs"] = PromptLogprobsJson(c.prompt_entries, c.prompt_logprobs, token_text);
      }
    }
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = UsageJson(usage);
  // Chat: vLLM reports the (one) prompt's logprobs beside the choices.
  if (ctx.api == ParsedRequest::Api::kChat && !choices.empty() && choices[0].prompt_logprobs >= 0) {
    out["prompt_logprobs"] =
        PromptLogprobsJson(choices[0].prompt_entries, choices[0].prompt_logprobs, token_text);
  }
  return out;
}

json CompletionChunkJson(const ResponseContext& ctx, int32_t index, const std::string& text, json logprobs,
                         const std::string& finish_reason) {
  json out = Envelope(ctx, /*chunk=*/true);
  out["choices"] = json::array({{{"index", index},
                                 {"text", text},
                                 {"logprobs", std::move(logprobs)},
                                 {"finish_reason", NullIfEmpty(finish_reason)}}});
  return out;
}

json ChatChunkJson(const ResponseContext& ctx, int32_t index, json delta, json logprobs,
                   const std::string& finish_reason) {
  json out = Envelope(ctx, /*chunk=*/true);
  out["choices"] = json::array({{{"index", index},
                                 {"delta", std::move(delta)},
                                 {"logprobs", std::move(logprobs)},
                                 {"finish_reason", NullIfEmpty(finish_reason)}}});
  return out;
}

json ChatDelta(bool first, const std::string& text) {
  json delta = json::object();
  if (first) delta["role"] = "assistant";
  delta["content"] = text;  // may be "": tokens that add no text yet still get a chunk
  return delta;
}

json ToolCallJson(const std::string& id, const ParsedToolCall& call, int64_t index) {
  json out = json::object();
  if (index >= 0) out["index"] = index;
  out["id"] = id;
  out["type"] = "function";
  out["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return out;
}

json UsageChunkJson(const ResponseContext& ctx, const Usage& usage) {
  json out = Envelope(ctx, /*chunk=*/true);
  out["choices"] = json::array();
  out["usage"] = UsageJson(usage);
  return out;
}

}  // namespace deepinfer::server
