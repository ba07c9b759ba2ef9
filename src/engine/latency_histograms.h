// The per-request histograms the engine exports (docs/serving.md, "Metrics",
// has their vLLM names), their bucket bounds and the Observe helper.
//
// Latency bounds are vLLM's, so dashboards built for it read ours; the
// request-latency family (e2e, queue, prefill, decode) adds bounds below
// vLLM's smallest (0.3 s), where short requests on small models fall.
#pragma once

#include <vector>

#include "engine/engine_metrics.h"

namespace deepinfer {

Histogram MakeTimeToFirstTokenHistogram();
Histogram MakeTimePerOutputTokenHistogram();
Histogram MakeRequestLatencyHistogram();  // e2e, queue, prefill, decode, inference seconds
Histogram MakeTokenCountHistogram();      // prompt / generation tokens per request: 1, 2, 5, 10, ...

// One request's life, observed when it finishes (OutputProcessor).
struct RequestHistograms {
  Histogram time_to_first_token = MakeTimeToFirstTokenHistogram();
  Histogram time_per_output_token = MakeTimePerOutputTokenHistogram();
  Histogram e2e_latency = MakeRequestLatencyHistogram();
  Histogram queue_time = MakeRequestLatencyHistogram();
  Histogram prefill_time = MakeRequestLatencyHistogram();
  Histogram decode_time = MakeRequestLatencyHistogram();
  Histogram inference_time = MakeRequestLatencyHistogram();  // prefill + decode
  Histogram prompt_tokens = MakeTokenCountHistogram();
  Histogram generation_tokens = MakeTokenCountHistogram();
};

// Adds one observation to the first bucket whose bound is >= value.
void Observe(Histogram& h, double value, int64_t times = 1);

}  // namespace deepinfer
