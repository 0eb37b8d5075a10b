// Malformed encoded buffers: every one is InvalidArgument naming what is wrong, never a crash
// or a read out of bounds, and a failed decode-add leaves the accumulator as it was.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codec_data.h"
#include "gtest/gtest.h"
#include "pcp/codec/encoded.h"

namespace pcp::codec {
namespace {

using testing::DeltaLike;

// Decode and DecodeAdd of `bytes` into `n` values both fail with InvalidArgument whose
// message contains `what`; the accumulator is untouched.
void ExpectRefused(const std::string& bytes, size_t n, absl::string_view what) {
  std::vector<float> out(n, 7.0f);
  absl::Status s = Decode(bytes, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(what), absl::string_view::npos) << "\"" << s.message() << "\" lacks \"" << what << "\"";
  std::vector<float> acc(n, 7.0f);
  s = DecodeAdd(bytes, 0.5f, absl::MakeSpan(acc));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (float v : acc) ASSERT_EQ(v, 7.0f);
}

std::string Encoded(Codec codec, size_t n, int block_size = 0) {
  absl::StatusOr<std::string> bytes = Encode(codec, DeltaLike(n, 11), block_size);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

void SetCount(std::string& bytes, uint64_t count) { std::memcpy(bytes.data() + 8, &count, sizeof count); }
void SetScale(std::string& bytes, size_t block, float s) {
  std::memcpy(bytes.data() + kHeaderSize + 4 * block, &s, sizeof s);
}

TEST(MalformedTest, TruncatedAtEveryLengthAndExtended) {
  for (const auto& [codec, name] : kCodecNames) {
    if (IsSparse(codec)) continue;  // their messages differ: sparse_test.cc
    const size_t n = 101;
    const std::string bytes = Encoded(codec, n, IsBlockwise(codec) ? 32 : 0);
    for (size_t len = 0; len < bytes.size(); ++len) {
      SCOPED_TRACE(absl::StrCat(name, " truncated to ", len));
      ExpectRefused(bytes.substr(0, len), n, len < kHeaderSize ? "shorter than its 16-byte header" : "truncated");
    }
    ExpectRefused(bytes + '\0', n, "needs");
  }
}

TEST(MalformedTest, HeaderFields) {
  const size_t n = 300;
  const std::string good = Encoded(Codec::kInt8, n, 64);
  {
    std::string b = good;
    b[0] = 'X';
    ExpectRefused(b, n, "expected \"PCQ\"");
  }
  {
    std::string b = good;
    b[3] = 2;
    ExpectRefused(b, n, "format version 2");
  }
  for (int id : {7, 17, 255}) {
    std::string b = good;
    b[4] = static_cast<char>(id);
    ExpectRefused(b, n, absl::StrCat("unknown codec id ", id));
  }
  for (int byte : {6, 7}) {
    std::string b = good;
    b[byte] = 1;
    ExpectRefused(b, n, "reserved header bytes");
  }
  for (int log2 : {0, 4, 17, 64, 255}) {
    std::string b = good;
    b[5] = static_cast<char>(log2);
    ExpectRefused(b, n, "block size");
  }
  {
    std::string b = Encoded(Codec::kF32, n);
    b[5] = 6;
    ExpectRefused(b, n, "has no blocks");
  }
  {
    // A block size that is valid but not the one written: the scales no longer add up.
    std::string b = good;
    b[5] = 7;
    ExpectRefused(b, n, "needs");
  }
  {
    // Another codec with the same count: the size gives it away.
    std::string b = good;
    b[4] = static_cast<char>(Codec::kInt4);
    ExpectRefused(b, n, "needs");
  }
  for (uint64_t count :
       {uint64_t{n - 1}, uint64_t{n + 1}, uint64_t{1} << 40, uint64_t{1} << 63, std::numeric_limits<uint64_t>::max()}) {
    std::string b = good;
    SetCount(b, count);
    ExpectRefused(b, n, "needs");
  }
}

TEST(MalformedTest, ScalesMustBeFiniteAndNonNegativeOrNaN) {
  for (Codec codec : {Codec::kInt8, Codec::kInt4}) {
    const size_t n = 200;
    const std::string good = Encoded(codec, n, 32);
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), -1.0f,
                      -std::numeric_limits<float>::denorm_min()}) {
      std::string b = good;
      SetScale(b, 6, bad);  // the last block (200 = 6 × 32 + 8)
      ExpectRefused(b, n, "scale of block 6");
    }
    // A NaN scale is the mark of a block that held a non-finite value: it decodes to NaN.
    std::string b = good;
    SetScale(b, 1, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> out(n);
    ASSERT_TRUE(Decode(b, absl::MakeSpan(out)).ok());
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(std::isnan(out[i]), i >= 32 && i < 64) << i;
  }
}

TEST(MalformedTest, OutputOfTheWrongSizeAndBadWeights) {
  const std::string bytes = Encoded(Codec::kBf16, 50);
  std::vector<float> out(49);
  absl::Status s = Decode(bytes, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("holds 50 values; the output has 49"), absl::string_view::npos) << s;
  std::vector<float> acc(50, 1.0f);
  for (float w : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    s = DecodeAdd(bytes, w, absl::MakeSpan(acc));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("weight"), absl::string_view::npos) << s;
  }
  for (float v : acc) EXPECT_EQ(v, 1.0f);
}

TEST(MalformedTest, CraftedCodesOutsideTheEncodersGridStillDecode) {
  // int8 −128 and int4 −8 are never written, but a buffer holding them is well-formed: they
  // decode to −128·s and −8·s.
  std::string b8 = Encoded(Codec::kInt8, 40, 32);
  const float s8 = [&] {
    float s;
    std::memcpy(&s, b8.data() + kHeaderSize, sizeof s);
    return s;
  }();
  b8[kHeaderSize + 8 + 3] = static_cast<char>(-128);
  std::vector<float> out(40);
  ASSERT_TRUE(Decode(b8, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out[3], -128 * s8);
  std::string b4 = Encoded(Codec::kInt4, 40, 32);
  b4[kHeaderSize + 8] = static_cast<char>(0x88);  // values 0 and 16 of block 0
  ASSERT_TRUE(Decode(b4, absl::MakeSpan(out)).ok());
  float s4;
  std::memcpy(&s4, b4.data() + kHeaderSize, sizeof s4);
  EXPECT_EQ(out[0], -8 * s4);
  EXPECT_EQ(out[16], -8 * s4);
}

TEST(MalformedTest, RandomBytesAfterAValidHeaderNeverCrash) {
  // Valid headers with random scales and payloads: decoding returns OK or InvalidArgument.
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 2000; ++trial) {
    const Codec codec = static_cast<Codec>(rng() % kNumCodecs);
    const size_t n = rng() % 300;
    std::string b = Encoded(codec, n, IsBlockwise(codec) ? 32 : 0);
    for (size_t i = kHeaderSize; i < b.size(); ++i) b[i] = static_cast<char>(rng());
    std::vector<float> out(n);
    absl::Status s = Decode(b, absl::MakeSpan(out));
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument) << s;
  }
}

}  // namespace
}  // namespace pcp::codec
