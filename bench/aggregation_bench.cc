// Cost per round of the shepherd's aggregation of W workers' Δs of P parameters: the plain
// token-weighted average (what every round does), the coordinate-wise trimmed mean (job
// setting diloco.screening.trimmed_mean) and the Δ norms that screening computes. Single
// thread, the shepherd's own functions (outer_optimizer.h, pcp/diloco/screening.h).
//
//   pcp_aggregation_bench [--workers=8,32] [--params=1000000,10000000] [--trim=0.125] [--reps=3]
//
// Prints one row per (workers, params): values trimmed at each end, ms per round of each, and
// the trimmed/average ratio.
// Memory: W × P × 4 bytes of Δs (32 × 10M = 1.3 GB).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "pcp/diloco/screening.h"
#include "pcp/diloco/trimmed_mean.h"
#include "pcp/shepherd/outer_optimizer.h"

ABSL_FLAG(std::string, workers, "8,32", "worker counts, comma-separated");
ABSL_FLAG(std::string, params, "1000000,10000000", "parameter counts, comma-separated");
ABSL_FLAG(double, trim, 0.125, "trimmed fraction at each end (0.125: 1 of 8, 4 of 32 values)");
ABSL_FLAG(int, reps, 3, "rounds timed per case (the best is reported)");

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int64_t> ParseList(const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      std::fprintf(stderr, "bad list entry '%s'\n", std::string(part).c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

template <typename F>
double BestMs(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const double trim = absl::GetFlag(FLAGS_trim);
  const int reps = std::max(1, absl::GetFlag(FLAGS_reps));
  std::printf("aggregation cost per round, 1 thread, best of %d; trimmed mean trims %.1f%% at each end\n", reps,
              trim * 100);
  std::printf("%8s %10s %8s %12s %12s %12s %8s\n", "workers", "params", "trimmed", "average ms", "trimmed ms",
              "norms ms", "ratio");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  for (int64_t params : ParseList(absl::GetFlag(FLAGS_params))) {
    for (int64_t workers : ParseList(absl::GetFlag(FLAGS_workers))) {
      std::vector<pcp::shepherd::WeightedDelta> deltas;
      for (int64_t w = 0; w < workers; ++w) {
        pcp::Tensor t(pcp::DType::kF32, pcp::Shape({params}));
        float* p = t.data<float>();
        for (int64_t k = 0; k < params; ++k) p[k] = normal(rng);
        deltas.push_back({{t}, 3072.0});
      }
      double sink = 0;
      const double avg_ms = BestMs(reps, [&] {
        absl::StatusOr<std::vector<pcp::Tensor>> avg = pcp::shepherd::WeightedAverage(deltas);
        sink += avg.ok() ? (*avg)[0].data<float>()[0] : 0;
      });
      const double trimmed_ms = BestMs(reps, [&] {
        absl::StatusOr<std::vector<pcp::Tensor>> tm = pcp::shepherd::TrimmedMean(deltas, trim);
        sink += tm.ok() ? (*tm)[0].data<float>()[0] : 0;
      });
      const double norms_ms = BestMs(reps, [&] {
        for (const auto& d : deltas) {
          pcp::diloco::NormAccumulator acc;
          acc.Add(absl::MakeConstSpan(d.delta[0].data<float>(), static_cast<size_t>(params)));
          sink += acc.norm();
        }
      });
      std::printf("%8lld %10lld %5zu x2 %12.1f %12.1f %12.1f %7.1fx%s\n", static_cast<long long>(workers),
                  static_cast<long long>(params), pcp::diloco::TrimCount(static_cast<size_t>(workers), trim), avg_ms,
                  trimmed_ms, norms_ms, trimmed_ms / avg_ms, sink == 12345.678 ? " " : "");
      std::fflush(stdout);
    }
  }
  return 0;
}
