// Round trips of every codec: error bounds derived from each format (never tuned to a CPU),
// sizes, non-finite values, decode-add.
#include "pcp/codec/encoded.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "codec_data.h"
#include "gtest/gtest.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/tensor/convert.h"

namespace pcp::codec {
namespace {

using testing::DeltaLike;

constexpr float kEps = 0x1p-24f;  // f32's unit roundoff
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

int QMax(Codec codec) { return codec == Codec::kInt8 ? 127 : 7; }

float ScaleOf(const std::string& bytes, size_t block) {
  float s;
  std::memcpy(&s, bytes.data() + kHeaderSize + 4 * block, sizeof s);
  return s;
}

std::vector<float> DecodeAll(const std::string& bytes) {
  absl::StatusOr<EncodedHeader> header = ReadHeader(bytes);
  EXPECT_TRUE(header.ok()) << header.status();
  std::vector<float> out(header.ok() ? header->count : 0);
  absl::Status s = Decode(bytes, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// The sizes the tests sweep: empty, single values, around block sizes, several blocks and a tail.
const size_t kCounts[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 3 * 1024 + 17, 10000};

// Checks |x − x̂| ≤ s/2 for a blockwise codec, s read from the buffer and checked against
// absmax/qmax. f32 rounding (of 1/s, x/s and q·s) adds at most a few ulps of the block's absmax:
// 8ε·absmax covers it with room.
void ExpectBlockwiseBound(Codec codec, int block_size, absl::Span<const float> x, const std::string& bytes) {
  const std::vector<float> y = DecodeAll(bytes);
  ASSERT_EQ(y.size(), x.size());
  for (size_t start = 0, b = 0; start < x.size(); start += block_size, ++b) {
    const size_t end = std::min(x.size(), start + block_size);
    float absmax = 0;
    for (size_t i = start; i < end; ++i) absmax = std::max(absmax, std::fabs(x[i]));
    const float s = ScaleOf(bytes, b);
    if (absmax < 0x1p-100f) {
      EXPECT_EQ(s, 0.0f);
      for (size_t i = start; i < end; ++i) EXPECT_EQ(y[i], 0.0f);
      continue;
    }
    EXPECT_NEAR(s, absmax / QMax(codec), 2 * kEps * absmax / QMax(codec)) << "block " << b;
    const float bound = s / 2 + 8 * kEps * absmax;
    for (size_t i = start; i < end; ++i) {
      ASSERT_LE(std::fabs(x[i] - y[i]), bound) << CodecName(codec) << " block " << b << " i " << i << " x " << x[i];
    }
  }
}

class BlockwiseTest : public ::testing::TestWithParam<std::tuple<Codec, int>> {};

TEST_P(BlockwiseTest, ErrorWithinHalfAScalePerElement) {
  const auto [codec, block_size] = GetParam();
  for (size_t n : kCounts) {
    const std::vector<float> x = DeltaLike(n, n + 1);
    absl::StatusOr<std::string> bytes = Encode(codec, x, block_size);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<size_t> size = EncodedSize(codec, n, block_size);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(bytes->size(), *size) << n;
    ExpectBlockwiseBound(codec, block_size == 0 ? DefaultBlockSize(codec) : block_size, x, *bytes);
  }
}

TEST_P(BlockwiseTest, ExtremesOfTheGridAreExactAndZeroBlocksStayZero) {
  const auto [codec, block_size_param] = GetParam();
  const int block_size = block_size_param == 0 ? DefaultBlockSize(codec) : block_size_param;
  // ±absmax hit ±qmax exactly, zeros stay zero, and a block of zeros has scale 0.
  std::vector<float> x(3 * block_size, 0.0f);
  x[0] = 3.0f;
  x[1] = -3.0f;
  x[block_size + 5] = -0.5f;
  absl::StatusOr<std::string> bytes = Encode(codec, x, block_size);
  ASSERT_TRUE(bytes.ok());
  const std::vector<float> y = DecodeAll(*bytes);
  EXPECT_NEAR(y[0], 3.0f, 3 * kEps * 3.0f);
  EXPECT_NEAR(y[1], -3.0f, 3 * kEps * 3.0f);
  EXPECT_NEAR(y[block_size + 5], -0.5f, 3 * kEps * 0.5f);
  for (size_t i = 2; i < x.size(); ++i) {
    if (i != static_cast<size_t>(block_size) + 5) {
      EXPECT_EQ(y[i], 0.0f) << i;
    }
  }
  EXPECT_EQ(ScaleOf(*bytes, 2), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Codecs, BlockwiseTest,
                         ::testing::Combine(::testing::Values(Codec::kInt8, Codec::kInt4),
                                            ::testing::Values(0, 32, 64, 256, 4096)),
                         [](const auto& info) {
                           return absl::StrCat(CodecName(std::get<0>(info.param)), "_block", std::get<1>(info.param));
                         });

TEST(EncodedTest, F32IsExactBitForBit) {
  std::vector<float> x = DeltaLike(1000, 3);
  x[5] = -0.0f;
  x[6] = std::numeric_limits<float>::denorm_min();
  x[7] = std::bit_cast<float>(0x7fc01234u);  // a NaN with a payload
  x[8] = -kInf;
  const std::string bytes = Encode(Codec::kF32, x);
  EXPECT_EQ(bytes.size(), kHeaderSize + 4 * x.size());
  const std::vector<float> y = DecodeAll(bytes);
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), 4 * x.size()), 0);
}

TEST(EncodedTest, Bf16RelativeErrorAndRoundingMatchTheTensorConversion) {
  const std::vector<float> x = DeltaLike(10000, 4);
  const std::string bytes = Encode(Codec::kBf16, x);
  EXPECT_EQ(bytes.size(), kHeaderSize + 2 * x.size());
  const std::vector<float> y = DecodeAll(bytes);
  for (size_t i = 0; i < x.size(); ++i) {
    // Round to nearest with 8 significant bits: half an ulp, at most 2^-8 of |x| (normal x).
    ASSERT_LE(std::fabs(x[i] - y[i]), 0x1p-8f * std::fabs(x[i])) << i;
  }
  // Bit for bit as pcp::FloatToBFloat16 (the tensor library's conversion), over a sweep of
  // all f32 bit patterns: signs, subnormals, ties, the overflow edge, ±inf and NaNs.
  std::vector<float> sweep;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4093) sweep.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x00008000u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu, 0x7f800000u,
                     0xff800000u, 0x7f800001u, 0xffffffffu, 0x7fa00000u}) {
    sweep.push_back(std::bit_cast<float>(u));
  }
  const std::string swept = Encode(Codec::kBf16, sweep);
  const std::vector<float> back = DecodeAll(swept);
  for (size_t i = 0; i < sweep.size(); ++i) {
    uint16_t got;
    std::memcpy(&got, swept.data() + kHeaderSize + 2 * i, 2);
    ASSERT_EQ(got, FloatToBFloat16(sweep[i])) << std::hex << std::bit_cast<uint32_t>(sweep[i]);
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), static_cast<uint32_t>(got) << 16);
  }
}

TEST(EncodedTest, SizesMatchEncodedSizeAndTheLayout) {
  for (const auto& [codec, name] : kCodecNames) {
    if (IsSparse(codec)) continue;  // sizes depend on the data: sparse_test.cc
    for (size_t n : kCounts) {
      const std::vector<float> x(n, 1.0f);
      EXPECT_EQ(Encode(codec, x).size(), EncodedSize(codec, n)) << name << " " << n;
    }
  }
  EXPECT_EQ(EncodedSize(Codec::kInt8, 2049), 16 + 4 * 3 + 2049);
  EXPECT_EQ(EncodedSize(Codec::kInt4, 129), 16 + 4 * 3 + 65);
  EXPECT_EQ(EncodedSize(Codec::kBf16, 7), 16 + 14);
  EXPECT_EQ(EncodedSize(Codec::kF32, 0), 16);
  EXPECT_EQ(EncodedSize(Codec::kInt8, 0), 16);
  EXPECT_EQ(EncodedSize(Codec::kInt4, 7, 48).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EncodedTest, HeaderSaysWhatWasEncoded) {
  const std::vector<float> x = DeltaLike(300, 5);
  absl::StatusOr<std::string> bytes = Encode(Codec::kInt4, x, 128);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 4), std::string("PCQ\x01", 4));
  absl::StatusOr<EncodedHeader> header = ReadHeader(*bytes);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->codec, Codec::kInt4);
  EXPECT_EQ(header->block_size, 128);
  EXPECT_EQ(header->count, 300u);
  header = ReadHeader(Encode(Codec::kBf16, x));
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->block_size, 0);
}

TEST(EncodedTest, EncodeIntoACallersBufferOfTheExactSize) {
  const std::vector<float> x = DeltaLike(1500, 6);
  for (const auto& [codec, name] : kCodecNames) {
    if (IsSparse(codec)) {  // sizes depend on the data: refused
      std::vector<char> buffer(EncodedSize(codec, x.size()));
      EXPECT_EQ(EncodeInto(codec, x, 0, absl::MakeSpan(buffer)).code(), absl::StatusCode::kInvalidArgument) << name;
      continue;
    }
    std::vector<char> buffer(EncodedSize(codec, x.size()) + 1);
    // Unaligned on purpose: received and sent buffers have any alignment.
    absl::Span<char> out = absl::MakeSpan(buffer.data() + 1, buffer.size() - 1);
    ASSERT_TRUE(EncodeInto(codec, x, 0, out).ok()) << name;
    EXPECT_EQ(absl::string_view(out.data(), out.size()), Encode(codec, x)) << name;
    std::vector<float> y(x.size());
    ASSERT_TRUE(Decode(absl::string_view(out.data(), out.size()), absl::MakeSpan(y)).ok());
    absl::Status wrong = EncodeInto(codec, x, 0, out.subspan(1));
    EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_EQ(EncodeInto(Codec::kInt8, x, 100, absl::Span<char>()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Encode(Codec::kF32, x, 64).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EncodedTest, NonFiniteValuesStayNonFiniteThroughEveryCodec) {
  for (const auto& [codec, name] : kCodecNames) {
    for (float bad : {kNaN, kInf, -kInf}) {
      std::vector<float> x = DeltaLike(3000, 7);
      x[1500] = bad;
      const std::vector<float> y = DecodeAll(Encode(codec, x));
      EXPECT_FALSE(std::isfinite(y[1500])) << name << " " << bad;
      if (codec == Codec::kF32 || codec == Codec::kBf16) {
        if (std::isnan(bad)) {
          EXPECT_TRUE(std::isnan(y[1500]));
        } else {
          EXPECT_EQ(y[1500], bad);
        }
        continue;
      }
      // Blockwise: the whole block is NaN, every other block decodes within its bound.
      const size_t block = DefaultBlockSize(codec);
      const size_t first = 1500 / block * block;
      for (size_t i = 0; i < x.size(); ++i) {
        if (i >= first && i < first + block) {
          ASSERT_TRUE(std::isnan(y[i])) << name << " " << i;
        } else {
          ASSERT_TRUE(std::isfinite(y[i])) << name << " " << i;
        }
      }
    }
  }
  // bf16 rounds values beyond its range to ±inf.
  const std::vector<float> y = DecodeAll(Encode(Codec::kBf16, std::vector<float>{3.4e38f, -3.4e38f}));
  EXPECT_EQ(y[0], kInf);
  EXPECT_EQ(y[1], -kInf);
}

TEST(EncodedTest, TinyAndHugeBlocks) {
  for (Codec codec : {Codec::kInt8, Codec::kInt4}) {
    const size_t block = DefaultBlockSize(codec);
    std::vector<float> x(3 * block);
    for (size_t i = 0; i < block; ++i) x[i] = (i % 2 ? 1 : -1) * 1e-35f * static_cast<float>(i);  // absmax < 2^-100
    for (size_t i = block; i < 2 * block; ++i) x[i] = 0x1p-99f * static_cast<float>(i - block) / block;  // just above
    for (size_t i = 2 * block; i < 3 * block; ++i) x[i] = (i % 2 ? 1 : -1) * 3e38f;                      // near FLT_MAX
    const std::string bytes = Encode(codec, x);
    ExpectBlockwiseBound(codec, block, x, bytes);
    for (float v : DecodeAll(bytes)) EXPECT_TRUE(std::isfinite(v)) << CodecName(codec);
  }
}

TEST(EncodedTest, DecodeAddIsDecodeThenAxpy) {
  const std::vector<float> x = DeltaLike(5000, 8);
  const std::vector<float> start = DeltaLike(5000, 9);
  for (const auto& [codec, name] : kCodecNames) {
    for (float weight : {1.0f, -1.0f, 0.375f, 1e-3f}) {
      const std::string bytes = Encode(codec, x);
      std::vector<float> acc = start;
      ASSERT_TRUE(DecodeAdd(bytes, weight, absl::MakeSpan(acc)).ok());
      const std::vector<float> y = DecodeAll(bytes);
      for (size_t i = 0; i < x.size(); ++i) {
        const float product = weight * y[i];
        const float expected = start[i] + product;
        // Equal but for the product's rounding, which an FMA skips: the exact sums differ by at
        // most ε·|w·x̂|, and each is then rounded once (an ulp of the sum, 2ε·|sum|).
        ASSERT_LE(std::fabs(acc[i] - expected), kEps * std::fabs(product) + 2 * kEps * std::fabs(expected))
            << name << " " << i;
      }
    }
  }
}

TEST(EncodedTest, DecodeAddAccumulatesAWeightedSumOfSeveralBuffers) {
  // What the shepherd will do: sum_k w_k · Δ̂_k, one buffer at a time.
  const size_t n = 4096;
  std::vector<float> acc(n, 0.0f);
  std::vector<double> expected(n, 0.0), magnitude(n, 0.0);
  for (int k = 0; k < 3; ++k) {
    const std::vector<float> x = DeltaLike(n, 20 + k);
    const std::string bytes = Encode(Codec::kInt8, x);
    const std::vector<float> y = DecodeAll(bytes);
    ASSERT_TRUE(DecodeAdd(bytes, 1.0f / 3, absl::MakeSpan(acc)).ok());
    for (size_t i = 0; i < n; ++i) {
      expected[i] += (1.0 / 3) * y[i];
      magnitude[i] += std::fabs(y[i]) / 3;
    }
  }
  // Three f32 products and sums, each rounded: a few ε of the terms' magnitudes.
  for (size_t i = 0; i < n; ++i) ASSERT_NEAR(acc[i], expected[i], 8 * kEps * magnitude[i]);
}

}  // namespace
}  // namespace pcp::codec

namespace pcp::codec {
namespace {

// The sender's DecodedSumOfSquares is the receiver's: the sum of squares of what Decode gives
// for the encoded buffer (bit-exact values; only the summation order may differ).
TEST(DecodedSumOfSquaresTest, MatchesWhatTheReceiverDecodes) {
  const std::vector<float> values = testing::DeltaLike(3'000'001, 7);  // not a whole number of blocks
  for (const auto& [codec, name] : kCodecNames) {
    absl::StatusOr<double> sent = DecodedSumOfSquares(codec, values);
    ASSERT_TRUE(sent.ok()) << name << ": " << sent.status();
    const std::vector<float> decoded = DecodeAll(Encode(codec, values));
    double received = 0;
    for (float v : decoded) received += static_cast<double>(v) * v;
    EXPECT_NEAR(*sent, received, 1e-12 * received) << name;
  }
  EXPECT_FALSE(DecodedSumOfSquares(Codec::kInt8, values, 3).ok());  // invalid block size
  const std::vector<float> bad = {1, kNaN};
  EXPECT_FALSE(std::isfinite(*DecodedSumOfSquares(Codec::kF32, bad)));
}

// The f32 sum is pcp::SumOfSquares's, bit for bit; every codec's stays within summation-order
// rounding of an exact (long double, left to right) sum of the decoded values; an f32 Δ holding
// -inf sums to +inf.
TEST(DecodedSumOfSquaresTest, PartialSumsMatchAnExactSum) {
  const std::vector<float> values = testing::DeltaLike(1'000'003, 11);
  EXPECT_EQ(*DecodedSumOfSquares(Codec::kF32, values), SumOfSquares(values));
  for (const auto& [codec, name] : kCodecNames) {
    absl::StatusOr<double> sent = DecodedSumOfSquares(codec, values);
    ASSERT_TRUE(sent.ok()) << name << ": " << sent.status();
    long double exact = 0;
    for (float v : DecodeAll(Encode(codec, values))) exact += static_cast<long double>(v) * v;
    EXPECT_NEAR(*sent, static_cast<double>(exact), 1e-13 * static_cast<double>(exact)) << name;
  }
  std::vector<float> inf = values;
  inf[999'999] = -std::numeric_limits<float>::infinity();
  const absl::StatusOr<double> s = DecodedSumOfSquares(Codec::kF32, inf);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::isinf(*s));
}

}  // namespace
}  // namespace pcp::codec
