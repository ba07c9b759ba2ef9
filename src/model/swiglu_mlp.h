// The SwiGLU feed-forward down(silu(gate x) * up x), as one dense MLP or one
// expert of a mixture-of-experts block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/ops.h"
#include "model/weight_binder.h"

namespace deepinfer {

struct SwigluWeights {
  ops::Matrix gate, up;    // [ffn, hidden]
  ops::Matrix down;        // [hidden, ffn]
  bool gelu_tanh = false;  // GeGLU (gelu_tanh gate, Gemma) instead of SiLU
  int64_t ffn() const { return gate.shape.empty() ? 0 : gate.shape[0]; }
};

// Binds the three matrices by their full tensor names, with shape checks.
Status BindSwiglu(const WeightBinder& b, const std::string& gate, const std::string& up,
                  const std::string& down, int64_t hidden, int64_t ffn, SwigluWeights& w);

struct SwigluScratch {
  std::vector<float> gate, up;
};

// out f32 [n, hidden] = down(act(gate x) * up x) for x f32 [n, hidden], act
// silu, or gelu_tanh when w.gelu_tanh.
void SwigluForward(const SwigluWeights& w, const float* x, int64_t n, ThreadPool& pool, SwigluScratch& s,
                   float* out);

}  // namespace deepinfer
