// /v1/responses (OpenAI's Responses API) over the chat-completions path.
//
// A Responses request is translated into a chat request (input -> messages,
// instructions -> a system message first, max_output_tokens -> max_tokens,
// text.format -> response_format, stream -> stream with usage), which runs
// through the same parsing, template, tokenization and generation as
// /v1/chat/completions; a ResponseWriter adapter turns the chat route's
// answer back into a Responses object, or its SSE chunks into the Responses
// event stream:
//   response.created, response.in_progress, response.output_item.added,
//   response.content_part.added, response.output_text.delta ...,
//   response.output_text.done, response.content_part.done,
//   response.output_item.done, response.completed (or response.incomplete
//   when max_output_tokens cut the text; error + response.failed on an
//   engine error).
// Each event is "event: TYPE\ndata: {"type": TYPE, "sequence_number": i, ...}\n\n".
//
// The JSON is kept in its key order (nlohmann::ordered_json), so a JSON
// Schema's property order reaches the chat route as sent.
//
// Not supported yet (400 naming the field): tools / a tool_choice other
// than "none" / "auto", previous_response_id (nothing is stored), background,
// reasoning, include, top_logprobs, non-text input parts (images, files),
// input items other than messages. Unknown fields: 400.
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
