// The round engine's aggregation rules (services/shepherd/src/aggregator.h): each against the
// plain functions on the same inputs, the clip verdict applied alike by every rule, and the
// one choice per job.
#include "aggregator.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/shepherd/outer_optimizer.h"
#include "screen.h"

namespace pcp::shepherd {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

Tensor Vec(std::vector<float> v) { return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v); }

diloco::ScreenVerdict Accept() { return {}; }
diloco::ScreenVerdict Clip(double scale) {
  return diloco::ScreenVerdict{.action = diloco::ScreenVerdict::kClip, .scale = scale};
}

// Three workers' Δs of one tensor of four values, weights 3, 1, 2.
const std::vector<std::vector<float>> kDeltas = {{1, 2, -3, 4}, {5, -2, 0.5f, 8}, {-1, 0.25f, 3, 2}};
const std::vector<double> kWeights = {3, 1, 2};

std::vector<WeightedDelta> Plain() {
  std::vector<WeightedDelta> out;
  for (size_t i = 0; i < kDeltas.size(); ++i) out.push_back({{Vec(kDeltas[i])}, kWeights[i]});
  return out;
}

void AddAll(Aggregator& agg, uint64_t round) {
  for (size_t i = 0; i < kDeltas.size(); ++i) {
    ASSERT_TRUE(
        agg.Add(round, Contribution{{Vec(kDeltas[i])}, kWeights[i], Accept(), 0, "w" + std::to_string(i)}).ok());
  }
}

TEST(AggregatorTest, WeightedAverageIsWeightedAverageBitForBit) {
  std::unique_ptr<Aggregator> agg = NewWeightedAverageAggregator();
  EXPECT_FALSE(agg->streamable());
  EXPECT_EQ(agg->SinkFor(1, {{"w", DType::kF32, {4}}}, diloco::DeltaScreen({}), 1, 1), nullptr);
  AddAll(*agg, 1);
  const RoundSeal seal = agg->Seal(1);
  EXPECT_TRUE(seal.liars.empty());
  EXPECT_FALSE(seal.tainted);
  absl::StatusOr<Combined> got = agg->Finish(1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->scratch);
  absl::StatusOr<std::vector<Tensor>> want = WeightedAverage(Plain());
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(got->delta[0].ToVector<float>(), (*want)[0].ToVector<float>());
  // Finish forgets the round.
  EXPECT_EQ(agg->Finish(1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AggregatorTest, TrimmedMeanIsTrimmedMeanBitForBit) {
  std::unique_ptr<Aggregator> agg = NewTrimmedMeanAggregator(0.34);  // one value trimmed at each end
  EXPECT_FALSE(agg->streamable());
  AddAll(*agg, 2);
  absl::StatusOr<Combined> got = agg->Finish(2);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<Tensor>> want = TrimmedMean(Plain(), 0.34);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(got->delta[0].ToVector<float>(), (*want)[0].ToVector<float>());
  // With three Δs and one trimmed at each end, each coordinate is its median.
  EXPECT_THAT(got->delta[0].ToVector<float>(), ElementsAre(1.0f, 0.25f, 0.5f, 4.0f));
}

TEST(AggregatorTest, TrimmedMeanWithNothingTrimmedIsTheAverage) {
  std::unique_ptr<Aggregator> trimmed = NewTrimmedMeanAggregator(0.2);  // floor(0.2 x 3) = 0 trimmed
  std::unique_ptr<Aggregator> average = NewWeightedAverageAggregator();
  AddAll(*trimmed, 1);
  AddAll(*average, 1);
  absl::StatusOr<Combined> a = trimmed->Finish(1), b = average->Finish(1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(a->delta[0].ToVector<float>(), Pointwise(FloatNear(1e-6f), b->delta[0].ToVector<float>()));
}

TEST(AggregatorTest, BufferedRulesApplyTheClipVerdict) {
  std::unique_ptr<Aggregator> agg = NewWeightedAverageAggregator();
  ASSERT_TRUE(agg->Add(1, Contribution{{Vec({2, -4})}, 1, Clip(0.5), 0, "a"}).ok());
  absl::StatusOr<Combined> got = agg->Finish(1);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(got->delta[0].ToVector<float>(), ElementsAre(1.0f, -2.0f));
  diloco::ScreenVerdict reject{.action = diloco::ScreenVerdict::kReject};
  EXPECT_EQ(agg->Add(1, Contribution{{Vec({1, 1})}, 1, reject, 0, "b"}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(AggregatorTest, BufferedRoundsAreKeptApartAndDropped) {
  std::unique_ptr<Aggregator> agg = NewWeightedAverageAggregator();
  ASSERT_TRUE(agg->Add(1, Contribution{{Vec({1})}, 1, Accept(), 0, "a"}).ok());
  ASSERT_TRUE(agg->Add(2, Contribution{{Vec({3})}, 1, Accept(), 0, "a"}).ok());
  ASSERT_TRUE(agg->Add(3, Contribution{{Vec({5})}, 1, Accept(), 0, "a"}).ok());
  agg->Drop(1);
  EXPECT_FALSE(agg->Finish(1).ok());
  agg->DropThrough(2);
  EXPECT_FALSE(agg->Finish(2).ok());
  absl::StatusOr<Combined> three = agg->Finish(3);
  ASSERT_TRUE(three.ok());
  EXPECT_THAT(three->delta[0].ToVector<float>(), ElementsAre(5.0f));
}

// The same Δs streamed chunk by chunk into the sink average as the buffered rule does (within
// f32 rounding: the sum accumulates in f32 in arrival order).
TEST(AggregatorTest, StreamingSumMatchesTheWeightedAverage) {
  std::unique_ptr<Aggregator> agg = NewStreamingSumAggregator();
  EXPECT_TRUE(agg->streamable());
  const diloco::DeltaScreen screen(diloco::ScreeningOptions{});
  std::shared_ptr<RoundSum> sink = agg->SinkFor(4, {{"w", DType::kF32, {4}}}, screen, 2, 128);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(agg->SinkFor(4, {{"w", DType::kF32, {4}}}, screen, 2, 128), sink);  // one per round
  EXPECT_EQ(sink->steps, 2u);
  EXPECT_EQ(sink->tokens, 128u);
  for (size_t i = 0; i < kDeltas.size(); ++i) {
    double ss = 0;
    for (float v : kDeltas[i]) ss += double{v} * v;
    const diloco::ScreenVerdict v = Screen(sink->screen, sink->threshold, DeltaNorm::Declared(std::sqrt(ss) * 1.01));
    ASSERT_TRUE(Admitted(v));
    std::unique_ptr<diloco::DeltaSum::Contribution> c =
        sink->sum.Begin("w" + std::to_string(i), kWeights[i], v.scale, std::sqrt(ss) * 1.01);
    // Two chunks of two values each.
    ASSERT_TRUE(c->Add(0, 2, absl::MakeConstSpan(kDeltas[i]).subspan(2, 2)).ok());
    ASSERT_TRUE(c->Add(0, 0, absl::MakeConstSpan(kDeltas[i]).subspan(0, 2)).ok());
  }
  EXPECT_EQ(agg->Add(4, Contribution{{Vec({1, 1, 1, 1})}, 1, Accept(), 0, "x"}).code(),
            absl::StatusCode::kFailedPrecondition);
  const RoundSeal seal = agg->Seal(4);
  EXPECT_TRUE(seal.liars.empty());
  EXPECT_FALSE(seal.tainted);
  absl::StatusOr<Combined> got = agg->Finish(4);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->scratch);
  absl::StatusOr<std::vector<Tensor>> want = WeightedAverage(Plain());
  ASSERT_TRUE(want.ok());
  EXPECT_THAT(got->delta[0].ToVector<float>(), Pointwise(FloatNear(1e-6f), (*want)[0].ToVector<float>()));
  agg->DropThrough(4);
  EXPECT_EQ(agg->Finish(4).status().code(), absl::StatusCode::kInternal);
}

TEST(AggregatorTest, StreamingSumReportsLiarsAndTaint) {
  std::unique_ptr<Aggregator> agg = NewStreamingSumAggregator();
  const diloco::DeltaScreen screen(diloco::ScreeningOptions{});
  std::shared_ptr<RoundSum> sink = agg->SinkFor(1, {{"w", DType::kF32, {2}}}, screen, 1, 1);
  std::unique_ptr<diloco::DeltaSum::Contribution> c = sink->sum.Begin("liar", 1, 1, /*declared_norm=*/1.0);
  ASSERT_TRUE(c->Add(0, 0, absl::MakeConstSpan(std::vector<float>{0.5f})).ok());
  EXPECT_FALSE(c->Add(0, 1, absl::MakeConstSpan(std::vector<float>{100.0f})).ok());  // breaks its declaration
  const RoundSeal seal = agg->Seal(1);
  EXPECT_THAT(seal.liars, ElementsAre("liar"));
  EXPECT_TRUE(seal.tainted);
  EXPECT_DOUBLE_EQ(seal.threshold.value, sink->threshold.value);
  // Taint marks an honest round too (a result whose counts were wrong after its chunks).
  std::shared_ptr<RoundSum> two = agg->SinkFor(2, {{"w", DType::kF32, {2}}}, screen, 1, 1);
  agg->Taint(2);
  EXPECT_TRUE(agg->Seal(2).tainted);
}

JobConfig Job(diloco::Aggregation mode, int64_t workers, double trim) {
  JobConfig c;
  c.diloco.aggregation = mode;
  c.diloco.workers = workers;
  c.diloco.screening.trimmed_mean = trim;
  return c;
}

TEST(AggregatorTest, ChosenOnceFromTheJob) {
  const int64_t big = diloco::kDeltaStagingBytes;  // elements: 4 B each, so 2 workers pass the staging area
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kAuto, 2, 0), 100)->name(), "weighted average");
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kAuto, 2, 0), big)->name(), "streaming sum");
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kAuto, 2, 0.2), big)->name(), "trimmed mean");
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kBuffered, 2, 0), big)->name(), "weighted average");
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kBuffered, 2, 0.2), 100)->name(), "trimmed mean");
  EXPECT_EQ(ChooseAggregator(Job(diloco::Aggregation::kStreaming, 2, 0), 100)->name(), "streaming sum");
}

}  // namespace
}  // namespace pcp::shepherd
