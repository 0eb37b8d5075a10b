// An RGB raster to draw charts on: pixels, lines, rectangles and text in the built-in
// bitmap font (font.h). Coordinates are pixels, (0, 0) top left; drawing outside the
// canvas is clipped.
//
//   Canvas canvas(800, 400, kWhite);
//   canvas.DrawLine(10, 390, 790, 10, Rgb{31, 119, 180}, /*thickness=*/2);
//   canvas.DrawText(20, 20, "loss", kBlack, /*scale=*/2);
//   std::string png = EncodePng(canvas);   // png.h
#ifndef PCP_PLOT_CANVAS_H_
#define PCP_PLOT_CANVAS_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace pcp::plot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};
inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

class Canvas {
 public:
  // width, height >= 1.
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  // Row-major RGB bytes, 3 per pixel.
  const std::vector<uint8_t>& pixels() const { return pixels_; }
  Rgb At(int x, int y) const;

  void Set(int x, int y, Rgb color);
  // [x0, x1) x [y0, y1).
  void FillRect(int x0, int y0, int x1, int y1, Rgb color);
  // A straight line from (x0, y0) to (x1, y1), `thickness` pixels wide (a square brush).
  void DrawLine(double x0, double y0, double x1, double y1, Rgb color, int thickness = 1);
  // Text with its top-left corner at (x, y); each font pixel drawn as scale x scale.
  void DrawText(int x, int y, absl::string_view text, Rgb color, int scale = 1);
  // Width and height of `text` drawn at `scale`, in pixels.
  static int TextWidth(absl::string_view text, int scale = 1);
  static int TextHeight(int scale = 1);

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace pcp::plot

#endif  // PCP_PLOT_CANVAS_H_
