#include "server/chat_prepare.h"

namespace deepinfer::server {

std::optional<ApiError> PrepareChatOutput(const ParsedRequest& req, const ChatFeatures& features,
                                          JobOptions* job, std::optional<StructuredOutputSpec>* structured) {
  job->reasoning = features.reasoning;
  const ToolChoice& choice = req.tool_choice;
  if (choice.mode == ToolChoice::Mode::kNone || req.tools.empty()) return std::nullopt;
  if (features.tool_parser == nullptr) {
    return BadRequest(
        "tool calls need a tool-call parser, and this server's chat template is of no known tool-call format "
        "(start it with --tool-call-parser " +
            ToolCallParserNames() + ")",
        "tool_choice");
  }
  job->tool_parser = features.tool_parser;
  job->max_tool_calls = req.parallel_tool_calls ? static_cast<size_t>(kMaxParallelCalls) : 1;
  if (choice.mode == ToolChoice::Mode::kAuto) return std::nullopt;
  if (structured->has_value()) {
    return BadRequest(
        "tool_choice \"required\" or a named function cannot be combined with response_format or "
        "guided_* (the call's format is the constraint)",
        "tool_choice");
  }
  std::vector<ToolFunction> allowed;
  for (const ToolFunction& f : req.tools) {
    if (choice.mode == ToolChoice::Mode::kRequired || f.name == choice.name) allowed.push_back(f);
  }
  StructuredOutputSpec spec;
  spec.kind = StructuredOutputSpec::Kind::kTaggedJson;
  // OpenAI's function.strict: the forced call's arguments follow the
  // parameters schema exactly, or the request is refused (400 naming the
  // assertion). One setting covers the whole call grammar, so it is strict
  // when every allowed function asks for it (a non-strict function's schema
  // is never refused).
  spec.strict = !allowed.empty();
  for (const ToolFunction& f : allowed) spec.strict = spec.strict && f.strict;
  // A named function is called once (OpenAI); "required" is one or more.
  spec.tagged = features.tool_parser->CallFormat(
      allowed, choice.mode == ToolChoice::Mode::kRequired && req.parallel_tool_calls);
  *structured = std::move(spec);
  return std::nullopt;
}

std::string ChatEchoText(const ParsedRequest& req) {
  if (!req.echo || req.messages.empty()) return "";
  const ChatMessage& last = req.messages.back();
  return last.role == "assistant" ? last.content : "";
}

std::optional<ReasoningFormat> ReasoningFormatFromName(const std::string& name) {
  if (name.empty()) return ReasoningFormat::kNone;
  if (name == "deepseek_r1") return ReasoningFormat::kDeepseekR1;
  if (name == "qwen3") return ReasoningFormat::kQwen3;
  return std::nullopt;
}

}  // namespace deepinfer::server
