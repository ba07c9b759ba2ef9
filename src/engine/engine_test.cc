// Engine end to end on stories260K (a trained 260K-parameter llama): every
// output is checked against an independent single-sequence loop over
// Model::Forward (its own KV cache, no scheduler), or against invariants.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine_test_util.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

using testing::Collector;
using testing::FreeThenForced;
using testing::Greedy;
using testing::MultiplesOnly;
using testing::Reference;
using testing::RunReference;

LoadedModel Load() { return testing::LoadStories260K(); }

EngineConfig BaseConfig() {
  EngineConfig c;
  c.scheduler.max_model_len = 256;
  c.scheduler.max_num_seqs = 64;
  c.scheduler.max_num_batched_tokens = 96;  // forces chunked prefills mixed with decodes
  c.kv_cache_memory_bytes = 8 << 20;
  return c;
}

std::vector<int32_t> RandomPrompt(std::mt19937& rng, int len) {
  std::uniform_int_distribution<int32_t> token(3, 511);
  std::vector<int32_t> p = {1};  // BOS
  for (int i = 1; i < len; ++i) p.push_back(token(rng));
  return p;
}

std::unique_ptr<Engine> MakeEngine(const EngineConfig& c) {
  auto e = Engine::Create(Load(), c);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(*e);
}

void ExpectAllBlocksFree(Engine& e) {
  EngineMetrics m = e.Metrics();
  EXPECT_EQ(m.kv_blocks_in_use, 0);
  EXPECT_EQ(m.num_requests_running, 0);
  EXPECT_EQ(m.num_requests_waiting, 0);
  EXPECT_DOUBLE_EQ(m.kv_cache_usage_ratio, 0.0);
}

// 32 different prompts at once give the single-request greedy outputs, in both modes.
void CheckGreedyBatch(bool async) {
  LoadedModel ref_model = Load();
  EngineConfig c = BaseConfig();
  c.async_scheduling = async;
  auto engine = MakeEngine(c);
  std::mt19937 rng(7);
  Collector col;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestId> ids;
  for (int i = 0; i < 32; ++i) {
    prompts.push_back(RandomPrompt(rng, 4 + (i * 7) % 50));
    auto id = engine->Submit(Greedy(prompts.back(), 12 + i % 5), col.Callback());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  col.Wait(32);
  SamplingParams greedy;
  greedy.temperature = 0;
  for (int i = 0; i < 32; ++i) {
    Collector::Output o = col.Get(ids[i]);
    EXPECT_EQ(o.finish, FinishReason::kLength);
    EXPECT_EQ(o.tokens, RunReference(*ref_model.model, prompts[i], 12 + i % 5, greedy).tokens)
        << "request " << i;
    EXPECT_EQ(o.events_after_final, 0);
  }
  EngineMetrics m = engine->Metrics();
  EXPECT_GT(m.steps_total, 0);
  EXPECT_GT(m.executor_busy_seconds_total, 0.0);
  EXPECT_EQ(m.requests_finished_total, 32);
  EXPECT_EQ(m.time_to_first_token_seconds.count, 32);
  // Every request finished with tokens: once in each per-request histogram.
  int64_t prompt_tokens = 0, generated = 0;
  for (int i = 0; i < 32; ++i) {
    prompt_tokens += static_cast<int64_t>(prompts[i].size());
    generated += 12 + i % 5;
  }
  for (const Histogram* h :
       {&m.e2e_request_latency_seconds, &m.request_queue_time_seconds, &m.request_prefill_time_seconds,
        &m.request_decode_time_seconds, &m.request_inference_time_seconds, &m.request_prompt_tokens,
        &m.request_generation_tokens}) {
    EXPECT_EQ(h->count, 32);
    int64_t in_buckets = 0;
    for (int64_t c : h->counts) in_buckets += c;
    EXPECT_EQ(in_buckets, 32);
  }
  EXPECT_EQ(m.request_prompt_tokens.sum, static_cast<double>(prompt_tokens));
  EXPECT_EQ(m.request_generation_tokens.sum, static_cast<double>(generated));
  EXPECT_EQ(m.time_per_output_token_seconds.count, generated - 32);
  EXPECT_GT(m.request_decode_time_seconds.sum, 0.0);
  // Per request e2e = queue + prefill + decode + the wait for the final item.
  EXPECT_GE(m.e2e_request_latency_seconds.sum * (1 + 1e-9), m.request_queue_time_seconds.sum +
                                                                m.request_prefill_time_seconds.sum +
                                                                m.request_decode_time_seconds.sum);
  EXPECT_EQ(m.prefix_cache_queries_total, prompt_tokens);
  ExpectAllBlocksFree(*engine);
}

TEST(EngineTest, ConcurrentGreedyEqualsSingleRequestReferenceAsync) { CheckGreedyBatch(true); }
TEST(EngineTest, ConcurrentGreedyEqualsSingleRequestReferenceSync) { CheckGreedyBatch(false); }

GenerationRequest Seeded(std::vector<int32_t> prompt, uint64_t seed, int max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 1.0;
  r.seed = seed;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

TEST(EngineTest, SeededSamplingIsTheSameAloneAndInABatchAndMatchesTheReference) {
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(11);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 20);
  Collector alone;
  auto id = engine->Submit(Seeded(prompt, 1234, 30), alone.Callback());
  ASSERT_TRUE(id.ok());
  alone.Wait(1);

  Collector batch;
  std::vector<RequestId> others;
  for (int i = 0; i < 16; ++i) {
    auto o = engine->Submit(Seeded(RandomPrompt(rng, 5 + i), 99 + i, 20 + i), batch.Callback());
    ASSERT_TRUE(o.ok());
    if (i == 8) {
      auto again = engine->Submit(Seeded(prompt, 1234, 30), batch.Callback());
      ASSERT_TRUE(again.ok());
      others.push_back(*again);
    }
  }
  batch.Wait(17);
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 1234;
  const std::vector<int32_t> expected = RunReference(*ref_model.model, prompt, 30, p).tokens;
  EXPECT_EQ(alone.Get(*id).tokens, expected);
  EXPECT_EQ(batch.Get(others[0]).tokens, expected);
}

TEST(EngineTest, SamplingSeedIsUsedWhenSeedIsUnsetAndUnseededRequestsDiffer) {
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(37);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 8);
  Collector col;
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) {
    GenerationRequest r = Seeded(prompt, 0, 40);
    r.seed.reset();
    r.sampling.seed = i < 2 ? 4242 : 0;  // two via sampling.seed, two unseeded
    ids.push_back(*engine->Submit(std::move(r), col.Callback()));
  }
  GenerationRequest explicit_seed = Seeded(prompt, 4242, 40);
  ids.push_back(*engine->Submit(std::move(explicit_seed), col.Callback()));
  col.Wait(5);
  EXPECT_EQ(col.Get(ids[0]).tokens, col.Get(ids[1]).tokens);
  EXPECT_EQ(col.Get(ids[0]).tokens, col.Get(ids[4]).tokens);
  // 40 draws at temperature 1 from random seeds: equal only with negligible probability.
  EXPECT_NE(col.Get(ids[2]).tokens, col.Get(ids[3]).tokens);
}

TEST(EngineTest, AsyncAndSyncGiveIdenticalOutputsWithPenaltiesAndSampling) {
  std::map<bool, std::vector<std::vector<int32_t>>> outputs;
  for (bool async : {true, false}) {
    EngineConfig c = BaseConfig();
    c.async_scheduling = async;
    auto engine = MakeEngine(c);
    std::mt19937 rng(5);
    Collector col;
    std::vector<RequestId> ids;
    for (int i = 0; i < 10; ++i) {
      GenerationRequest r = Seeded(RandomPrompt(rng, 6 + 3 * i), 500 + i, 25);
      r.sampling.temperature = i % 3 == 0 ? 0.0 : 0.8;
      r.sampling.top_k = i % 2 ? 40 : 0;
      r.sampling.repetition_penalty = 1.0 + 0.1 * (i % 4);
      r.sampling.frequency_penalty = 0.2 * (i % 3);
      r.sampling.presence_penalty = 0.3 * (i % 2);
      r.draw_stream = static_cast<uint32_t>(i % 2);
      auto id = engine->Submit(std::move(r), col.Callback());
      ASSERT_TRUE(id.ok());
      ids.push_back(*id);
    }
    col.Wait(10);
    for (RequestId id : ids) outputs[async].push_back(col.Get(id).tokens);
  }
  EXPECT_EQ(outputs[true], outputs[false]);
}

TEST(EngineTest, PenaltiesChangeGreedyOutputTheWayTheReferenceDoes) {
  // Independent check of the penalty wiring: a greedy loop that applies the
  // repetition penalty by hand over prompt + outputs.
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(3);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 12);
  GenerationRequest r = Greedy(prompt, 20);
  r.sampling.repetition_penalty = 1.8;
  Collector col;
  auto id = engine->Submit(std::move(r), col.Callback());
  ASSERT_TRUE(id.ok());
  col.Wait(1);

  Model& model = *ref_model.model;
  const int64_t vocab = model.config().vocab_size;
  KvCache kv(model.config(), 4, 16);
  std::vector<float> logits(static_cast<size_t>(vocab));
  std::vector<int32_t> seen = prompt, out;
  SequenceChunk seq{prompt, 0, {0, 1, 2, 3}, SequenceChunk::Logits::kLast};
  for (int i = 0; i < 20; ++i) {
    ForwardBatch b;
    b.seqs.push_back(seq);
    ASSERT_TRUE(model.Forward(b, kv, logits.data()).ok());
    std::vector<bool> penalized(static_cast<size_t>(vocab), false);
    for (int32_t t : seen) {
      if (penalized[t]) continue;
      penalized[t] = true;
      logits[t] = logits[t] > 0 ? logits[t] / 1.8f : logits[t] * 1.8f;
    }
    int32_t best = 0;
    for (int32_t t = 1; t < vocab; ++t) {
      if (logits[t] > logits[best]) best = t;
    }
    out.push_back(best);
    seen.push_back(best);
    seq.start_pos += static_cast<int64_t>(seq.tokens.size());
    seq.tokens = {best};
  }
  EXPECT_EQ(col.Get(*id).tokens, out);
}

TEST(EngineTest, TinyKvPoolPreemptsAndEveryRequestStillMatchesTheReference) {
  LoadedModel ref_model = Load();
  EngineConfig c = BaseConfig();
  c.scheduler.max_model_len = 96;
  const int64_t bytes_per_token = KvCache(ref_model.model->config(), 1, 1).BytesPerToken();
  c.kv_cache_memory_bytes = 12 * 16 * bytes_per_token;  // 12 blocks: two requests at most
  auto engine = MakeEngine(c);
  std::mt19937 rng(13);
  Collector col;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(RandomPrompt(rng, 20 + i));
    GenerationRequest r = Seeded(prompts.back(), 77 + i, 50);
    r.sampling.temperature = i % 2 ? 0.7 : 0.0;
    auto id = engine->Submit(std::move(r), col.Callback());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  col.Wait(6);
  EngineMetrics m = engine->Metrics();
  EXPECT_GT(m.num_preemptions_total, 0);
  for (int i = 0; i < 6; ++i) {
    SamplingParams p;
    p.temperature = i % 2 ? 0.7 : 0.0;
    p.seed = 77 + i;
    EXPECT_EQ(col.Get(ids[i]).tokens, RunReference(*ref_model.model, prompts[i], 50, p).tokens) << i;
  }
  ExpectAllBlocksFree(*engine);
}

TEST(EngineTest, SecondSubmissionOfALongPromptIsServedFromThePrefixCache) {
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(17);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 100);
  Collector col;
  auto first = engine->Submit(Greedy(prompt, 8), col.Callback());
  ASSERT_TRUE(first.ok());
  col.Wait(1);
  const int64_t prompt_tokens_before = engine->Metrics().prompt_tokens_total;
  auto second = engine->Submit(Greedy(prompt, 8), col.Callback());
  ASSERT_TRUE(second.ok());
  col.Wait(2);
  EXPECT_EQ(col.Get(*first).cached_prompt_tokens, 0);
  // Everything but the last prompt token (which must be computed for its logits).
  EXPECT_EQ(col.Get(*second).cached_prompt_tokens, 99);
  SamplingParams greedy;
  greedy.temperature = 0;
  const auto expected = RunReference(*ref_model.model, prompt, 8, greedy).tokens;
  EXPECT_EQ(col.Get(*first).tokens, expected);
  EXPECT_EQ(col.Get(*second).tokens, expected);
  EngineMetrics m = engine->Metrics();
  EXPECT_EQ(m.prompt_tokens_total - prompt_tokens_before, 100);
  EXPECT_NEAR(m.prefix_cache_hit_ratio, 99.0 / 200.0, 1e-9);
  ExpectAllBlocksFree(*engine);
}

TEST(EngineTest, AbortMidStreamFromTheCallbackAndFromOutsideFreesAllBlocks) {
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(19);
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::map<RequestId, int> tokens;
  std::map<RequestId, FinishReason> reasons;
  Engine* e = engine.get();
  auto callback = [&](GenerationEvent ev) {
    std::lock_guard<std::mutex> lock(mu);
    tokens[ev.id] += static_cast<int>(ev.token_ids.size());
    if (ev.finish_reason != FinishReason::kNone) {
      reasons[ev.id] = ev.finish_reason;
      ++finished;
      cv.notify_all();
    } else if (tokens[ev.id] >= 3 && ev.id % 2 == 1) {
      e->Abort(ev.id);  // client went away, seen from the output thread
    }
  };
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) {
    auto id = engine->Submit(Greedy(RandomPrompt(rng, 30), 90), callback);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  for (RequestId id : ids) {
    if (id % 2 == 0) engine->Abort(id);
  }
  engine->Abort(12345);  // unknown: no-op
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 6; }));
    for (RequestId id : ids) {
      EXPECT_EQ(reasons[id], FinishReason::kAbort);
      EXPECT_LT(tokens[id], 90);
    }
  }
  ExpectAllBlocksFree(*engine);
  EXPECT_EQ(engine->Metrics().requests_finished_total, 6);
}

std::vector<std::string> Pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  IncrementalDetokenizer d(tok);
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(d.Push(id));
  return pieces;
}

TEST(EngineTest, StopStringSplitAcrossTokensCutsTheTextAndStops) {
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  const std::vector<int32_t> prompt = ref_model.tokenizer->Encode("Once upon a time", true, false);
  SamplingParams greedy;
  greedy.temperature = 0;
  const auto ref = RunReference(*ref_model.model, prompt, 40, greedy).tokens;
  const auto pieces = Pieces(*ref_model.tokenizer, ref);
  // A stop string made of the end of one piece and the start of the next.
  size_t k = 2;
  while (k + 1 < pieces.size() && (pieces[k].size() < 2 || pieces[k + 1].size() < 2)) ++k;
  ASSERT_LT(k + 1, pieces.size());
  const std::string stop = pieces[k].substr(pieces[k].size() - 2) + pieces[k + 1].substr(0, 2);
  std::string full;
  for (const auto& p : pieces) full += p;
  const std::string expected_text = full.substr(0, full.find(stop));

  Collector col;
  GenerationRequest r = Greedy(prompt, 40);
  r.stop = {"never-appears-xyz", stop};
  auto id = engine->Submit(std::move(r), col.Callback());
  ASSERT_TRUE(id.ok());
  col.Wait(1);
  Collector::Output o = col.Get(*id);
  EXPECT_EQ(o.finish, FinishReason::kStop);
  EXPECT_EQ(o.text, expected_text);
  EXPECT_LT(o.tokens.size(), ref.size());
  ExpectAllBlocksFree(*engine);
}

TEST(EngineTest, StopTokenIdEndsTheRequestWithoutItsText) {
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  const std::vector<int32_t> prompt = ref_model.tokenizer->Encode("Once upon a time", true, false);
  SamplingParams greedy;
  greedy.temperature = 0;
  const auto ref = RunReference(*ref_model.model, prompt, 30, greedy).tokens;
  const int32_t stop_id = ref[6];
  const size_t cut = static_cast<size_t>(std::find(ref.begin(), ref.end(), stop_id) - ref.begin());
  Collector col;
  GenerationRequest r = Greedy(prompt, 30);
  r.stop_token_ids = {stop_id};
  auto id = engine->Submit(std::move(r), col.Callback());
  ASSERT_TRUE(id.ok());
  col.Wait(1);
  Collector::Output o = col.Get(*id);
  EXPECT_EQ(o.finish, FinishReason::kStop);
  EXPECT_EQ(o.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + cut + 1));
  std::string text;
  for (const auto& p : Pieces(*ref_model.tokenizer, std::vector<int32_t>(ref.begin(), ref.begin() + cut))) {
    text += p;
  }
  EXPECT_EQ(o.text, text);
}

TEST(EngineTest, ModelEosEndsGenerationUnlessIgnored) {
  // logit_bias makes EOS the greedy choice at once.
  LoadedModel ref_model = Load();
  const int32_t eos = ref_model.tokenizer->eos_id();
  ASSERT_TRUE(ref_model.tokenizer->IsEndOfGeneration(eos));
  auto engine = MakeEngine(BaseConfig());
  Collector col;
  GenerationRequest stops = Greedy({1, 20, 30}, 5);
  stops.ignore_eos = false;
  stops.sampling.logit_bias = {{eos, 100.f}};
  GenerationRequest ignores = Greedy({1, 20, 30}, 5);
  ignores.sampling.logit_bias = {{eos, 100.f}};
  auto a = engine->Submit(std::move(stops), col.Callback());
  auto b = engine->Submit(std::move(ignores), col.Callback());
  ASSERT_TRUE(a.ok() && b.ok());
  col.Wait(2);
  EXPECT_EQ(col.Get(*a).finish, FinishReason::kStop);
  EXPECT_EQ(col.Get(*a).tokens, std::vector<int32_t>{eos});
  EXPECT_EQ(col.Get(*a).text, "");
  EXPECT_EQ(col.Get(*b).finish, FinishReason::kLength);
  EXPECT_EQ(col.Get(*b).tokens, std::vector<int32_t>(5, eos));
}

TEST(EngineTest, LogprobsAreTheLogSoftmaxOfTheRawLogits) {
  LoadedModel ref_model = Load();
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(23);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 15);
  GenerationRequest r = Greedy(prompt, 10);
  r.logprobs = 3;
  r.sampling.repetition_penalty = 1.5;  // logprobs are taken before penalties
  Collector col;
  auto id = engine->Submit(std::move(r), col.Callback());
  ASSERT_TRUE(id.ok());
  col.Wait(1);
  Collector::Output o = col.Get(*id);
  ASSERT_EQ(o.logprobs.size(), 10u);
  // Reference logits along the engine's own token path.
  Model& model = *ref_model.model;
  const int64_t vocab = model.config().vocab_size;
  KvCache kv(model.config(), 2, 16);
  std::vector<float> logits(static_cast<size_t>(vocab));
  SequenceChunk seq{prompt, 0, {0, 1}, SequenceChunk::Logits::kLast};
  for (size_t i = 0; i < 10; ++i) {
    ForwardBatch b;
    b.seqs.push_back(seq);
    ASSERT_TRUE(model.Forward(b, kv, logits.data()).ok());
    long double max = logits[0], sum = 0;
    for (float v : logits) max = std::max<long double>(max, v);
    for (float v : logits) sum += std::exp(static_cast<long double>(v) - max);
    auto lp = [&](int32_t t) { return static_cast<double>(logits[t] - max - std::log(sum)); };
    const TokenLogprob& got = o.logprobs[i];
    EXPECT_EQ(got.token, o.tokens[i]);
    EXPECT_NEAR(got.logprob, lp(o.tokens[i]), 1e-4);
    ASSERT_EQ(got.top.size(), 3u);
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    for (int32_t t = 0; t < vocab; ++t) order[t] = t;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(got.top[j].first, order[j]);
      EXPECT_NEAR(got.top[j].second, lp(order[j]), 1e-4);
    }
    seq.start_pos += static_cast<int64_t>(seq.tokens.size());
    seq.tokens = {o.tokens[i]};
  }
}

TEST(EngineTest, ConstraintMasksAreRespected) {
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(29);
  std::vector<int32_t> accepted_a, accepted_b;
  Collector col;
  GenerationRequest a = Seeded(RandomPrompt(rng, 10), 3, 25);
  a.constraint = std::make_unique<MultiplesOnly>(7, &accepted_a);
  GenerationRequest b = Greedy(RandomPrompt(rng, 12), 25);
  b.constraint = std::make_unique<MultiplesOnly>(5, &accepted_b);
  auto ida = engine->Submit(std::move(a), col.Callback());
  auto idb = engine->Submit(std::move(b), col.Callback());
  ASSERT_TRUE(ida.ok() && idb.ok());
  col.Wait(2);
  Collector::Output oa = col.Get(*ida), ob = col.Get(*idb);
  ASSERT_EQ(oa.tokens.size(), 25u);
  for (int32_t t : oa.tokens) EXPECT_EQ(t % 7, 0);
  for (int32_t t : ob.tokens) EXPECT_EQ(t % 5, 0);
  engine->Shutdown(true);  // the runner is done with the constraints
  EXPECT_EQ(accepted_a, oa.tokens);
  EXPECT_EQ(accepted_b, ob.tokens);
}

// Jump-forward appends the forced tokens without sampling them: the outputs
// are the same token for token as with it off (a forced position allows one
// token, so sampling it would pick it too), in async and sync mode, with
// requests of different lengths in one batch, in far fewer steps.
TEST(EngineTest, JumpForwardGivesTheSameTokensInFewerSteps) {
  for (bool async : {true, false}) {
    std::map<bool, std::vector<std::vector<int32_t>>> outputs;
    std::map<bool, int64_t> steps;
    for (bool jump : {false, true}) {
      EngineConfig c = BaseConfig();
      c.async_scheduling = async;
      c.jump_forward = jump;
      auto engine = MakeEngine(c);
      std::mt19937 rng(41);
      std::vector<std::vector<int32_t>> accepted(4);
      Collector col;
      std::vector<RequestId> ids;
      for (int i = 0; i < 4; ++i) {
        GenerationRequest r = i % 2 == 0 ? Greedy(RandomPrompt(rng, 6 + 5 * i), 22 + i)
                                         : Seeded(RandomPrompt(rng, 6 + 5 * i), 100 + i, 22 + i);
        r.constraint = std::make_unique<FreeThenForced>(&accepted[static_cast<size_t>(i)]);
        auto id = engine->Submit(std::move(r), col.Callback());
        ASSERT_TRUE(id.ok());
        ids.push_back(*id);
      }
      col.Wait(4);
      // The step count of one request alone: four submitted one by one may
      // start steps apart (the engine steps while the test thread submits),
      // which would count the stagger, not the forced chunks.
      const int64_t steps_before = engine->Metrics().steps_total;
      std::vector<int32_t> alone_accepted;
      GenerationRequest alone = Greedy(RandomPrompt(rng, 9), 24);
      alone.constraint = std::make_unique<FreeThenForced>(&alone_accepted);
      auto alone_id = engine->Submit(std::move(alone), col.Callback());
      ASSERT_TRUE(alone_id.ok());
      col.Wait(5);
      steps[jump] = engine->Metrics().steps_total - steps_before;
      for (size_t i = 0; i < ids.size(); ++i) {
        Collector::Output o = col.Get(ids[i]);
        ASSERT_EQ(o.tokens.size(), 22u + i);
        for (size_t j = 0; j < o.tokens.size(); ++j) {
          if (j % 4 == 0) {
            EXPECT_EQ(o.tokens[j] % 3, 0);
          } else {
            EXPECT_EQ(o.tokens[j], 39 + static_cast<int32_t>(j % 4));
          }
        }
        outputs[jump].push_back(o.tokens);
      }
      outputs[jump].push_back(col.Get(*alone_id).tokens);
      ASSERT_EQ(outputs[jump].back().size(), 24u);
      engine->Shutdown(true);
      ExpectAllBlocksFree(*engine);
      // The constraint saw the outputs (plus, with jump-forward, forced tokens
      // past max_tokens that the scheduler cut off when the request ended).
      for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_GE(accepted[i].size(), outputs[jump][i].size());
        EXPECT_TRUE(std::equal(outputs[jump][i].begin(), outputs[jump][i].end(), accepted[i].begin()));
        if (!jump) EXPECT_EQ(accepted[i].size(), outputs[jump][i].size());
      }
    }
    EXPECT_EQ(outputs[true], outputs[false]) << (async ? "async" : "sync");
    // The request alone, off: one step per token (24). On: about two steps
    // per cycle of four (sample, then the forced chunk).
    EXPECT_LT(steps[true] * 4, steps[false] * 3)
        << steps[true] << " vs " << steps[false] << (async ? " async" : " sync");
  }
}

// Content is any multiple of 3; token 7 ends the structure (after it, content
// again). FinishTokens offers {7} until then, unless `offer_finish` is false.
class EndsWithSeven : public TokenConstraint {
 public:
  EndsWithSeven(bool offer_finish, std::vector<int32_t>* accepted)
      : offer_(offer_finish), accepted_(accepted) {}
  void FillAllowedMask(TokenBitmask* mask) override {
    mask->ClearAll();
    for (int32_t id = 3; id < static_cast<int32_t>(mask->size()); id += 3) mask->Set(id);
    if (!IsComplete()) mask->Set(7);
  }
  bool Accept(int32_t token) override {
    if (!(token % 3 == 0 && token > 0) && !(token == 7 && !IsComplete())) return false;
    accepted_->push_back(token);
    return true;
  }
  void Rollback(int n) override { accepted_->resize(accepted_->size() - static_cast<size_t>(n)); }
  bool IsComplete() const override {
    return std::find(accepted_->begin(), accepted_->end(), 7) != accepted_->end();
  }
  std::vector<int32_t> FinishTokens() override {
    if (!offer_ || IsComplete()) return {};
    return {7};
  }

 private:
  bool offer_;
  std::vector<int32_t>* accepted_;
};

// Finish-soon: a constrained request that would run out of max_tokens before
// its structure ends is steered onto the shortest ending in time; without an
// ending on offer the same greedy request never picks it.
TEST(EngineTest, FinishSoonEndsTheStructureWithinTheBudget) {
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(43);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 9);
  for (bool offer : {false, true}) {
    std::vector<int32_t> accepted;
    Collector col;
    GenerationRequest r = Greedy(prompt, 12);
    r.constraint = std::make_unique<EndsWithSeven>(offer, &accepted);
    auto id = engine->Submit(std::move(r), col.Callback());
    ASSERT_TRUE(id.ok());
    col.Wait(1);
    const Collector::Output o = col.Get(*id);
    ASSERT_EQ(o.tokens.size(), 12u);
    const auto seven = std::find(o.tokens.begin(), o.tokens.end(), 7);
    if (offer) {
      ASSERT_NE(seven, o.tokens.end()) << "the structure was not closed";
      EXPECT_GE(seven - o.tokens.begin(), 10);  // steered only at the end: one token of slack
    } else {
      EXPECT_EQ(seven, o.tokens.end());  // greedy alone does not end it
    }
  }
  engine->Shutdown(true);
}

TEST(EngineTest, SubmitRejectsBadRequestsWithClearCodes) {
  auto engine = MakeEngine(BaseConfig());
  auto noop = [](GenerationEvent) {};
  auto code = [&](GenerationRequest r) { return engine->Submit(std::move(r), noop).status().code(); };
  EXPECT_EQ(code(Greedy({}, 4)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Greedy({1, 512}, 4)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Greedy({1, -3}, 4)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Greedy({1, 2}, 0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Greedy(std::vector<int32_t>(250, 5), 10)), StatusCode::kOutOfRange);
  GenerationRequest bad = Greedy({1, 2}, 4);
  bad.sampling.top_p = 0;
  EXPECT_EQ(code(std::move(bad)), StatusCode::kInvalidArgument);
  bad = Greedy({1, 2}, 4);
  bad.sampling.logit_bias = {{600, 1.f}};
  EXPECT_EQ(code(std::move(bad)), StatusCode::kInvalidArgument);
  bad = Greedy({1, 2}, 4);
  bad.logprobs = kMaxLogprobs + 1;
  EXPECT_EQ(code(std::move(bad)), StatusCode::kInvalidArgument);
  bad = Greedy({1, 2}, 4);
  bad.stop = {""};
  EXPECT_EQ(code(std::move(bad)), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Metrics().num_requests_waiting, 0);
  engine->Shutdown(true);
  EXPECT_EQ(code(Greedy({1, 2}, 4)), StatusCode::kUnavailable);
}

TEST(EngineTest, ShutdownWithoutDrainAbortsLiveRequests) {
  auto engine = MakeEngine(BaseConfig());
  std::mt19937 rng(31);
  Collector col;
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) {
    auto id = engine->Submit(Greedy(RandomPrompt(rng, 10), 100), col.Callback());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  engine->Shutdown(false);
  for (RequestId id : ids) EXPECT_NE(col.Get(id).finish, FinishReason::kNone);  // all ended before return
  ExpectAllBlocksFree(*engine);
}

TEST(EngineTest, CreateRejectsBadConfigs) {
  EngineConfig c = BaseConfig();
  c.block_size = 0;
  EXPECT_EQ(Engine::Create(Load(), c).status().code(), StatusCode::kInvalidArgument);
  c = BaseConfig();
  c.kv_cache_memory_bytes = 1000;  // not one sequence
  EXPECT_EQ(Engine::Create(Load(), c).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace deepinfer
