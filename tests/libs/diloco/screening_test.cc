#include "pcp/diloco/screening.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/metrics/catalog.h"

namespace pcp::diloco {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NormAccumulatorTest, ChunkByChunkEqualsWhole) {
  std::vector<float> v = {3, 4, 12, -84};  // |v| = 85
  NormAccumulator whole, pieces;
  whole.Add(v);
  pieces.Add(absl::MakeConstSpan(v).subspan(0, 1));
  pieces.Add(absl::MakeConstSpan(v).subspan(1, 2));
  pieces.Add(absl::MakeConstSpan(v).subspan(3));
  EXPECT_DOUBLE_EQ(whole.norm(), 85.0);
  EXPECT_DOUBLE_EQ(pieces.norm(), 85.0);
  EXPECT_TRUE(pieces.finite());
}

TEST(NormAccumulatorTest, HugeFloatsDoNotOverflowAndNonFiniteIsInfinite) {
  NormAccumulator huge;
  huge.Add(std::vector<float>{3e38f, -3e38f});
  EXPECT_TRUE(huge.finite());
  EXPECT_NEAR(huge.norm(), 3e38 * std::sqrt(2.0), 1e32);
  NormAccumulator nan;
  nan.Add(std::vector<float>{1.0f, std::nanf("")});
  nan.Add(std::vector<float>{1.0f});
  EXPECT_FALSE(nan.finite());
  EXPECT_EQ(nan.norm(), kInf);
  NormAccumulator inf;
  inf.Add(std::vector<float>{std::numeric_limits<float>::infinity()});
  EXPECT_FALSE(inf.finite());
}

// Every length around the 16 lanes (tail only, lanes only, both) and a long one, against a
// long double left-to-right sum.
TEST(SumOfSquaresTest, MatchesLongDoubleSumForEveryLaneSplit) {
  std::vector<float> v(1000003);
  uint32_t x = 12345;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 1e3f;
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{15}, size_t{16}, size_t{17}, size_t{31}, size_t{32},
                   size_t{33}, size_t{1000}, v.size()}) {
    long double want = 0;
    for (size_t i = 0; i < n; ++i) want += static_cast<long double>(v[i]) * v[i];
    const double got = SumOfSquares(absl::MakeConstSpan(v.data(), n));
    EXPECT_NEAR(got, static_cast<double>(want), 1e-13 * static_cast<double>(want)) << "n = " << n;
  }
  EXPECT_EQ(SumOfSquares({}), 0.0);
  EXPECT_DOUBLE_EQ(SumOfSquares(std::vector<float>{3, 4, 12, -84}), 85.0 * 85.0);
}

// A NaN or inf in any lane or in the tail makes the sum non-finite; 3e38² does not overflow.
TEST(SumOfSquaresTest, NonFiniteAnywhereAndHugeValues) {
  for (size_t at : {size_t{0}, size_t{5}, size_t{15}, size_t{16}, size_t{31}, size_t{33}, size_t{34}}) {
    for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
      std::vector<float> v(35, 1.0f);
      v[at] = bad;
      EXPECT_FALSE(std::isfinite(SumOfSquares(v))) << "at " << at << ", value " << bad;
    }
  }
  std::vector<float> huge(40, 3e38f);
  const double h = static_cast<double>(3e38f);
  EXPECT_NEAR(SumOfSquares(huge), 40 * h * h, 1e-13 * 40 * h * h);
}

TEST(MedianTest, OddEvenEmpty) {
  EXPECT_FALSE(Median({}).has_value());
  EXPECT_EQ(*Median(std::vector<double>{5}), 5);
  EXPECT_EQ(*Median(std::vector<double>{9, 1, 5}), 5);
  EXPECT_EQ(*Median(std::vector<double>{9, 1, 5, 3}), 4);
  EXPECT_EQ(*Median(std::vector<double>{1, 1e30, 2}), 2);  // one outlier cannot move it
}

TEST(DeltaScreenTest, RoundMedianWithThreeOrMoreNorms) {
  DeltaScreen screen({.norm_k = 5, .max_norm = 0});
  std::vector<double> norms = {10, 11, 11000};  // Δ × 1000 among two honest ones
  ScreenThreshold t = screen.RoundThreshold(norms);
  EXPECT_EQ(t.basis, "round");
  EXPECT_EQ(t.median, 11);
  EXPECT_EQ(t.value, 55);
  EXPECT_EQ(t.reason, RefusalReason::kNorm);
  EXPECT_EQ(screen.Judge(10, t).action, ScreenVerdict::kAccept);
  EXPECT_EQ(screen.Judge(55, t).action, ScreenVerdict::kAccept);  // at the threshold passes
  ScreenVerdict bad = screen.Judge(11000, t);
  EXPECT_EQ(bad.action, ScreenVerdict::kReject);
  EXPECT_EQ(bad.reason, RefusalReason::kNorm);
  EXPECT_EQ(bad.norm, 11000);
  EXPECT_EQ(bad.threshold, 55);
}

TEST(DeltaScreenTest, FewerThanThreeUseThePastRunningMedianOrOnlyTheCap) {
  DeltaScreen screen({.norm_k = 5, .max_norm = 1e4});
  // First round, two workers: no history, only the cap applies.
  ScreenThreshold first = screen.RoundThreshold(std::vector<double>{10, 400});
  EXPECT_EQ(first.value, 1e4);
  EXPECT_EQ(first.reason, RefusalReason::kMaxNorm);
  EXPECT_EQ(screen.Judge(400, first).action, ScreenVerdict::kAccept);
  EXPECT_EQ(screen.Judge(2e4, first).reason, RefusalReason::kMaxNorm);
  EXPECT_FALSE(screen.PastMedian().has_value());

  screen.EndRound(std::vector<double>{10, 12});      // median 11
  screen.EndRound(std::vector<double>{8});           // median 8
  screen.EndRound(std::vector<double>{20, 20, 30});  // median 20
  EXPECT_EQ(*screen.PastMedian(), 11);
  ScreenThreshold later = screen.RoundThreshold(std::vector<double>{9, 5000});
  EXPECT_EQ(later.basis, "past rounds");
  EXPECT_EQ(later.value, 55);
  EXPECT_EQ(screen.Judge(5000, later).action, ScreenVerdict::kReject);
  // A round with nothing accepted leaves the history as it was.
  screen.EndRound({});
  EXPECT_EQ(*screen.PastMedian(), 11);
  // Streaming: judged without the round's norms.
  EXPECT_EQ(screen.RoundThreshold({}).value, 55);
}

// Time-budgeted and asynchronous Δs run different steps: judged at the job's τ, a first task of
// one slow step does not make every longer Δ after it an outlier (the flake in AsyncTest's
// time-budgeted job: a 1-step Δ of norm 0.083 set the history, and Δs of 16 and 40 steps, norms
// 2.7 and 4.5, were refused until the job failed).
TEST(DeltaScreenTest, DeltasOfDifferentLengthsAreJudgedAtTheSameSteps) {
  DeltaScreen unscaled({.norm_k = 5, .max_norm = 1e4});
  EXPECT_EQ(unscaled.JudgedNorm(4.5, 40), 4.5);  // fixed-length rounds: as it is
  DeltaScreen screen({.norm_k = 5, .max_norm = 1e4}, /*judged_at_steps=*/10);
  EXPECT_DOUBLE_EQ(screen.JudgedNorm(0.083, 1), 0.83);
  EXPECT_EQ(screen.JudgedNorm(4.5, 40), 1.125);
  EXPECT_EQ(screen.JudgedNorm(2.0, 10), 2.0);
  EXPECT_EQ(screen.JudgedNorm(3.0, 0), 3.0);  // steps unknown
  EXPECT_EQ(screen.JudgedNorm(kInf, 4), kInf);
  unscaled.EndRound(std::vector<double>{0.083});
  screen.EndRound(std::vector<double>{screen.JudgedNorm(0.083, 1)});
  const ScreenThreshold before = unscaled.RoundThreshold({}), t = screen.RoundThreshold({});
  EXPECT_DOUBLE_EQ(t.value, 4.15);
  for (const auto& [norm, steps] : {std::pair{2.667, 16}, std::pair{4.459, 40}, std::pair{4.1, 40}}) {
    EXPECT_EQ(unscaled.Judge(norm, before).action, ScreenVerdict::kReject) << norm;
    EXPECT_EQ(screen.Judge(screen.JudgedNorm(norm, steps), t).action, ScreenVerdict::kAccept) << norm;
  }
  // A Δ far above its length's share is still refused.
  EXPECT_EQ(screen.Judge(screen.JudgedNorm(40, 20), t).action, ScreenVerdict::kReject);
}

TEST(DeltaScreenTest, HistoryKeepsTheLastRoundsOnly) {
  DeltaScreen screen({.norm_k = 2, .max_norm = 0});
  for (size_t r = 0; r < kScreenHistoryRounds; ++r) screen.EndRound(std::vector<double>{1000});
  for (size_t r = 0; r < kScreenHistoryRounds; ++r) screen.EndRound(std::vector<double>{1});
  EXPECT_EQ(*screen.PastMedian(), 1);  // the early large norms have aged out
}

TEST(DeltaScreenTest, RestoredHistoryJudgesAsTheUninterruptedScreen) {
  DeltaScreen before({.norm_k = 2, .max_norm = 0});
  for (double m : {4.0, 8.0, 6.0}) before.EndRound(std::vector<double>{m});
  DeltaScreen after({.norm_k = 2, .max_norm = 0});
  const std::vector<double> saved(before.history().begin(), before.history().end());
  ASSERT_TRUE(after.RestoreHistory(saved).ok());
  EXPECT_EQ(*after.PastMedian(), 6);
  EXPECT_EQ(after.RoundThreshold({}).value, before.RoundThreshold({}).value);
  EXPECT_EQ(after.RoundThreshold({}).value, 12);

  // Only the newest rounds are kept; bad medians are refused and change nothing.
  std::vector<double> many(kScreenHistoryRounds + 3, 1.0);
  many.front() = 1000;
  ASSERT_TRUE(after.RestoreHistory(many).ok());
  EXPECT_EQ(after.history().size(), kScreenHistoryRounds);
  EXPECT_EQ(*after.PastMedian(), 1);
  EXPECT_FALSE(after.RestoreHistory(std::vector<double>{1, kInf}).ok());
  EXPECT_FALSE(after.RestoreHistory(std::vector<double>{-1}).ok());
  EXPECT_EQ(*after.PastMedian(), 1);
}

TEST(DeltaScreenTest, CapIsTheSmallerBound) {
  DeltaScreen screen({.norm_k = 5, .max_norm = 30});
  ScreenThreshold t = screen.RoundThreshold(std::vector<double>{10, 10, 10});
  EXPECT_EQ(t.value, 30);
  EXPECT_EQ(t.reason, RefusalReason::kMaxNorm);
}

TEST(DeltaScreenTest, ClipScalesToTheThreshold) {
  DeltaScreen screen({.norm_k = 5, .max_norm = 0, .action = ScreenAction::kClip});
  ScreenThreshold t = screen.RoundThreshold(std::vector<double>{10, 10, 200});
  ScreenVerdict v = screen.Judge(200, t);
  EXPECT_EQ(v.action, ScreenVerdict::kClip);
  EXPECT_EQ(v.reason, RefusalReason::kNorm);
  EXPECT_DOUBLE_EQ(v.scale, 0.25);  // 200 × 0.25 = 50 = 5 × 10
  EXPECT_EQ(screen.Judge(10, t).scale, 1);
}

TEST(DeltaScreenTest, NonFiniteIsRejectedEvenWhenClipping) {
  DeltaScreen screen({.norm_k = 5, .max_norm = 0, .action = ScreenAction::kClip});
  ScreenThreshold none = screen.RoundThreshold({});
  EXPECT_EQ(none.value, kInf);
  EXPECT_EQ(none.reason, RefusalReason::kNone);
  EXPECT_EQ(screen.Judge(1e300, none).action, ScreenVerdict::kAccept);
  ScreenVerdict v = screen.Judge(kInf, none);
  EXPECT_EQ(v.action, ScreenVerdict::kReject);
  EXPECT_EQ(v.reason, RefusalReason::kNonFinite);
  EXPECT_EQ(screen.Judge(std::nan(""), none).reason, RefusalReason::kNonFinite);
}

TEST(RefusalLedgerTest, QuarantinesAfterN) {
  RefusalLedger ledger(3);
  EXPECT_FALSE(ledger.Refuse("node-2"));
  EXPECT_FALSE(ledger.Refuse("node-1"));
  EXPECT_FALSE(ledger.Refuse("node-2"));
  EXPECT_FALSE(ledger.quarantined("node-2"));
  EXPECT_TRUE(ledger.Refuse("node-2"));  // the third
  EXPECT_TRUE(ledger.quarantined("node-2"));
  EXPECT_FALSE(ledger.Refuse("node-2"));  // reported once
  EXPECT_EQ(ledger.refusals("node-2"), 4);
  EXPECT_FALSE(ledger.quarantined("node-1"));
  EXPECT_FALSE(ledger.quarantined("node-3"));
  EXPECT_EQ(ledger.all().size(), 2u);

  // A restarted shepherd takes back its counts; a count is never lowered.
  RefusalLedger restored(3);
  restored.Restore("node-2", 3);
  restored.Restore("node-2", 1);
  restored.Restore("node-1", 0);
  EXPECT_TRUE(restored.quarantined("node-2"));
  EXPECT_EQ(restored.refusals("node-2"), 3);
  EXPECT_EQ(restored.all().size(), 1u);
  EXPECT_FALSE(restored.Refuse("node-2"));  // already quarantined: not reported again

  RefusalLedger never(0);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(never.Refuse("x"));
  EXPECT_FALSE(never.quarantined("x"));
}

TEST(ScreeningNamesTest, Spelled) {
  EXPECT_EQ(RefusalReasonName(RefusalReason::kNonFinite), "non_finite");
  EXPECT_EQ(RefusalReasonName(RefusalReason::kMaxNorm), "max_norm");
  EXPECT_EQ(ScreenActionName(ScreenAction::kClip), "clip");
  EXPECT_TRUE(AllFinite(std::vector<float>{1, 2}));
  EXPECT_FALSE(AllFinite(std::vector<float>{1, std::numeric_limits<float>::infinity()}));
}

// The metric's label values are the refusal reasons (declared in two places: the catalog's
// V(...) line and kRefusalReasonNames).
TEST(ScreeningNamesTest, MetricLabelValuesAreTheRefusalReasons) {
  std::vector<metrics::LabelSpec> labels = metrics::LabelsOf(metrics::Metric::kShepherdDeltasRefusedTotal);
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_EQ(labels[0].name, "reason");
  std::vector<std::string> reasons;
  for (const auto& [reason, name] : kRefusalReasonNames) {
    if (reason != RefusalReason::kNone) reasons.emplace_back(name);
  }
  EXPECT_EQ(labels[0].values, reasons);
}

}  // namespace
}  // namespace pcp::diloco
