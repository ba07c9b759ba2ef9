#include "server/chat_output.h"

#include <algorithm>

namespace deepinfer::server {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

// Bytes at the end of `s` that could begin `marker` (a proper prefix).
size_t PartialSuffix(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(marker.size() - 1, s.size()); n > 0; --n) {
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ChatOutputSplitter::ChatOutputSplitter(ReasoningFormat reasoning, const ToolCallParser* tools,
                                       size_t max_calls, bool stream_arguments)
    : reasoning_(reasoning), tools_(tools), max_calls_(max_calls), stream_arguments_(stream_arguments) {
  if (reasoning_ == ReasoningFormat::kNone) phase_ = Phase::kContent;
}

ChatOutputDelta ChatOutputSplitter::Push(const std::string& text) {
  ChatOutputDelta out;
  if (phase_ == Phase::kContent) {
    PushContent(text, &out);
    return out;
  }
  pending_ += text;
  if (phase_ == Phase::kStart) {
    // Leading blanks, then <think> or not.
    const size_t i = pending_.find_first_not_of(" \t\r\n");
    if (i == std::string::npos) return out;
    const std::string_view rest = std::string_view(pending_).substr(i);
    if (rest.size() < kThinkOpen.size() && kThinkOpen.substr(0, rest.size()) == rest) return out;  // forming
    if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
      pending_ = std::string(rest.substr(kThinkOpen.size()));
      phase_ = Phase::kReasoning;
    } else if (reasoning_ == ReasoningFormat::kDeepseekR1) {
      phase_ = Phase::kReasoning;  // the template opened the block in the prompt
    } else {
      phase_ = Phase::kContent;
      std::string all = std::move(pending_);
      pending_.clear();
      PushContent(all, &out);
      return out;
    }
  }
  // kReasoning: up to </think>, holding a partial marker back.
  const size_t close = pending_.find(kThinkClose);
  if (close == std::string::npos) {
    const size_t keep = PartialSuffix(pending_, kThinkClose);
    out.reasoning = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }
  out.reasoning = pending_.substr(0, close);
  std::string after = pending_.substr(close + kThinkClose.size());
  pending_.clear();
  phase_ = Phase::kContent;
  // Templates put blank lines after </think>; they are not content.
  skip_newlines_ = true;
  PushContent(after, &out);
  return out;
}

void ChatOutputSplitter::PushContent(const std::string& text, ChatOutputDelta* out) {
  size_t start = 0;
  if (skip_newlines_) {
    start = text.find_first_not_of("\r\n");
    if (start == std::string::npos) return;
    skip_newlines_ = false;
  }
  if (start >= text.size()) return;
  content_.append(text, start);
  size_t limit = content_.size();
  if (tools_ != nullptr) limit = std::min(limit, tools_->CallStart(content_));
  if (limit > emitted_) {
    out->content += content_.substr(emitted_, limit - emitted_);
    emitted_ = limit;
  }
  if (tools_ != nullptr && stream_arguments_ && emitted_ < content_.size()) StreamArguments(out);
}

void ChatOutputSplitter::StreamArguments(ChatOutputDelta* out) {
  const std::vector<StreamingToolCall> calls = tools_->StreamCalls(content_);
  for (size_t j = 0; j < calls.size() && j < max_calls_; ++j) {
    std::string args = tool_parsing::CompactJson(calls[j].arguments);
    if (j == streamed_.size()) {
      out->fragments.push_back({j, true, calls[j].name, args});
      streamed_.push_back(std::move(args));
      ++num_calls_;
    } else if (args.size() > streamed_[j].size() && args.compare(0, streamed_[j].size(), streamed_[j]) == 0) {
      out->fragments.push_back({j, false, "", args.substr(streamed_[j].size())});
      streamed_[j] = std::move(args);
    }
  }
}

ChatOutputDelta ChatOutputSplitter::Finish() {
  ChatOutputDelta out;
  if (phase_ != Phase::kContent) {
    // Unclosed reasoning (or only blanks / a partial <think>): as it stands.
    if (phase_ == Phase::kReasoning) {
      out.reasoning = std::move(pending_);
    } else {
      content_ += pending_;
    }
    pending_.clear();
    phase_ = Phase::kContent;
  }
  if (emitted_ >= content_.size()) return out;
  const std::string_view held = std::string_view(content_).substr(emitted_);
  if (tools_ == nullptr) {
    out.content += std::string(held);
  } else {
    // Parse the whole content: a parser may need what came before the
    // marker (llama3_json reads the output from its start).
    ToolParseResult parsed = tools_->Parse(content_);
    if (parsed.calls.empty()) {
      out.content += std::string(held);
    } else {
      // Content the parser kept, beyond what was streamed already.
      if (parsed.content.size() > emitted_) out.content += parsed.content.substr(emitted_);
      // Arguments as generated (compacted), where the call's object is there to see.
      const std::vector<StreamingToolCall> raw = tools_->StreamCalls(content_);
      for (size_t j = 0; j < parsed.calls.size() && j < max_calls_; ++j) {
        ParsedToolCall& call = parsed.calls[j];
        if (j < raw.size() && raw[j].closed && raw[j].name == call.name) {
          call.arguments = tool_parsing::CompactJson(raw[j].arguments);
        }
        if (j < streamed_.size()) {
          // Sent already: the rest of its arguments.
          const std::string& sent = streamed_[j];
          if (call.arguments.size() > sent.size() && call.arguments.compare(0, sent.size(), sent) == 0) {
            out.fragments.push_back({j, false, "", call.arguments.substr(sent.size())});
          }
          continue;
        }
        out.calls.push_back(std::move(call));
        ++num_calls_;
      }
    }
  }
  emitted_ = content_.size();
  return out;
}

}  // namespace deepinfer::server
