#include "server/generation_job.h"

#include <algorithm>
#include <cstdio>

namespace deepinfer::server {

GenerationJob::GenerationJob(Engine& engine, JobOptions options, TokenTextFn token_text,
                             std::shared_ptr<ResponseWriter> writer)
    : engine_(engine),
      options_(std::move(options)),
      token_text_(std::move(token_text)),
      writer_(std::move(writer)) {}

std::optional<ApiError> GenerationJob::Start(std::vector<GenerationRequest> requests) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    choices_.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      Choice& c = choices_[i];
      c.prompt_tokens = static_cast<int64_t>(requests[i].prompt_tokens.size());
      c.result.index = static_cast<int32_t>(i);
      c.result.want_logprobs = options_.want_logprobs;
      c.result.prompt_logprobs = options_.prompt_logprobs;
      c.result.echo_logprobs = options_.echo_logprobs;
      if (!requests[i].prompt_tokens.empty()) c.result.first_prompt_token = requests[i].prompt_tokens.front();
      if (i < options_.echo_text.size()) c.result.text = options_.echo_text[i];
      if (options_.context.api == ParsedRequest::Api::kChat) {
        c.splitter = std::make_unique<ChatOutputSplitter>(options_.reasoning, options_.tool_parser,
                                                          options_.max_tool_calls, options_.stream);
      }
    }
  }
  auto self = shared_from_this();
  for (size_t i = 0; i < requests.size(); ++i) {
    // Not under mu_: an engine may deliver events (or fail) from inside Submit.
    auto id = engine_.Submit(std::move(requests[i]),
                             [self, i](GenerationEvent event) { self->OnEvent(i, std::move(event)); });
    if (!id.ok()) {
      std::vector<RequestId> live;
      {
        std::lock_guard<std::mutex> lock(mu_);
        failed_ = true;
        live = LiveIdsLocked();
      }
      for (RequestId r : live) engine_.Abort(r);
      return ApiErrorFromStatus(id.status());
    }
    std::lock_guard<std::mutex> lock(mu_);
    choices_[i].id = *id;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    if (options_.stream) {
      writer_->BeginStream();
      for (std::string& data : pending_) writer_->SendStreamData(std::move(data));
      pending_.clear();
    }
    if (num_done_ == choices_.size()) FinishLocked();
  }
  std::weak_ptr<GenerationJob> weak = self;
  writer_->SetDisconnectHandler([weak] {
    if (auto job = weak.lock()) job->AbortAll();
  });
  return std::nullopt;
}

void GenerationJob::OnEvent(size_t index, GenerationEvent event) {
  std::vector<RequestId> to_abort;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_ || index >= choices_.size() || choices_[index].done) return;
    Choice& c = choices_[index];
    c.prompt_tokens = std::max(c.prompt_tokens, event.prompt_tokens);
    c.completion_tokens = std::max(c.completion_tokens, event.completion_tokens);
    c.cached_tokens = std::max(c.cached_tokens, event.cached_prompt_tokens);
    const bool final_event = event.finish_reason != FinishReason::kNone || !event.error.empty();
    if (!event.token_ids.empty() && c.first_token_time == std::chrono::steady_clock::time_point{}) {
      c.first_token_time = std::chrono::steady_clock::now();
    }
    std::string finish =
        event.finish_reason != FinishReason::kNone ? FinishReasonName(event.finish_reason) : "";
    if (!event.prompt_logprobs.empty()) c.result.prompt_entries = std::move(event.prompt_logprobs);

    if (!event.error.empty()) {
      ApiError error;
      error.http_status = 500;
      error.type = "server_error";
      error.message = event.error;
      if (options_.stream) {
        // Headers are out already: report in-band, end this choice.
        EmitLocked("data: " + error.ToJson() + "\n\n");
      } else {
        failed_ = true;
        finished_ = true;
        to_abort = LiveIdsLocked();
        writer_->SendResponse(500, "application/json", error.ToJson());
      }
      if (finish.empty()) finish = "abort";
    } else if (options_.stream) {
      std::string text = std::move(event.text);
      if (c.first && index < options_.echo_text.size()) text = options_.echo_text[index] + text;
      json logprobs = nullptr;
      if (options_.want_logprobs && !event.logprobs.empty()) {
        // Completions echo: the first chunk's logprobs start with the prompt's.
        const EchoLogprobs echo{c.result.first_prompt_token, &c.result.prompt_entries,
                                options_.echo_logprobs};
        logprobs = options_.context.api == ParsedRequest::Api::kChat
                       ? ChatLogprobsJson(event.logprobs, token_text_)
                       : CompletionLogprobsJson(event.logprobs, token_text_, c.text_bytes,
                                                c.first && options_.echo_logprobs >= 0 ? &echo : nullptr);
      }
      c.text_bytes += static_cast<int64_t>(text.size());
      const bool is_chat = options_.context.api == ParsedRequest::Api::kChat;
      // A step that produced tokens gets a chunk even when they add no text
      // yet (a UTF-8 sequence or a stop string being held back, tokens that
      // render as nothing): clients measure time-to-first-token and token
      // pacing from the chunks.
      const bool has_tokens = !event.token_ids.empty();
      // Chat sends the role in the first chunk even with no text yet, and the
      // finish reason in a chunk of its own (an empty delta), as OpenAI does.
      if (is_chat) {
        // The echo is content as sent; the generated text goes through the splitter.
        std::string echo;
        if (c.first && index < options_.echo_text.size()) echo = options_.echo_text[index];
        ChatOutputDelta d = c.splitter->Push(text.substr(echo.size()));
        if (final_event) {
          ChatOutputDelta rest = c.splitter->Finish();
          d.reasoning += rest.reasoning;
          d.content += rest.content;
          for (ToolCallFragment& f : rest.fragments) d.fragments.push_back(std::move(f));
          for (ParsedToolCall& call : rest.calls) d.calls.push_back(std::move(call));
        }
        d.content = echo + d.content;
        if (c.first || has_tokens || !d.empty() || !logprobs.is_null()) {
          EmitChunkLocked(ChatChunkJson(options_.context, c.result.index, ChatDeltaLocked(c, d),
                                        std::move(logprobs), ""));
        }
        if (finish == "stop" && !c.result.tool_calls.empty()) finish = "tool_calls";
        if (!finish.empty()) {
          EmitChunkLocked(ChatChunkJson(options_.context, c.result.index, json::object(), nullptr, finish));
        }
      } else if (has_tokens || !text.empty() || !logprobs.is_null() || !finish.empty()) {
        EmitChunkLocked(
            CompletionChunkJson(options_.context, c.result.index, text, std::move(logprobs), finish));
      }
      c.first = false;
    } else if (c.splitter) {
      ChatOutputDelta d = c.splitter->Push(event.text);
      if (final_event) {
        ChatOutputDelta rest = c.splitter->Finish();
        d.reasoning += rest.reasoning;
        d.content += rest.content;
        for (ParsedToolCall& call : rest.calls) d.calls.push_back(std::move(call));
      }
      c.result.text += d.content;
      c.result.reasoning += d.reasoning;
      for (const ParsedToolCall& call : d.calls)
        c.result.tool_calls.push_back(ToolCallJson(ToolCallId(c), call));
      if (finish == "stop" && !c.result.tool_calls.empty()) finish = "tool_calls";
      if (options_.want_logprobs) {
        for (TokenLogprob& lp : event.logprobs) c.result.logprobs.push_back(std::move(lp));
      }
    } else {
      c.result.text += event.text;
      if (options_.want_logprobs) {
        for (TokenLogprob& lp : event.logprobs) c.result.logprobs.push_back(std::move(lp));
      }
    }

    if (final_event && !failed_) {
      c.done = true;
      c.result.finish_reason = finish;
      if (!options_.log_params.empty()) LogChoiceLocked(c, finish);
      ++num_done_;
      if (started_ && num_done_ == choices_.size()) FinishLocked();
    }
  }
  for (RequestId r : to_abort) engine_.Abort(r);
}

std::string GenerationJob::ToolCallId(const Choice& c) const {
  // Unique per response: the response id's random part, the choice, the call.
  const std::string& id = options_.context.id;
  const size_t dash = id.find('-');
  return "call_" + (dash == std::string::npos ? id : id.substr(dash + 1)) + "_" +
         std::to_string(c.result.index) + "_" + std::to_string(c.result.tool_calls.size());
}

json GenerationJob::ChatDeltaLocked(Choice& c, const ChatOutputDelta& d) {
  json delta = json::object();
  if (c.first) delta["role"] = "assistant";
  // "" when nothing else: tokens that add no text yet still get a chunk.
  if (!d.content.empty() || (d.reasoning.empty() && d.calls.empty() && d.fragments.empty()))
    delta["content"] = d.content;
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (!d.calls.empty() || !d.fragments.empty()) {
    json calls = json::array();
    for (const ToolCallFragment& f : d.fragments) {
      const auto k = static_cast<int64_t>(f.index);
      if (f.first) {
        json entry = ToolCallJson(ToolCallId(c), ParsedToolCall{f.name, f.arguments}, k);
        c.result.tool_calls.push_back(entry);
        calls.push_back(std::move(entry));
      } else if (f.index < c.result.tool_calls.size()) {
        c.result.tool_calls[f.index]["function"]["arguments"] =
            c.result.tool_calls[f.index]["function"]["arguments"].get<std::string>() + f.arguments;
        calls.push_back({{"index", k}, {"function", {{"arguments", f.arguments}}}});
      }
    }
    for (const ParsedToolCall& call : d.calls) {
      const auto k = static_cast<int64_t>(c.result.tool_calls.size());
      json entry = ToolCallJson(ToolCallId(c), call, k);
      c.result.tool_calls.push_back(entry);
      calls.push_back(std::move(entry));
    }
    delta["tool_calls"] = std::move(calls);
  }
  return delta;
}

void GenerationJob::LogChoiceLocked(const Choice& c, const std::string& finish) const {
  using Ms = std::chrono::duration<double, std::milli>;
  const auto now = std::chrono::steady_clock::now();
  const bool has_first = c.first_token_time != std::chrono::steady_clock::time_point{};
  const double ttft = has_first ? Ms(c.first_token_time - created_).count() : -1.0;
  std::fprintf(stderr,
               "deepinfer serve: request %s choice %d: prompt %lld tokens (%lld cached), %s, finish %s, "
               "%lld tokens, first token %.1f ms, total %.1f ms\n",
               options_.context.id.c_str(), c.result.index, static_cast<long long>(c.prompt_tokens),
               static_cast<long long>(c.cached_tokens), options_.log_params.c_str(), finish.c_str(),
               static_cast<long long>(c.completion_tokens), ttft, Ms(now - created_).count());
}

void GenerationJob::AbortAll() {
  std::vector<RequestId> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live = LiveIdsLocked();
  }
  for (RequestId r : live) engine_.Abort(r);
}

void GenerationJob::EmitLocked(std::string data) {
  if (started_) {
    writer_->SendStreamData(std::move(data));
  } else {
    pending_.push_back(std::move(data));
  }
}

void GenerationJob::EmitChunkLocked(json chunk) {
  if (!warnings_sent_ && !options_.warnings.empty()) {
    chunk["warnings"] = options_.warnings;
    warnings_sent_ = true;
  }
  EmitLocked(SseEvent(chunk));
}

void GenerationJob::FinishLocked() {
  if (finished_) return;
  finished_ = true;
  if (options_.stream) {
    if (options_.include_usage) {
      json usage = UsageChunkJson(options_.context, UsageLocked());
      if (!warnings_sent_ && !options_.warnings.empty()) usage["warnings"] = options_.warnings;
      warnings_sent_ = true;
      writer_->SendStreamData(SseEvent(usage));
    }
    writer_->SendStreamData(kSseDone);
    writer_->EndStream();
    return;
  }
  std::vector<ChoiceResult> results;
  results.reserve(choices_.size());
  for (const Choice& c : choices_) results.push_back(c.result);
  json response = FullResponseJson(options_.context, results, UsageLocked(), token_text_);
  if (!options_.warnings.empty()) response["warnings"] = options_.warnings;
  writer_->SendResponse(200, "application/json", Dump(response));
}

// Prompt tokens count once per prompt (OpenAI bills n choices of one prompt
// once); completion tokens add up over all choices.
Usage GenerationJob::UsageLocked() const {
  Usage usage;
  const size_t n = static_cast<size_t>(std::max(options_.n, 1));
  for (size_t p = 0; p < choices_.size(); p += n) {
    int64_t cached = 0;
    for (size_t i = p; i < std::min(choices_.size(), p + n); ++i) {
      cached = std::max(cached, choices_[i].cached_tokens);
    }
    usage.prompt_tokens += choices_[p].prompt_tokens;
    usage.cached_tokens += cached;
  }
  for (const Choice& c : choices_) usage.completion_tokens += c.completion_tokens;
  return usage;
}

std::vector<RequestId> GenerationJob::LiveIdsLocked() const {
  std::vector<RequestId> ids;
  for (const Choice& c : choices_) {
    if (c.id >= 0 && !c.done) ids.push_back(c.id);
  }
  return ids;
}

}  // namespace deepinfer::server
