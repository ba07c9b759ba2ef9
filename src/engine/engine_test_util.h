// Test helpers shared by the engine's end-to-end tests: the independent
// single-sequence reference loop over Model::Forward, an event collector and
// request builders.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"

namespace deepinfer::testing {

// stories260K (a trained 260K-parameter llama) from ../shared, on 2 threads.
inline LoadedModel LoadStories260K() {
  LoadOptions o;
  o.num_threads = 2;
  auto m = LoadModel(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf", o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

// The reference: the prompt as one chunk, then one token per Forward, each
// step on its own, in a KvCache of its own whose block table runs backwards
// (no scheduler, no paging shared with anyone).
struct Reference {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // raw logits that produced tokens[i]
};

inline Reference RunReference(Model& model, const std::vector<int32_t>& prompt, int n,
                              const SamplingParams& params, int64_t block = 16) {
  const ModelConfig& c = model.config();
  const int64_t total = static_cast<int64_t>(prompt.size()) + n;
  KvCache kv(c, (total + block - 1) / block, block);
  std::vector<int32_t> table(static_cast<size_t>(kv.num_blocks()));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(table.size() - 1 - i);
  Reference ref;
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  SequenceChunk seq{prompt, 0, table, SequenceChunk::Logits::kLast};
  for (int i = 0; i < n; ++i) {
    ForwardBatch batch;
    batch.seqs.push_back(seq);
    EXPECT_TRUE(model.Forward(batch, kv, logits.data()).ok());
    const int64_t position = seq.start_pos + static_cast<int64_t>(seq.tokens.size());
    const int32_t next = SampleToken(logits.data(), c.vocab_size, params, static_cast<uint64_t>(position));
    ref.tokens.push_back(next);
    ref.logits.push_back(logits);
    seq.start_pos = position;
    seq.tokens = {next};
  }
  return ref;
}

// Collects the events of many requests; Wait blocks until all have ended.
class Collector {
 public:
  struct Output {
    std::vector<int32_t> tokens;
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::vector<RankedTokenLogprob> prompt_logprobs;
    int prompt_logprob_events = 0;  // events that carried prompt_logprobs
    FinishReason finish = FinishReason::kNone;
    std::string error;
    int64_t cached_prompt_tokens = 0;
    int events_after_final = 0;
  };
  EventCallback Callback() {
    return [this](GenerationEvent ev) {
      std::lock_guard<std::mutex> lock(mu_);
      Output& o = out_[ev.id];
      if (o.finish != FinishReason::kNone) ++o.events_after_final;
      o.tokens.insert(o.tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
      o.text += ev.text;
      o.logprobs.insert(o.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
      if (!ev.prompt_logprobs.empty()) {
        ++o.prompt_logprob_events;
        o.prompt_logprobs = ev.prompt_logprobs;
      }
      o.cached_prompt_tokens = ev.cached_prompt_tokens;
      o.error = ev.error;
      if (ev.finish_reason != FinishReason::kNone) {
        o.finish = ev.finish_reason;
        ++finished_;
        cv_.notify_all();
      }
    };
  }
  void Wait(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(120), [&] { return finished_ >= n; }));
  }
  Output Get(RequestId id) {
    std::lock_guard<std::mutex> lock(mu_);
    return out_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<RequestId, Output> out_;
  int finished_ = 0;
};

// Every output of `other` equals the one of `plain` at the same index: no
// error on either side, the same tokens, and the same log-probs and top
// log-probs bit for bit (speculation, prefix caching and batching must not
// change a bit).
inline void ExpectSameOutputs(const std::vector<Collector::Output>& plain,
                              const std::vector<Collector::Output>& other, const std::string& what) {
  ASSERT_EQ(plain.size(), other.size()) << what;
  for (size_t i = 0; i < plain.size(); ++i) {
    const Collector::Output& a = plain[i];
    const Collector::Output& b = other[i];
    EXPECT_TRUE(a.error.empty() && b.error.empty()) << what << ": " << a.error << b.error;
    ASSERT_EQ(a.tokens, b.tokens) << what << ", request " << i;
    ASSERT_EQ(a.logprobs.size(), b.logprobs.size()) << what << ", request " << i;
    for (size_t t = 0; t < a.logprobs.size(); ++t) {
      EXPECT_EQ(a.logprobs[t].token, b.logprobs[t].token);
      EXPECT_EQ(std::memcmp(&a.logprobs[t].logprob, &b.logprobs[t].logprob, sizeof(float)), 0)
          << what << ", request " << i << ", token " << t;
      ASSERT_EQ(a.logprobs[t].top.size(), b.logprobs[t].top.size());
      for (size_t k = 0; k < a.logprobs[t].top.size(); ++k) {
        EXPECT_EQ(a.logprobs[t].top[k].first, b.logprobs[t].top[k].first);
        EXPECT_EQ(std::memcmp(&a.logprobs[t].top[k].second, &b.logprobs[t].top[k].second, sizeof(float)), 0);
      }
    }
  }
}

inline GenerationRequest Greedy(std::vector<int32_t> prompt, int max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

// Allows only token ids that are multiples of `modulus`; records what it accepted.
class MultiplesOnly : public TokenConstraint {
 public:
  MultiplesOnly(int32_t modulus, std::vector<int32_t>* accepted) : modulus_(modulus), accepted_(accepted) {}
  void FillAllowedMask(TokenBitmask* mask) override {
    mask->ClearAll();
    for (int32_t id = 0; id < static_cast<int32_t>(mask->size()); id += modulus_) mask->Set(id);
  }
  bool Accept(int32_t token) override {
    if (token % modulus_ != 0) return false;
    accepted_->push_back(token);
    return true;
  }
  void Rollback(int n) override { accepted_->resize(accepted_->size() - static_cast<size_t>(n)); }
  bool IsComplete() const override { return false; }

 private:
  int32_t modulus_;
  std::vector<int32_t>* accepted_;
};

// A scripted constraint: in every cycle of 4 outputs the first is free (any
// multiple of 3) and the next three are forced (ids 40, 41, 42), so
// ForcedTokens offers jump-forward right after each free token.
class FreeThenForced : public TokenConstraint {
 public:
  explicit FreeThenForced(std::vector<int32_t>* accepted) : accepted_(accepted) {}
  void FillAllowedMask(TokenBitmask* mask) override {
    mask->ClearAll();
    const size_t k = accepted_->size() % 4;
    if (k == 0) {
      for (int32_t id = 0; id < static_cast<int32_t>(mask->size()); id += 3) mask->Set(id);
    } else {
      mask->Set(Forced(k));
    }
  }
  bool Accept(int32_t token) override {
    const size_t k = accepted_->size() % 4;
    if (k == 0 ? token % 3 != 0 : token != Forced(k)) return false;
    accepted_->push_back(token);
    return true;
  }
  void Rollback(int n) override { accepted_->resize(accepted_->size() - static_cast<size_t>(n)); }
  bool IsComplete() const override { return false; }
  std::vector<int32_t> ForcedTokens() override {
    std::vector<int32_t> out;
    for (size_t k = accepted_->size() % 4; k != 0 && k < 4; ++k) out.push_back(Forced(k));
    return out;
  }

 private:
  static int32_t Forced(size_t k) { return 39 + static_cast<int32_t>(k); }
  std::vector<int32_t>* accepted_;
};

}  // namespace deepinfer::testing
