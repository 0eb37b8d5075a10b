// The metrics a process exports, as typed handles over prometheus-cpp. Every metric comes
// from the catalog (catalog.h); a handle is fetched by its typed id and, for labelled
// metrics, its label values in the declared order.
//
//   using namespace pcp::metrics;
//   DefaultRegistry().DeclareService(Service::kShepherd, "0.1.0");   // at start, in main()
//   Counter sent = Get(kShepherdBytesSentTotal, {"theta_update", "int8"});  // cache it if hot
//   sent.Increment(1 << 20);
//   Get(kShepherdTrainLoss, {job_id}).Set(2.31);
//   Get(kShepherdRoundDurationSeconds).Observe(12.5);
//   std::string text = DefaultRegistry().Scrape();                     // exposition format
//
// DeclareService creates the service's families (with help text and type) and every series
// whose label values are fixed in the catalog (each combination of them), at 0, plus
// pcp_build_info{service,version} = 1; families of other services appear only once a handle
// to them is fetched. Handles are cheap to copy and stay valid for the life of the process
// (the default registry is never destroyed). Thread-safe. Fetching a handle with the wrong number of label values, or a
// value outside a fixed set, is a programmer error: it aborts with a message.
#ifndef PCP_METRICS_REGISTRY_H_
#define PCP_METRICS_REGISTRY_H_

#include <array>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/metrics/catalog.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace pcp::metrics {

// A monotonically increasing value.
class Counter {
 public:
  explicit Counter(prometheus::Counter* c) : c_(c) {}
  // `v` >= 0 (negative increments are ignored, as prometheus-cpp does).
  void Increment(double v = 1.0) const;
  double Value() const;

 private:
  prometheus::Counter* c_;
};

// A value that goes up and down.
class Gauge {
 public:
  explicit Gauge(prometheus::Gauge* g) : g_(g) {}
  void Set(double v) const;
  void Increment(double v = 1.0) const;
  void Decrement(double v = 1.0) const;
  double Value() const;

 private:
  prometheus::Gauge* g_;
};

// Observations counted into the catalog's buckets.
class Histogram {
 public:
  explicit Histogram(prometheus::Histogram* h) : h_(h) {}
  void Observe(double v) const;

 private:
  prometheus::Histogram* h_;
};

using LabelValues = std::initializer_list<absl::string_view>;

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Declares the service's metrics (see above); `version` goes into pcp_build_info.
  // Idempotent per service.
  void DeclareService(Service service, absl::string_view version);

  Counter Get(CounterId id, LabelValues labels = {});
  Gauge Get(GaugeId id, LabelValues labels = {});
  Histogram Get(HistogramId id, LabelValues labels = {});

  // Every family in Prometheus's text exposition format (what /metrics serves).
  std::string Scrape() const;
  // For an Exposer.
  std::shared_ptr<prometheus::Registry> prometheus_registry() const { return registry_; }

 private:
  struct Families;
  // Creates the family of `m` on first use; under mu_.
  void* FamilyLocked(Metric m);
  // Creates the series of `m` with these label values (checked), at 0.
  void CreateSeries(Metric m, absl::Span<const absl::string_view> values);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::mutex mu_;
};

// The process's registry (never destroyed, so handles outlive static destructors).
Registry& DefaultRegistry();

// Shorthands on DefaultRegistry().
inline Counter Get(CounterId id, LabelValues labels = {}) { return DefaultRegistry().Get(id, labels); }
inline Gauge Get(GaugeId id, LabelValues labels = {}) { return DefaultRegistry().Get(id, labels); }
inline Histogram Get(HistogramId id, LabelValues labels = {}) { return DefaultRegistry().Get(id, labels); }

}  // namespace pcp::metrics

#endif  // PCP_METRICS_REGISTRY_H_
