// ToolCallParser: one model family's native tool-call format, both ways:
// parsing the generated text into OpenAI tool calls, and describing the
// format as a grammar (grammar/tagged_json.h) so tool_choice "required" or
// a named function forces a well-formed call whose arguments follow the
// function's parameters schema.
//
// Families (one file each): hermes (Qwen2.5/Qwen3, Hermes: <tool_call>{...}
// </tool_call>), llama3_json (Llama 3.x: {"name", "parameters"} objects,
// optionally after <|python_tag|>, separated by ";"), deepseek_v3
// (<｜tool▁calls▁begin｜> call tokens with ```json arguments), mistral
// ([TOOL_CALLS][{"name", "arguments"}, ...]).
// Thread-safety: parsers are stateless singletons; every method is const.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/tagged_json.h"
#include "server/parsed_request.h"

namespace deepinfer::server {

// The most calls a forced (required / named) parallel call section holds.
inline constexpr int32_t kMaxParallelCalls = 16;

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text
};

// A call as far as the output has generated it (streaming): its name is
// complete, its arguments object has begun.
struct StreamingToolCall {
  std::string name;
  std::string_view arguments;  // raw text from the arguments object's '{' (to its '}' or the end)
  bool closed = false;         // the arguments object is complete
};

struct ToolParseResult {
  std::string content;  // text outside the calls ("" when there is none)
  std::vector<ParsedToolCall> calls;
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual const char* name() const = 0;

  // Where a call section may begin in `text` (generated content so far):
  // the offset of its first marker, or of a marker's beginning cut off by the
  // end of `text`; npos when no call can start anywhere in `text`. Streaming
  // holds text back from there until the output ends.
  virtual size_t CallStart(std::string_view text) const = 0;

  // The whole generated content -> text and calls. Output that is not a
  // well-formed call section stays content (no calls), as vLLM's parsers do.
  virtual ToolParseResult Parse(std::string_view text) const = 0;

  // The calls of the content so far whose name is known and whose arguments
  // object has begun, in order (stops at the first that is not, or cannot be
  // streamed: e.g. arguments sent as a JSON string). Streaming sends their
  // arguments as they grow; Parse still decides at the end.
  virtual std::vector<StreamingToolCall> StreamCalls(std::string_view text) const = 0;

  // The format of one call (or, with `parallel`, one or more) of one of
  // `tools`, for grammar-forced tool choice.
  virtual grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools,
                                               bool parallel) const = 0;
};

// nullptr for an unknown name.
const ToolCallParser* FindToolCallParser(std::string_view name);
// "hermes, llama3_json, deepseek_v3, mistral" (for flag errors).
std::string ToolCallParserNames();
// The parser whose markers the chat template writes; nullptr when none does.
const ToolCallParser* DetectToolCallParser(std::string_view template_source);

namespace tool_parsing {
// Helpers shared by the parsers.

// Offset of `marker` in text, or of a proper prefix of it that ends text;
// npos when neither.
size_t FindMarkerOrPrefix(std::string_view text, std::string_view marker);
// The end (one past the closing brace or bracket) of the JSON object or
// array starting at text[begin]; npos when it is not closed.
size_t JsonValueEnd(std::string_view text, size_t begin);
// A {"name": STRING, <args_key>: OBJECT} call object (args_key "arguments"
// or "parameters"; an arguments string holding JSON is accepted too).
// False when `object_text` is not one.
bool ParseCallObject(std::string_view object_text, ParsedToolCall* out);
// A call object's beginning: {"name": STRING, "arguments"|"parameters": {
// (in that order, blanks allowed): the name and the offset of the
// arguments' '{' in `text`. False when `text` does not (yet) begin so.
bool CallObjectPrefix(std::string_view text, std::string* name, size_t* args_begin);
// The call whose arguments object begins at text[args_begin].
StreamingToolCall StreamingCall(std::string name, std::string_view text, size_t args_begin);
// The calls object after object from text[at] ({call} then `separator`,
// blanks around it, then the next); `separator` '\0': one call only.
void StreamCallObjects(std::string_view text, size_t at, char separator, std::vector<StreamingToolCall>* out);
// Arguments as streamed and reported: the object's text without blanks
// outside strings (the same JSON value as the generated text).
std::string CompactJson(std::string_view text);
// `"name"` as JSON text.
std::string JsonString(const std::string& s);
// The trailing part of a parameters schema as the grammar needs it (an
// empty schema allows any object).
std::string ArgumentsSchema(const ToolFunction& f);
}  // namespace tool_parsing

}  // namespace deepinfer::server
