// Prompt logprobs (GenerationRequest::prompt_logprobs) through the engine:
// the values equal what `deepinfer score` computes for the same tokens (its
// single-chunk forward pass and double-precision log-softmax, re-implemented
// here), bit for bit, whatever the chunking, the prefix cache or the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "model/model.h"

namespace deepinfer {
namespace {

using testing::Collector;
using testing::Greedy;

EngineConfig Config(int64_t batched_tokens) {
  EngineConfig c;
  c.scheduler.max_model_len = 128;  // stories260K's context
  c.scheduler.max_num_seqs = 32;
  c.scheduler.max_num_batched_tokens = batched_tokens;
  c.kv_cache_memory_bytes = 8 << 20;
  return c;
}

std::unique_ptr<Engine> Make(const EngineConfig& c) {
  auto e = Engine::Create(testing::LoadStories260K(), c);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(*e);
}

std::vector<int32_t> Prompt(std::mt19937& rng, int len) {
  std::uniform_int_distribution<int32_t> token(3, 511);
  std::vector<int32_t> p = {1};
  for (int i = 1; i < len; ++i) p.push_back(token(rng));
  return p;
}

// What `deepinfer score --tokens PROMPT --top K` prints, as floats: the whole
// sequence in one kAll chunk, log-softmax in double, best first (ties: lower id).
std::vector<RankedTokenLogprob> ScoreReference(Model& model, const std::vector<int32_t>& tokens, int k) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t vocab = model.config().vocab_size;
  const int64_t blocks = (n + 15) / 16;
  KvCache kv(model.config(), blocks, 16);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  ForwardBatch batch;
  batch.seqs.push_back(SequenceChunk{tokens, 0, table, SequenceChunk::Logits::kAll});
  std::vector<float> logits(static_cast<size_t>(n * vocab));
  EXPECT_TRUE(model.Forward(batch, kv, logits.data()).ok());
  std::vector<RankedTokenLogprob> out;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* row = logits.data() + i * vocab;
    double max = -INFINITY, sum = 0;
    for (int64_t v = 0; v < vocab; ++v) max = std::max(max, static_cast<double>(row[v]));
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
    const double log_z = max + std::log(sum);
    std::vector<double> lp(static_cast<size_t>(vocab));
    for (int64_t v = 0; v < vocab; ++v) lp[v] = static_cast<double>(row[v]) - log_z;
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return lp[a] > lp[b]; });
    RankedTokenLogprob e;
    e.token = tokens[i + 1];
    e.logprob = static_cast<float>(lp[e.token]);
    e.rank = 1 + (std::find(ids.begin(), ids.end(), e.token) - ids.begin());
    while (e.rank > 1 && lp[ids[e.rank - 2]] == lp[e.token]) --e.rank;  // ties share the best rank
    for (int j = 0; j < k; ++j) e.top.emplace_back(ids[j], static_cast<float>(lp[ids[j]]));
    out.push_back(std::move(e));
  }
  return out;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

template <typename Entry>
void ExpectIdentical(const std::vector<Entry>& got, const std::vector<Entry>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].token) << what << ", prompt token " << i + 1;
    EXPECT_TRUE(SameBits(got[i].logprob, want[i].logprob))
        << what << ", prompt token " << i + 1 << ": " << got[i].logprob << " vs " << want[i].logprob;
    if constexpr (std::is_same_v<Entry, RankedTokenLogprob>) {
      EXPECT_EQ(got[i].rank, want[i].rank) << what << ", prompt token " << i + 1;
    }
    ASSERT_EQ(got[i].top.size(), want[i].top.size()) << what;
    for (size_t j = 0; j < got[i].top.size(); ++j) {
      EXPECT_EQ(got[i].top[j].first, want[i].top[j].first) << what << ", prompt token " << i + 1;
      EXPECT_TRUE(SameBits(got[i].top[j].second, want[i].top[j].second))
          << what << ", prompt token " << i + 1;
    }
  }
}

Collector::Output RunOne(Engine& engine, GenerationRequest r) {
  Collector col;
  auto id = engine.Submit(std::move(r), col.Callback());
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  col.Wait(1);
  return col.Get(*id);
}

TEST(PromptLogprobsTest, EqualScoreBitForBitWhateverTheChunking) {
  LoadedModel ref = testing::LoadStories260K();
  std::mt19937 rng(5);
  const std::vector<int32_t> prompt = Prompt(rng, 110);
  const std::vector<RankedTokenLogprob> want = ScoreReference(*ref.model, prompt, 4);
  // One chunk; chunks of 96 and of 7 tokens (splits at arbitrary positions).
  for (int64_t budget : {128, 96, 7}) {
    auto engine = Make(Config(budget));
    GenerationRequest r = Greedy(prompt, 3);
    r.prompt_logprobs = 4;
    Collector::Output o = RunOne(*engine, std::move(r));
    EXPECT_EQ(o.error, "");
    EXPECT_EQ(o.prompt_logprob_events, 1);  // all at once, with the first token
    ExpectIdentical(o.prompt_logprobs, want, "max_num_batched_tokens " + std::to_string(budget));
  }
}

TEST(PromptLogprobsTest, NoPrefixCacheReuseAndRepeatsAreEqual) {
  LoadedModel ref = testing::LoadStories260K();
  std::mt19937 rng(9);
  const std::vector<int32_t> prompt = Prompt(rng, 70);
  const std::vector<RankedTokenLogprob> want = ScoreReference(*ref.model, prompt, 2);
  auto engine = Make(Config(32));
  // A plain request fills the prefix cache with this prompt.
  Collector::Output plain = RunOne(*engine, Greedy(prompt, 2));
  EXPECT_TRUE(plain.prompt_logprobs.empty());
  for (int i = 0; i < 2; ++i) {
    GenerationRequest r = Greedy(prompt, 2);
    r.prompt_logprobs = 2;
    Collector::Output o = RunOne(*engine, std::move(r));
    EXPECT_EQ(o.cached_prompt_tokens, 0) << "repeat " << i;  // it recomputed the cached prefix
    ExpectIdentical(o.prompt_logprobs, want, "repeat " + std::to_string(i));
    EXPECT_EQ(o.tokens, plain.tokens);
  }
  // The cache still serves requests without prompt logprobs.
  EXPECT_GT(RunOne(*engine, Greedy(prompt, 2)).cached_prompt_tokens, 0);
}

TEST(PromptLogprobsTest, SameBitsAloneAndInABatch) {
  LoadedModel ref = testing::LoadStories260K();
  std::mt19937 rng(13);
  const std::vector<int32_t> prompt = Prompt(rng, 90);
  auto engine = Make(Config(40));
  GenerationRequest alone_req = Greedy(prompt, 8);
  alone_req.prompt_logprobs = 5;
  alone_req.logprobs = 2;
  const Collector::Output alone = RunOne(*engine, std::move(alone_req));
  ExpectIdentical(alone.prompt_logprobs, ScoreReference(*ref.model, prompt, 5), "alone");

  Collector col;
  std::vector<RequestId> others;
  std::vector<std::vector<int32_t>> other_prompts;
  for (int i = 0; i < 12; ++i) {
    other_prompts.push_back(Prompt(rng, 5 + 9 * i));
    GenerationRequest o = Greedy(other_prompts.back(), 6 + i % 4);
    if (i % 3 == 0) o.prompt_logprobs = i % 5;
    others.push_back(*engine->Submit(std::move(o), col.Callback()));
    if (i == 5) {
      GenerationRequest r = Greedy(prompt, 8);
      r.prompt_logprobs = 5;
      r.logprobs = 2;
      others.push_back(*engine->Submit(std::move(r), col.Callback()));
    }
  }
  col.Wait(13);
  const Collector::Output batched = col.Get(others[6]);
  ExpectIdentical(batched.prompt_logprobs, alone.prompt_logprobs, "in a batch");
  EXPECT_EQ(batched.tokens, alone.tokens);
  ExpectIdentical(batched.logprobs, alone.logprobs, "sampled-token logprobs in a batch");
  for (int i = 0; i < 12; i += 3) {
    const Collector::Output o = col.Get(others[i < 6 ? i : i + 1]);
    ExpectIdentical(o.prompt_logprobs, ScoreReference(*ref.model, other_prompts[i], i % 5),
                    "other request " + std::to_string(i));
  }
}

TEST(PromptLogprobsTest, PreemptedRequestsStillReportEveryEntryOnce) {
  LoadedModel ref = testing::LoadStories260K();
  EngineConfig c = Config(24);
  c.scheduler.max_model_len = 96;
  const int64_t bytes_per_token = KvCache(ref.model->config(), 1, 1).BytesPerToken();
  c.kv_cache_memory_bytes = 12 * 16 * bytes_per_token;  // 12 blocks: two requests at most
  auto engine = Make(c);
  std::mt19937 rng(17);
  Collector col;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(Prompt(rng, 30 + 3 * i));
    GenerationRequest r = Greedy(prompts.back(), 40);
    r.prompt_logprobs = 3;
    ids.push_back(*engine->Submit(std::move(r), col.Callback()));
  }
  col.Wait(6);
  EXPECT_GT(engine->Metrics().num_preemptions_total, 0);
  for (int i = 0; i < 6; ++i) {
    const Collector::Output o = col.Get(ids[i]);
    EXPECT_EQ(o.prompt_logprob_events, 1) << "request " << i;
    ExpectIdentical(o.prompt_logprobs, ScoreReference(*ref.model, prompts[i], 3),
                    "request " + std::to_string(i));
  }
}

TEST(PromptLogprobsTest, OutOfRangeIsRejectedAndAOneTokenPromptHasNone) {
  auto engine = Make(Config(64));
  for (int k : {-2, kMaxLogprobs + 1}) {
    GenerationRequest r = Greedy({1, 5, 6}, 2);
    r.prompt_logprobs = k;
    auto id = engine->Submit(std::move(r), [](GenerationEvent) {});
    ASSERT_FALSE(id.ok());
    EXPECT_NE(id.status().message().find("prompt_logprobs"), std::string::npos);
  }
  GenerationRequest r = Greedy({1}, 2);
  r.prompt_logprobs = 3;
  Collector::Output o = RunOne(*engine, std::move(r));
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.prompt_logprobs.empty());
  EXPECT_EQ(o.tokens.size(), 2u);
}

}  // namespace
}  // namespace deepinfer
