// Bucket bounds of the latency histograms (the ones vLLM exports, so
// dashboards built for it read ours) and the Observe helper.
#pragma once

#include <vector>

#include "engine/engine_metrics.h"

namespace deepinfer {

Histogram MakeTimeToFirstTokenHistogram();
Histogram MakeTimePerOutputTokenHistogram();

// Adds one observation (seconds) to the first bucket whose bound is >= value.
void Observe(Histogram& h, double value, int64_t times = 1);

}  // namespace deepinfer
