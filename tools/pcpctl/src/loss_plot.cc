#include "pcp/pcpctl/loss_plot.h"

#include "pcp/base/status_macros.h"
#include "pcp/plot/line_chart.h"
#include "pcp/plot/png.h"

namespace pcp::pcpctl {
namespace {

// matplotlib's first two default colours, which users of loss plots know.
constexpr plot::Rgb kTrainColor{31, 119, 180};
constexpr plot::Rgb kValColor{255, 127, 14};

plot::Panel LossPanel(const std::vector<v1::RoundRecord>& records, bool by_tokens) {
  plot::Series train{.name = "train loss", .color = kTrainColor};
  plot::Series val{.name = "val loss", .color = kValColor, .markers = true};
  for (const v1::RoundRecord& r : records) {
    const double x = by_tokens ? static_cast<double>(r.tokens_total()) : static_cast<double>(r.round());
    if (r.has_train_loss()) train.points.emplace_back(x, r.train_loss());
    if (r.has_val_loss()) val.points.emplace_back(x, r.val_loss());
  }
  plot::Panel panel{.title = by_tokens ? "loss (nats/token) vs tokens" : "loss (nats/token) vs round",
                    .x_label = by_tokens ? "tokens processed" : "round"};
  panel.series.push_back(std::move(train));
  if (!val.points.empty()) panel.series.push_back(std::move(val));
  return panel;
}

}  // namespace

absl::StatusOr<std::string> LossPlotPng(const std::vector<v1::RoundRecord>& records, const std::string& title) {
  bool any = false;
  for (const v1::RoundRecord& r : records) any |= r.has_train_loss() || r.has_val_loss();
  if (!any) return absl::FailedPreconditionError("the job's history has no loss yet (no round completed)");
  PCP_ASSIGN_OR_RETURN(plot::Canvas canvas,
                       plot::RenderCharts({LossPanel(records, false), LossPanel(records, true)}, {.title = title}));
  return plot::EncodePng(canvas);
}

}  // namespace pcp::pcpctl
