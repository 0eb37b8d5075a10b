// The sum of squares TensorAssembler::StreamTo hands its sink with each raw f32 chunk, summed
// while the chunk is copied (and CRC'd) from the received pieces: bit for bit SumOfSquares of
// the values, wherever gRPC's slices split the chunk (any byte, not only value boundaries),
// NaN and ±inf carried into the sum as SumOfSquares carries them (so DeltaSum refuses the
// chunk), and a CRC mismatch still refused before the sink sees anything.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/diloco/delta_sum.h"
#include "pcp/rpc/tensor_chunks.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

// n f32 values of mixed magnitudes (so that the summation order shows in the low bits).
Tensor Values(int64_t n, uint32_t seed) {
  Tensor t(DType::kF32, Shape{n});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  float* v = t.data<float>();
  for (int64_t i = 0; i < n; ++i) v[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  return t;
}

// The one chunk of `t` (chunks of up to 1 MiB).
v1::TensorChunk OneChunk(const Tensor& t) {
  auto chunker = TensorChunker::Create("w", t, ChunkOptions{1 << 20});
  EXPECT_TRUE(chunker.ok()) << chunker.status();
  v1::TensorChunk chunk;
  chunker->Next(&chunk);
  EXPECT_TRUE(chunker->done());
  return chunk;
}

// `bytes` cut at `cuts` (ascending byte offsets).
std::vector<absl::string_view> Cut(absl::string_view bytes, const std::vector<size_t>& cuts) {
  std::vector<absl::string_view> pieces;
  size_t at = 0;
  for (size_t c : cuts) {
    pieces.push_back(bytes.substr(at, c - at));
    at = c;
  }
  pieces.push_back(bytes.substr(at));
  return pieces;
}

struct Received {
  int calls = 0;
  std::vector<float> values;
  double sum_of_squares = 0;
};

// Streams `chunk`, given as `pieces`, through a TensorAssembler; what its sink got.
absl::Status Stream(const v1::TensorChunk& chunk, const std::vector<absl::string_view>& pieces, Received* got) {
  TensorAssembler assembler;
  assembler.StreamTo([got](int64_t offset, absl::Span<const float> values, double sum_of_squares) {
    ++got->calls;
    got->values.assign(values.begin(), values.end());
    got->sum_of_squares = sum_of_squares;
    return offset == 0 ? absl::OkStatus() : absl::InternalError("one chunk expected");
  });
  return assembler.AddPieces(chunk, DataPieces(pieces.data(), pieces.size()));
}

// Bitwise equality of doubles (EXPECT_EQ would also pass -0 == 0).
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(StreamedSquaresTest, EqualsSumOfSquaresForTwoPiecesSplitAtEveryByte) {
  // 1001 values: 62 whole groups of 16 and a tail of 9.
  const Tensor t = Values(1001, 3);
  const v1::TensorChunk chunk = OneChunk(t);
  const double want = SumOfSquares(absl::MakeConstSpan(t.data<float>(), 1001));
  for (size_t cut = 0; cut <= chunk.data().size(); ++cut) {
    Received got;
    ASSERT_TRUE(Stream(chunk, Cut(chunk.data(), {cut}), &got).ok()) << "cut at byte " << cut;
    ASSERT_EQ(got.calls, 1);
    ASSERT_TRUE(SameBits(got.sum_of_squares, want)) << "cut at byte " << cut << ": " << got.sum_of_squares << " vs " << want;
    ASSERT_EQ(std::memcmp(got.values.data(), t.data<float>(), 1001 * 4), 0) << "cut at byte " << cut;
  }
}

TEST(StreamedSquaresTest, EqualsSumOfSquaresForManyPiecesAcrossCopyBlocks) {
  // 100003 values (≈ 391 KiB: many of the copy's 4 KiB blocks), cut into 7 pieces at odd
  // offsets near block boundaries, each set of cuts moved byte by byte.
  const int64_t n = 100003;
  const Tensor t = Values(n, 5);
  const v1::TensorChunk chunk = OneChunk(t);
  const double want = SumOfSquares(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(n)));
  for (size_t shift = 0; shift < 9; ++shift) {
    const std::vector<size_t> cuts = {1 + shift, 32767 + shift, 32768 + 3 + shift, 65536 - 5 + shift,
                                      98304 + 2 + shift, 200001 + shift};
    Received got;
    ASSERT_TRUE(Stream(chunk, Cut(chunk.data(), cuts), &got).ok()) << "shift " << shift;
    EXPECT_TRUE(SameBits(got.sum_of_squares, want)) << "shift " << shift << ": " << got.sum_of_squares << " vs " << want;
    EXPECT_EQ(std::memcmp(got.values.data(), t.data<float>(), static_cast<size_t>(n) * 4), 0) << "shift " << shift;
  }
}

TEST(StreamedSquaresTest, NonFiniteValuesMakeTheSumNonFiniteAndDeltaSumRefusesTheChunk) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const int64_t n = 1001;
  // In a whole group (lane 5 of group 3), at a group's last lane, and in the tail.
  for (int64_t at : {int64_t{53}, int64_t{991}, int64_t{1000}}) {
    for (float bad : {nan, inf, -inf}) {
      Tensor t = Values(n, 9);
      t.data<float>()[at] = bad;
      const v1::TensorChunk chunk = OneChunk(t);
      const double want = SumOfSquares(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(n)));
      Received got;
      ASSERT_TRUE(Stream(chunk, Cut(chunk.data(), {7, 2001}), &got).ok());
      EXPECT_FALSE(std::isfinite(got.sum_of_squares)) << "value " << bad << " at " << at;
      EXPECT_EQ(std::isnan(got.sum_of_squares), std::isnan(want)) << "value " << bad << " at " << at;

      // Through DeltaSum as the shepherd adds it: refused, nothing added.
      std::vector<float> sums(static_cast<size_t>(n), 0.0f);
      diloco::DeltaSum sum({absl::MakeSpan(sums)});
      std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("w", 1, 1, 1e30);
      TensorAssembler assembler;
      assembler.StreamTo([&](int64_t offset, absl::Span<const float> values, double sum_of_squares) {
        return c->Add(0, offset, values, sum_of_squares);
      });
      const std::vector<absl::string_view> pieces = Cut(chunk.data(), {3, 1999});
      const absl::Status s = assembler.AddPieces(chunk, DataPieces(pieces.data(), pieces.size()));
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_THAT(s.message(), HasSubstr("not finite"));
      sum.Finish();
      EXPECT_EQ(sum.covered_elements(), 0);
      EXPECT_FALSE(sum.tainted());
    }
  }
}

TEST(StreamedSquaresTest, ACrcMismatchIsRefusedBeforeTheSink) {
  const Tensor t = Values(1001, 11);
  const v1::TensorChunk chunk = OneChunk(t);
  for (size_t flip : {size_t{0}, size_t{2001}, chunk.data().size() - 1}) {
    std::string bytes = chunk.data();
    bytes[flip] = static_cast<char>(bytes[flip] ^ 0x10);
    Received got;
    const absl::Status s = Stream(chunk, Cut(bytes, {5, 2003}), &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("crc32c mismatch"));
    EXPECT_EQ(got.calls, 0);
  }
}

}  // namespace
}  // namespace pcp
