#include "tools/plot_png.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

namespace deepinfer::tools {
namespace {

// ---------------------------------------------------------------------------
// 5x7 bitmap font: 7 rows per glyph, bit 4 is the leftmost pixel.

constexpr int kGlyphW = 5, kGlyphH = 7;

const std::map<char, std::array<uint8_t, kGlyphH>>& Font() {
  static const std::map<char, std::array<uint8_t, kGlyphH>> font = {
      {' ', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}}, {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
      {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}}, {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
      {'*', {0x00, 0x15, 0x0e, 0x1f, 0x0e, 0x15, 0x00}}, {'+', {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}},
      {',', {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}}, {'-', {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}},
      {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}}, {'/', {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10}},
      {'0', {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}}, {'1', {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}},
      {'2', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}}, {'3', {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e}},
      {'4', {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}}, {'5', {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}},
      {'6', {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}}, {'7', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
      {'8', {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}}, {'9', {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}},
      {':', {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}}, {'=', {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}},
      {'?', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}}, {'A', {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
      {'B', {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}}, {'C', {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}},
      {'D', {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}}, {'E', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}},
      {'F', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}}, {'G', {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}},
      {'H', {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}}, {'I', {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
      {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}}, {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
      {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}}, {'M', {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}},
      {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}}, {'O', {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
      {'P', {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}}, {'Q', {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}},
      {'R', {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}}, {'S', {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}},
      {'T', {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}}, {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
      {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}}, {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}},
      {'X', {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}}, {'Y', {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}},
      {'Z', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}}, {'[', {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e}},
      {']', {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e}}, {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}},
      {'x', {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}},
  };
  return font;
}

const std::array<uint8_t, kGlyphH>& Glyph(char c) {
  const auto& font = Font();
  auto it = font.find(c);
  if (it == font.end()) it = font.find(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (it == font.end()) it = font.find('?');
  return it->second;
}

// ---------------------------------------------------------------------------
// An RGB raster with the few drawing primitives a line chart needs.

struct Color {
  uint8_t r, g, b;
};

constexpr Color kBlack{0, 0, 0}, kGrid{225, 225, 225};
// Distinguishable series colours (cycled).
constexpr std::array<Color, 6> kPalette = {Color{31, 119, 180}, Color{214, 39, 40},   Color{44, 160, 44},
                                           Color{255, 127, 14}, Color{148, 103, 189}, Color{140, 86, 75}};

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(static_cast<size_t>(w) * h * 3, 255) {}

  void Set(int x, int y, Color c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    uint8_t* p = &px_[(static_cast<size_t>(y) * w_ + x) * 3];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
  }
  void Fill(int x0, int y0, int x1, int y1, Color c) {
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) Set(x, y, c);
    }
  }
  // Bresenham, `thick` pixels wide (a square brush).
  void Line(int x0, int y0, int x1, int y1, Color c, int thick = 1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    const int lo = -(thick - 1) / 2, hi = thick / 2;
    for (;;) {
      Fill(x0 + lo, y0 + lo, x0 + hi, y0 + hi, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }
  // Text with its top-left corner at (x, y); `vertical` rotates it 90 degrees
  // counter-clockwise (reading bottom to top), with (x, y) its bottom-left.
  void Text(int x, int y, const std::string& s, Color c, int scale, bool vertical = false) {
    int pen = 0;
    for (char ch : s) {
      const auto& g = Glyph(ch);
      for (int row = 0; row < kGlyphH; ++row) {
        for (int col = 0; col < kGlyphW; ++col) {
          if (!(g[row] & (1 << (kGlyphW - 1 - col)))) continue;
          const int u = pen + col * scale, v = row * scale;
          if (vertical) {
            Fill(x + v, y - u - scale + 1, x + v + scale - 1, y - u, c);
          } else {
            Fill(x + u, y + v, x + u + scale - 1, y + v + scale - 1, c);
          }
        }
      }
      pen += (kGlyphW + 1) * scale;
    }
  }
  const std::vector<uint8_t>& pixels() const { return px_; }

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

int TextWidth(const std::string& s, int scale) {
  return s.empty() ? 0 : static_cast<int>(s.size()) * (kGlyphW + 1) * scale - scale;
}

// Tick values: 1, 2 or 5 times a power of ten, about `target` of them over [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::string FormatTick(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-3)) {
    std::snprintf(buf, sizeof(buf), "%.1e", v);
  } else if (v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%g", v);
  }
  return buf;
}

// ---------------------------------------------------------------------------
// PNG: signature, IHDR, one IDAT (zlib stream of filter-0 rows), IEND.

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void PutChunk(std::vector<uint8_t>& out, const char type[4], const std::vector<uint8_t>& data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  const size_t type_at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  // The CRC covers the type and the data, not the length.
  const uLong crc = crc32(0L, out.data() + type_at, static_cast<uInt>(4 + data.size()));
  PutU32(out, static_cast<uint32_t>(crc));
}

}  // namespace

std::vector<unsigned char> EncodePngRgb(const std::vector<unsigned char>& rgb, int width, int height) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  PutU32(ihdr, static_cast<uint32_t>(width));
  PutU32(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit, truecolour, deflate, filter 0, no interlace
  PutChunk(out, "IHDR", ihdr);

  const size_t row_bytes = static_cast<size_t>(width) * 3;
  std::vector<uint8_t> raw;
  raw.reserve((row_bytes + 1) * height);
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter type None
    raw.insert(raw.end(), rgb.begin() + y * row_bytes, rgb.begin() + (y + 1) * row_bytes);
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> packed(packed_size);
  compress2(packed.data(), &packed_size, raw.data(), static_cast<uLong>(raw.size()), 6);
  packed.resize(packed_size);
  PutChunk(out, "IDAT", packed);
  PutChunk(out, "IEND", {});
  return out;
}

Status WriteLinePlotPng(const std::string& path, const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<PlotSeries>& series,
                        const PlotOptions& options) {
  if (options.width < 200 || options.height < 150 || options.width > 8000 || options.height > 8000) {
    return InvalidArgument("plot size must be within 200x150 .. 8000x8000");
  }
  if (series.empty()) return InvalidArgument("plot '" + title + "': no series");
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = 0.0, y_hi = -INFINITY;  // y axis starts at 0
  for (const PlotSeries& s : series) {
    if (s.xs.empty() || s.xs.size() != s.ys.size()) {
      return InvalidArgument("plot series '" + s.name + "': needs equally many x and y values, at least one");
    }
    for (size_t i = 0; i < s.xs.size(); ++i) {
      if (!std::isfinite(s.xs[i]) || !std::isfinite(s.ys[i])) {
        return InvalidArgument("plot series '" + s.name + "': non-finite value at index " +
                               std::to_string(i));
      }
      if (options.log_x && s.xs[i] <= 0) {
        return InvalidArgument("plot series '" + s.name + "': x must be > 0 on a log axis");
      }
      const double x = options.log_x ? std::log2(s.xs[i]) : s.xs[i];
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, s.ys[i]);
      y_hi = std::max(y_hi, s.ys[i]);
    }
  }
  if (x_hi - x_lo < 1e-12) {  // a single x: centre it
    x_lo -= 1;
    x_hi += 1;
  }
  if (y_hi - y_lo < 1e-12) y_hi = y_lo + 1;
  y_hi += (y_hi - y_lo) * 0.05;  // headroom above the highest point

  const int w = options.width, h = options.height, scale = 2;
  const int char_h = kGlyphH * scale;
  const int left = 40 + 7 * (kGlyphW + 1) * scale, right = w - 20;
  const int top = 20 + 2 * char_h, bottom = h - 30 - 2 * char_h;
  Canvas c(w, h);
  const auto px = [&](double x) {
    const double v = options.log_x ? std::log2(x) : x;
    return left + static_cast<int>(std::lround((v - x_lo) / (x_hi - x_lo) * (right - left)));
  };
  const auto py = [&](double y) {
    return bottom - static_cast<int>(std::lround((y - y_lo) / (y_hi - y_lo) * (bottom - top)));
  };

  // Grid and ticks.
  for (double t : NiceTicks(y_lo, y_hi, 6)) {
    const int y = py(t);
    c.Line(left, y, right, y, kGrid);
    const std::string label = FormatTick(t);
    c.Text(left - 8 - TextWidth(label, scale), y - char_h / 2, label, kBlack, scale);
  }
  std::vector<double> x_ticks;
  if (options.log_x) {
    for (double e = std::ceil(x_lo); e <= x_hi + 1e-9; ++e) x_ticks.push_back(std::exp2(e));
  } else {
    x_ticks = NiceTicks(x_lo, x_hi, 8);
  }
  for (double t : x_ticks) {
    const int x = px(t);
    c.Line(x, top, x, bottom, kGrid);
    const std::string label = FormatTick(t);
    c.Text(x - TextWidth(label, scale) / 2, bottom + 8, label, kBlack, scale);
  }
  c.Line(left, bottom, right, bottom, kBlack, 2);
  c.Line(left, top, left, bottom, kBlack, 2);

  // Labels.
  c.Text((w - TextWidth(title, scale)) / 2, 12, title, kBlack, scale);
  c.Text((left + right - TextWidth(x_label, scale)) / 2, h - 12 - char_h, x_label, kBlack, scale);
  c.Text(12, (top + bottom + TextWidth(y_label, scale)) / 2, y_label, kBlack, scale, /*vertical=*/true);

  // Series: lines, point markers, legend (top-left inside the plot area).
  for (size_t s = 0; s < series.size(); ++s) {
    const Color col = kPalette[s % kPalette.size()];
    const PlotSeries& ps = series[s];
    std::vector<size_t> order(ps.xs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ps.xs[a] < ps.xs[b]; });
    for (size_t k = 0; k < order.size(); ++k) {
      const int x = px(ps.xs[order[k]]), y = py(ps.ys[order[k]]);
      c.Fill(x - 3, y - 3, x + 3, y + 3, col);
      if (k > 0) c.Line(px(ps.xs[order[k - 1]]), py(ps.ys[order[k - 1]]), x, y, col, 2);
    }
    const int ly = top + 8 + static_cast<int>(s) * (char_h + 6);
    c.Fill(left + 12, ly + char_h / 2 - 2, left + 36, ly + char_h / 2 + 1, col);
    c.Text(left + 44, ly, ps.name, kBlack, scale);
  }

  const std::vector<uint8_t> png = EncodePngRgb(c.pixels(), w, h);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return NotFound("cannot open '" + path + "' for writing");
  const bool ok = std::fwrite(png.data(), 1, png.size(), f) == png.size();
  if (std::fclose(f) != 0 || !ok) return DataLoss("failed writing '" + path + "'");
  return Status::Ok();
}

}  // namespace deepinfer::tools
