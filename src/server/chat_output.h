// ChatOutputSplitter: one chat choice's generated text -> reasoning_content,
// content and tool calls, incrementally (stream deltas) or at once.
//
// Reasoning (--reasoning-parser): deepseek_r1 treats the output as reasoning
// from its start (an opening <think> is optional, templates often put it in
// the prompt) to </think>; qwen3 only when the output opens with <think>.
// Unclosed reasoning runs to the end of the output.
// Tool calls (a ToolCallParser, when the request may call tools): content is
// streamed until the parser sees where a call section may begin; from there
// the text is held and parsed when the output ends (text that turns out not
// to be calls is released as content then). With stream_arguments, a call
// is sent as soon as its name is known (a fragment with the name and the
// arguments so far) and its arguments as they grow (fragments to append, as
// OpenAI streams them); otherwise calls come whole. Either way a call's
// arguments are its generated arguments object without blanks outside
// strings (tool_parsing::CompactJson), so the fragments add up to the
// arguments a non-streamed response reports. A streamed call stays sent if
// the section then fails to parse (its text is also released as content).
// Not thread-safe: one per choice, driven by its job under the job's lock.
#pragma once

#include <string>
#include <vector>

#include "server/tool_parsers/tool_call_parser.h"

namespace deepinfer::server {

enum class ReasoningFormat { kNone, kDeepseekR1, kQwen3 };

// A streamed call's piece: the first names it (OpenAI's delta with id, type
// and function.name), the rest append to function.arguments.
struct ToolCallFragment {
  size_t index = 0;  // the call's number in the choice
  bool first = false;
  std::string name;       // first only
  std::string arguments;  // to append
};

struct ChatOutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallFragment> fragments;  // before `calls`, which are numbered after them
  std::vector<ParsedToolCall> calls;
  bool empty() const { return reasoning.empty() && content.empty() && fragments.empty() && calls.empty(); }
};

class ChatOutputSplitter {
 public:
  // `tools`: null when tool calls are not parsed (no tools, tool_choice none).
  // `max_calls`: calls past it are dropped (parallel_tool_calls false: 1).
  ChatOutputSplitter(ReasoningFormat reasoning, const ToolCallParser* tools, size_t max_calls,
                     bool stream_arguments = false);

  // New generated text -> what can be emitted now.
  ChatOutputDelta Push(const std::string& text);
  // The output ended: everything still held.
  ChatOutputDelta Finish();
  // Calls emitted so far (over Push and Finish).
  size_t num_calls() const { return num_calls_; }

 private:
  void PushContent(const std::string& text, ChatOutputDelta* out);
  // Streams what StreamCalls sees beyond what was sent.
  void StreamArguments(ChatOutputDelta* out);

  const ReasoningFormat reasoning_;
  const ToolCallParser* const tools_;
  const size_t max_calls_;
  const bool stream_arguments_;
  std::vector<std::string> streamed_;  // per streamed call: the arguments sent so far
  enum class Phase { kStart, kReasoning, kContent } phase_ = Phase::kStart;
  std::string pending_;  // reasoning phase: text not yet classified (a marker may be forming)
  std::string content_;  // all content so far (the tool parser's input)
  size_t emitted_ = 0;   // content_ bytes released as content
  size_t num_calls_ = 0;
  bool skip_newlines_ = false;  // right after </think>: blank lines are not content
};

}  // namespace deepinfer::server
