// The sparse codecs (topk2, topk4, topk8): which values a block keeps and how they decode, the
// two index forms, the sizes against f32, that whole blocks encode alone as in a whole buffer
// (so chunked streams and error feedback agree), error feedback's residual, and malformed
// buffers refused with InvalidArgument before anything is written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codec_data.h"
#include "gtest/gtest.h"
#include "pcp/codec/encoded.h"
#include "pcp/codec/error_feedback.h"

namespace pcp::codec {
namespace {

using testing::DeltaLike;

constexpr Codec kSparse[] = {Codec::kTopk2, Codec::kTopk4, Codec::kTopk8};

std::vector<float> DecodeAll(absl::string_view bytes) {
  absl::StatusOr<EncodedHeader> h = ReadHeader(bytes);
  EXPECT_TRUE(h.ok()) << h.status();
  std::vector<float> out(h.ok() ? h->count : 0, 7.0f);
  EXPECT_TRUE(Decode(bytes, absl::MakeSpan(out)).ok());
  return out;
}

std::string Enc(Codec codec, const std::vector<float>& x, int block, double density) {
  absl::StatusOr<std::string> b = Encode(codec, x, block, density);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : std::string();
}

// Per block: exactly ceil(density·m) values are non-zero, they are the largest by |x| (any
// value left out is no larger than the smallest kept), each has x's sign and is within half a
// level (absmax/L/2) of |x| or on level 1 (|x| below it).
TEST(SparseTest, KeepsTheLargestOfEachBlockWithTheirSigns) {
  const size_t n = 3 * 4096 + 1000;
  const std::vector<float> x = DeltaLike(n, 3);
  for (Codec codec : kSparse) {
    for (double density : {0.01, 0.03, 0.25}) {
      const std::vector<float> y = DecodeAll(Enc(codec, x, 0, density));
      const int levels = 1 << (PayloadBits(codec) - 1);
      for (size_t start = 0; start < n; start += 4096) {
        const size_t m = std::min<size_t>(4096, n - start);
        const size_t k = static_cast<size_t>(std::ceil(density * m));
        size_t kept = 0;
        float absmax = 0, smallest_kept = std::numeric_limits<float>::max(), largest_dropped = 0;
        for (size_t i = start; i < start + m; ++i) absmax = std::max(absmax, std::fabs(x[i]));
        for (size_t i = start; i < start + m; ++i) {
          if (y[i] == 0) {
            largest_dropped = std::max(largest_dropped, std::fabs(x[i]));
            continue;
          }
          ++kept;
          smallest_kept = std::min(smallest_kept, std::fabs(x[i]));
          EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
          const float s = absmax / levels;
          EXPECT_TRUE(std::fabs(std::fabs(y[i]) - std::fabs(x[i])) <= s / 2 * 1.0001f || std::fabs(y[i]) == s)
              << CodecName(codec) << " " << i << " x " << x[i] << " y " << y[i];
        }
        EXPECT_EQ(kept, k) << CodecName(codec) << " density " << density << " block at " << start;
        EXPECT_LE(largest_dropped, smallest_kept);
      }
    }
  }
}

// Ties at the threshold: of the values whose |x| equals the want-th largest, the first ones by
// position are kept until want (some of them, all of them, or none when the rest fill want);
// zeros never are. 100 values at density 0.05: want 5.
TEST(SparseTest, TiesAtTheThresholdKeepTheFirstByPosition) {
  struct Case {
    std::vector<std::pair<size_t, float>> set;  // position, value; the rest 0 or `fill`
    float fill;
    std::vector<size_t> kept;
  };
  const std::vector<Case> cases = {
      // Two above, ten equal (signs mixed): the first three equal ones.
      {{{50, 3.0f}, {90, -3.0f}, {5, 1.0f}, {7, -1.0f}, {20, 1.0f}, {21, 1.0f}, {60, -1.0f}}, 0.0f, {5, 7, 20, 50, 90}},
      // Four above, one equal: all equal ones kept.
      {{{1, 4.0f}, {2, 4.0f}, {3, 4.0f}, {4, 4.0f}, {99, 2.0f}}, 0.5f, {1, 2, 3, 4, 99}},
      // Every value equal: the first five.
      {{}, -0.25f, {0, 1, 2, 3, 4}},
      // Two non-zero values: they, and no zero.
      {{{10, 1.0f}, {11, -2.0f}}, 0.0f, {10, 11}},
  };
  for (Codec codec : kSparse) {
    for (size_t c = 0; c < cases.size(); ++c) {
      std::vector<float> x(100, cases[c].fill);
      for (const auto& [at, v] : cases[c].set) x[at] = v;
      if (c == 0) {
        for (size_t i = 30; i < 36; ++i) x[i] = 1.0f;  // more equal ones after the kept three
      }
      const std::vector<float> y = DecodeAll(Enc(codec, x, 0, 0.05));
      std::vector<size_t> kept;
      for (size_t i = 0; i < y.size(); ++i) {
        if (y[i] != 0) kept.push_back(i);
      }
      EXPECT_EQ(kept, cases[c].kept) << CodecName(codec) << " case " << c;
    }
  }
}

TEST(SparseTest, BytesAgainstF32AndTheIndexForms) {
  const size_t n = size_t{1} << 20;
  const std::vector<float> x = DeltaLike(n, 5);
  const double f32 = 4.0 * n;
  // At 3% and 1.5%, 2-bit values with Rice-coded positions: more than 100× fewer bytes than f32.
  const std::string s3 = Enc(Codec::kTopk2, x, 0, 0.03);
  const size_t at3 = s3.size();
  const size_t at15 = Enc(Codec::kTopk2, x, 0, 0.015).size();
  EXPECT_GT(f32 / at3, 100.0) << at3;
  EXPECT_GT(f32 / at15, 180.0) << at15;
  EXPECT_LE(at3, *EncodedSize(Codec::kTopk2, n, 0, 0.03));  // the most, with bitmaps
  // Rice with r = 0 is a bitmap without its trailing zeros, so the bitmap is chosen on a tie:
  // a block that keeps its last value (all of them, at density 1).
  const std::string full = Enc(Codec::kTopk2, x, 0, 1.0);
  uint32_t word;
  std::memcpy(&word, full.data() + kHeaderSize, 4);
  EXPECT_EQ(word & (1u << 17), 0u);
  EXPECT_EQ(full.size(), kHeaderSize + 256 * (8 + 512 + 4096 * 2 / 8));
  std::memcpy(&word, s3.data() + kHeaderSize, 4);
  EXPECT_NE(word & (1u << 17), 0u);  // sparse blocks use Rice
  // Everything (density 1) keeps every non-zero value.
  const std::vector<float> all = DecodeAll(Enc(Codec::kTopk8, x, 0, 1.0));
  for (size_t i = 0; i < 5000; ++i) EXPECT_EQ(all[i] == 0, x[i] == 0) << i;
}

// A buffer split at block boundaries encodes as its parts: the bodies concatenate.
TEST(SparseTest, WholeBlocksEncodeAsInTheWholeBuffer) {
  const std::vector<float> x = DeltaLike(5 * 512 + 77, 9);
  const std::string whole = Enc(Codec::kTopk4, x, 512, 0.05);
  const std::vector<float> a(x.begin(), x.begin() + 2 * 512), b(x.begin() + 2 * 512, x.end());
  const std::string pa = Enc(Codec::kTopk4, a, 512, 0.05), pb = Enc(Codec::kTopk4, b, 512, 0.05);
  EXPECT_EQ(whole.substr(kHeaderSize), pa.substr(kHeaderSize) + pb.substr(kHeaderSize));
}

// Decode-add touches only the kept values; Decode zeroes the rest.
TEST(SparseTest, DecodeAddIsAScatterAdd) {
  const std::vector<float> x = DeltaLike(10000, 4);
  const std::string bytes = Enc(Codec::kTopk2, x, 0, 0.02);
  const std::vector<float> y = DecodeAll(bytes);
  std::vector<float> acc(x.size(), 1.0f);
  ASSERT_TRUE(DecodeAdd(bytes, 0.5f, absl::MakeSpan(acc)).ok());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(acc[i], y[i] == 0 ? 1.0f : 1.0f + 0.5f * y[i]) << i;
}

TEST(SparseTest, NonFiniteAndTinyBlocks) {
  std::vector<float> x = DeltaLike(3 * 4096, 6);
  x[5000] = std::numeric_limits<float>::infinity();
  for (size_t i = 8192; i < 3 * 4096; ++i) x[i] = 1e-35f;
  const std::vector<float> y = DecodeAll(Enc(Codec::kTopk2, x, 0, 0.02));
  for (size_t i = 4096; i < 8192; ++i) ASSERT_TRUE(std::isnan(y[i])) << i;
  for (size_t i = 8192; i < 3 * 4096; ++i) ASSERT_EQ(y[i], 0.0f) << i;
  for (size_t i = 0; i < 4096; ++i) ASSERT_TRUE(std::isfinite(y[i])) << i;
}

TEST(SparseTest, BadDensityIsRefused) {
  const std::vector<float> x = DeltaLike(100, 1);
  for (double d : {-0.1, 1.5, 1e-9, std::nan("")}) {
    EXPECT_EQ(Encode(Codec::kTopk2, x, 0, d).status().code(), absl::StatusCode::kInvalidArgument) << d;
    ErrorFeedback feedback;
    EXPECT_EQ(feedback.EncodeWithFeedback(Codec::kTopk2, x, 0, d).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// With error feedback what is not sent is sent later: over rounds the sum of what was decoded
// tracks the sum of the Δs up to the one residual; without it most of the mass is lost.
TEST(SparseTest, ErrorFeedbackSendsWhatWasLeftOut) {
  const size_t n = 8192;
  ErrorFeedback feedback;
  std::vector<double> sent(n, 0.0), total(n, 0.0), plain(n, 0.0);
  for (int round = 0; round < 60; ++round) {
    const std::vector<float> d = DeltaLike(n, 100 + round);
    absl::StatusOr<std::string> bytes = feedback.EncodeWithFeedback(Codec::kTopk2, d, 0, 0.03);
    ASSERT_TRUE(bytes.ok());
    const std::vector<float> y = DecodeAll(*bytes), z = DecodeAll(Enc(Codec::kTopk2, d, 0, 0.03));
    for (size_t i = 0; i < n; ++i) {
      sent[i] += y[i];
      plain[i] += z[i];
      total[i] += d[i];
    }
  }
  double err = 0, err_plain = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    const double residual = feedback.residual()[i];
    EXPECT_NEAR(sent[i] + residual, total[i], 1e-3 * (std::fabs(total[i]) + 1e-3)) << i;
    err += (sent[i] - total[i]) * (sent[i] - total[i]);
    err_plain += (plain[i] - total[i]) * (plain[i] - total[i]);
    norm += total[i] * total[i];
  }
  EXPECT_LT(err, err_plain / 4) << "feedback " << std::sqrt(err / norm) << " plain " << std::sqrt(err_plain / norm);
}

// ---------------------------------------------------------------- malformed

void ExpectRefused(const std::string& bytes, size_t n, absl::string_view what) {
  std::vector<float> out(n, 7.0f);
  absl::Status s = Decode(bytes, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(what), absl::string_view::npos) << "\"" << s.message() << "\" lacks \"" << what << "\"";
  for (float v : out) ASSERT_EQ(v, 7.0f);
  std::vector<float> acc(n, 7.0f);
  s = DecodeAdd(bytes, 0.5f, absl::MakeSpan(acc));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (float v : acc) ASSERT_EQ(v, 7.0f);
}

uint32_t Word(const std::string& b, size_t at) {
  uint32_t w;
  std::memcpy(&w, b.data() + at, 4);
  return w;
}
void SetWord(std::string& b, size_t at, uint32_t w) { std::memcpy(b.data() + at, &w, 4); }

TEST(SparseMalformedTest, TruncatedAtEveryLengthAndExtended) {
  const size_t n = 300;
  for (Codec codec : kSparse) {
    for (double density : {0.03, 1.0}) {  // Rice and bitmap
      const std::string bytes = Enc(codec, DeltaLike(n, 11), 64, density);
      for (size_t len = 0; len < bytes.size(); ++len) {
        SCOPED_TRACE(absl::StrCat(CodecName(codec), " truncated to ", len));
        std::vector<float> out(n, 7.0f);
        EXPECT_EQ(Decode(bytes.substr(0, len), absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument);
        for (float v : out) ASSERT_EQ(v, 7.0f);
      }
      // At density 1 every block is as large as a block can be: the header's check refuses it.
      ExpectRefused(bytes + '\0', n, density < 1 ? "after the last block" : "cannot take");
    }
  }
}

TEST(SparseMalformedTest, BlockFields) {
  const size_t n = 200;  // blocks of 64: 64, 64, 64, 8
  const std::string rice = Enc(Codec::kTopk2, DeltaLike(n, 12), 64, 0.05);
  const std::string bitmap = Enc(Codec::kTopk2, DeltaLike(n, 12), 64, 1.0);
  const size_t first = kHeaderSize;
  ASSERT_NE(Word(rice, first) & (1u << 17), 0u);
  ASSERT_EQ(Word(bitmap, first) & (1u << 17), 0u);
  {
    std::string b = bitmap;  // k above the block
    SetWord(b, first, 65);
    ExpectRefused(b, n, "keeps 65 values of 64");
  }
  {
    std::string b = bitmap;  // k one more than the bitmap's set bits
    SetWord(b, first, 63);
    ExpectRefused(b, n, "more set bits");
  }
  {
    std::string b = bitmap;  // reserved bits
    SetWord(b, first, Word(b, first) | (1u << 30));
    ExpectRefused(b, n, "reserved bits");
  }
  {
    std::string b = bitmap;  // a NaN scale with values
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(b.data() + first + 4, &nan, 4);
    ExpectRefused(b, n, "NaN scale");
  }
  {
    std::string b = bitmap;  // a negative scale
    const float neg = -1.0f;
    std::memcpy(b.data() + first + 4, &neg, 4);
    ExpectRefused(b, n, "scale -1");
  }
  {
    std::string b = rice;  // a Rice parameter above 16
    SetWord(b, first, (Word(b, first) & ~(31u << 18)) | (17u << 18));
    ExpectRefused(b, n, "Rice parameter 17");
  }
  {
    std::string b = rice;  // gaps that run past the block: the first index's unary part all ones
    const uint32_t w = Word(b, first);
    SetWord(b, first, (w & ~(31u << 18)) | (6u << 18));  // r = 6: quotients count 64s
    for (size_t i = first + 8; i < first + 12; ++i) b[i] = static_cast<char>(0xff);
    std::vector<float> out(n, 7.0f);
    const absl::Status s = Decode(b, absl::MakeSpan(out));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(s.message().find("not below 64") != absl::string_view::npos ||
                s.message().find("past the end") != absl::string_view::npos)
        << s;
  }
  {
    // The last block holds 8 values: a bitmap byte past them is refused. Built by hand: a
    // header, three empty blocks and a last one keeping value 9 of 8.
    std::string b = bitmap.substr(0, kHeaderSize);
    for (int block = 0; block < 3; ++block) b += std::string(8, '\0');
    std::string last(8, '\0');
    SetWord(last, 0, 1);
    const float one = 1.0f;
    std::memcpy(last.data() + 4, &one, 4);
    b += last;
    b += std::string(1, '\0');  // bitmap of the 8 values: nothing set (popcount 0 ≠ 1)
    b += std::string(1, '\0');  // one 2-bit code
    ExpectRefused(b, n, "0 set bits for 1 values");
  }
}

TEST(SparseMalformedTest, RandomBytesAfterAValidHeaderNeverCrash) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 3000; ++trial) {
    const Codec codec = kSparse[rng() % 3];
    const size_t n = rng() % 400;
    std::string b = Enc(codec, DeltaLike(n, trial), 32, 0.1 + 0.4 * (trial % 2));
    for (size_t i = kHeaderSize; i < b.size(); ++i) {
      if (rng() % 4 == 0) b[i] = static_cast<char>(rng());
    }
    std::vector<float> out(n, 7.0f);
    absl::Status s = Decode(b, absl::MakeSpan(out));
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument) << s;
    if (!s.ok()) {
      for (float v : out) ASSERT_EQ(v, 7.0f);
    }
  }
}

}  // namespace
}  // namespace pcp::codec
