// Test helpers for src/model: tiny configs, random in-memory weights, a
// naive dense reference forward pass, and drivers that run a Model over a
// token sequence in chunks or greedily. Not part of di_model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/weights.h"
#include "tensor/dtype.h"

namespace deepinfer::testing {

// A small config of the given dense arch ("llama", "mistral", "qwen2",
// "qwen3"): hidden 32, 2 layers, 4 heads / 2 kv heads of dim 8 (q/k-norm
// archs: head_dim 16, so q_dim != hidden), intermediate 48, vocab 96; the
// arch's own features on (its registry spec's qkv bias, q/k norm). No sliding window.
ModelConfig TinyConfig(const std::string& arch, RopeStyle rope_style = RopeStyle::kNeox);

// Random weights for every tensor `config` needs (biases when
// attention_bias, q/k norms when qk_norm, lm_head unless tied), named per
// `naming`. Matrices are stored as `matrix_dtype`; vectors as f32.
// Deterministic in `seed` on every platform.
std::shared_ptr<InMemoryWeightStore> MakeRandomWeights(const ModelConfig& config, WeightNaming naming,
                                                       uint64_t seed, DType matrix_dtype = DType::kF32);

// Logits f64 [tokens.size()][vocab] of `tokens` at positions 0.. computed
// the textbook way: dense K/V, double arithmetic, explicit causal/window
// mask. Shares nothing with the engine but the tensor names and DequantizeRow.
std::vector<std::vector<double>> ReferenceForward(const ModelConfig& config, const WeightStore& weights,
                                                  const std::vector<int32_t>& tokens);

// Runs `tokens` through `model` as consecutive chunks of the given sizes
// (summing to tokens.size()), in a fresh KvCache of `block_size` blocks
// whose table is deliberately not in order. Returns f32 logits
// [tokens.size(), vocab] (all rows). Aborts the test binary on a Forward error.
std::vector<float> RunChunks(Model& model, const std::vector<int32_t>& tokens,
                             const std::vector<int64_t>& chunk_sizes, int64_t block_size);

// The logits of `prompt`'s last token (one chunk, logits at its end) and of
// one more token after it (which reads every K/V the chunk wrote), f32
// [2, vocab], through ForwardWithHidden with or without hidden states: a
// last layer that computes only the logit rows without them
// (DecoderLayer::ForwardKeeping) must give the same bits.
std::vector<float> PromptThenTokenLogits(Model& model, const std::vector<int32_t>& prompt, bool with_hidden);

// Prefill `prompt` as one chunk, then `n_new` greedy decode steps, one token
// per Forward, through a KvCache of `block_size` blocks. Returns the new ids.
std::vector<int32_t> GreedyGenerate(Model& model, const std::vector<int32_t>& prompt, int n_new,
                                    int64_t block_size);

// argmax with the lowest id winning ties.
int32_t ArgMax(const float* logits, int64_t n);

// max_i |a_i - b_i| / max(max_i |b_i|, 1).
double MaxRelativeError(const float* a, const std::vector<double>& b);

// "<dir>/<prefix>_<current test's name>_<name>": a path of the running test's
// own. ctest runs a binary's tests as parallel processes, and two tests
// writing (and mmapping) one shared path raced. A parameterized name's '/'
// becomes '_'.
std::string PerTestPath(const std::string& dir, const std::string& prefix, const std::string& name);

}  // namespace deepinfer::testing
