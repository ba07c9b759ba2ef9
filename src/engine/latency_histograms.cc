#include "engine/latency_histograms.h"

#include <algorithm>

namespace deepinfer {
namespace {
Histogram WithBounds(std::vector<double> bounds) {
  Histogram h;
  h.upper_bounds = std::move(bounds);
  h.counts.assign(h.upper_bounds.size() + 1, 0);
  return h;
}
}  // namespace

Histogram MakeTimeToFirstTokenHistogram() {
  return WithBounds({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0});
}

Histogram MakeTimePerOutputTokenHistogram() {
  return WithBounds({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0});
}

Histogram MakeRequestLatencyHistogram() {
  return WithBounds({0.001, 0.005, 0.01,  0.025, 0.05,  0.1,   0.2,    0.3,   0.5,  0.8,
                     1.0,   1.5,   2.0,   2.5,   5.0,   10.0,  15.0,   20.0,  30.0, 40.0,
                     50.0,  60.0,  120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0});
}

Histogram MakeTokenCountHistogram() {
  std::vector<double> bounds;
  for (double decade = 1; decade <= 1e6; decade *= 10) {
    for (double step : {1.0, 2.0, 5.0}) bounds.push_back(decade * step);
  }
  return WithBounds(std::move(bounds));
}

void Observe(Histogram& h, double value, int64_t times) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(h.upper_bounds.begin(), h.upper_bounds.end(), value) - h.upper_bounds.begin());
  h.counts[bucket] += times;
  h.sum += value * static_cast<double>(times);
  h.count += times;
}

}  // namespace deepinfer
