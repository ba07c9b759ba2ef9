#include "engine/output_processor.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace deepinfer {

using Clock = std::chrono::steady_clock;

namespace {
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

struct OutputProcessor::RequestOutput {
  EventCallback callback;
  std::unique_ptr<IncrementalDetokenizer> detokenizer;  // null without a tokenizer
  StopStringMatcher stops;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  Clock::time_point submitted{}, first_scheduled{}, first_token{}, last_token{};
  bool done = false;  // a stop string ended it; wait for the engine's final item silently

  explicit RequestOutput(std::vector<std::string> stop) : stops(std::move(stop)) {}
};

OutputProcessor::OutputProcessor(const Tokenizer* tokenizer, std::function<void(RequestId)> on_stop_string)
    : tokenizer_(tokenizer), on_stop_string_(std::move(on_stop_string)), thread_([this] { Loop(); }) {}

OutputProcessor::~OutputProcessor() { Stop(); }

void OutputProcessor::Post(OutputItem item) {
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
}

void OutputProcessor::Stop() {
  {
    MutexLock lock(mu_);
    quit_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

RequestHistograms OutputProcessor::Histograms() const {
  MutexLock lock(mu_);
  return hist_;
}

void OutputProcessor::Loop() {
  for (;;) {
    std::deque<OutputItem> batch;
    {
      MutexLock lock(mu_);
      while (!quit_ && queue_.empty()) cv_.wait(lock.native());
      if (queue_.empty()) return;  // quit_ and drained
      batch.swap(queue_);
    }
    for (OutputItem& item : batch) Process(item);
  }
}

void OutputProcessor::ObserveFinished(const RequestOutput& r, Clock::time_point now) {
  MutexLock lock(mu_);
  Observe(hist_.e2e_latency, Seconds(now - r.submitted));
  Observe(hist_.prompt_tokens, static_cast<double>(r.prompt_tokens));
  Observe(hist_.generation_tokens, static_cast<double>(r.completion_tokens));
  if (r.first_scheduled == Clock::time_point{}) return;  // never scheduled (aborted while waiting)
  // Clocks of two threads: the engine's launch can precede the arrival
  // stamp by a hair; no negative durations.
  Observe(hist_.queue_time, std::max(0.0, Seconds(r.first_scheduled - r.submitted)));
  if (r.completion_tokens == 0) return;
  Observe(hist_.prefill_time, std::max(0.0, Seconds(r.first_token - r.first_scheduled)));
  Observe(hist_.decode_time, Seconds(r.last_token - r.first_token));
  Observe(hist_.inference_time, std::max(0.0, Seconds(r.last_token - r.first_scheduled)));
}

void OutputProcessor::Process(OutputItem& item) {
  if (item.kind == OutputItem::Kind::kRegister) {
    auto out = std::make_unique<RequestOutput>(std::move(item.stop));
    out->callback = std::move(item.callback);
    if (tokenizer_ != nullptr) out->detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer_);
    out->prompt_tokens = item.prompt_tokens;
    out->submitted = item.submitted;
    requests_[item.id] = std::move(out);
    return;
  }
  auto it = requests_.find(item.id);
  if (it == requests_.end()) return;
  RequestOutput& r = *it->second;
  const bool final_item = item.finish_reason != FinishReason::kNone;
  const Clock::time_point now = Clock::now();
  if (r.first_scheduled == Clock::time_point{}) r.first_scheduled = item.first_scheduled;
  if (r.done) {
    // A stop string ended the text; the request's life ends with this item.
    if (final_item) {
      ObserveFinished(r, now);
      requests_.erase(it);
    }
    return;
  }

  if (!item.tokens.empty()) {
    MutexLock lock(mu_);
    if (r.completion_tokens == 0) {
      r.first_token = now;
      Observe(hist_.time_to_first_token, Seconds(now - r.submitted));
    } else {
      const double per_token = Seconds(now - r.last_token) / static_cast<double>(item.tokens.size());
      Observe(hist_.time_per_output_token, per_token, static_cast<int64_t>(item.tokens.size()));
    }
  }
  if (!item.tokens.empty()) r.last_token = now;
  r.completion_tokens += static_cast<int64_t>(item.tokens.size());
  if (final_item) ObserveFinished(r, now);

  GenerationEvent ev;
  ev.id = item.id;
  ev.token_ids = item.tokens;
  ev.logprobs = std::move(item.logprobs);
  ev.prompt_logprobs = std::move(item.prompt_logprobs);
  ev.prompt_tokens = r.prompt_tokens;
  ev.completion_tokens = r.completion_tokens;
  ev.cached_prompt_tokens = item.cached_prompt_tokens;
  ev.finish_reason = item.finish_reason;
  ev.error = std::move(item.error);

  if (r.detokenizer) {
    // A stop token (the last token of a kStop commit) ends the text without appearing in it.
    size_t text_tokens = item.tokens.size();
    if (item.finish_reason == FinishReason::kStop && text_tokens > 0) --text_tokens;
    std::string text;
    for (size_t i = 0; i < text_tokens; ++i) text += r.detokenizer->Push(item.tokens[i]);
    if (final_item) text += r.detokenizer->Flush();
    ev.text = r.stops.Push(text);
    if (r.stops.matched()) {
      ev.finish_reason = FinishReason::kStop;
      r.done = true;
      if (!final_item) on_stop_string_(item.id);
    } else if (final_item) {
      ev.text += r.stops.Flush();
    }
  }
  const bool ends = ev.finish_reason != FinishReason::kNone;
  if (!item.tokens.empty() || ends) r.callback(std::move(ev));
  if (final_item) requests_.erase(item.id);
}

}  // namespace deepinfer
