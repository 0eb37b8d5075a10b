#include "pcp/metrics/catalog.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace pcp::metrics {
namespace {

// Every metric name is unique and starts with "pcp_".
constexpr bool NamesValid() {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].name.substr(0, 4) != "pcp_") return false;
    if (static_cast<size_t>(kMetrics[i].id) != i) return false;
    for (size_t j = i + 1; j < kMetrics.size(); ++j) {
      if (kMetrics[i].name == kMetrics[j].name) return false;
    }
  }
  return true;
}
static_assert(NamesValid(), "metric names must be unique and start with pcp_");

constexpr double kRoundSeconds[] = {0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800};
constexpr double kStepSeconds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
constexpr double kShortSeconds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
// Milliseconds on loopback, minutes for a large θ on a slow link.
constexpr double kWaitSeconds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};

}  // namespace

std::vector<LabelSpec> LabelsOf(Metric m) {
  std::vector<LabelSpec> out;
  const absl::string_view labels = InfoOf(m).labels;
  if (labels.empty()) return out;
  for (absl::string_view part : absl::StrSplit(labels, ',')) {
    LabelSpec spec;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    spec.name = std::string(kv.first);
    if (!kv.second.empty()) spec.values = absl::StrSplit(kv.second, '|');
    out.push_back(std::move(spec));
  }
  return out;
}

absl::Span<const double> BucketsOf(Buckets b) {
  switch (b) {
    case Buckets::kNone: return {};
    case Buckets::kRoundSeconds: return kRoundSeconds;
    case Buckets::kStepSeconds: return kStepSeconds;
    case Buckets::kShortSeconds: return kShortSeconds;
    case Buckets::kWaitSeconds: return kWaitSeconds;
  }
  return {};
}

std::vector<Metric> MetricsOf(Service service) {
  std::vector<Metric> out;
  for (const MetricInfo& m : kMetrics) {
    if (m.service == service || m.service == Service::kAll) out.push_back(m.id);
  }
  return out;
}

absl::string_view ServiceName(Service service) {
  switch (service) {
    case Service::kShepherd: return "shepherd";
    case Service::kWorker: return "worker";
    case Service::kSupervisor: return "supervisor";
    case Service::kAll: return "all";
  }
  return "?";
}

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "?";
}

std::string CatalogMarkdown() {
  std::string out =
      "| service | metric | type | labels | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const MetricInfo& m : kMetrics) {
    std::vector<std::string> labels;
    for (const LabelSpec& l : LabelsOf(m.id)) {
      labels.push_back(l.values.empty() ? absl::StrCat("`", l.name, "`")
                                        : absl::StrCat("`", l.name, "` (", absl::StrJoin(l.values, ", "), ")"));
    }
    std::string help(m.help);
    if (m.buckets != Buckets::kNone) {
      absl::StrAppend(&help, " Buckets (s): ", absl::StrJoin(BucketsOf(m.buckets), ", "), ".");
    }
    absl::StrAppend(&out, "| ", m.service == Service::kAll ? "every service" : ServiceName(m.service), " | `", m.name,
                    "` | ", TypeName(m.type), " | ", labels.empty() ? "" : absl::StrJoin(labels, ", "), " | ", help,
                    " |\n");
  }
  return out;
}

}  // namespace pcp::metrics
