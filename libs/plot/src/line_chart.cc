#include "pcp/plot/line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pcp::plot {
namespace {

constexpr Rgb kAxis{60, 60, 60};
constexpr Rgb kGrid{225, 225, 225};
constexpr Rgb kText{30, 30, 30};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

double TickStep(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

void DrawPanel(Canvas& c, const Panel& panel, int x0, int y0, int w, int h, int scale) {
  const int char_h = Canvas::TextHeight(scale);
  Range xr, yr;
  for (const Series& s : panel.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xr.Add(x);
      yr.Add(y);
    }
  }
  c.DrawText(x0 + (w - Canvas::TextWidth(panel.title, scale)) / 2, y0 + 4, panel.title, kText, scale);
  if (xr.empty()) {
    const std::string msg = "no data";
    c.DrawText(x0 + (w - Canvas::TextWidth(msg, scale)) / 2, y0 + h / 2, msg, kText, scale);
    return;
  }
  if (xr.hi == xr.lo) {
    xr.lo -= 1;
    xr.hi += 1;
  }
  if (yr.hi == yr.lo) {
    yr.lo -= 0.5;
    yr.hi += 0.5;
  }
  // A little room around the data, so points on the edges (and their markers) show whole.
  const double ypad = (yr.hi - yr.lo) * 0.05, xpad = (xr.hi - xr.lo) * 0.02;
  yr.lo -= ypad;
  yr.hi += ypad;
  xr.lo -= xpad;
  xr.hi += xpad;
  std::vector<double> yticks = NiceTicks(&yr.lo, &yr.hi, 10, /*widen=*/false);
  std::vector<double> xticks = NiceTicks(&xr.lo, &xr.hi, 6, /*widen=*/false);
  const double ystep = yticks.size() > 1 ? yticks[1] - yticks[0] : 1;
  const double xstep = xticks.size() > 1 ? xticks[1] - xticks[0] : 1;
  const double ymag = std::max(std::abs(yr.lo), std::abs(yr.hi)), xmag = std::max(std::abs(xr.lo), std::abs(xr.hi));

  int label_w = 0;
  for (double t : yticks) label_w = std::max(label_w, Canvas::TextWidth(FormatTick(t, ystep, ymag), scale));
  const int left = x0 + label_w + 16, right = x0 + w - 24;
  const int top = y0 + char_h + 16, bottom = y0 + h - 2 * char_h - 24;
  if (right - left < 20 || bottom - top < 20) return;
  auto px = [&](double x) { return left + (x - xr.lo) / (xr.hi - xr.lo) * (right - left); };
  auto py = [&](double y) { return bottom - (y - yr.lo) / (yr.hi - yr.lo) * (bottom - top); };

  for (double t : yticks) {
    const int y = static_cast<int>(std::lround(py(t)));
    c.DrawLine(left, y, right, y, kGrid);
    c.DrawLine(left - 5, y, left, y, kAxis);
    const std::string label = FormatTick(t, ystep, ymag);
    c.DrawText(left - 8 - Canvas::TextWidth(label, scale), y - char_h / 2, label, kText, scale);
  }
  for (double t : xticks) {
    const int x = static_cast<int>(std::lround(px(t)));
    c.DrawLine(x, top, x, bottom, kGrid);
    c.DrawLine(x, bottom, x, bottom + 5, kAxis);
    const std::string label = FormatTick(t, xstep, xmag);
    c.DrawText(x - Canvas::TextWidth(label, scale) / 2, bottom + 9, label, kText, scale);
  }
  c.DrawLine(left, top, left, bottom, kAxis);
  c.DrawLine(left, bottom, right, bottom, kAxis);
  c.DrawText(left + (right - left - Canvas::TextWidth(panel.x_label, scale)) / 2, bottom + char_h + 16, panel.x_label,
             kText, scale);

  for (const Series& s : panel.series) {
    const std::pair<double, double>* prev = nullptr;
    for (const auto& p : s.points) {
      if (!std::isfinite(p.first) || !std::isfinite(p.second)) {
        prev = nullptr;
        continue;
      }
      if (prev != nullptr) c.DrawLine(px(prev->first), py(prev->second), px(p.first), py(p.second), s.color, 2);
      if (s.markers) {
        const int x = static_cast<int>(std::lround(px(p.first))), y = static_cast<int>(std::lround(py(p.second)));
        c.FillRect(x - 3, y - 3, x + 4, y + 4, s.color);
      }
      prev = &p;
    }
  }

  // Legend, top right inside the plot area.
  int legend_w = 0;
  for (const Series& s : panel.series) legend_w = std::max(legend_w, Canvas::TextWidth(s.name, scale));
  legend_w += 44;
  const int line_h = char_h + 8;
  const int lx = right - legend_w - 8, ly = top + 8;
  const int lh = static_cast<int>(panel.series.size()) * line_h + 8;
  c.FillRect(lx, ly, lx + legend_w, ly + lh, kWhite);
  c.DrawLine(lx, ly, lx + legend_w, ly, kGrid);
  c.DrawLine(lx, ly + lh, lx + legend_w, ly + lh, kGrid);
  c.DrawLine(lx, ly, lx, ly + lh, kGrid);
  c.DrawLine(lx + legend_w, ly, lx + legend_w, ly + lh, kGrid);
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const Series& s = panel.series[i];
    const int y = ly + 6 + static_cast<int>(i) * line_h;
    c.DrawLine(lx + 8, y + char_h / 2, lx + 32, y + char_h / 2, s.color, 3);
    if (s.markers) c.FillRect(lx + 17, y + char_h / 2 - 3, lx + 24, y + char_h / 2 + 4, s.color);
    c.DrawText(lx + 38, y, s.name, kText, scale);
  }
}

}  // namespace

std::vector<double> NiceTicks(double* lo, double* hi, int target, bool widen) {
  std::vector<double> ticks;
  if (!std::isfinite(*lo) || !std::isfinite(*hi) || *hi <= *lo) return ticks;
  const double step = TickStep(*lo, *hi, target);
  double first = std::ceil(*lo / step - 1e-9) * step;
  double last = std::floor(*hi / step + 1e-9) * step;
  if (widen) {
    first = std::floor(*lo / step + 1e-9) * step;
    last = std::ceil(*hi / step - 1e-9) * step;
    *lo = first;
    *hi = last;
  }
  for (int i = 0; first + i * step <= last + step * 1e-9 && i < 1000; ++i) {
    double t = first + i * step;
    if (std::abs(t) < step * 1e-9) t = 0;  // no "-0"
    ticks.push_back(t);
  }
  return ticks;
}

std::string FormatTick(double value, double step, double magnitude) {
  // The largest of k, M, G that the step reaches: ticks stay short ("2M", not "2000k") and
  // whole numbers.
  double scale = 1;
  const char* suffix = "";
  if (std::max(std::abs(magnitude), step) >= 1e4) {
    for (auto [s, name] : {std::pair{1e9, "G"}, {1e6, "M"}, {1e3, "k"}}) {
      if (step >= s) {
        scale = s;
        suffix = name;
        break;
      }
    }
  }
  const double s = step / scale;
  const int decimals = s >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(s) - 1e-9)));
  return absl::StrCat(absl::StrFormat("%.*f", decimals, value / scale), suffix);
}

absl::StatusOr<Canvas> RenderCharts(const std::vector<Panel>& panels, const ChartOptions& options) {
  if (panels.empty()) return absl::InvalidArgumentError("RenderCharts: no panels");
  const int scale = std::max(1, options.text_scale);
  if (options.width < 100 * static_cast<int>(panels.size()) || options.height < 100) {
    return absl::InvalidArgumentError(absl::StrCat("RenderCharts: ", options.width, "x", options.height,
                                                   " is too small for ", panels.size(), " panel(s)"));
  }
  Canvas canvas(options.width, options.height, kWhite);
  int top = 8;
  if (!options.title.empty()) {
    canvas.DrawText((options.width - Canvas::TextWidth(options.title, scale)) / 2, top + 4, options.title, kText,
                    scale);
    top += Canvas::TextHeight(scale) + 16;
  }
  const int n = static_cast<int>(panels.size());
  const int pw = options.width / n;
  for (int i = 0; i < n; ++i) DrawPanel(canvas, panels[i], i * pw, top, pw, options.height - top - 4, scale);
  return canvas;
}

}  // namespace pcp::plot
