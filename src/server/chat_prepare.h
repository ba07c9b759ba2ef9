// The chat-only steps between parsing a request and submitting it: how the
// output is split (reasoning, tool calls) and, for tool_choice "required" or
// a named function, the grammar that forces a call in the model family's
// native format (ToolCallParser::CallFormat over the functions' parameter
// schemas), so the output parses as calls of declared functions whose
// arguments follow their schemas.
#pragma once

#include <optional>

#include "grammar/structured_output.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/generation_job.h"
#include "server/parsed_request.h"

namespace deepinfer::server {

// Server-wide chat settings (serve --tool-call-parser / --reasoning-parser).
struct ChatFeatures {
  const ToolCallParser* tool_parser = nullptr;  // null: the template's format is unknown
  ReasoningFormat reasoning = ReasoningFormat::kNone;
};

// Fills job->reasoning / tool_parser / max_tool_calls and, for a forced
// call, *structured. 400 when the request asks for tool calls the server
// cannot parse (no parser) or combines a forced call with another
// constraint (response_format, guided_*).
std::optional<ApiError> PrepareChatOutput(const ParsedRequest& req, const ChatFeatures& features,
                                          JobOptions* job, std::optional<StructuredOutputSpec>* structured);

// Chat `echo`: the final message's content when it is the assistant's (the
// reply being continued), else "".
std::string ChatEchoText(const ParsedRequest& req);

// "deepseek_r1" / "qwen3" -> the format; nullopt for another name ("" is kNone).
std::optional<ReasoningFormat> ReasoningFormatFromName(const std::string& name);

}  // namespace deepinfer::server
