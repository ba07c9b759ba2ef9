// Shared by synth.cc (spec, weights, GGUF) and hf_writer.cc (HF directory).
// Not a public header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "synth/synth.h"

namespace deepinfer::synth_internal {

// One logical weight, named in both conventions. Values are generated in HF
// layout; `permute` says how GGUF reorders the rows.
struct SynthTensor {
  // kGemmaNorm: HF values ~ N(0, 0.2^2) (Gemma scales by 1 + w); GGUF stores 1 + w.
  enum class Init { kProjection, kEmbedding, kNorm, kBias, kGemmaNorm };
  // kQ/kK: llama.cpp's Q/K row order; kMlaKB/kMlaVB: the converter's split
  // of kv_b_proj into attn_k_b / attn_v_b (model/deepseek_gguf.h).
  enum class Permute { kNone, kQ, kK, kMlaKB, kMlaVB };
  std::string hf_name, gguf_name;
  std::vector<int64_t> shape;  // outermost first ([out, in] for projections)
  Init init = Init::kProjection;
  float stddev = 1.0f;  // of the N(mean, stddev^2) values; mean is 1 for norms, else 0
  Permute permute = Permute::kNone;
  // Stacked experts: the GGUF tensor [n, shape[1:]...] is the concatenation
  // of n HF tensors of shape shape[1:] named hf_parts (hf_name is unused).
  std::vector<std::string> hf_parts;
  std::vector<int64_t>
      gguf_shape;          // when the GGUF shape differs (same element count unless split); empty = shape
  bool gguf_only = false;  // a second GGUF tensor made from an HF tensor listed before it
};

// Part i of a stacked tensor, as a tensor of its own (HF name, shape[1:]).
SynthTensor StackedPart(const SynthTensor& t, size_t i);

std::vector<SynthTensor> SynthTensors(const SynthSpec& spec);

// f32 values of `t` in HF layout.
std::vector<float> SynthValues(const SynthTensor& t, uint64_t seed);

// Encodes row-major f32 values of `shape` (rows of shape.back()) as `dtype`.
StatusOr<std::vector<uint8_t>> EncodeRows(const std::vector<float>& values, DType dtype,
                                          const std::vector<int64_t>& shape);

// Prints "synth: [i/n] name" on stderr when `enabled`.
void ReportProgress(bool enabled, size_t i, size_t n, const std::string& name);

struct ImportedTokenizer;
// `imported`: the --tokenizer files to copy instead of the synth vocabulary (may be null).
Status WriteSynthHf(const SynthSpec& spec, const SynthOptions& opts, const ImportedTokenizer* imported);

}  // namespace deepinfer::synth_internal
