#include "pcp/plot/canvas.h"

#include <algorithm>
#include <cmath>

#include "pcp/plot/font.h"

namespace pcp::plot {

Canvas::Canvas(int width, int height, Rgb background)
    : width_(std::max(1, width)),
      height_(std::max(1, height)),
      pixels_(static_cast<size_t>(width_) * static_cast<size_t>(height_) * 3) {
  FillRect(0, 0, width_, height_, background);
}

Rgb Canvas::At(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return Rgb{};
  const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return Rgb{pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Canvas::Set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  pixels_[i] = color.r;
  pixels_[i + 1] = color.g;
  pixels_[i + 2] = color.b;
}

void Canvas::FillRect(int x0, int y0, int x1, int y1, Rgb color) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, width_);
  y1 = std::min(y1, height_);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) Set(x, y, color);
  }
}

void Canvas::DrawLine(double x0, double y0, double x1, double y1, Rgb color, int thickness) {
  if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1)) return;
  // Far-off points (a value outside the axes' range) would make the step loop long: clip
  // the parameter range to what can touch the canvas first.
  const double margin = thickness + 1.0;
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  auto clip = [&](double p, double q) {  // Liang–Barsky: p * t <= q
    if (p == 0) return q >= 0;
    const double t = q / p;
    if (p < 0) {
      if (t > t1) return false;
      t0 = std::max(t0, t);
    } else {
      if (t < t0) return false;
      t1 = std::min(t1, t);
    }
    return true;
  };
  if (!clip(-dx, x0 + margin) || !clip(dx, width_ + margin - x0) || !clip(-dy, y0 + margin) ||
      !clip(dy, height_ + margin - y0)) {
    return;
  }
  const double ax = x0 + t0 * dx, ay = y0 + t0 * dy, bx = x0 + t1 * dx, by = y0 + t1 * dy;
  const int steps = std::max(1, static_cast<int>(std::ceil(std::max(std::abs(bx - ax), std::abs(by - ay)))));
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  for (int i = 0; i <= steps; ++i) {
    const double t = static_cast<double>(i) / steps;
    const int x = static_cast<int>(std::lround(ax + t * (bx - ax)));
    const int y = static_cast<int>(std::lround(ay + t * (by - ay)));
    for (int oy = lo; oy <= hi; ++oy) {
      for (int ox = lo; ox <= hi; ++ox) Set(x + ox, y + oy, color);
    }
  }
}

void Canvas::DrawText(int x, int y, absl::string_view text, Rgb color, int scale) {
  scale = std::max(1, scale);
  for (char c : text) {
    const Glyph& g = GlyphFor(c);
    for (int gy = 0; gy < kGlyphHeight; ++gy) {
      for (int gx = 0; gx < kGlyphWidth; ++gx) {
        if (g.Pixel(gx, gy))
          FillRect(x + gx * scale, y + gy * scale, x + (gx + 1) * scale, y + (gy + 1) * scale, color);
      }
    }
    x += kCellWidth * scale;
  }
}

int Canvas::TextWidth(absl::string_view text, int scale) {
  if (text.empty()) return 0;
  return (static_cast<int>(text.size()) * kCellWidth - 1) * std::max(1, scale);
}

int Canvas::TextHeight(int scale) { return kGlyphHeight * std::max(1, scale); }

}  // namespace pcp::plot
