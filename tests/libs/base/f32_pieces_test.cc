// F32Pieces (values read where byte pieces hold them, split anywhere) and SquareBytes (their
// sum of squares fed as bytes): the values and the sum come out the same, bit for bit, as
// from one array, whatever the split: every byte offset within a value, pieces shorter than
// a value, empty pieces.
#include "pcp/base/f32_pieces.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/testing/byte_pieces.h"

namespace pcp {
namespace {

// n values of mixed magnitudes (so that the summation order shows in the low bits).
std::vector<float> Values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  return v;
}

absl::string_view BytesOf(const std::vector<float>& v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

using ::pcp::testing::CutBytes;

// The values [begin, end) as ForEachRun hands them out, checking that the runs come in order
// and that a value split between pieces comes alone.
std::vector<float> Collect(const F32Pieces& values, size_t begin, size_t end) {
  std::vector<float> out;
  values.ForEachRun(begin, end, [&](size_t index, const char* bytes, size_t count) {
    EXPECT_EQ(index, begin + out.size());
    EXPECT_GT(count, 0u);
    for (size_t j = 0; j < count; ++j) out.push_back(F32Pieces::Load(bytes, j));
  });
  return out;
}

bool SameBits(const std::vector<float>& a, const float* b, size_t n) {
  return a.size() == n && std::memcmp(a.data(), b, n * sizeof(float)) == 0;
}
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

double SquareBytesOf(const std::vector<absl::string_view>& pieces) {
  SquareBytes squares;
  for (absl::string_view p : pieces) squares.Add(p.data(), p.size());
  return squares.Finish();
}

TEST(F32PiecesTest, OneArrayIsOneRun) {
  const std::vector<float> v = Values(37, 1);
  const F32Pieces values(absl::MakeConstSpan(v));
  EXPECT_EQ(values.size(), 37u);
  int runs = 0;
  values.ForEachRun(0, 37, [&](size_t index, const char* bytes, size_t count) {
    ++runs;
    EXPECT_EQ(index, 0u);
    EXPECT_EQ(count, 37u);
    EXPECT_EQ(bytes, reinterpret_cast<const char*>(v.data()));  // read in place
  });
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(SameBits(values.ToVector(), v.data(), v.size()));
}

TEST(F32PiecesTest, TwoPiecesCutAtEveryByte) {
  // 37 values: two whole groups of 16 (SquareBytes) and a tail of 5.
  const std::vector<float> v = Values(37, 2);
  const double want = SumOfSquares(v);
  for (size_t cut = 0; cut <= v.size() * 4; ++cut) {
    const std::vector<absl::string_view> pieces = CutBytes(BytesOf(v), {cut});
    const F32Pieces values(pieces);
    ASSERT_EQ(values.size(), v.size());
    ASSERT_TRUE(SameBits(Collect(values, 0, v.size()), v.data(), v.size())) << "cut at byte " << cut;
    ASSERT_TRUE(SameBits(values.ToVector(), v.data(), v.size())) << "cut at byte " << cut;
    ASSERT_TRUE(SameBits(SquareBytesOf(pieces), want)) << "cut at byte " << cut;
    int bounced = 0;
    values.ForEachRun(0, v.size(), [&](size_t index, const char* bytes, size_t count) {
      const char* lies = reinterpret_cast<const char*>(v.data() + index);
      if (bytes != lies) {
        ++bounced;
        EXPECT_EQ(count, 1u);  // a bounce holds one value
        EXPECT_EQ(index, cut / 4);
      }
    });
    EXPECT_EQ(bounced, cut % 4 != 0 ? 1 : 0) << "cut at byte " << cut;
  }
}

TEST(F32PiecesTest, EveryRangeOfPiecesShorterThanAValue) {
  // Pieces of 1, 2, 3, 5, 7 and 0 bytes, repeated: values split over up to three pieces.
  const std::vector<float> v = Values(41, 3);
  std::vector<size_t> cuts;
  const size_t sizes[] = {1, 2, 3, 5, 0, 7};
  for (size_t at = 0, i = 0; at + sizes[i % 6] < v.size() * 4; ++i) {
    at += sizes[i % 6];
    cuts.push_back(at);
  }
  const std::vector<absl::string_view> pieces = CutBytes(BytesOf(v), cuts);
  const F32Pieces values(pieces);
  ASSERT_EQ(values.size(), v.size());
  for (size_t begin = 0; begin <= v.size(); ++begin) {
    for (size_t end = begin; end <= v.size(); ++end) {
      ASSERT_TRUE(SameBits(Collect(values, begin, end), v.data() + begin, end - begin)) << begin << ".." << end;
    }
  }
  EXPECT_TRUE(SameBits(SquareBytesOf(pieces), SumOfSquares(v)));
}

TEST(F32PiecesTest, SquareBytesEqualsSumOfSquaresForEveryShiftOfManyPieces) {
  // Across several groups and every byte offset within a value for each of four cuts.
  const std::vector<float> v = Values(1001, 4);
  const double want = SumOfSquares(v);
  for (size_t shift = 0; shift < 8; ++shift) {
    const std::vector<absl::string_view> pieces =
        CutBytes(BytesOf(v), {1 + shift, 63 + shift, 64 + shift, 65 + shift, 2001 + shift, 2001 + shift, 3990 + shift});
    ASSERT_TRUE(SameBits(SquareBytesOf(pieces), want)) << "shift " << shift;
    ASSERT_TRUE(SameBits(F32Pieces(pieces).ToVector(), v.data(), v.size())) << "shift " << shift;
  }
}

TEST(F32PiecesTest, NonFiniteValuesMakeTheSquaresNonFinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (size_t at : {size_t{3}, size_t{16}, size_t{36}}) {  // in a group, at a group's start, in the tail
    for (float bad : {nan, inf, -inf}) {
      std::vector<float> v = Values(37, 5);
      v[at] = bad;
      // Cut through the bad value itself.
      const double got = SquareBytesOf(CutBytes(BytesOf(v), {4 * at + 1, 4 * at + 3}));
      EXPECT_FALSE(std::isfinite(got)) << bad << " at " << at;
      EXPECT_EQ(std::isnan(got), std::isnan(bad)) << bad << " at " << at;
    }
  }
}

TEST(F32PiecesTest, NoPiecesHoldNoValues) {
  const F32Pieces none(absl::Span<const absl::string_view>{});
  EXPECT_TRUE(none.empty());
  int runs = 0;
  none.ForEachRun(0, 0, [&](size_t, const char*, size_t) { ++runs; });
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(SquareBytes().Finish(), 0.0);
}

}  // namespace
}  // namespace pcp
