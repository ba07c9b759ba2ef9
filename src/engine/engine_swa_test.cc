// Window-bounded sliding-window KV through the engine (synth hybrid models:
// qwen3 tiny-hybrid-swa with its window overridden, deepseek_v3 with MLA,
// gemma2 (sliding / full alternating, soft-capped) and gemma3 (5 sliding : 1 full)):
// every output, with log-probs compared bit for bit, equals the
// --swa-full-kv baseline's (full KV in every layer, the pre-existing path),
// with long prompts and small chunks so windows slide across chunk and block
// edges; speculation (ngram, mtp) with rollback stays lossless; the
// per-group metrics add up.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "model/testing.h"
#include "server/metrics_text.h"
#include "synth/synth.h"

namespace deepinfer {
namespace {

using testing::Collector;
using testing::ExpectSameOutputs;

std::string Synth(const std::string& arch, const std::string& preset, int64_t window, int64_t context) {
  SynthOptions o;
  o.arch = arch;
  o.preset = preset;
  o.seed = 77;
  o.format = SynthFormat::kHf;
  o.sliding_window = window;
  o.max_position = context;
  o.out = testing::PerTestPath(DI_BINARY_DIR, "engine_swa_test",
                               arch + "_" + preset + "_w" + std::to_string(window) + "_hf");
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

struct RunResult {
  std::vector<Collector::Output> outputs;
  EngineMetrics metrics;  // after every request finished
  int64_t max_swa_in_use = 0;
};

struct Setup {
  bool full_kv = false;
  bool async = true;
  std::string spec;  // "", "ngram", "mtp"
  int64_t chunk = 40;
  bool prefix_cache = true;
  bool sequential = false;    // each request submitted after the previous one finished
  int64_t replay_tokens = 0;  // EngineConfig::swa_replay_tokens (0: the default)
};

// Request i (counted from index0) is greedy when even, else seeded sampling with seed 500 + i.
RunResult RunEngine(const std::string& path, const Setup& s, const std::vector<std::vector<int32_t>>& prompts,
                    int max_tokens, size_t index0 = 0) {
  EngineConfig c;
  c.scheduler.max_model_len = 4096;
  c.scheduler.max_num_seqs = 8;
  c.scheduler.max_num_batched_tokens = s.chunk;
  c.kv_cache_memory_bytes = 32 << 20;
  c.async_scheduling = s.async;
  c.swa_full_kv = s.full_kv;
  c.enable_prefix_cache = s.prefix_cache;
  c.swa_replay_tokens = s.replay_tokens;
  if (!s.spec.empty()) {
    c.speculative.method = s.spec;
    c.speculative.adaptive = false;
    c.scheduler.max_num_speculative_tokens = 5;
  }
  auto created = Engine::Create(Load(path), c);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  RunResult run;
  if (!created.ok()) return run;
  Engine& engine = **created;
  Collector col;
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest r;
    r.prompt_tokens = prompts[i];
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.logprobs = 3;
    r.sampling.temperature = (index0 + i) % 2 == 0 ? 0.0f : 0.9f;
    r.seed = 500 + index0 + i;
    auto id = engine.Submit(std::move(r), col.Callback());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (id.ok()) ids.push_back(*id);
    if (s.sequential) col.Wait(static_cast<int>(ids.size()));
  }
  col.Wait(static_cast<int>(ids.size()));
  for (RequestId id : ids) run.outputs.push_back(col.Get(id));
  run.metrics = engine.Metrics();
  return run;
}

std::vector<std::vector<int32_t>> Prompts(int n, int vocab, int min_len, int max_len, bool repetitive) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int32_t> token(3, vocab - 1);
  std::uniform_int_distribution<int> len(min_len, max_len);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p = {1};
    const int l = len(rng);
    // Repetitive prompts (a short phrase over and over) give prompt lookup drafts.
    std::vector<int32_t> phrase;
    for (int k = 0; k < 7; ++k) phrase.push_back(token(rng));
    while (static_cast<int>(p.size()) < l)
      p.push_back(repetitive ? phrase[p.size() % phrase.size()] : token(rng));
    out.push_back(std::move(p));
  }
  return out;
}

int64_t GroupInUse(const EngineMetrics& m, const std::string& name) {
  for (const auto& g : m.kv_groups) {
    if (g.name == name) return g.blocks_in_use;
  }
  return -1;
}

class SwaWindows : public ::testing::TestWithParam<int64_t> {};

TEST_P(SwaWindows, OutputsEqualTheFullKvBaselineBitwise) {
  const int64_t window = GetParam();
  const std::string path = Synth("qwen3", "tiny-hybrid-swa", window, 4096);
  const auto prompts = Prompts(6, 512, 200, 900, false);
  for (bool async : {true, false}) {
    const std::string what = "window " + std::to_string(window) + (async ? " async" : " sync");
    const RunResult full = RunEngine(path, {.full_kv = true, .async = async}, prompts, 24);
    const RunResult bounded = RunEngine(path, {.full_kv = false, .async = async, .chunk = 37}, prompts, 24);
    ExpectSameOutputs(full.outputs, bounded.outputs, what);
    // Per-layer pages were really in use, and all went back.
    ASSERT_EQ(bounded.metrics.kv_groups.size(), 2u) << what;
    EXPECT_EQ(bounded.metrics.kv_groups[0].name, "full");
    EXPECT_EQ(bounded.metrics.kv_groups[1].name, "swa");
    EXPECT_EQ(GroupInUse(bounded.metrics, "swa"), 0);
    EXPECT_EQ(bounded.metrics.kv_blocks_in_use, 0);
    ASSERT_EQ(full.metrics.kv_groups.size(), 1u);
    EXPECT_EQ(full.metrics.kv_groups[0].name, "all");
  }
  // Batch invariance: each request alone gives the bits it gave in the batch.
  const RunResult batched = RunEngine(path, {.chunk = 37}, prompts, 24);
  for (size_t i = 0; i < prompts.size(); i += 2) {
    RunResult alone = RunEngine(path, {.chunk = 37}, {prompts[i]}, 24, i);
    RunResult one{{batched.outputs[i]}, {}, 0};
    ExpectSameOutputs(one.outputs, alone.outputs, "alone vs batched, request " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, SwaWindows, ::testing::Values(8, 16, 37, 128));

// Gemma's local/global patterns (gemma2: S F S F; gemma3: S S S S S F) with
// windows below and above the block size.
TEST(SwaWindowsGemma, OutputsEqualTheFullKvBaselineBitwise) {
  for (const char* arch : {"gemma2", "gemma3"}) {
    for (int64_t window : {8, 37}) {
      const std::string what = std::string(arch) + ", window " + std::to_string(window);
      const std::string path = Synth(arch, "tiny", window, 4096);
      const auto prompts = Prompts(4, 512, 200, 700, false);
      const RunResult full = RunEngine(path, {.full_kv = true}, prompts, 16);
      const RunResult bounded = RunEngine(path, {.full_kv = false, .chunk = 37}, prompts, 16);
      ExpectSameOutputs(full.outputs, bounded.outputs, what);
      ASSERT_EQ(bounded.metrics.kv_groups.size(), 2u) << what;
      EXPECT_EQ(GroupInUse(bounded.metrics, "swa"), 0) << what;
      EXPECT_EQ(bounded.metrics.kv_blocks_in_use, 0) << what;
    }
  }
}

// 3,000-4,000-token prompts in chunks of 100 (chunk edges never on block edges).
TEST(SwaLongPrompts, OutputsEqualTheFullKvBaselineBitwise) {
  for (int64_t window : {8, 128}) {
    const std::string path = Synth("qwen3", "tiny-hybrid-swa", window, 4096);
    const auto prompts = Prompts(3, 512, 3000, 4000, false);
    const RunResult full = RunEngine(path, {.full_kv = true, .chunk = 100}, prompts, 16);
    const RunResult bounded = RunEngine(path, {.full_kv = false, .chunk = 100}, prompts, 16);
    ExpectSameOutputs(full.outputs, bounded.outputs, "long prompts, window " + std::to_string(window));
  }
}

TEST(SwaSpeculation, NgramWithRollbackIsLosslessOnAHybridModel) {
  const std::string path = Synth("qwen3", "tiny-hybrid-swa", 8, 4096);
  const auto prompts = Prompts(4, 512, 100, 300, true);
  const RunResult full = RunEngine(path, {.full_kv = true}, prompts, 40);
  const RunResult spec = RunEngine(path, {.full_kv = false, .spec = "ngram"}, prompts, 40);
  ExpectSameOutputs(full.outputs, spec.outputs, "ngram");
  EXPECT_GT(spec.metrics.spec_draft_tokens_total, 0);
  EXPECT_LT(spec.metrics.spec_accepted_tokens_total, spec.metrics.spec_draft_tokens_total);  // rollbacks ran
}

TEST(SwaSpeculation, MtpOnHybridDeepSeekIsLossless) {
  const std::string path = Synth("deepseek_v3", "tiny-hybrid-swa", 8, 1024);
  const auto prompts = Prompts(4, 512, 60, 200, true);
  const RunResult full = RunEngine(path, {.full_kv = true}, prompts, 30);
  const RunResult bounded = RunEngine(path, {.full_kv = false}, prompts, 30);
  const RunResult spec = RunEngine(path, {.full_kv = false, .spec = "mtp"}, prompts, 30);
  ExpectSameOutputs(full.outputs, bounded.outputs, "deepseek bounded");
  ExpectSameOutputs(full.outputs, spec.outputs, "deepseek mtp");
  EXPECT_GT(spec.metrics.spec_draft_tokens_total, 0);
}

// Prefix caching with bounded replay (docs/kv-cache.md). Requests run one
// after another so each can hit what the earlier ones cached:
//   0: a prompt P (greedy)            - cold
//   1: P[0, k) + other tokens          - full attention cached to ~k, windowed
//                                        KV only at checkpoints: replays
//   2: P + its output + more (greedy)  - a conversation's next turn: the end
//                                        checkpoint covers it
//   3: P + a short suffix              - the same prompt extended
//   4: P again                         - the prompt's own end checkpoint
// Every output equals, bit for bit, a run without the prefix cache (each
// request computed from scratch), with the prefill chunked differently.
std::vector<std::vector<int32_t>> HitPrompts(int64_t length, int64_t shared, int max_tokens,
                                             const std::vector<int32_t>& output0) {
  const auto base = Prompts(2, 512, static_cast<int>(length), static_cast<int>(length), false);
  const std::vector<int32_t>& p = base[0];
  std::vector<int32_t> partial(p.begin(), p.begin() + shared);
  partial.insert(partial.end(), base[1].begin(), base[1].begin() + 40);
  std::vector<int32_t> turn = p;
  turn.insert(turn.end(), output0.begin(),
              output0.begin() + std::min<size_t>(output0.size(), max_tokens - 1));
  turn.insert(turn.end(), base[1].begin() + 50, base[1].begin() + 75);
  std::vector<int32_t> extended = p;
  extended.insert(extended.end(), base[1].begin() + 100, base[1].begin() + 111);
  return {p, partial, turn, extended, p};
}

void ExpectHitsEqualColdRuns(const std::string& path, int64_t length, int64_t shared, int64_t chunk,
                             bool expect_replay, const std::string& what) {
  constexpr int kMaxTokens = 8;
  const RunResult first =
      RunEngine(path, {.prefix_cache = false}, HitPrompts(length, shared, kMaxTokens, {}), kMaxTokens);
  ASSERT_FALSE(first.outputs.empty());
  const auto prompts = HitPrompts(length, shared, kMaxTokens, first.outputs[0].tokens);
  const RunResult cold = RunEngine(path, {.chunk = 64, .prefix_cache = false}, prompts, kMaxTokens);
  const RunResult hit = RunEngine(path, {.chunk = chunk, .sequential = true}, prompts, kMaxTokens);
  ExpectSameOutputs(cold.outputs, hit.outputs, what);
  ASSERT_EQ(hit.outputs.size(), 5u);
  for (const auto& o : cold.outputs) EXPECT_EQ(o.cached_prompt_tokens, 0) << what;
  const int64_t replay = 140, block = 16;
  EXPECT_EQ(hit.outputs[0].cached_prompt_tokens, 0) << what;
  // Recomputed: what is not shared, plus at most the replay bound and a block.
  for (size_t i = 1; i < 5; ++i) {
    const int64_t shared_i = i == 1 ? shared : length;
    const auto computed = static_cast<int64_t>(prompts[i].size()) - hit.outputs[i].cached_prompt_tokens;
    EXPECT_GT(hit.outputs[i].cached_prompt_tokens, 0) << what << ", request " << i;
    EXPECT_LE(computed, static_cast<int64_t>(prompts[i].size()) - shared_i + replay + block)
        << what << ", request " << i;
  }
  // Checkpoints at the prompt's end and at the end of the first turn: the
  // next turn, the extension and the repeat compute less than two blocks
  // beyond their new tokens (the repeat at least its last token).
  EXPECT_LE(static_cast<int64_t>(prompts[2].size()) - hit.outputs[2].cached_prompt_tokens,
            static_cast<int64_t>(prompts[2].size()) - length - (kMaxTokens - 1) + 2 * block)
      << what;
  EXPECT_LE(static_cast<int64_t>(prompts[3].size()) - hit.outputs[3].cached_prompt_tokens,
            static_cast<int64_t>(prompts[3].size()) - length + block)
      << what;
  EXPECT_LE(length - hit.outputs[4].cached_prompt_tokens, block) << what;
  // Request 1 replays unless checkpoints tile the whole prefix (window >= their spacing).
  if (expect_replay) EXPECT_GT(hit.metrics.swa_replayed_tokens_total, 0) << what;
  EXPECT_LE(hit.metrics.swa_replayed_tokens_total, 3 * replay) << what;
  EXPECT_EQ(hit.metrics.kv_blocks_in_use, 0) << what;
  EXPECT_EQ(GroupInUse(hit.metrics, "swa"), 0) << what;
}

class SwaPrefixHitWindows : public ::testing::TestWithParam<int64_t> {};

TEST_P(SwaPrefixHitWindows, OutputsAfterAHitEqualAColdPrefillBitwise) {
  const int64_t window = GetParam();
  const std::string path = Synth("qwen3", "tiny-hybrid-swa", window, 4096);
  for (int64_t chunk : {37, 64, 500}) {
    ExpectHitsEqualColdRuns(path, 700, 450, chunk, window < 128,
                            "qwen3, window " + std::to_string(window) + ", chunk " + std::to_string(chunk));
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, SwaPrefixHitWindows, ::testing::Values(8, 16, 37, 128));

TEST(SwaPrefixHit, HybridDeepSeekWithMlaCache) {
  for (int64_t window : {8, 64}) {
    const std::string path = Synth("deepseek_v3", "tiny-hybrid-swa", window, 1024);
    ExpectHitsEqualColdRuns(path, 600, 333, 41, true, "deepseek_v3, window " + std::to_string(window));
  }
}

TEST(SwaPrefixHit, GemmaLocalGlobalLayers) {
  for (const char* arch : {"gemma2", "gemma3"}) {
    for (int64_t window : {8, 16}) {
      const std::string path = Synth(arch, "tiny", window, 1024);
      ExpectHitsEqualColdRuns(path, 600, 333, 41, true,
                              std::string(arch) + ", window " + std::to_string(window));
    }
  }
}

// The replay acceptance: a 3,000-token prompt, then the same prompt
// plus a short suffix. The second computes at most suffix + 140 + one block
// tokens (counted from the metrics), and its output equals a run without the
// prefix cache. Prints the time to the first token cold vs on the hit. A
// third request shares only 2,990 tokens: full attention is cached to 2,976,
// windowed KV (window 8) at the checkpoint 2,944 - it replays 32.
void LongPromptPlusSuffix(int64_t window) {
  const std::string path = Synth("qwen3", "tiny-hybrid-swa", window, 4096);
  const std::vector<int32_t> prompt = Prompts(1, 512, 3000, 3000, false)[0];
  std::vector<int32_t> extended = prompt;
  for (int32_t t = 0; t < 20; ++t) extended.push_back(100 + t);
  std::vector<int32_t> partial(prompt.begin(), prompt.begin() + 2990);
  for (int32_t t = 0; t < 20; ++t) partial.push_back(200 + t);
  const std::vector<std::vector<int32_t>> prompts = {prompt, extended, partial};
  const RunResult cold = RunEngine(path, {.chunk = 512, .prefix_cache = false}, prompts, 4);
  EngineConfig c;
  c.scheduler.max_model_len = 4096;
  c.scheduler.max_num_batched_tokens = 512;
  c.kv_cache_memory_bytes = 32 << 20;
  auto created = Engine::Create(Load(path), c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  Collector col;
  double ttft[3] = {0, 0, 0};
  int64_t computed[3] = {0, 0, 0}, replayed[3] = {0, 0, 0};
  std::vector<Collector::Output> outs;
  for (int i = 0; i < 3; ++i) {
    const EngineMetrics before = engine.Metrics();
    GenerationRequest r;
    r.prompt_tokens = prompts[static_cast<size_t>(i)];
    r.max_tokens = 4;
    r.ignore_eos = true;
    r.logprobs = 3;
    r.seed = 500 + i;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
    std::atomic<bool> first_token{false};
    const auto start = std::chrono::steady_clock::now();
    std::atomic<int64_t> first_ns{0};
    auto cb = col.Callback();
    auto id = engine.Submit(std::move(r), [&, cb](GenerationEvent ev) {
      if (!ev.token_ids.empty() && !first_token.exchange(true)) {
        first_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
                .count();
      }
      cb(std::move(ev));
    });
    ASSERT_TRUE(id.ok());
    col.Wait(i + 1);
    ttft[i] = static_cast<double>(first_ns.load()) * 1e-6;
    const EngineMetrics after = engine.Metrics();
    computed[i] = (after.prompt_tokens_total - before.prompt_tokens_total) -
                  (after.prefix_cache_hits_total - before.prefix_cache_hits_total);
    replayed[i] = after.swa_replayed_tokens_total - before.swa_replayed_tokens_total;
    outs.push_back(col.Get(*id));
  }
  EXPECT_EQ(computed[0], 3000);
  EXPECT_LE(computed[1], 20 + 140 + 16);
  EXPECT_EQ(outs[1].cached_prompt_tokens, 3020 - computed[1]);
  EXPECT_LE(computed[2], 20 + 140 + 16);
  EXPECT_LE(replayed[2], 140);
  if (window == 8) EXPECT_EQ(replayed[2], 2976 - 2944);
  ExpectSameOutputs(cold.outputs, outs, "3,000-token prompt + suffix, window " + std::to_string(window));
  std::printf(
      "window %lld: TTFT cold %.1f ms, prefix hit %.1f ms (%.1fx); hit computed %lld prompt tokens; "
      "partial hit computed %lld (replayed %lld), TTFT %.1f ms\n",
      static_cast<long long>(window), ttft[0], ttft[1], ttft[0] / std::max(ttft[1], 1e-3),
      static_cast<long long>(computed[1]), static_cast<long long>(computed[2]),
      static_cast<long long>(replayed[2]), ttft[2]);
  ::testing::Test::RecordProperty("ttft_cold_ms_w" + std::to_string(window), std::to_string(ttft[0]));
  ::testing::Test::RecordProperty("ttft_hit_ms_w" + std::to_string(window), std::to_string(ttft[1]));
}

TEST(SwaPrefixHit, LongPromptPlusSuffixReplaysAtMostTheBound) {
  for (int64_t window : {8, 128}) LongPromptPlusSuffix(window);
}

TEST(SwaPrefixHit, ReplayTokensBelowTheWindowIsAStartUpError) {
  const std::string path = Synth("qwen3", "tiny-hybrid-swa", 37, 1024);
  EngineConfig c;
  c.kv_cache_memory_bytes = 8 << 20;
  c.swa_replay_tokens = 36;
  auto created = Engine::Create(Load(path), c);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("DEEPINFER_SWA_REPLAY_TOKENS"), std::string::npos)
      << created.status().ToString();
  EXPECT_NE(created.status().message().find("37"), std::string::npos) << created.status().ToString();
  c.swa_replay_tokens = 37;
  EXPECT_TRUE(Engine::Create(Load(path), c).ok());
  c.swa_replay_tokens = 36;
  c.enable_prefix_cache = false;  // nothing to replay
  EXPECT_TRUE(Engine::Create(Load(path), c).ok());
  c.swa_full_kv = true;
  c.enable_prefix_cache = true;
  EXPECT_TRUE(Engine::Create(Load(path), c).ok());
  // From the environment (swa_replay_tokens 0): the same check, and a value
  // that is not a positive integer is an error too.
  c.swa_full_kv = false;
  c.swa_replay_tokens = 0;
  for (const char* bad : {"36", "abc", "0", "-5", "12x"}) {
    ASSERT_EQ(setenv("DEEPINFER_SWA_REPLAY_TOKENS", bad, 1), 0);
    auto e = Engine::Create(Load(path), c);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok())
      EXPECT_NE(e.status().message().find("DEEPINFER_SWA_REPLAY_TOKENS"), std::string::npos) << bad;
  }
  ASSERT_EQ(setenv("DEEPINFER_SWA_REPLAY_TOKENS", "300", 1), 0);
  auto good = Engine::Create(Load(path), c);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)->config().swa_replay_tokens, 300);
  unsetenv("DEEPINFER_SWA_REPLAY_TOKENS");
  auto dflt = Engine::Create(Load(path), c);
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ((*dflt)->config().swa_replay_tokens, 140);
}

// The memory bound through the engine's own accounting: while one request
// generates ~4,000 tokens, the windowed layers' pages (polled from
// Metrics) never exceed, per windowed layer, ceil((W - 1 + 1) / B) + 1 (a
// decode step claims one position), while the full layer's pages grow with
// the sequence.
void ExpectWindowedPagesBounded(const std::string& arch, const std::string& preset, int64_t kWindowedLayers) {
  constexpr int64_t kWindow = 16, kBlock = 16;
  const std::string path = Synth(arch, preset, kWindow, 4096);
  EngineConfig c;
  c.scheduler.max_model_len = 4096;
  c.kv_cache_memory_bytes = 16 << 20;  // gemma3: 6 layers of K+V
  auto created = Engine::Create(Load(path), c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  std::atomic<int64_t> generated{0};
  std::atomic<bool> done{false};
  // The full layer's pages are also read at every event: the poll below
  // may be descheduled through the last block boundary (~9 steps before
  // the end), while the events before the final one always see the
  // request's pages still held.
  std::atomic<int64_t> max_full_at_events{0};
  auto id =
      engine.Submit(testing::Greedy(Prompts(1, 512, 100, 100, false)[0], 3990), [&](GenerationEvent ev) {
        generated += static_cast<int64_t>(ev.token_ids.size());
        if (ev.finish_reason != FinishReason::kNone) {
          done = true;
          return;
        }
        max_full_at_events = std::max(max_full_at_events.load(), GroupInUse(engine.Metrics(), "full"));
      });
  ASSERT_TRUE(id.ok());
  const int64_t bound = kWindowedLayers * ((kWindow - 1 + 1 + kBlock - 1) / kBlock + 1);
  int64_t polls = 0, max_swa = 0, max_full = 0;
  while (!done) {
    // From the second token on: the prompt's out-of-window pages are
    // released by the first decode claim (KvManager::LayerAllocate), which
    // a scheduler without overlap makes after the first token's event;
    // every claim after that is one position.
    const bool decoding = generated > 1;
    const EngineMetrics m = engine.Metrics();
    const int64_t swa = GroupInUse(m, "swa");
    if (decoding && !done) {
      ASSERT_LE(swa, bound) << "after " << generated << " tokens";
      ++polls;
    }
    max_swa = std::max(max_swa, swa);
    max_full = std::max(max_full, GroupInUse(m, "full"));
  }
  EXPECT_GT(polls, 100);
  EXPECT_GT(max_swa, 0);
  max_full = std::max(max_full, max_full_at_events.load());
  EXPECT_GE(max_full, (100 + 3990 - 1) / kBlock) << arch;  // the full layer kept everything
}

TEST(SwaMetrics, WindowedPagesStayBoundedThroughoutA4kGeneration) {
  ExpectWindowedPagesBounded("qwen3", "tiny-hybrid-swa", 2);  // S F S
}

TEST(SwaMetrics, GemmaWindowedPagesStayBoundedThroughoutA4kGeneration) {
  ExpectWindowedPagesBounded("gemma3", "tiny", 5);  // S S S S S F
}

TEST(SwaMetrics, PrometheusTextHasOneLinePerGroup) {
  EngineMetrics m;
  m.kv_blocks_total = 30;
  m.kv_blocks_in_use = 7;
  m.kv_groups = {{"full", 4, 30}, {"swa", 3, 30}};
  const std::string text = server::RenderPrometheusMetrics(m);
  EXPECT_NE(text.find("deepinfer_kv_cache_blocks_in_use{group=\"full\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("deepinfer_kv_cache_blocks_in_use{group=\"swa\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("deepinfer_kv_cache_num_blocks{group=\"swa\"} 30\n"), std::string::npos);
  EXPECT_NE(text.find("deepinfer_kv_cache_blocks_in_use 7\n"), std::string::npos);
}

TEST(SwaConfig, FullKvFlagOnAModelWithoutWindowsIsANoticeNotAnError) {
  const std::string path = Synth("qwen3", "tiny", 0, 0);
  EngineConfig c;
  c.kv_cache_memory_bytes = 1 << 20;
  c.swa_full_kv = true;
  auto created = Engine::Create(Load(path), c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)->Metrics().kv_groups.size(), 1u);
}

}  // namespace
}  // namespace deepinfer
