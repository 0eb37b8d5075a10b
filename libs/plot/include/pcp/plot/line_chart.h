// Line charts drawn on a Canvas: one or more panels side by side under a title, each with
// axes, "nice" ticks (1, 2, 5 x 10^k), light grid lines, its series as lines (optionally
// with markers) and a legend. Made for loss curves: pcpctl plot draws loss against rounds
// and against tokens as two panels.
//
//   Panel by_round{.title = "loss vs round", .x_label = "round",
//                  .series = {{.name = "train", .color = kTrainColor, .points = {{1, 3.1}, {2, 2.7}}}}};
//   PCP_ASSIGN_OR_RETURN(Canvas canvas, RenderCharts({by_round}, {.title = "job-0001"}));
//   PCP_ASSIGN_OR_RETURN(std::string png, EncodePng(canvas));
#ifndef PCP_PLOT_LINE_CHART_H_
#define PCP_PLOT_LINE_CHART_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/plot/canvas.h"

namespace pcp::plot {

struct Series {
  std::string name;
  Rgb color;
  // (x, y) in x order; non-finite points are skipped (the line breaks there).
  std::vector<std::pair<double, double>> points;
  // Draw a dot at every point too (for sparse series, e.g. val loss every few rounds).
  bool markers = false;
};

struct Panel {
  std::string title;    // above the plot area
  std::string x_label;  // below the x axis
  std::vector<Series> series;
};

struct ChartOptions {
  int width = 1400;  // the whole image, in pixels
  int height = 560;
  std::string title;   // on top of the image; empty = none
  int text_scale = 2;  // font pixels per glyph pixel (2: 10x14-pixel characters)
};

// The ticks for [lo, hi]: multiples of a 1/2/5 x 10^k step, about `target` of them, within
// the range (the range is widened to the ticks around it when `widen`).
std::vector<double> NiceTicks(double* lo, double* hi, int target, bool widen);
// A tick label: as few decimals as the step needs. When the axis's largest absolute value
// (`magnitude`) reaches 10,000, a k/M/G suffix: the largest the step reaches, so every tick
// of an axis gets the same one ("1M 2M 3M", "500k 1000k 1500k").
std::string FormatTick(double value, double step, double magnitude);

// Draws `panels` side by side. InvalidArgument for no panels or a size too small to draw.
absl::StatusOr<Canvas> RenderCharts(const std::vector<Panel>& panels, const ChartOptions& options);

}  // namespace pcp::plot

#endif  // PCP_PLOT_LINE_CHART_H_
