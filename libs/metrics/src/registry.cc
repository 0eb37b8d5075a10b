#include "pcp/metrics/registry.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace pcp::metrics {
namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "pcp::metrics: %s\n", why.c_str());
  std::abort();
}

// The label map of `m` for `values`, checked against the catalog.
prometheus::Labels LabelsFor(Metric m, absl::Span<const absl::string_view> values) {
  const std::vector<LabelSpec> specs = LabelsOf(m);
  if (specs.size() != values.size()) {
    Die(absl::StrCat(InfoOf(m).name, " takes ", specs.size(), " label values, got ", values.size()));
  }
  prometheus::Labels labels;
  size_t i = 0;
  for (absl::string_view v : values) {
    const LabelSpec& spec = specs[i++];
    if (!spec.values.empty() && std::find(spec.values.begin(), spec.values.end(), v) == spec.values.end()) {
      Die(absl::StrCat(InfoOf(m).name, ": '", v, "' is not a declared value of label ", spec.name, " (",
                       absl::StrJoin(spec.values, "|"), ")"));
    }
    labels.emplace(spec.name, std::string(v));
  }
  return labels;
}

void CheckType(Metric m, MetricType want) {
  if (InfoOf(m).type != want) {
    Die(absl::StrCat(InfoOf(m).name, " is a ", TypeName(InfoOf(m).type), ", not a ", TypeName(want)));
  }
}

}  // namespace

void Counter::Increment(double v) const { c_->Increment(v); }
double Counter::Value() const { return c_->Value(); }
void Gauge::Set(double v) const { g_->Set(v); }
void Gauge::Increment(double v) const { g_->Increment(v); }
void Gauge::Decrement(double v) const { g_->Decrement(v); }
double Gauge::Value() const { return g_->Value(); }
void Histogram::Observe(double v) const { h_->Observe(v); }

struct Registry::Families {
  std::array<void*, kNumMetrics> family{};
  std::array<bool, 4> declared{};
};

Registry::Registry() : registry_(std::make_shared<prometheus::Registry>()), families_(std::make_unique<Families>()) {}
Registry::~Registry() = default;

void* Registry::FamilyLocked(Metric m) {
  void*& slot = families_->family[static_cast<int>(m)];
  if (slot != nullptr) return slot;
  const MetricInfo& info = InfoOf(m);
  const std::string name(info.name), help(info.help);
  switch (info.type) {
    case MetricType::kCounter: slot = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_); break;
    case MetricType::kGauge: slot = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_); break;
    case MetricType::kHistogram: slot = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_); break;
  }
  return slot;
}

Counter Registry::Get(CounterId id, LabelValues labels) {
  CheckType(id.metric, MetricType::kCounter);
  prometheus::Labels l = LabelsFor(id.metric, absl::MakeConstSpan(labels.begin(), labels.size()));
  std::lock_guard<std::mutex> lock(mu_);
  auto* family = static_cast<prometheus::Family<prometheus::Counter>*>(FamilyLocked(id.metric));
  return Counter(&family->Add(l));
}

Gauge Registry::Get(GaugeId id, LabelValues labels) {
  CheckType(id.metric, MetricType::kGauge);
  prometheus::Labels l = LabelsFor(id.metric, absl::MakeConstSpan(labels.begin(), labels.size()));
  std::lock_guard<std::mutex> lock(mu_);
  auto* family = static_cast<prometheus::Family<prometheus::Gauge>*>(FamilyLocked(id.metric));
  return Gauge(&family->Add(l));
}

Histogram Registry::Get(HistogramId id, LabelValues labels) {
  CheckType(id.metric, MetricType::kHistogram);
  prometheus::Labels l = LabelsFor(id.metric, absl::MakeConstSpan(labels.begin(), labels.size()));
  absl::Span<const double> b = BucketsOf(InfoOf(id.metric).buckets);
  std::lock_guard<std::mutex> lock(mu_);
  auto* family = static_cast<prometheus::Family<prometheus::Histogram>*>(FamilyLocked(id.metric));
  return Histogram(&family->Add(l, prometheus::Histogram::BucketBoundaries(b.begin(), b.end())));
}

void Registry::DeclareService(Service service, absl::string_view version) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool& declared = families_->declared[static_cast<int>(service)];
    if (declared) return;
    declared = true;
  }
  for (Metric m : MetricsOf(service)) {
    if (m == Metric::kBuildInfo) {
      Get(kBuildInfo, {ServiceName(service), version}).Set(1);
      continue;
    }
    const std::vector<LabelSpec> specs = LabelsOf(m);
    {
      std::lock_guard<std::mutex> lock(mu_);
      FamilyLocked(m);  // help and type show even before the first series
    }
    // Series exist from the start when every label's values are fixed: one per combination
    // (label-less metrics are the one combination of no label at all).
    const bool fixed = std::all_of(specs.begin(), specs.end(), [](const LabelSpec& s) { return !s.values.empty(); });
    if (!fixed) continue;
    std::vector<std::vector<absl::string_view>> combinations = {{}};
    for (const LabelSpec& spec : specs) {
      std::vector<std::vector<absl::string_view>> longer;
      for (const std::vector<absl::string_view>& prefix : combinations) {
        for (const std::string& v : spec.values) {
          longer.push_back(prefix);
          longer.back().push_back(v);
        }
      }
      combinations = std::move(longer);
    }
    for (const std::vector<absl::string_view>& values : combinations) CreateSeries(m, values);
  }
}

void Registry::CreateSeries(Metric m, absl::Span<const absl::string_view> values) {
  const prometheus::Labels labels = LabelsFor(m, values);
  std::lock_guard<std::mutex> lock(mu_);
  void* family = FamilyLocked(m);
  switch (InfoOf(m).type) {
    case MetricType::kCounter: static_cast<prometheus::Family<prometheus::Counter>*>(family)->Add(labels); break;
    case MetricType::kGauge: static_cast<prometheus::Family<prometheus::Gauge>*>(family)->Add(labels); break;
    case MetricType::kHistogram: {
      absl::Span<const double> b = BucketsOf(InfoOf(m).buckets);
      static_cast<prometheus::Family<prometheus::Histogram>*>(family)->Add(
          labels, prometheus::Histogram::BucketBoundaries(b.begin(), b.end()));
      break;
    }
  }
}

std::string Registry::Scrape() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

Registry& DefaultRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace pcp::metrics
