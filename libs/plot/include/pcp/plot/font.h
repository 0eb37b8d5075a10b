// A built-in 5x7 bitmap font for chart labels: printable ASCII (32–126), each glyph 5 pixels
// wide and 7 high, drawn in a 6x8 cell (one pixel of spacing right and below).
//
//   const Glyph& g = GlyphFor('7');
//   if (g.Pixel(/*x=*/2, /*y=*/0)) ...        // top row, middle column
#ifndef PCP_PLOT_FONT_H_
#define PCP_PLOT_FONT_H_

#include <cstdint>

namespace pcp::plot {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
// Advance from one character to the next, and line height, in font pixels.
inline constexpr int kCellWidth = 6;
inline constexpr int kCellHeight = 8;

struct Glyph {
  uint8_t rows[kGlyphHeight];  // bit 4 = leftmost column
  bool Pixel(int x, int y) const { return (rows[y] >> (kGlyphWidth - 1 - x)) & 1; }
};

// The glyph of `c`; characters outside printable ASCII get '?'.
const Glyph& GlyphFor(char c);

}  // namespace pcp::plot

#endif  // PCP_PLOT_FONT_H_
