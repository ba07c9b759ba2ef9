// The serving engine on the MoE and DeepSeek families (synth tiny models):
// concurrent greedy requests equal an independent single-sequence
// Model::Forward loop, a repeated prompt is served from the prefix cache
// (for DeepSeek that cache holds only the MLA latent + rope key), and the
// per-expert load counters reach EngineMetrics and /metrics with every
// routed token counted once per chosen expert.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "model/testing.h"
#include "sampling/sampler.h"
#include "server/metrics_text.h"
#include "synth/synth.h"

namespace deepinfer {
namespace {

using testing::Collector;
using testing::Greedy;
using testing::RunReference;

struct Family {
  const char* arch;
  const char* preset;
  SynthFormat format;
};

std::string SynthModel(const Family& f) {
  SynthOptions o;
  o.arch = f.arch;
  o.preset = f.preset;
  o.seed = 4242;
  o.format = f.format;
  o.out = testing::PerTestPath(
      DI_BINARY_DIR, "engine_models_test",
      std::string(f.arch) + "_" + f.preset + (f.format == SynthFormat::kGguf ? ".gguf" : "_hf"));
  const Status st = WriteSynthModel(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return o.out;
}

LoadedModel Load(const std::string& path) {
  LoadOptions o;
  o.num_threads = 2;
  auto m = LoadModel(path, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

EngineConfig Config(bool async) {
  EngineConfig c;
  c.scheduler.max_model_len = 256;
  c.scheduler.max_num_seqs = 16;
  c.scheduler.max_num_batched_tokens = 48;  // chunked prefills mixed with decodes
  c.kv_cache_memory_bytes = 4 << 20;
  c.async_scheduling = async;
  return c;
}

std::vector<int32_t> ReferenceGreedy(Model& model, const std::vector<int32_t>& prompt, int n) {
  SamplingParams greedy;
  greedy.temperature = 0;
  return RunReference(model, prompt, n, greedy, /*block=*/8).tokens;
}

std::vector<int32_t> RandomPrompt(std::mt19937& rng, int len, int vocab) {
  std::uniform_int_distribution<int32_t> token(3, vocab - 1);
  std::vector<int32_t> p = {1};
  for (int i = 1; i < len; ++i) p.push_back(token(rng));
  return p;
}

std::unique_ptr<Engine> MakeEngine(const std::string& path, bool async, bool swa_full_kv = false) {
  EngineConfig c = Config(async);
  c.swa_full_kv = swa_full_kv;
  auto e = Engine::Create(Load(path), c);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

const Family kFamilies[] = {
    {"mixtral", "tiny", SynthFormat::kGguf},
    {"deepseek_v3", "tiny", SynthFormat::kGguf},           // MLA latent cache, sigmoid routing, YaRN
    {"deepseek_v2", "tiny", SynthFormat::kHf},             // MLA without q_lora, softmax groups
    {"deepseek_v3", "tiny-hybrid-swa", SynthFormat::kHf},  // MLA + sliding layers 0 and 2 (window 16)
};

class EngineModelsTest : public ::testing::TestWithParam<Family> {};

// 8 different prompts at once (chunked prefills mixed with decodes) give the
// single-sequence greedy outputs, async and sync.
TEST_P(EngineModelsTest, ConcurrentGreedyEqualsSingleSequenceForward) {
  const std::string path = SynthModel(GetParam());
  LoadedModel ref = Load(path);
  const int vocab = static_cast<int>(ref.model->config().vocab_size);
  for (bool async : {true, false}) {
    auto engine = MakeEngine(path, async);
    ASSERT_NE(engine, nullptr);
    std::mt19937 rng(99);
    Collector col;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int> lengths;
    std::vector<RequestId> ids;
    for (int i = 0; i < 8; ++i) {
      prompts.push_back(RandomPrompt(rng, 3 + (i * 11) % 40, vocab));
      lengths.push_back(10 + i % 4);
      auto id = engine->Submit(Greedy(prompts.back(), lengths.back()), col.Callback());
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ids.push_back(*id);
    }
    col.Wait(8);
    for (int i = 0; i < 8; ++i) {
      const Collector::Output o = col.Get(ids[static_cast<size_t>(i)]);
      EXPECT_EQ(o.error, "");
      EXPECT_EQ(o.finish, FinishReason::kLength);
      EXPECT_EQ(o.tokens,
                ReferenceGreedy(*ref.model, prompts[static_cast<size_t>(i)], lengths[static_cast<size_t>(i)]))
          << GetParam().arch << "/" << GetParam().preset << " request " << i << (async ? " async" : " sync");
    }
    const EngineMetrics m = engine->Metrics();
    EXPECT_EQ(m.kv_blocks_in_use, 0);
    EXPECT_EQ(m.requests_finished_total, 8);
  }
}

// The second submission of a 60-token prompt reuses all but its last token
// from the prefix cache and still generates the reference tokens. A hybrid
// sliding-window model runs with --swa-full-kv here (window-bounded KV reuses
// whole blocks with bounded replay: docs/kv-cache.md; engine_swa_test covers it).
TEST_P(EngineModelsTest, RepeatedPromptHitsThePrefixCache) {
  const std::string path = SynthModel(GetParam());
  LoadedModel ref = Load(path);
  auto engine = MakeEngine(path, /*async=*/true, /*swa_full_kv=*/true);
  ASSERT_NE(engine, nullptr);
  std::mt19937 rng(5);
  const std::vector<int32_t> prompt = RandomPrompt(rng, 60, static_cast<int>(ref.model->config().vocab_size));
  Collector col;
  auto first = engine->Submit(Greedy(prompt, 6), col.Callback());
  ASSERT_TRUE(first.ok());
  col.Wait(1);
  auto second = engine->Submit(Greedy(prompt, 6), col.Callback());
  ASSERT_TRUE(second.ok());
  col.Wait(2);
  const std::vector<int32_t> expected = ReferenceGreedy(*ref.model, prompt, 6);
  EXPECT_EQ(col.Get(*first).cached_prompt_tokens, 0);
  EXPECT_EQ(col.Get(*first).tokens, expected);
  // Everything but the last prompt token, which must be computed for its
  // logits (the hybrid model has a full-attention layer, so it keeps every block).
  EXPECT_EQ(col.Get(*second).cached_prompt_tokens, 59);
  EXPECT_EQ(col.Get(*second).tokens, expected);
  EXPECT_GT(engine->Metrics().prefix_cache_hit_ratio, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Families, EngineModelsTest, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& info) {
                           std::string name = std::string(info.param.arch) + "_" + info.param.preset +
                                              (info.param.format == SynthFormat::kGguf ? "_gguf" : "_hf");
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Sums deepinfer_expert_tokens_total per layer from the Prometheus text.
std::map<int, int64_t> ExpertTokensPerLayer(const std::string& text, int* series) {
  std::map<int, int64_t> per_layer;
  std::istringstream in(text);
  std::string line;
  *series = 0;
  const std::string prefix = "deepinfer_expert_tokens_total{layer=\"";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    ++*series;
    const int layer = std::stoi(line.substr(prefix.size()));
    per_layer[layer] += std::stoll(line.substr(line.rfind(' ') + 1));
  }
  return per_layer;
}

// One request in sync mode: the model runs prompt + (max_tokens - 1) tokens
// (the last sampled token is never fed back), so every MoE layer routes
// exactly that many tokens times top-k - except the last layer, which
// computes only the tokens whose logits are read (DecoderLayer::
// ForwardKeeping): one per step, the prompt's last and each decoded token,
// max_tokens in all. Dense layers route none.
TEST(EngineExpertLoad, CountsAddUpToTokensTimesTopKInMetricsAndPrometheus) {
  for (const Family& f :
       {Family{"mixtral", "tiny", SynthFormat::kGguf}, Family{"deepseek_v3", "tiny", SynthFormat::kGguf}}) {
    const std::string path = SynthModel(f);
    auto engine = MakeEngine(path, /*async=*/false);
    ASSERT_NE(engine, nullptr);
    const ModelConfig& c = engine->model_config();
    EXPECT_EQ(engine->Metrics().expert_tokens_total.size(), 0u) << "no step has run yet";
    std::mt19937 rng(3);
    const int prompt_len = 37, max_tokens = 9;
    Collector col;
    auto id = engine->Submit(
        Greedy(RandomPrompt(rng, prompt_len, static_cast<int>(c.vocab_size)), max_tokens), col.Callback());
    ASSERT_TRUE(id.ok());
    col.Wait(1);
    const int64_t routed = static_cast<int64_t>(prompt_len + max_tokens - 1) * c.moe.experts_per_token;
    const int64_t routed_last = static_cast<int64_t>(max_tokens) * c.moe.experts_per_token;
    const auto routed_at = [&](int64_t l) { return l + 1 == c.num_layers ? routed_last : routed; };
    const EngineMetrics m = engine->Metrics();
    ASSERT_EQ(m.expert_tokens_total.size(), static_cast<size_t>(c.num_layers)) << f.arch;
    int expected_series = 0;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::vector<int64_t>& row = m.expert_tokens_total[static_cast<size_t>(l)];
      int64_t sum = 0;
      for (int64_t v : row) sum += v;
      if (c.moe.sparse_layers[static_cast<size_t>(l)]) {
        EXPECT_EQ(row.size(), static_cast<size_t>(c.moe.num_experts));
        EXPECT_EQ(sum, routed_at(l)) << f.arch << " layer " << l;
        expected_series += static_cast<int>(c.moe.num_experts);
      } else {
        EXPECT_TRUE(row.empty()) << f.arch << " dense layer " << l;
      }
    }
    int series = 0;
    const std::map<int, int64_t> text = ExpertTokensPerLayer(server::RenderPrometheusMetrics(m), &series);
    EXPECT_EQ(series, expected_series);
    for (const auto& [layer, sum] : text)
      EXPECT_EQ(sum, routed_at(layer)) << f.arch << " /metrics layer " << layer;
  }
}

TEST(EngineExpertLoad, DenseModelsRenderNoExpertSeries) {
  EngineMetrics m;
  m.expert_tokens_total = {{}, {}};
  EXPECT_EQ(server::RenderPrometheusMetrics(m).find("deepinfer_expert_tokens_total"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer
