// FakeEngine: a test double of Engine for server tests. It "generates" a
// deterministic token sequence (FakeEngine::ExpectedTokens), one token per
// event, on its own output thread, and records what was submitted, so tests
// check the server's request mapping and response assembly without a model.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/engine.h"
#include "io/gguf.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server::testing {

// stories260K's SentencePiece vocabulary (512 ids: 3 control, 256 byte tokens, merges).
inline std::unique_ptr<Tokenizer> LoadTestTokenizer() {
  auto gguf = GgufFile::Open(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf");
  if (!gguf.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**gguf);
  return tok.ok() ? std::move(tok).value() : nullptr;
}

struct SubmittedRequest {
  RequestId id = 0;
  std::vector<int32_t> prompt_tokens;
  SamplingParams sampling;
  std::optional<uint64_t> seed;
  uint32_t draw_stream = 0;
  int32_t max_tokens = 0;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int32_t logprobs = -1;
  int32_t priority = 0;
  bool has_constraint = false;
};

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(const Tokenizer& tok) : tok_(tok) {
    model_config_.vocab_size = tok.vocab_size();
    config_.scheduler.max_model_len = 256;
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakeEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Merged-piece ids (>= 259) so the text is plain words; greedy ignores seed
  // and draw stream, as a real sampler does.
  static std::vector<int32_t> ExpectedTokens(const std::vector<int32_t>& prompt, const SamplingParams& s,
                                             uint32_t draw, int32_t count) {
    uint64_t h = 0;
    for (int32_t t : prompt) h = h * 31 + static_cast<uint64_t>(t);
    if (!s.IsGreedy()) h += s.seed * 1000003ull + draw * 7919ull;
    std::vector<int32_t> out;
    for (int32_t k = 0; k < count; ++k) out.push_back(static_cast<int32_t>(259 + (h + 17ull * k) % 253));
    return out;
  }

  StatusOr<RequestId> Submit(GenerationRequest request, EventCallback on_event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!next_submit_error_.ok() && submits_before_error_-- <= 0) {
      Status s = next_submit_error_;
      next_submit_error_ = Status::Ok();
      return s;
    }
    if (shutting_down_) return Unavailable("shutting down");
    if (request.prompt_tokens.empty()) return InvalidArgument("empty prompt");
    RequestId id = next_id_++;
    if (request.seed) request.sampling.seed = *request.seed;
    SubmittedRequest rec{id,
                         request.prompt_tokens,
                         request.sampling,
                         request.seed,
                         request.draw_stream,
                         request.max_tokens,
                         request.stop_token_ids,
                         request.stop,
                         request.ignore_eos,
                         request.logprobs,
                         request.priority,
                         request.constraint != nullptr};
    submitted_.push_back(rec);
    Live live;
    live.tokens =
        ExpectedTokens(request.prompt_tokens, request.sampling, request.draw_stream, request.max_tokens);
    live.logprobs = request.logprobs;
    live.prompt_len = static_cast<int64_t>(request.prompt_tokens.size());
    live.callback = std::move(on_event);
    live_.emplace(id, std::move(live));
    cv_.notify_all();
    return id;
  }

  void Abort(RequestId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(id);
    if (it != live_.end()) it->second.aborted = true;
    aborted_.push_back(id);
    cv_.notify_all();
  }

  EngineMetrics Metrics() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineMetrics m;
    m.num_requests_running = static_cast<int64_t>(live_.size());
    m.kv_blocks_total = 100;
    m.kv_blocks_in_use = static_cast<int64_t>(live_.size());
    m.kv_cache_usage_ratio = m.kv_blocks_in_use / 100.0;
    m.time_to_first_token_seconds.upper_bounds = {0.01, 0.1};
    m.time_to_first_token_seconds.counts = {0, 0, 0};
    return m;
  }

  void Shutdown(bool drain) override {
    std::unique_lock<std::mutex> lock(mu_);
    shutting_down_ = true;
    if (!drain) {
      for (auto& [id, live] : live_) live.aborted = true;
    }
    hold_ = false;
    cv_.notify_all();
    done_cv_.wait(lock, [&] { return live_.empty(); });
  }

  const ModelConfig& model_config() const override { return model_config_; }
  const Tokenizer& tokenizer() const override { return tok_; }
  const EngineConfig& config() const override { return config_; }

  // Test controls.
  // Tokens that add no text (as a held-back UTF-8 sequence or a token that
  // renders as nothing does): events carry ids and an empty text.
  void SetTextless(bool textless) {
    std::lock_guard<std::mutex> lock(mu_);
    textless_ = textless;
  }
  // EngineConfig::max_waiting_requests as the service reads it.
  void SetMaxWaitingRequests(int32_t n) { config_.max_waiting_requests = n; }
  void SetHold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = hold;
    cv_.notify_all();
  }
  // The Submit after `succeed_first` more successful ones fails with `s`.
  void FailNextSubmit(Status s, int succeed_first = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    next_submit_error_ = std::move(s);
    submits_before_error_ = succeed_first;
  }
  std::vector<SubmittedRequest> submitted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  std::vector<RequestId> aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }
  size_t num_live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }
  // Waits until `n` requests were submitted (or 5 s passed).
  bool WaitSubmitted(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (submitted().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  struct Live {
    std::vector<int32_t> tokens;
    size_t next = 0;
    int32_t logprobs = -1;
    int64_t prompt_len = 0;
    bool aborted = false;
    EventCallback callback;
  };

  // One token per live request per round; callbacks run outside the lock.
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait(lock, [&] {
        if (stop_) return true;
        for (auto& [id, live] : live_) {
          if (live.aborted || !hold_) return true;
        }
        return false;
      });
      if (stop_) break;
      std::vector<std::pair<EventCallback*, GenerationEvent>> out;
      std::vector<RequestId> finished;
      for (auto& [id, live] : live_) {
        if (!live.aborted && hold_) continue;
        GenerationEvent ev;
        ev.id = id;
        ev.prompt_tokens = live.prompt_len;
        if (live.aborted) {
          ev.finish_reason = FinishReason::kAbort;
        } else {
          int32_t token = live.tokens[live.next++];
          ev.token_ids = {token};
          if (!textless_) ev.text = tok_.TokenBytes(token);
          if (live.logprobs >= 0) {
            TokenLogprob lp{token, -0.5f, {}};
            for (int32_t k = 0; k < live.logprobs; ++k) lp.top.emplace_back(259 + k, -1.0f - k);
            ev.logprobs.push_back(lp);
          }
          if (live.next == live.tokens.size()) ev.finish_reason = FinishReason::kLength;
        }
        ev.completion_tokens = static_cast<int64_t>(live.next);
        if (ev.finish_reason != FinishReason::kNone) finished.push_back(id);
        out.emplace_back(&live.callback, std::move(ev));
      }
      lock.unlock();
      for (auto& [cb, ev] : out) (*cb)(std::move(ev));
      lock.lock();
      for (RequestId id : finished) live_.erase(id);
      if (live_.empty()) done_cv_.notify_all();
    }
  }

  const Tokenizer& tok_;
  ModelConfig model_config_;
  EngineConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::map<RequestId, Live> live_;
  std::vector<SubmittedRequest> submitted_;
  std::vector<RequestId> aborted_;
  RequestId next_id_ = 1;
  Status next_submit_error_;
  int submits_before_error_ = 0;
  bool hold_ = false;
  bool textless_ = false;
  bool stop_ = false;
  bool shutting_down_ = false;
  std::thread thread_;
};

}  // namespace deepinfer::server::testing
