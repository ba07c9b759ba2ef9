// GenerationJob: one API request in flight. It owns the engine requests of its
// choices (prompts x n), turns their events into either one response (collected
// until every choice finished) or an SSE stream (chunks as events arrive, then
// the usage chunk and "data: [DONE]"), and aborts them when the client leaves.
//
// Lifetime: held by the engine callbacks (shared_ptr) until the last final
// event; the writer's disconnect handler holds it weakly.
// Thread-safety: OnEvent runs on the engine's output thread, Start on an I/O
// thread, AbortAll from the writer; state is guarded by one mutex, which is
// never held while calling into the engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/response_json.h"
#include "server/response_writer.h"

namespace deepinfer::server {

struct JobOptions {
  ResponseContext context;
  bool stream = false;
  bool include_usage = false;
  bool want_logprobs = false;
  int32_t prompt_logprobs = -1;  // ChoiceResult::prompt_logprobs
  int32_t echo_logprobs = -1;    // ChoiceResult::echo_logprobs
  int32_t n = 1;                 // choices per prompt
  // Per choice: text shown before the generated text (completions `echo`;
  // chat `echo`: the final assistant message's content).
  std::vector<std::string> echo_text;
  // Chat: how the generated text splits into reasoning, content and tool
  // calls (ChatOutputSplitter); tool_parser null = no tool calls parsed.
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  const ToolCallParser* tool_parser = nullptr;
  size_t max_tool_calls = 0;
  // Top-level "warnings" of the response (a JSON array, e.g. the JSON
  // Schema assertions a best-effort constraint relaxes): in the full
  // response, or in the first chunk of a stream. Empty: no field.
  json warnings = json::array();
  // Non-empty (serve --enable-log-requests): each finished choice logs one
  // line on stderr with its id, token counts, these sampling parameters,
  // finish reason and timings.
  std::string log_params;
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  GenerationJob(Engine& engine, JobOptions options, TokenTextFn token_text,
                std::shared_ptr<ResponseWriter> writer);

  // Submits one engine request per choice (requests[i] is choice i). On a
  // Submit error, aborts what was submitted and returns the error; nothing
  // has been written then and the caller responds with the error.
  std::optional<ApiError> Start(std::vector<GenerationRequest> requests);

  void OnEvent(size_t choice, GenerationEvent event);
  // Client gone: abort every engine request of this job.
  void AbortAll();

 private:
  struct Choice {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;
    int64_t text_bytes = 0;  // streamed so far (completions text_offset)
    bool first = true;
    bool done = false;
    RequestId id = -1;
    ChoiceResult result;
    std::unique_ptr<ChatOutputSplitter> splitter;              // chat only
    std::chrono::steady_clock::time_point first_token_time{};  // epoch: none yet
  };

  // The chat delta of `d` for choice `c` (tool calls numbered on from those
  // already sent); adds the calls to c.result.tool_calls.
  json ChatDeltaLocked(Choice& c, const ChatOutputDelta& d);
  std::string ToolCallId(const Choice& c) const;

  // Each returns with mu_ held by the caller.
  void EmitLocked(std::string data);
  // A chunk as an SSE event; the first one carries options_.warnings.
  void EmitChunkLocked(json chunk);
  void LogChoiceLocked(const Choice& c, const std::string& finish) const;
  void FinishLocked();
  Usage UsageLocked() const;
  std::vector<RequestId> LiveIdsLocked() const;

  Engine& engine_;
  const JobOptions options_;
  const TokenTextFn token_text_;
  const std::shared_ptr<ResponseWriter> writer_;

  std::mutex mu_;
  std::vector<Choice> choices_;
  size_t num_done_ = 0;
  bool started_ = false;              // every Submit succeeded; stream headers sent
  bool failed_ = false;               // an error response went out (or Start failed): ignore events
  bool finished_ = false;             // the response is complete
  bool warnings_sent_ = false;        // a chunk carried options_.warnings
  std::vector<std::string> pending_;  // stream data that arrived before started_
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
};

}  // namespace deepinfer::server
