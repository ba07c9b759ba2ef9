// /v1/responses (OpenAI's Responses API) over the chat-completions path.
//
// A Responses request is translated into a chat request (input -> messages,
// instructions -> a system message first, max_output_tokens -> max_tokens,
// text.format -> response_format, tools [{type: "function", name,
// description, parameters, strict}] -> chat tools, tool_choice and
// parallel_tool_calls as they are, stream -> stream with usage), which runs
// through the same parsing, template, tool-call grammar and parser,
// tokenization and generation as /v1/chat/completions. Input items:
// messages; function_call (a call the model made: a tool call of an
// assistant message, joined to the assistant message before it) and
// function_call_output (a tool message answering its call_id).
//
// A ResponseWriter adapter (responses_writer.cc) turns the chat route's
// answer back into a Responses object (output: a message item with the
// text, then one function_call item {id, call_id, name, arguments, status}
// per tool call), or its SSE chunks into the Responses event stream:
//   response.created, response.in_progress (sent with the chat route's first
//   chunk, whose warnings they carry), then per output item in order:
//     message: response.output_item.added, response.content_part.added,
//       response.output_text.delta ..., response.output_text.done,
//       response.content_part.done, response.output_item.done;
//     function_call: response.output_item.added (arguments ""),
//       response.function_call_arguments.delta (the whole arguments: the
//       chat route streams each call complete),
//       response.function_call_arguments.done, response.output_item.done;
//   then response.completed (or response.incomplete when max_output_tokens
//   cut the text; error + response.failed on an engine error).
// Each event is "event: TYPE\ndata: {"type": TYPE, "sequence_number": i, ...}\n\n".
// The chat route's top-level "warnings" (relaxed JSON Schema assertions)
// become the Responses object's "warnings", param "text.format".
//
// The JSON is kept in its key order (nlohmann::ordered_json), so a JSON
// Schema's property order reaches the chat route as sent.
//
// Not supported yet (400 naming the field): tools other than functions
// (web_search, file_search, ...), previous_response_id (nothing is stored),
// background, reasoning, include, top_logprobs, non-text input parts
// (images, files), input items other than messages and function calls.
// Unknown fields: 400.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/response_writer.h"

namespace deepinfer::server {

// What the answer echoes of the request.
struct ResponsesRequestInfo {
  std::string id;       // "resp_..."
  std::string item_id;  // "msg_..."
  int64_t created_at = 0;
  std::string model;
  bool stream = false;
  nlohmann::ordered_json echo =
      nlohmann::ordered_json::object();  // instructions, max_output_tokens, ... as sent
};

// body -> the chat request's body text. nullopt on success; the 400 naming
// the Responses field otherwise.
std::optional<ApiError> ResponsesToChatBody(const nlohmann::ordered_json& body, std::string* chat_body,
                                            ResponsesRequestInfo* info);

// Wraps the writer the chat route answers through.
std::shared_ptr<ResponseWriter> MakeResponsesWriter(std::shared_ptr<ResponseWriter> inner,
                                                    ResponsesRequestInfo info);

}  // namespace deepinfer::server
