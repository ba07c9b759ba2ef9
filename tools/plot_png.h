// A small line-chart writer: one or more named (x, y) series drawn on
// labelled axes and saved as an 8-bit RGB PNG (zlib-compressed, no other
// dependency). Used by `deepinfer bench` and `deepinfer bench-serve`.
//
// Usage:
//   PlotSeries s{"decode", {1, 4, 16, 64}, {30, 90, 200, 310}};
//   DI_RETURN_IF_ERROR(WriteLinePlotPng("out.png", "Decode throughput", "batch size",
//                                       "tokens/s", {s}, {.log_x = true}));
//
// Text uses a built-in 5x7 bitmap font (ASCII; lower case is drawn as upper
// case). Thread-safe: no shared state.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::tools {

struct PlotSeries {
  std::string name;        // shown in the legend
  std::vector<double> xs;  // same length as ys, finite
  std::vector<double> ys;
};

struct PlotOptions {
  int width = 800;     // pixels, at least 200
  int height = 480;    // pixels, at least 150
  bool log_x = false;  // log2 x axis (every x must be > 0), e.g. batch sizes 1, 4, 16, 64
};

// Writes the chart to `path`. InvalidArgument for no series, a series with
// mismatched or empty xs/ys, non-finite values, or log_x with x <= 0;
// NotFound/DataLoss-style errors when the file cannot be written.
Status WriteLinePlotPng(const std::string& path, const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<PlotSeries>& series,
                        const PlotOptions& options = {});

// The encoder alone: an RGB image (3 bytes per pixel, row-major, no padding)
// as PNG file bytes.
std::vector<unsigned char> EncodePngRgb(const std::vector<unsigned char>& rgb, int width, int height);

}  // namespace deepinfer::tools
