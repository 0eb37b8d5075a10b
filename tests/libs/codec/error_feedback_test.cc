#include "pcp/codec/error_feedback.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "codec_data.h"
#include "gtest/gtest.h"
#include "pcp/codec/encoded.h"

namespace pcp::codec {
namespace {

using testing::DeltaLike;

std::vector<float> DecodeAll(const std::string& bytes, size_t n) {
  std::vector<float> out(n);
  absl::Status s = Decode(bytes, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(ErrorFeedbackTest, ResidualIsInputMinusDecoded) {
  const std::vector<float> d1 = DeltaLike(3000, 1), d2 = DeltaLike(3000, 2);
  for (Codec codec : {Codec::kBf16, Codec::kInt8, Codec::kInt4}) {
    ErrorFeedback feedback;
    EXPECT_TRUE(feedback.residual().empty());
    absl::StatusOr<std::string> b1 = feedback.EncodeWithFeedback(codec, d1);
    ASSERT_TRUE(b1.ok()) << b1.status();
    EXPECT_EQ(*b1, Encode(codec, d1));  // nothing to add the first time
    const std::vector<float> y1 = DecodeAll(*b1, d1.size());
    const std::vector<float> r1(feedback.residual().begin(), feedback.residual().end());
    ASSERT_EQ(r1.size(), d1.size());
    for (size_t i = 0; i < d1.size(); ++i) ASSERT_EQ(r1[i], d1[i] - y1[i]) << CodecName(codec) << " " << i;

    absl::StatusOr<std::string> b2 = feedback.EncodeWithFeedback(codec, d2);
    ASSERT_TRUE(b2.ok());
    std::vector<float> input(d2.size());
    for (size_t i = 0; i < d2.size(); ++i) input[i] = r1[i] + d2[i];
    EXPECT_EQ(*b2, Encode(codec, input));
    const std::vector<float> y2 = DecodeAll(*b2, d2.size());
    for (size_t i = 0; i < d2.size(); ++i) ASSERT_EQ(feedback.residual()[i], input[i] - y2[i]);
  }
}

TEST(ErrorFeedbackTest, CompensateEqualsEncodeWithFeedback) {
  // Two senders over the same Δs: one encodes with feedback, the other compensates in place
  // and encodes what it got. Same bytes and residuals every round.
  for (Codec codec : {Codec::kBf16, Codec::kInt8, Codec::kInt4}) {
    ErrorFeedback encoding, compensating;
    for (uint64_t round = 1; round <= 3; ++round) {
      std::vector<float> delta = DeltaLike(5000, round);
      absl::StatusOr<std::string> expected = encoding.EncodeWithFeedback(codec, delta);
      ASSERT_TRUE(expected.ok());
      ASSERT_TRUE(compensating.Compensate(codec, absl::MakeSpan(delta)).ok());
      EXPECT_EQ(Encode(codec, delta), *expected) << CodecName(codec) << " round " << round;
      ASSERT_EQ(compensating.residual().size(), encoding.residual().size());
      for (size_t i = 0; i < delta.size(); ++i) ASSERT_EQ(compensating.residual()[i], encoding.residual()[i]);
    }
    std::vector<float> wrong(10, 1.0f);
    EXPECT_EQ(compensating.Compensate(codec, absl::MakeSpan(wrong)).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(wrong, std::vector<float>(10, 1.0f));  // refused: untouched
  }
}

// SparseLoCo's decayed accumulator: e ← β·e + Δ, send Q(TopK(e)), e ← e − sent. Both forms
// (EncodeWithFeedback and Compensate) compute input = Δ + β·residual, and β = 1 is plain error
// feedback bit for bit.
TEST(ErrorFeedbackTest, DecayScalesTheResidualBeforeItIsAdded) {
  constexpr double kDensity = 0.03;
  for (Codec codec : {Codec::kTopk2, Codec::kInt4}) {
    ErrorFeedback decayed, compensating, plain, plain_default;
    ASSERT_TRUE(decayed.set_decay(0.9).ok());
    ASSERT_TRUE(compensating.set_decay(0.9).ok());
    ASSERT_TRUE(plain.set_decay(1.0).ok());
    EXPECT_EQ(decayed.decay(), 0.9f);
    for (uint64_t round = 1; round <= 4; ++round) {
      const std::vector<float> delta = DeltaLike(9000, round);
      const std::vector<float> before(decayed.residual().begin(), decayed.residual().end());
      // Compensate in place: the input is Δ + β·residual (within a rounding: the compiler may
      // fuse the multiply-add), and encoding it gives EncodeWithFeedback's bytes.
      std::vector<float> input = delta;
      ASSERT_TRUE(compensating.Compensate(codec, absl::MakeSpan(input), 0, kDensity).ok());
      for (size_t i = 0; i < before.size(); ++i) {
        ASSERT_NEAR(input[i], 0.9f * before[i] + delta[i], 1e-6f * (1 + std::fabs(input[i]))) << i;
      }
      if (before.empty()) EXPECT_EQ(input, delta);
      absl::StatusOr<std::string> got = decayed.EncodeWithFeedback(codec, delta, 0, kDensity);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, *Encode(codec, input, 0, kDensity)) << CodecName(codec) << " round " << round;
      // What is kept is the input less what was sent.
      const std::vector<float> sent = DecodeAll(*got, input.size());
      for (size_t i = 0; i < input.size(); ++i) {
        ASSERT_NEAR(decayed.residual()[i], input[i] - sent[i], 1e-6f * (1 + std::fabs(input[i])))
            << CodecName(codec) << " round " << round << " " << i;
        ASSERT_NEAR(compensating.residual()[i], decayed.residual()[i], 1e-6f * (1 + std::fabs(input[i])));
      }
      // β = 1 set explicitly is the default.
      absl::StatusOr<std::string> a = plain.EncodeWithFeedback(codec, delta, 0, kDensity);
      absl::StatusOr<std::string> b = plain_default.EncodeWithFeedback(codec, delta, 0, kDensity);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(*a, *b);
    }
    // With β < 1 less waits in a sparse codec's residual than without decay.
    if (codec != Codec::kTopk2) continue;
    double decayed_norm = 0, plain_norm = 0;
    for (float r : decayed.residual()) decayed_norm += double{r} * r;
    for (float r : plain.residual()) plain_norm += double{r} * r;
    EXPECT_LT(decayed_norm, plain_norm) << CodecName(codec);
  }
}

TEST(ErrorFeedbackTest, DecayOutsideZeroToOneIsRefused) {
  ErrorFeedback feedback;
  for (double bad : {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    absl::Status s = feedback.set_decay(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(feedback.decay(), 1.0f);  // unchanged
  }
}

TEST(ErrorFeedbackTest, F32KeepsNoResidual) {
  ErrorFeedback feedback;
  const std::vector<float> d = DeltaLike(100, 3);
  absl::StatusOr<std::string> bytes = feedback.EncodeWithFeedback(Codec::kF32, d);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, Encode(Codec::kF32, d));
  EXPECT_TRUE(feedback.residual().empty());
  // Switching from a lossy codec to f32 sends what was left, exactly, and then keeps nothing.
  ASSERT_TRUE(feedback.EncodeWithFeedback(Codec::kInt4, d).ok());
  std::vector<float> input(d.begin(), d.end());
  for (size_t i = 0; i < d.size(); ++i) input[i] += feedback.residual()[i];
  bytes = feedback.EncodeWithFeedback(Codec::kF32, d);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, Encode(Codec::kF32, input));
  EXPECT_TRUE(feedback.residual().empty());
}

// A small constant signal next to one large value, round after round: without feedback the
// codec rounds the small values the same way each time and the error of their sum grows
// linearly; with feedback the sum of what was sent stays within one residual of the sum of the
// inputs (the residual is the difference exactly, and it stays within half a scale).
TEST(ErrorFeedbackTest, SumOfDecodedTracksSumOfInputsWhileWithoutFeedbackItDrifts) {
  for (Codec codec : {Codec::kBf16, Codec::kInt8, Codec::kInt4}) {
    SCOPED_TRACE(CodecName(codec));
    const size_t n = 256;
    const int rounds = 1000;
    // int4: 0.01 is 0.07 of a step (1/7), so it always rounds to 0; int8: 1.27 steps (1/127),
    // always 1 step; bf16: 0.01 is not a bf16 value (an error of ~1e-5 each round).
    std::vector<float> delta(n, 0.01f);
    delta[0] = 1.0f;
    ErrorFeedback feedback;
    std::vector<double> sum_in(n, 0), sum_ef(n, 0), sum_plain(n, 0);
    double max_gap = 0;
    for (int r = 0; r < rounds; ++r) {
      absl::StatusOr<std::string> bytes = feedback.EncodeWithFeedback(codec, delta);
      ASSERT_TRUE(bytes.ok());
      const std::vector<float> y = DecodeAll(*bytes, n);
      const std::vector<float> plain = DecodeAll(Encode(codec, delta), n);
      for (size_t i = 0; i < n; ++i) {
        sum_in[i] += delta[i];
        sum_ef[i] += y[i];
        sum_plain[i] += plain[i];
        max_gap = std::max(max_gap, std::fabs(sum_in[i] - sum_ef[i]));
      }
    }
    // The bound: half a step of the block, whose absmax is at most 1 + its residual (< 1.1):
    // int4 1.1/14, int8 1.1/254; bf16 half an ulp of the values near 0.01 (2^-15), with slack
    // for the f32 sums of 1000 rounds held in the residual.
    const double bound = codec == Codec::kInt4 ? 1.1 / 14 : codec == Codec::kInt8 ? 1.1 / 254 : 0x1p-14;
    EXPECT_LE(max_gap, bound);
    double drift = 0;
    for (size_t i = 1; i < n; ++i) drift = std::max(drift, std::fabs(sum_in[i] - sum_plain[i]));
    EXPECT_GE(drift, 20 * bound) << "without feedback";
    for (float r : feedback.residual()) EXPECT_LE(std::fabs(r), bound);
  }
}

TEST(ErrorFeedbackTest, NonFiniteInputLeavesNoResidualThere) {
  std::vector<float> d = DeltaLike(2048, 4);
  d[100] = std::numeric_limits<float>::quiet_NaN();
  ErrorFeedback feedback;
  absl::StatusOr<std::string> bytes = feedback.EncodeWithFeedback(Codec::kInt8, d);
  ASSERT_TRUE(bytes.ok());
  const std::vector<float> y = DecodeAll(*bytes, d.size());
  EXPECT_TRUE(std::isnan(y[100]));  // the receiver sees it, and refuses it
  for (size_t i = 0; i < 1024; ++i) EXPECT_EQ(feedback.residual()[i], 0.0f) << i;  // the NaN's block
  for (float r : feedback.residual()) EXPECT_TRUE(std::isfinite(r));
  // The next round is finite again.
  d[100] = 0.0f;
  bytes = feedback.EncodeWithFeedback(Codec::kInt8, d);
  ASSERT_TRUE(bytes.ok());
  for (float v : DecodeAll(*bytes, d.size())) EXPECT_TRUE(std::isfinite(v));
}

TEST(ErrorFeedbackTest, SizeMismatchAndBadBlockSizeAreRefusedAndResetClears) {
  ErrorFeedback feedback;
  ASSERT_TRUE(feedback.EncodeWithFeedback(Codec::kInt4, DeltaLike(100, 5)).ok());
  const std::vector<float> before(feedback.residual().begin(), feedback.residual().end());
  absl::StatusOr<std::string> bytes = feedback.EncodeWithFeedback(Codec::kInt4, DeltaLike(99, 5));
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  bytes = feedback.EncodeWithFeedback(Codec::kInt4, DeltaLike(100, 5), 48);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::vector<float>(feedback.residual().begin(), feedback.residual().end()), before);
  feedback.Reset();
  EXPECT_TRUE(feedback.residual().empty());
  EXPECT_TRUE(feedback.EncodeWithFeedback(Codec::kInt4, DeltaLike(99, 5)).ok());
}

}  // namespace
}  // namespace pcp::codec
