// Speculative decoding through the engine is lossless: with ngram drafts
// (fixed and adaptive schedules, sync and async loops), every request's
// tokens and the bits of its log-probs equal those of the same engine without
// speculation — greedy and seeded sampling, alone and 16 at once — while
// drafts were in fact verified and accepted. Aborts mid-verification free
// every KV block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "model/testing.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

using testing::Collector;
using testing::ExpectSameOutputs;

LoadedModel Load() { return testing::LoadStories260K(); }

// stories260K with its trained MTP layer (HF layout, no tokenizer.json: the
// GGUF's vocabulary is the same).
LoadedModel LoadMtp() {
  LoadOptions o;
  o.num_threads = 2;
  o.tokenizer_path = std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf";
  auto m = LoadModel(std::string(DI_SHARED_DIR) + "/models/stories260K-mtp", o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

struct Mode {
  const char* name;
  const char* method;  // "" = no speculation
  bool adaptive;
  bool async;
  bool mtp_model = false;  // stories260K-mtp instead of stories260K
};

EngineConfig ConfigFor(const Mode& m) {
  EngineConfig c;
  c.scheduler.max_model_len = 128;
  c.scheduler.max_num_seqs = 16;
  c.scheduler.max_num_batched_tokens = 96;  // chunked prefills mixed with verifications
  c.kv_cache_memory_bytes = 8 << 20;
  c.async_scheduling = m.async;
  c.speculative.method = m.method;
  c.speculative.adaptive = m.adaptive;
  c.scheduler.max_num_speculative_tokens = std::string(m.method).empty() ? 0 : 5;
  return c;
}

// Story-like prompts that repeat phrases, so prompt lookup finds drafts.
std::vector<std::vector<int32_t>> Prompts(const Tokenizer& tok, int n) {
  const char* texts[] = {
      "Once upon a time there was a little girl. The little girl liked to play. One day the little girl",
      "Tom had a red ball. Tom liked the red ball. Tom threw the red ball to his dog and",
      "The cat sat on the mat. The dog sat on the mat. The bird sat on the",
      "Lily went to the park. At the park, Lily saw a big tree. Lily went to the big tree and",
  };
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(tok.Encode(texts[i % 4], /*add_special=*/true, false));
  return out;
}

struct RunOutput {
  std::vector<Collector::Output> outputs;
  EngineMetrics metrics;
};

RunOutput RunEngine(const Mode& mode, int n, bool sampled) {
  auto created = Engine::Create(mode.mtp_model ? LoadMtp() : Load(), ConfigFor(mode));
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  Collector col;
  std::vector<RequestId> ids;
  const auto prompts = Prompts(engine.tokenizer(), n);
  for (int i = 0; i < n; ++i) {
    GenerationRequest r;
    r.prompt_tokens = prompts[static_cast<size_t>(i)];
    r.max_tokens = 60 + 3 * (i % 8);  // stories260K: 128 positions
    r.ignore_eos = true;
    r.logprobs = 2;
    if (sampled) {
      r.sampling.temperature = 0.8f;
      r.seed = 1000 + i;
    } else {
      r.sampling.temperature = 0;
    }
    auto id = engine.Submit(std::move(r), col.Callback());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  col.Wait(n);
  RunOutput out;
  for (RequestId id : ids) out.outputs.push_back(col.Get(id));
  out.metrics = engine.Metrics();
  EXPECT_EQ(out.metrics.kv_blocks_in_use, 0);
  return out;
}

const Mode kModes[] = {
    {"ngram_fixed_sync", "ngram", false, false},     {"ngram_fixed_async", "ngram", false, true},
    {"ngram_adaptive_sync", "ngram", true, false},   {"ngram_adaptive_async", "ngram", true, true},
    {"mtp_fixed_sync", "mtp", false, false, true},   {"mtp_fixed_async", "mtp", false, true, true},
    {"mtp_adaptive_sync", "mtp", true, false, true}, {"mtp_adaptive_async", "mtp", true, true, true},
};

class SpeculationLossless : public ::testing::TestWithParam<Mode> {};

TEST_P(SpeculationLossless, GreedyAndSeededOutputsEqualPlainDecodingAloneAndInABatchOf16) {
  const Mode& mode = GetParam();
  for (bool sampled : {false, true}) {
    for (int n : {1, 16}) {
      const std::string what =
          std::string(mode.name) + (sampled ? " T=0.8" : " greedy") + " n=" + std::to_string(n);
      const RunOutput plain = RunEngine({"plain", "", false, mode.async, mode.mtp_model}, n, sampled);
      const RunOutput spec = RunEngine(mode, n, sampled);
      ExpectSameOutputs(plain.outputs, spec.outputs, what);
      // Speculation really ran: drafts were verified and some accepted --
      // unless the adaptive schedule judged it a loss on this machine (under
      // sanitizers the drafter's cost relative to the step differs) and paused.
      const bool paused = mode.adaptive && spec.metrics.spec_paused_steps_total > 0;
      if ((!mode.adaptive || n == 1) && !paused) {
        EXPECT_GT(spec.metrics.spec_draft_tokens_total, 0) << what;
        EXPECT_GT(spec.metrics.spec_accepted_tokens_total, 0) << what;
      }
      EXPECT_EQ(plain.metrics.spec_draft_tokens_total, 0);
      // Async: every step after the first is planned while its predecessor
      // runs -- a request verifying drafts gets a pending-length row instead
      // of making the loop re-plan from idle after the commit.
      if (mode.async) {
        EXPECT_EQ(spec.metrics.steps_planned_without_overlap_total, 0) << what;
        EXPECT_GE(spec.metrics.steps_planned_ahead_total, spec.metrics.steps_total - 1) << what;
      } else {
        EXPECT_EQ(spec.metrics.steps_planned_ahead_total, 0) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SpeculationLossless, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });

// Structured output and speculation together: drafts the constraint would not
// allow are rejected by the masked sample, forced tokens end a verification,
// and the outputs equal plain decoding's under both constraints.
TEST(SpeculationWithConstraints, OutputsEqualPlainDecodingUnderMasksAndJumpForward) {
  for (bool async : {false, true}) {
    for (int kind : {0, 1, 2}) {  // multiples of 2; forced runs with jump-forward on; and off
      std::vector<std::vector<int32_t>> outputs[2];
      int64_t drafts = 0;
      for (int spec = 0; spec < 2; ++spec) {
        EngineConfig config = ConfigFor({"c", spec ? "ngram" : "", false, async});
        config.jump_forward = kind != 2;
        auto created = Engine::Create(Load(), config);
        ASSERT_TRUE(created.ok());
        Engine& engine = **created;
        Collector col;
        std::vector<std::vector<int32_t>> accepted(4);
        std::vector<RequestId> ids;
        const auto prompts = Prompts(engine.tokenizer(), 4);
        for (int i = 0; i < 4; ++i) {
          GenerationRequest r;
          r.prompt_tokens = prompts[static_cast<size_t>(i)];
          r.max_tokens = 60;
          r.ignore_eos = true;
          r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.7f;
          r.seed = 77 + i;
          if (kind == 0) {
            r.constraint = std::make_unique<testing::MultiplesOnly>(2, &accepted[static_cast<size_t>(i)]);
          } else {
            r.constraint = std::make_unique<testing::FreeThenForced>(&accepted[static_cast<size_t>(i)]);
          }
          ids.push_back(*engine.Submit(std::move(r), col.Callback()));
        }
        col.Wait(4);
        for (RequestId id : ids) {
          const Collector::Output o = col.Get(id);
          EXPECT_TRUE(o.error.empty()) << o.error;
          outputs[spec].push_back(o.tokens);
        }
        drafts = engine.Metrics().spec_draft_tokens_total;
        engine.Shutdown(/*drain=*/true);
        for (int i = 0; i < 4; ++i)
          EXPECT_EQ(accepted[static_cast<size_t>(i)], outputs[spec][static_cast<size_t>(i)]);
      }
      EXPECT_EQ(outputs[0], outputs[1]) << "async " << async << " constraint " << kind;
      // With jump-forward every free token is followed by forced ones: nothing to draft.
      if (kind != 1) {
        EXPECT_GT(drafts, 0) << "async " << async << " constraint " << kind;
      }
    }
  }
}

TEST(SpeculationMetrics, PerPositionCountsAddUpAndCalibrationIsReported) {
  const RunOutput spec = RunEngine({"fixed", "ngram", false, false}, 4, false);
  const EngineMetrics& m = spec.metrics;
  ASSERT_EQ(m.spec_accepted_per_position.size(), 5u);
  int64_t accepted = 0;
  for (size_t d = 0; d < m.spec_accepted_per_position.size(); ++d) {
    accepted += m.spec_accepted_per_position[d];
    // Accepting a draft at depth d needs every earlier one accepted.
    if (d > 0) {
      EXPECT_LE(m.spec_accepted_per_position[d], m.spec_accepted_per_position[d - 1]);
    }
  }
  EXPECT_EQ(accepted, m.spec_accepted_tokens_total);
  EXPECT_GT(m.spec_num_drafts_total, 0);
  EXPECT_LE(m.spec_num_drafts_total, m.spec_draft_tokens_total);
  ASSERT_EQ(m.spec_observed_acceptance.size(), 5u);
  ASSERT_EQ(m.spec_predicted_acceptance.size(), 5u);
  // Depth 0's observed acceptance is accepted-at-0 over verifications.
  EXPECT_NEAR(
      m.spec_observed_acceptance[0],
      static_cast<double>(m.spec_accepted_per_position[0]) / static_cast<double>(m.spec_num_drafts_total),
      1e-12);
  ASSERT_EQ(m.spec_draft_length_counts.size(), 6u);
}

// The MTP drafter in the engine reproduces the acceptance the checkpoint's
// README measured offline (greedy, chained drafts, 5 deep): per-depth
// conditional acceptance within 0.05 of 0.774 / 0.755 / 0.749 / 0.744 / 0.738.
// The README's protocol: prompts are the first 16 or 64 tokens of stories the
// base model sampled itself, continued greedily to 256 tokens, stopping at
// BOS (which ends a llama2.c story).
TEST(SpeculationMtp, PerDepthAcceptanceMatchesTheCheckpointsTable) {
  EngineConfig c = ConfigFor({"fixed", "mtp", false, true, true});
  c.scheduler.max_model_len = 512;
  c.scheduler.max_num_seqs = 32;
  c.scheduler.max_num_batched_tokens = 1024;
  c.kv_cache_memory_bytes = 64 << 20;
  auto created = Engine::Create(LoadMtp(), c);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Engine& engine = **created;
  const int kStories = 32;
  Collector sampled;
  std::vector<RequestId> story_ids;
  for (int i = 0; i < kStories; ++i) {
    GenerationRequest r;
    r.prompt_tokens = {1};
    r.max_tokens = 64;
    r.ignore_eos = true;
    r.sampling.temperature = i % 5 == 4 ? 0.8f : 1.0f;  // the README corpus: 80% at T = 1, 20% at 0.8
    r.seed = 500 + i;
    story_ids.push_back(*engine.Submit(std::move(r), sampled.Callback()));
  }
  sampled.Wait(kStories);
  const EngineMetrics before = engine.Metrics();
  Collector col;
  int submitted = 0;
  for (int i = 0; i < kStories; ++i) {
    const std::vector<int32_t>& story = sampled.Get(story_ids[static_cast<size_t>(i)]).tokens;
    const size_t len = i % 2 == 0 ? 16 : 64;
    if (story.size() < len || std::find(story.begin(), story.begin() + len, 1) != story.begin() + len)
      continue;
    GenerationRequest r;
    r.prompt_tokens = {1};
    r.prompt_tokens.insert(r.prompt_tokens.end(), story.begin(),
                           story.begin() + static_cast<std::ptrdiff_t>(len));
    r.max_tokens = 256 - static_cast<int64_t>(r.prompt_tokens.size());
    r.sampling.temperature = 0;
    r.stop_token_ids = {1};
    ASSERT_TRUE(engine.Submit(std::move(r), col.Callback()).ok());
    ++submitted;
  }
  ASSERT_GE(submitted, 20);
  col.Wait(submitted);
  const EngineMetrics m = engine.Metrics();
  const double expected[] = {0.774, 0.755, 0.749, 0.744, 0.738};
  ASSERT_GE(m.spec_accepted_per_position.size(), 5u);
  ASSERT_GT(m.spec_num_drafts_total - before.spec_num_drafts_total, 1000);
  // Conditional acceptance of the greedy phase: accepted at depth d over
  // verifications whose drafts 0..d-1 were accepted.
  double trials = static_cast<double>(m.spec_num_drafts_total - before.spec_num_drafts_total);
  for (size_t d = 0; d < 5; ++d) {
    const double accepted =
        static_cast<double>(m.spec_accepted_per_position[d] - before.spec_accepted_per_position[d]);
    EXPECT_NEAR(accepted / trials, expected[d], 0.05) << "depth " << d + 1;
    std::printf("depth %zu: %.3f (%.0f of %.0f; README %.3f)\n", d + 1, accepted / trials, accepted, trials,
                expected[d]);
    trials = accepted;
  }
  EXPECT_EQ(m.kv_blocks_in_use, 0);
}

// Drafts that are (almost) always rejected -- the random MTP layer of a
// synthetic DeepSeek-V3 -- cost the drafter's catch-up every step and save
// nothing: the adaptive schedule pauses the drafter (the output stays that
// of plain decoding), fixed never does.
TEST(SpeculationPause, AlwaysRejectedDraftsPauseTheDrafterUnderAdaptiveOnly) {
  SynthOptions so;
  so.arch = "deepseek_v3";
  so.preset = "tiny";
  so.seed = 77;
  so.format = SynthFormat::kHf;
  so.out = testing::PerTestPath(DI_BINARY_DIR, "engine_speculation_test", "deepseek_v3_tiny_hf");
  ASSERT_TRUE(WriteSynthModel(so).ok());
  auto run = [&](const char* method, bool adaptive) {
    LoadOptions o;
    o.num_threads = 2;
    auto loaded = LoadModel(so.out, o);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    auto created = Engine::Create(std::move(*loaded), ConfigFor({"pause", method, adaptive, true}));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    Engine& engine = **created;
    Collector col;
    std::vector<RequestId> ids;
    for (int i = 0; i < 4; ++i) {
      GenerationRequest r;
      r.prompt_tokens = {1, 17 + i, 99, 250 + i, 3};
      r.max_tokens = 90;
      r.ignore_eos = true;
      r.sampling.temperature = 0;
      ids.push_back(*engine.Submit(std::move(r), col.Callback()));
    }
    col.Wait(4);
    RunOutput out;
    for (RequestId id : ids) out.outputs.push_back(col.Get(id));
    out.metrics = engine.Metrics();
    EXPECT_EQ(out.metrics.kv_blocks_in_use, 0);
    return out;
  };
  const RunOutput plain = run("", true);
  const RunOutput adaptive = run("mtp", true);
  const RunOutput fixed = run("mtp", false);
  ExpectSameOutputs(plain.outputs, adaptive.outputs, "adaptive");
  ExpectSameOutputs(plain.outputs, fixed.outputs, "fixed");
  // Fixed verified drafts all along and most were rejected.
  EXPECT_GT(fixed.metrics.spec_draft_tokens_total, 500);
  EXPECT_LT(fixed.metrics.spec_accepted_tokens_total * 5, fixed.metrics.spec_draft_tokens_total);
  EXPECT_EQ(fixed.metrics.spec_paused_steps_total, 0);
  // Adaptive paused for most of the run (90 tokens: at most 8 steps before
  // the pause, plus the first prefill).
  EXPECT_GT(adaptive.metrics.spec_paused_steps_total, 60);
  std::printf("paused %lld of %lld steps; drafts verified %lld (fixed: %lld)\n",
              static_cast<long long>(adaptive.metrics.spec_paused_steps_total),
              static_cast<long long>(adaptive.metrics.steps_total),
              static_cast<long long>(adaptive.metrics.spec_draft_tokens_total),
              static_cast<long long>(fixed.metrics.spec_draft_tokens_total));
}

// `synth --mtp-layers 1` gives a dense llama a (random) next-n layer in both
// formats; the engine drafts with it and the output stays plain decoding's.
TEST(SpeculationMtp, SynthLlamaWithARandomMtpLayerDraftsLosslessly) {
  for (SynthFormat format : {SynthFormat::kGguf, SynthFormat::kHf}) {
    SynthOptions so;
    so.arch = "llama";
    so.preset = "tiny";
    so.seed = 5;
    so.mtp_layers = 1;
    so.format = format;
    so.out = testing::PerTestPath(DI_BINARY_DIR, "engine_speculation_test",
                                  format == SynthFormat::kHf ? "llama_mtp_hf" : "llama_mtp.gguf");
    ASSERT_TRUE(WriteSynthModel(so).ok());
    auto run = [&](const char* method) {
      LoadOptions o;
      o.num_threads = 2;
      auto loaded = LoadModel(so.out, o);
      EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
      EXPECT_EQ(loaded->model->config().num_nextn_predict_layers, 1);
      auto created = Engine::Create(std::move(*loaded), ConfigFor({"llama-mtp", method, false, true}));
      EXPECT_TRUE(created.ok()) << created.status().ToString();
      Collector col;
      GenerationRequest r;
      r.prompt_tokens = {1, 30, 200, 7};
      r.max_tokens = 40;
      r.ignore_eos = true;
      r.logprobs = 1;
      r.sampling.temperature = 0;
      const RequestId id = *(*created)->Submit(std::move(r), col.Callback());
      col.Wait(1);
      return RunOutput{{col.Get(id)}, (*created)->Metrics()};
    };
    const RunOutput plain = run("");
    const RunOutput mtp = run("mtp");
    ExpectSameOutputs(plain.outputs, mtp.outputs, format == SynthFormat::kHf ? "hf" : "gguf");
    EXPECT_GT(mtp.metrics.spec_draft_tokens_total, 0);
  }
}

TEST(SpeculationConfig, BadSettingsAreRejectedWithTheFlagsName) {
  EngineConfig c = ConfigFor({"x", "mtp", true, true});
  auto e = Engine::Create(Load(), c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("--speculative-method"), std::string::npos);
  c = ConfigFor({"x", "ngram", true, true});
  c.scheduler.max_num_speculative_tokens = 0;
  e = Engine::Create(Load(), c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("--num-speculative-tokens"), std::string::npos);
}

TEST(SpeculationAbort, AbortsMidVerificationFreeEveryBlock) {
  auto created = Engine::Create(Load(), ConfigFor({"fixed", "ngram", false, true}));
  ASSERT_TRUE(created.ok());
  Engine& engine = **created;
  Collector col;
  const auto prompts = Prompts(engine.tokenizer(), 12);
  std::vector<RequestId> ids;
  for (const auto& p : prompts) {
    GenerationRequest r;
    r.prompt_tokens = p;
    r.max_tokens = 80;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    ids.push_back(*engine.Submit(std::move(r), col.Callback()));
  }
  std::mt19937 rng(3);
  for (RequestId id : ids) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 15)(rng)));
    engine.Abort(id);
  }
  col.Wait(static_cast<int>(ids.size()));
  engine.Shutdown(/*drain=*/true);
  EXPECT_EQ(engine.Metrics().kv_blocks_in_use, 0);
  EXPECT_EQ(engine.Metrics().num_requests_running, 0);
}

}  // namespace
}  // namespace deepinfer
