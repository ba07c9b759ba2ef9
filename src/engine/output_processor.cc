#include "engine/output_processor.h"

#include "engine/latency_histograms.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

using Clock = std::chrono::steady_clock;

struct OutputProcessor::RequestOutput {
  EventCallback callback;
  std::unique_ptr<IncrementalDetokenizer> detokenizer;  // null without a tokenizer
  StopStringMatcher stops;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  Clock::time_point submitted{}, last_token{};
  bool done = false;  // a stop string ended it; wait for the engine's final item silently

  explicit RequestOutput(std::vector<std::string> stop) : stops(std::move(stop)) {}
};

OutputProcessor::OutputProcessor(const Tokenizer* tokenizer, std::function<void(RequestId)> on_stop_string)
    : tokenizer_(tokenizer),
      on_stop_string_(std::move(on_stop_string)),
      ttft_(MakeTimeToFirstTokenHistogram()),
      tpot_(MakeTimePerOutputTokenHistogram()),
      thread_([this] { Loop(); }) {}

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

Histogram OutputProcessor::TimeToFirstToken() const {
  MutexLock lock(mu_);
  return ttft_;
}

Histogram OutputProcessor::TimePerOutputToken() const {
  MutexLock lock(mu_);
  return tpot_;
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
  if (r.done) {
    if (final_item) requests_.erase(it);
    return;
  }

  const Clock::time_point now = Clock::now();
  if (!item.tokens.empty()) {
    MutexLock lock(mu_);
    if (r.completion_tokens == 0) {
      Observe(ttft_, std::chrono::duration<double>(now - r.submitted).count());
    } else {
      const double per_token =
          std::chrono::duration<double>(now - r.last_token).count() / static_cast<double>(item.tokens.size());
      Observe(tpot_, per_token, static_cast<int64_t>(item.tokens.size()));
    }
  }
  if (!item.tokens.empty()) r.last_token = now;
  r.completion_tokens += static_cast<int64_t>(item.tokens.size());

  GenerationEvent ev;
  ev.id = item.id;
  ev.token_ids = item.tokens;
  ev.logprobs = std::move(item.logprobs);
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
