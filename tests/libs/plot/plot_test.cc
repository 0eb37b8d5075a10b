// The chart library: the font covers printable ASCII, text and lines land on the canvas,
// ticks are "nice", and the PNG decodes (with zlib, independently of the encoder's path)
// back to the canvas's pixels.
#include <zlib.h>

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "pcp/plot/canvas.h"
#include "pcp/plot/font.h"
#include "pcp/plot/line_chart.h"
#include "pcp/plot/png.h"

namespace pcp::plot {
namespace {

uint32_t U32(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8 | static_cast<uint8_t>(s[at + 3]);
}

TEST(FontTest, EveryPrintableCharacterHasItsOwnGlyph) {
  std::set<std::string> seen;
  for (char c = 33; c < 127; ++c) {
    const Glyph& g = GlyphFor(c);
    std::string bits(reinterpret_cast<const char*>(g.rows), kGlyphHeight);
    EXPECT_NE(bits, std::string(kGlyphHeight, '\0')) << c << " has no ink";
    EXPECT_TRUE(seen.insert(bits).second) << c << " looks like another character";
  }
  EXPECT_EQ(&GlyphFor('\x01'), &GlyphFor('?'));
  EXPECT_TRUE(GlyphFor('1').Pixel(2, 0));  // the top of the 1's stem
  EXPECT_FALSE(GlyphFor('1').Pixel(0, 0));
}

TEST(CanvasTest, TextAndLinesDrawInkAndClip) {
  Canvas c(60, 30, kWhite);
  c.DrawText(2, 2, "Hi", kBlack, 2);
  EXPECT_EQ(c.At(2, 2), kBlack);  // H's top-left pixel, 2x2
  EXPECT_EQ(c.At(3, 3), kBlack);
  EXPECT_EQ(c.At(4, 2), kWhite);  // H's second column is empty on top
  EXPECT_EQ(Canvas::TextWidth("Hi", 2), 22);
  c.DrawLine(-1000, 20, 1000, 20, Rgb{255, 0, 0}, 1);  // clipped, not looped over
  EXPECT_EQ(c.At(0, 20), (Rgb{255, 0, 0}));
  EXPECT_EQ(c.At(59, 20), (Rgb{255, 0, 0}));
  EXPECT_EQ(c.At(30, 21), kWhite);
}

TEST(LineChartTest, TicksAreNiceAndLabelsShort) {
  double lo = 0.93, hi = 3.47;
  std::vector<double> ticks = NiceTicks(&lo, &hi, 6, false);
  EXPECT_EQ(ticks, (std::vector<double>{1.0, 1.5, 2.0, 2.5, 3.0}));
  lo = 3;
  hi = 97;
  ticks = NiceTicks(&lo, &hi, 5, true);
  EXPECT_DOUBLE_EQ(lo, 0);
  EXPECT_DOUBLE_EQ(hi, 100);
  EXPECT_EQ(FormatTick(2.5, 0.5, 3.5), "2.5");
  EXPECT_EQ(FormatTick(2, 0.5, 3.5), "2.0");
  EXPECT_EQ(FormatTick(40, 20, 100), "40");
  EXPECT_EQ(FormatTick(200000, 100000, 300000), "200k");
  EXPECT_EQ(FormatTick(8000, 2000, 12800), "8k");  // one suffix for the whole axis
  EXPECT_EQ(FormatTick(1500000, 500000, 2000000), "1500k");
  EXPECT_EQ(FormatTick(15000000, 5000000, 20000000), "15M");
  EXPECT_EQ(FormatTick(2000000, 1000000, 3072000), "2M");
  EXPECT_EQ(FormatTick(0.0001, 0.00005, 0.0003), "0.00010");
}

TEST(LineChartTest, SeriesColoursAppearInTheirPanels) {
  const Rgb red{200, 0, 0}, blue{0, 0, 200};
  Panel left{.title = "left", .x_label = "x", .series = {{.name = "a", .color = red, .points = {{0, 1}, {10, 2}}}}};
  Panel right{.title = "right",
              .x_label = "x",
              .series = {{.name = "b", .color = blue, .points = {{0, 5}, {1, 4}, {2, 3}}, .markers = true}}};
  absl::StatusOr<Canvas> c = RenderCharts({left, right}, {.width = 800, .height = 300, .title = "t"});
  ASSERT_TRUE(c.ok()) << c.status();
  int red_left = 0, red_right = 0, blue_left = 0, blue_right = 0;
  for (int y = 0; y < c->height(); ++y) {
    for (int x = 0; x < c->width(); ++x) {
      const Rgb p = c->At(x, y);
      (x < 400 ? red_left : red_right) += p == red;
      (x < 400 ? blue_left : blue_right) += p == blue;
    }
  }
  EXPECT_GT(red_left, 300);  // a 2-pixel line across the plot, and the legend
  EXPECT_EQ(red_right, 0);
  EXPECT_GT(blue_right, 300);
  EXPECT_EQ(blue_left, 0);
  EXPECT_FALSE(RenderCharts({}, {}).ok());
  EXPECT_FALSE(RenderCharts({left}, {.width = 50, .height = 50}).ok());
}

TEST(PngTest, DecodesBackToTheCanvas) {
  Canvas c(7, 3, Rgb{1, 2, 3});
  c.Set(6, 2, Rgb{250, 251, 252});
  absl::StatusOr<std::string> png = EncodePng(c);
  ASSERT_TRUE(png.ok());
  ASSERT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  ASSERT_EQ(png->substr(12, 4), "IHDR");
  EXPECT_EQ(U32(*png, 16), 7u);
  EXPECT_EQ(U32(*png, 20), 3u);
  EXPECT_EQ((*png)[24], 8);  // bit depth
  EXPECT_EQ((*png)[25], 2);  // RGB
  // IHDR's CRC covers its type and data.
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(png->data() + 12), 17);
  EXPECT_EQ(U32(*png, 29), static_cast<uint32_t>(crc));
  const size_t idat = 33;
  ASSERT_EQ(png->substr(idat + 4, 4), "IDAT");
  const uint32_t len = U32(*png, idat);
  std::string raw(3 * (1 + 7 * 3), '\0');
  uLongf raw_len = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_len,
                       reinterpret_cast<const Bytef*>(png->data() + idat + 8), len),
            Z_OK);
  ASSERT_EQ(raw_len, raw.size());
  EXPECT_EQ(raw[0], 0);  // filter: none
  EXPECT_EQ(static_cast<uint8_t>(raw[1]), 1);
  EXPECT_EQ(static_cast<uint8_t>(raw[2 * 22 + 1 + 18]), 250);  // row 2, pixel 6, red
  EXPECT_EQ(png->substr(png->size() - 8, 4), "IEND");
}

}  // namespace
}  // namespace pcp::plot
