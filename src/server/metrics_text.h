// Renders EngineMetrics in the Prometheus text exposition format (version
// 0.0.4): "# HELP" / "# TYPE" lines, then samples; histograms as cumulative
// _bucket{le="..."} series ending in le="+Inf", then _sum and _count.
// Metric names are fixed by DESIGN.md section 3 (deepinfer_*).
#pragma once

#include <string>

#include "engine/engine_metrics.h"

namespace deepinfer::server {

std::string RenderPrometheusMetrics(const EngineMetrics& m);

}  // namespace deepinfer::server
