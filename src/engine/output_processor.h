// OutputProcessor: the engine's output thread. Turns committed tokens into
// client events: incremental detokenization (complete UTF-8 only), stop
// strings (text held back while it could be the start of one; on a match the
// text is cut and the request is stopped through `on_stop_string`), the text
// of a stop token left out, and the per-request histograms (TTFT, time per
// output token, e2e / queue / prefill / decode time, token counts;
// engine_metrics.h says which requests each counts).
//
// Items are processed in the order posted; the engine posts a request's
// kRegister before any update and exactly one final update (finish_reason !=
// kNone) last. Callbacks run on this thread only.
//
// Thread-safety: Post and Histograms from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "engine/engine.h"
#include "engine/latency_histograms.h"
#include "engine/stop_strings.h"

namespace deepinfer {

class IncrementalDetokenizer;

struct OutputItem {
  enum class Kind { kRegister, kUpdate };
  Kind kind = Kind::kUpdate;
  RequestId id = 0;
  // kRegister
  EventCallback callback;
  std::vector<std::string> stop;
  int64_t prompt_tokens = 0;
  std::chrono::steady_clock::time_point submitted{};
  // kUpdate
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  std::vector<RankedTokenLogprob> prompt_logprobs;  // GenerationEvent::prompt_logprobs
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;
  int64_t cached_prompt_tokens = 0;
  // When the engine first launched a step of the request (default: not yet);
  // the first item that carries one sets the request's queue time.
  std::chrono::steady_clock::time_point first_scheduled{};
};

class OutputProcessor {
 public:
  // `tokenizer` may be null (events then carry no text; stop strings are
  // rejected by Submit). `on_stop_string(id)` must end the request with kStop.
  OutputProcessor(const Tokenizer* tokenizer, std::function<void(RequestId)> on_stop_string);
  ~OutputProcessor();  // Stop()

  void Post(OutputItem item) EXCLUDES(mu_);
  // Processes everything posted so far, then joins the thread. Idempotent.
  void Stop() EXCLUDES(mu_);

  RequestHistograms Histograms() const EXCLUDES(mu_);

 private:
  struct RequestOutput;
  void Loop() EXCLUDES(mu_);
  void Process(OutputItem& item) EXCLUDES(mu_);
  // The histograms of a request whose final item arrived at `now`.
  void ObserveFinished(const RequestOutput& r, std::chrono::steady_clock::time_point now) EXCLUDES(mu_);

  const Tokenizer* tokenizer_;
  std::function<void(RequestId)> on_stop_string_;
  std::unordered_map<RequestId, std::unique_ptr<RequestOutput>> requests_;  // output thread only

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<OutputItem> queue_ GUARDED_BY(mu_);
  bool quit_ GUARDED_BY(mu_) = false;
  RequestHistograms hist_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace deepinfer
