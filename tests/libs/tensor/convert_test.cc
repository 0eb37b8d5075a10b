#include "pcp/tensor/convert.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace pcp {
namespace {

float FromBits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// Independent reference: the representable value nearest to f, ties to the even bit
// pattern, found by binary search over the positive patterns [0, inf_bits]. The pattern
// after the largest finite one (inf) stands for 2^(emax+1), which is exactly IEEE's
// overflow rule (round to inf from max + half an ulp up).
template <typename ToFloat>
uint16_t ReferenceRound(double f, uint16_t inf_bits, double inf_value, ToFloat to_float) {
  double a = std::fabs(f);
  auto value = [&](uint32_t b) { return b == inf_bits ? inf_value : double{to_float(b)}; };
  uint32_t lo = 0, hi = inf_bits;  // value(lo) <= a < value(hi) unless a >= inf_value
  if (a >= inf_value) {
    lo = inf_bits;
  } else {
    while (hi - lo > 1) {
      uint32_t mid = (lo + hi) / 2;
      (value(mid) <= a ? lo : hi) = mid;
    }
    double dlo = a - value(lo), dhi = value(hi) - a;
    if (dhi < dlo || (dhi == dlo && (hi & 1) == 0)) lo = hi;
  }
  return static_cast<uint16_t>(lo | (std::signbit(f) ? 0x8000u : 0u));
}

uint16_t ReferenceHalf(double f) {
  return ReferenceRound(f, 0x7C00, 65536.0, [](uint32_t b) { return HalfToFloat(b); });
}
uint16_t ReferenceBFloat16(double f) {
  return ReferenceRound(f, 0x7F80, std::ldexp(1.0, 128), [](uint32_t b) { return BFloat16ToFloat(b); });
}

// Floats to check against the reference: a stride through all bit patterns, random ones
// and the neighbourhood of every tie of both formats near a few exponents.
std::vector<float> SampleFloats() {
  std::vector<float> out;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += 4099) out.push_back(FromBits(uint32_t(b)));
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) out.push_back(FromBits(rng()));
  for (uint32_t e :
       {0x00000000u, 0x33000000u, 0x33800000u, 0x38000000u, 0x38800000u, 0x3F800000u, 0x477F0000u, 0x7F700000u}) {
    for (uint32_t m = 0; m < 0x800000u; m += 0x0FFFu) {
      for (uint32_t d : {0x0FFFu, 0x1000u, 0x1001u, 0x7FFFu, 0x8000u, 0x8001u}) {
        out.push_back(FromBits(e + ((m & ~0xFFFFu) | d)));
        out.push_back(FromBits(0x80000000u | (e + ((m & ~0x1FFFu) | d))));
      }
    }
  }
  return out;
}

TEST(BFloat16Test, KnownValuesAndTies) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBFloat16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBFloat16(-0.0f), 0x8000);
  // Exactly halfway: ties go to the even pattern.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F808000)), 0x3F80);  // down to even
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F818000)), 0x3F82);  // up to even
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F807FFF)), 0x3F80);  // just below
  // Subnormal floats round like any other value.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00008000)), 0x0000);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00018000)), 0x0002);
  // Overflow and infinities.
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(FloatToBFloat16(INFINITY), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(-INFINITY), 0xFF80);
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xFF80), -INFINITY);
}

TEST(BFloat16Test, NaNStaysQuietNaN) {
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0x7F810000u}) {
    uint16_t b = FloatToBFloat16(FromBits(nan));
    EXPECT_TRUE(std::isnan(BFloat16ToFloat(b))) << std::hex << nan;
    EXPECT_TRUE(b & 0x0040) << "quiet bit, input " << std::hex << nan;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << "sign, input " << std::hex << nan;
  }
}

TEST(BFloat16Test, EveryPatternRoundTripsThroughFloat) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(Bits(f), b << 16);
    if (std::isnan(f)) {
      EXPECT_EQ(FloatToBFloat16(f), b | 0x0040);  // signalling NaNs are quietened
    } else {
      ASSERT_EQ(FloatToBFloat16(f), b) << std::hex << b;
    }
  }
}

TEST(BFloat16Test, MatchesNearestEvenReference) {
  for (float f : SampleFloats()) {
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), ReferenceBFloat16(f)) << std::hex << Bits(f);
  }
}

TEST(HalfTest, KnownValuesTiesAndOverflow) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);  // max half
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // the tie rounds to even = inf
  EXPECT_EQ(FloatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xFC00);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, down to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, up to even
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  EXPECT_EQ(FloatToHalf(2047.0f), 0x67FF);
  EXPECT_EQ(FloatToHalf(2049.0f), 0x6800);  // tie between 2048 and 2050
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfToFloat(0xFC00), -INFINITY);
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
}

TEST(HalfTest, Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest subnormal half
  EXPECT_EQ(FloatToHalf(tiny), 0x0001);
  EXPECT_EQ(HalfToFloat(0x0001), tiny);
  EXPECT_EQ(HalfToFloat(0x8001), -tiny);
  EXPECT_EQ(HalfToFloat(0x03FF), 1023 * tiny);  // largest subnormal
  EXPECT_EQ(HalfToFloat(0x0200), 512 * tiny);
  EXPECT_EQ(FloatToHalf(1023 * tiny), 0x03FF);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(1023.5f * tiny), 0x0400);         // tie rounds up into normals
  EXPECT_EQ(FloatToHalf(tiny / 2), 0x0000);               // tie with zero: even is zero
  EXPECT_EQ(FloatToHalf(-tiny / 2), 0x8000);
  EXPECT_EQ(FloatToHalf(std::nextafter(tiny / 2, 1.0f)), 0x0001);
  EXPECT_EQ(FloatToHalf(1.5f * tiny), 0x0002);  // tie between 1 and 2: even
  EXPECT_EQ(FloatToHalf(2.5f * tiny), 0x0002);  // tie between 2 and 3: even
  EXPECT_EQ(FloatToHalf(1e-10f), 0x0000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfTest, NaNIsKept) {
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFE000u, 0x7F802000u}) {
    uint16_t h = FloatToHalf(FromBits(nan));
    EXPECT_TRUE(std::isnan(HalfToFloat(h))) << std::hex << nan;
    EXPECT_EQ(h & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
  }
  EXPECT_EQ(FloatToHalf(FromBits(0x7FC00000u)), 0x7E00);
  EXPECT_EQ(FloatToHalf(FromBits(0x7F802000u)), 0x7C01);  // payload kept
}

// All 65536 half patterns: HalfToFloat agrees with the definition of the format, and
// converting back gives the same bits (NaN payloads included).
TEST(HalfTest, ExhaustiveRoundTripThroughFloat) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = HalfToFloat(static_cast<uint16_t>(h));
    uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0x1F) {
      EXPECT_EQ(std::isnan(f), mantissa != 0) << std::hex << h;
      EXPECT_EQ(std::isinf(f), mantissa == 0) << std::hex << h;
    } else {
      double expected =
          exponent == 0 ? std::ldexp(double(mantissa), -24) : std::ldexp(double(1024 + mantissa), int(exponent) - 25);
      ASSERT_EQ(double{f}, sign * expected) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    }
    ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(HalfTest, MatchesNearestEvenReference) {
  for (float f : SampleFloats()) {
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), ReferenceHalf(f)) << std::hex << Bits(f) << " = " << f;
  }
}

// ---------------------------------------------------------------------------------------
// ConvertTensor.

const DType kAllDTypes[] = {DType::kF32, DType::kF16,  DType::kBF16, DType::kI32,
                            DType::kI64, DType::kBool, DType::kF64};

// Element i of t as a double (bool bytes as 0/1).
double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: return t.data<float>()[i];
    case DType::kF16: return HalfToFloat(t.data<uint16_t>()[i]);
    case DType::kBF16: return BFloat16ToFloat(t.data<uint16_t>()[i]);
    case DType::kI32: return t.data<int32_t>()[i];
    case DType::kI64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] != 0 ? 1.0 : 0.0;
    case DType::kF64: return t.data<double>()[i];
  }
  return 0;
}

Tensor FromValues(DType d, const std::vector<double>& v, Shape shape) {
  Tensor f = Tensor::FromVector<float>(shape, std::vector<float>(v.begin(), v.end()));
  absl::StatusOr<Tensor> t = ConvertTensor(f, d);
  EXPECT_TRUE(t.ok());
  return *t;
}

TEST(ConvertTensorTest, EveryPairOnValuesExactInAllTypes) {
  // Representable in every dtype (bool only holds 0/1, checked separately below).
  const std::vector<double> values = {0, 1, 2, -3, 100, -64, 7, 1};
  for (DType from : kAllDTypes) {
    std::vector<double> in = values;
    if (from == DType::kBool) {
      for (double& v : in) v = v != 0;
    }
    Tensor src = FromValues(from, in, {2, 4});
    for (DType to : kAllDTypes) {
      absl::StatusOr<Tensor> out = ConvertTensor(src, to);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->dtype(), to);
      ASSERT_EQ(out->shape(), (Shape{2, 4}));
      EXPECT_NE(out->raw_data(), src.raw_data());
      for (int64_t i = 0; i < 8; ++i) {
        double expected = to == DType::kBool ? (in[i] != 0) : in[i];
        EXPECT_EQ(ValueAt(*out, i), expected) << MlirName(from) << " -> " << MlirName(to) << " element " << i;
      }
    }
  }
}

TEST(ConvertTensorTest, F64RoundsOnceToEveryFloatType) {
  const double kTieUp = 1.0 + 0x1p-11 + 0x1p-40;  // just above f16's tie between 1 and 1 + 2^-10
  Tensor d = Tensor::FromVector<double>({5}, {1.0 / 3.0, kTieUp, 1e300, -1e-300, 1.0 + 0x1p-8 + 0x1p-30});
  Tensor f = *ConvertTensor(d, DType::kF32);
  EXPECT_EQ(f.ToVector<float>(),
            (std::vector<float>{static_cast<float>(1.0 / 3.0), 1.0f + 0x1p-11f, INFINITY, -0.0f, 1.0f + 0x1p-8f}));
  EXPECT_TRUE(std::signbit(f.data<float>()[3]));
  // Through f32 these would tie and round to even (down); rounded once they go up.
  Tensor h = *ConvertTensor(d, DType::kF16);
  EXPECT_EQ(h.data<uint16_t>()[1], 0x3C01);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x7C00);  // inf
  EXPECT_EQ(h.data<uint16_t>()[3], 0x8000);  // -0
  Tensor b = *ConvertTensor(d, DType::kBF16);
  EXPECT_EQ(b.data<uint16_t>()[4], 0x3F81);  // 1 + 2^-8 + tiny: above the tie between 0x3F80 and 0x3F81
  EXPECT_EQ(b.data<uint16_t>()[2], 0x7F80);
}

TEST(ConvertTensorTest, F64ToIntegerTruncatesAndSaturates) {
  Tensor d = Tensor::FromVector<double>({7}, {2147483647.9, -2147483648.9, -2147483647.5, 1e19, -1e19, NAN, -0.5});
  EXPECT_EQ(ConvertTensor(d, DType::kI32)->ToVector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, -2147483647, INT32_MAX, INT32_MIN, 0, 0}));
  EXPECT_EQ(ConvertTensor(d, DType::kI64)->ToVector<int64_t>(),
            (std::vector<int64_t>{2147483647, -2147483648, -2147483647, INT64_MAX, INT64_MIN, 0, 0}));
  Tensor i = Tensor::FromVector<int64_t>({2}, {(int64_t{1} << 53) + 1, -3});
  EXPECT_EQ(ConvertTensor(i, DType::kF64)->ToVector<double>(), (std::vector<double>{0x1p53, -3.0}));
}

TEST(ConvertTensorTest, FloatToIntegerTruncatesAndSaturates) {
  Tensor f = Tensor::FromVector<float>({9}, {0.0f, 1.9f, -2.75f, 3e9f, NAN, -1e20f, 65520.0f, -0.5f, INFINITY});
  Tensor i32 = *ConvertTensor(f, DType::kI32);
  EXPECT_EQ(i32.ToVector<int32_t>(), (std::vector<int32_t>{0, 1, -2, INT32_MAX, 0, INT32_MIN, 65520, 0, INT32_MAX}));
  Tensor i64 = *ConvertTensor(f, DType::kI64);
  EXPECT_EQ(i64.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, -2, 3000000000, 0, INT64_MIN, 65520, 0, INT64_MAX}));
  Tensor b = *ConvertTensor(f, DType::kBool);
  EXPECT_EQ(b.ToVector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 1, 1, 1, 1, 1, 1}));
  Tensor h = *ConvertTensor(f, DType::kF16);
  for (int i = 0; i < 9; ++i) {
    if (i == 4) {
      EXPECT_TRUE(std::isnan(HalfToFloat(h.data<uint16_t>()[i])));
    } else {
      EXPECT_EQ(h.data<uint16_t>()[i], FloatToHalf(f.data<float>()[i])) << i;
    }
  }
  // From f16 and bf16 too (via their exact float values).
  Tensor from_half = *ConvertTensor(Tensor(h), DType::kI32);
  EXPECT_EQ(from_half.data<int32_t>()[2], -2);
  EXPECT_EQ(from_half.data<int32_t>()[6], INT32_MAX);  // 65520 -> inf in f16 -> saturates
}

TEST(ConvertTensorTest, IntegerToFloatRoundsOnceToNearestEven) {
  Tensor i = Tensor::FromVector<int64_t>({7}, {16777217, 16777219, 16973823, 65519, 65520, 2049, INT64_MIN});
  Tensor f32 = *ConvertTensor(i, DType::kF32);
  EXPECT_EQ(f32.data<float>()[0], 16777216.0f);  // 2^24 + 1: tie, down to even
  EXPECT_EQ(f32.data<float>()[1], 16777220.0f);  // 2^24 + 3: tie, up to even
  EXPECT_EQ(f32.data<float>()[6], -9223372036854775808.0f);
  // 2^24 + 3*2^16 - 1 is just below a bf16 tie; rounding through f32 first would land on
  // the tie and then round up (double rounding). The right answer is 2^24 + 2^17.
  Tensor bf = *ConvertTensor(i, DType::kBF16);
  EXPECT_EQ(bf.data<uint16_t>()[2], FloatToBFloat16(16908288.0f));
  EXPECT_EQ(BFloat16ToFloat(bf.data<uint16_t>()[2]), 16908288.0f);
  Tensor h = *ConvertTensor(i, DType::kF16);
  EXPECT_EQ(h.data<uint16_t>()[3], 0x7BFF);  // 65519 -> 65504
  EXPECT_EQ(h.data<uint16_t>()[4], 0x7C00);  // 65520 -> inf
  EXPECT_EQ(h.data<uint16_t>()[5], 0x6800);  // 2049 -> 2048
  EXPECT_EQ(h.data<uint16_t>()[6], 0xFC00);  // -2^63 -> -inf
  // Random integers agree with the references applied to their exact values.
  std::mt19937_64 rng(3);
  std::vector<int32_t> ints(20000);
  for (int32_t& v : ints) v = static_cast<int32_t>(rng()) >> (rng() % 31);
  Tensor t = Tensor::FromVector<int32_t>({int64_t(ints.size())}, ints);
  Tensor tb = *ConvertTensor(t, DType::kBF16), th = *ConvertTensor(t, DType::kF16);
  for (size_t k = 0; k < ints.size(); ++k) {
    ASSERT_EQ(tb.data<uint16_t>()[k], ReferenceBFloat16(ints[k])) << ints[k];
    ASSERT_EQ(th.data<uint16_t>()[k], ReferenceHalf(ints[k])) << ints[k];
  }
}

TEST(ConvertTensorTest, NarrowingIntegersWrapAndBoolIsZeroOrOne) {
  Tensor i = Tensor::FromVector<int64_t>({4}, {0x100000005LL, -1, 0x80000000LL, 0});
  EXPECT_EQ(ConvertTensor(i, DType::kI32)->ToVector<int32_t>(), (std::vector<int32_t>{5, -1, INT32_MIN, 0}));
  EXPECT_EQ(ConvertTensor(i, DType::kBool)->ToVector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 0}));
  Tensor b(DType::kBool, {3});
  b.data<uint8_t>()[1] = 1;
  b.data<uint8_t>()[2] = 7;  // a nonzero byte that is not 1 still means true
  EXPECT_EQ(ConvertTensor(b, DType::kF32)->ToVector<float>(), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(ConvertTensor(b, DType::kF16)->ToVector<uint16_t>(), (std::vector<uint16_t>{0, 0x3C00, 0x3C00}));
}

TEST(ConvertTensorTest, BetweenFloatFormatsRoundsOnce) {
  // f16 max (65504) is not a bf16: it rounds to 65536; bf16 values beyond f16 become inf.
  Tensor h(DType::kF16, {2});
  h.data<uint16_t>()[0] = 0x7BFF;
  h.data<uint16_t>()[1] = 0x0001;
  Tensor bf = *ConvertTensor(h, DType::kBF16);
  EXPECT_EQ(BFloat16ToFloat(bf.data<uint16_t>()[0]), 65536.0f);
  EXPECT_EQ(BFloat16ToFloat(bf.data<uint16_t>()[1]), std::ldexp(1.0f, -24));
  Tensor back = *ConvertTensor(bf, DType::kF16);
  EXPECT_EQ(back.data<uint16_t>()[0], 0x7C00);
  EXPECT_EQ(back.data<uint16_t>()[1], 0x0001);
}

TEST(ConvertTensorTest, SameTypeIsDeepCopyAndScalarsAndEmptyWork) {
  Tensor t = Tensor::FromVector<float>({2}, {1, 2});
  Tensor c = *ConvertTensor(t, DType::kF32);
  EXPECT_TRUE(BitwiseEqual(t, c));
  c.data<float>()[0] = 5;
  EXPECT_EQ(t.data<float>()[0], 1);
  Tensor s = *ConvertTensor(Tensor::Scalar<int32_t>(-7), DType::kBF16);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(BFloat16ToFloat(s.data<uint16_t>()[0]), -7.0f);
  Tensor e = *ConvertTensor(Tensor(DType::kI64, {0, 3}), DType::kF16);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.num_elements(), 0);
  EXPECT_EQ(ConvertTensor(Tensor(), DType::kF32).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp
