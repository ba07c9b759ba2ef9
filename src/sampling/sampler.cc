#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sampling/philox.h"

namespace deepinfer {

Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0) return InvalidArgument("temperature must be >= 0");
  if (top_k < 0) return InvalidArgument("top_k must be >= 0 (0 disables it)");
  if (!(top_p > 0.0 && top_p <= 1.0)) return InvalidArgument("top_p must be in (0, 1]");
  if (!(min_p >= 0.0 && min_p <= 1.0)) return InvalidArgument("min_p must be in [0, 1]");
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0)) {
    return InvalidArgument("repetition_penalty must be > 0");
  }
  if (!(presence_penalty >= -2.0 && presence_penalty <= 2.0)) {
    return InvalidArgument("presence_penalty must be in [-2, 2]");
  }
  if (!(frequency_penalty >= -2.0 && frequency_penalty <= 2.0)) {
    return InvalidArgument("frequency_penalty must be in [-2, 2]");
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return InvalidArgument("logit_bias: token id " + std::to_string(id) + " is negative");
    if (!std::isfinite(bias)) {
      return InvalidArgument("logit_bias: bias of token " + std::to_string(id) + " is not finite");
    }
  }
  return Status::Ok();
}

// The maximum first, in 16 independent lanes (a comparison that NaN fails
// never takes it; the compiler vectorizes the lanes), then the first index
// holding it: a single running maximum is one compare-and-branch chain per
// logit, and a speculative step takes an argmax per verified row and draft.
// All NaN: no index holds the -inf start, so 0, as with no logit at all.
int32_t ArgMax(const float* logits, int64_t vocab) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  for (float& x : lanes) x = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= vocab; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = logits[i + j] > lanes[j] ? logits[i + j] : lanes[j];
  }
  float best = -INFINITY;
  for (; i < vocab; ++i) best = logits[i] > best ? logits[i] : best;
  for (float x : lanes) best = x > best ? x : best;
  for (int64_t k = 0; k < vocab; ++k) {
    if (logits[k] == best) return static_cast<int32_t>(k);
  }
  return 0;
}

namespace {
struct Candidate {
  int32_t id;
  float logit;
};
// Descending logit, ascending id: a total order fixed by the logits alone.
bool Before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
}  // namespace

namespace {
// The distribution SampleToken draws from: candidates in Before order with
// unnormalized probabilities (temperature, then top-k, top-p, min-p), or
// empty when every logit is NaN or -inf. Greedy params are the caller's case.
struct Filtered {
  std::vector<Candidate> cands;
  std::vector<double> probs;  // parallel to cands
  double total = 0.0;
};

Filtered FilterCandidates(const float* logits, int64_t vocab, const SamplingParams& params) {
  Filtered f;
  std::vector<Candidate>& cands = f.cands;
  cands.reserve(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    if (!std::isnan(logits[i]) && logits[i] != -INFINITY) {
      cands.push_back({static_cast<int32_t>(i), logits[i]});
    }
  }
  if (cands.empty()) return f;

  // Keep the candidates sorted by probability: needed by top-k and top-p and
  // cheap enough (a partial sort when top-k is set).
  size_t keep = cands.size();
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < keep) {
    keep = static_cast<size_t>(params.top_k);
    std::partial_sort(cands.begin(), cands.begin() + keep, cands.end(), Before);
    cands.resize(keep);
  } else {
    std::sort(cands.begin(), cands.end(), Before);
  }

  const double inv_t = 1.0 / params.temperature;
  const double max_scaled = cands[0].logit * inv_t;
  std::vector<double>& probs = f.probs;
  probs.resize(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(cands[i].logit * inv_t - max_scaled);
    sum += probs[i];
  }

  if (params.top_p < 1.0) {
    double cumulative = 0;
    size_t n = 0;
    while (n < keep) {
      cumulative += probs[n] / sum;
      ++n;
      if (cumulative >= params.top_p) break;
    }
    keep = n;
  }
  if (params.min_p > 0.0) {
    // probs[0] is the maximum (== 1 after the max subtraction).
    const double threshold = params.min_p * probs[0];
    size_t n = 1;
    while (n < keep && probs[n] >= threshold) ++n;
    keep = n;
  }
  cands.resize(keep);
  probs.resize(keep);
  for (size_t i = 0; i < keep; ++i) f.total += probs[i];
  return f;
}

bool SamplesArgMax(const SamplingParams& params) { return params.IsGreedy() || params.top_k == 1; }
}  // namespace

int32_t SampleToken(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t position,
                    uint32_t draw) {
  if (SamplesArgMax(params)) return ArgMax(logits, vocab);
  const Filtered f = FilterCandidates(logits, vocab, params);
  if (f.cands.empty()) return ArgMax(logits, vocab);
  const double target = UniformAt(params.seed, position, draw) * f.total;
  double cumulative = 0;
  for (size_t i = 0; i < f.cands.size(); ++i) {
    cumulative += f.probs[i];
    if (target < cumulative) return f.cands[i].id;
  }
  return f.cands.back().id;  // target == total after rounding
}

void SamplingProbabilities(const float* logits, int64_t vocab, const SamplingParams& params, float* probs) {
  std::fill(probs, probs + vocab, 0.0f);
  if (SamplesArgMax(params)) {
    probs[ArgMax(logits, vocab)] = 1.0f;
    return;
  }
  const Filtered f = FilterCandidates(logits, vocab, params);
  if (f.cands.empty()) {
    probs[ArgMax(logits, vocab)] = 1.0f;
    return;
  }
  for (size_t i = 0; i < f.cands.size(); ++i) {
    probs[f.cands[i].id] = static_cast<float>(f.probs[i] / f.total);
  }
}

}  // namespace deepinfer
