// The sum of squares TensorAssembler::StreamTo hands its sink with each raw f32 chunk, summed
// while the chunk is copied (and CRC'd) from the received pieces: bit for bit SumOfSquares of
// the values, wherever gRPC's slices split the chunk (any byte, not only value boundaries),
// NaN and ±inf carried into the sum as SumOfSquares carries them (so DeltaSum refuses the
// chunk), and a CRC mismatch still refused before the sink sees anything.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/diloco/delta_sum.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/testing/byte_pieces.h"

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

using ::pcp::testing::CutBytes;

struct Received {
  int calls = 0;
  std::vector<float> values;
  double sum_of_squares = 0;
};

// Streams `chunk`, given as `pieces`, through a TensorAssembler; what its sink got.
absl::Status Stream(const v1::TensorChunk& chunk, const std::vector<absl::string_view>& pieces, Received* got) {
  TensorAssembler assembler;
  assembler.StreamTo([got](int64_t offset, const F32Pieces& values, double sum_of_squares) {
    ++got->calls;
    got->values = values.ToVector();
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
    ASSERT_TRUE(Stream(chunk, CutBytes(chunk.data(), {cut}), &got).ok()) << "cut at byte " << cut;
    ASSERT_EQ(got.calls, 1);
    ASSERT_TRUE(SameBits(got.sum_of_squares, want))
        << "cut at byte " << cut << ": " << got.sum_of_squares << " vs " << want;
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
    const std::vector<size_t> cuts = {1 + shift,         32767 + shift,     32768 + 3 + shift,
                                      65536 - 5 + shift, 98304 + 2 + shift, 200001 + shift};
    Received got;
    ASSERT_TRUE(Stream(chunk, CutBytes(chunk.data(), cuts), &got).ok()) << "shift " << shift;
    EXPECT_TRUE(SameBits(got.sum_of_squares, want))
        << "shift " << shift << ": " << got.sum_of_squares << " vs " << want;
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
      ASSERT_TRUE(Stream(chunk, CutBytes(chunk.data(), {7, 2001}), &got).ok());
      EXPECT_FALSE(std::isfinite(got.sum_of_squares)) << "value " << bad << " at " << at;
      EXPECT_EQ(std::isnan(got.sum_of_squares), std::isnan(want)) << "value " << bad << " at " << at;

      // Through DeltaSum as the shepherd adds it: refused, nothing added.
      std::vector<float> sums(static_cast<size_t>(n), 0.0f);
      diloco::DeltaSum sum({absl::MakeSpan(sums)});
      std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("w", 1, 1, 1e30);
      TensorAssembler assembler;
      assembler.StreamTo([&](int64_t offset, const F32Pieces& values, double sum_of_squares) {
        return c->Add(0, offset, values, sum_of_squares);
      });
      const std::vector<absl::string_view> pieces = CutBytes(chunk.data(), {3, 1999});
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
    const absl::Status s = Stream(chunk, CutBytes(bytes, {5, 2003}), &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("crc32c mismatch"));
    EXPECT_EQ(got.calls, 0);
  }
}

// Another Δ of `n` values (weight 3, scale 0.7) in `sum`, so that the one under test is added
// to something with weight × scale != 1.
void AddOtherDelta(diloco::DeltaSum& sum, int64_t n) {
  std::vector<float> other(static_cast<size_t>(n));
  for (size_t i = 0; i < other.size(); ++i) other[i] = 0.25f * static_cast<float>(i % 17) - 1.5f;
  EXPECT_TRUE(sum.Begin("other", 3, 0.7, 1e30)->Add(0, 0, other).ok());
}

// What a streamed tensor adds to a DeltaSum that already holds another Δ (weight × scale != 1),
// after Finish: its chunks given as `pieces` (each chunk's bytes cut by `cut`) through
// TensorAssembler::StreamTo, as the shepherd adds them. `status` gets the first error.
std::vector<float> StreamIntoSum(const Tensor& t, const std::vector<v1::TensorChunk>& chunks,
                                 const std::function<std::vector<absl::string_view>(const std::string&)>& cut,
                                 double declared_norm, absl::Status* status, bool* tainted = nullptr) {
  std::vector<float> sums(static_cast<size_t>(t.num_elements()), 0.0f);
  diloco::DeltaSum sum({absl::MakeSpan(sums)});
  AddOtherDelta(sum, t.num_elements());
  std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("w", 2, 0.3, declared_norm);
  TensorAssembler assembler;
  assembler.StreamTo([&](int64_t offset, const F32Pieces& values, double sum_of_squares) {
    return c->Add(0, offset, values, sum_of_squares);
  });
  *status = absl::OkStatus();
  for (const v1::TensorChunk& chunk : chunks) {
    const std::vector<absl::string_view> pieces = cut(chunk.data());
    *status = assembler.AddPieces(chunk, DataPieces(pieces.data(), pieces.size()));
    if (!status->ok()) break;
  }
  if (tainted != nullptr) *tainted = sum.tainted();
  sum.Finish();
  return sums;
}

// The same sum with the values added from one array, as the receiver did with its scratch
// copy: `chunks_added` chunks of `chunk_values` values.
std::vector<float> ScratchSum(const Tensor& t, int64_t chunk_values, int64_t chunks_added) {
  std::vector<float> sums(static_cast<size_t>(t.num_elements()), 0.0f);
  diloco::DeltaSum sum({absl::MakeSpan(sums)});
  AddOtherDelta(sum, t.num_elements());
  std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("w", 2, 0.3, 1e30);
  for (int64_t k = 0; k < chunks_added; ++k) {
    const int64_t begin = k * chunk_values, end = std::min(t.num_elements(), begin + chunk_values);
    std::vector<float> scratch(t.data<float>() + begin, t.data<float>() + end);
    EXPECT_TRUE(c->Add(0, begin, scratch, SumOfSquares(scratch)).ok());
  }
  sum.Finish();
  return sums;
}

std::vector<v1::TensorChunk> Chunks(const Tensor& t, int64_t chunk_bytes) {
  auto chunker = TensorChunker::Create("w", t, ChunkOptions{chunk_bytes});
  EXPECT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  return chunks;
}

double Norm(const Tensor& t) {
  return std::sqrt(SumOfSquares(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(t.num_elements()))));
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(StreamedSquaresTest, ChunksAddedFromThePiecesEqualTheScratchPathAtEverySplit) {
  // 1001 values: two pieces cut at every byte, and pieces of 1 to 3 bytes.
  const Tensor t = Values(1001, 13);
  const std::vector<v1::TensorChunk> chunks = {OneChunk(t)};
  const std::vector<float> want = ScratchSum(t, 1001, 1);
  for (size_t cut = 0; cut <= chunks[0].data().size(); ++cut) {
    absl::Status s;
    const std::vector<float> got = StreamIntoSum(
        t, chunks, [cut](const std::string& d) { return CutBytes(d, {cut}); }, Norm(t), &s);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(SameBits(got, want)) << "cut at byte " << cut;
  }
  absl::Status s;
  const std::vector<float> got = StreamIntoSum(
      t, chunks,
      [](const std::string& d) {
        std::vector<size_t> cuts;
        for (size_t at = 1; at < d.size(); at += 1 + at % 3) cuts.push_back(at);
        return CutBytes(d, cuts);
      },
      Norm(t), &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(SameBits(got, want));
}

TEST(StreamedSquaresTest, ACrcMismatchAddsNothing) {
  const Tensor t = Values(1001, 17);
  const std::vector<float> nothing = ScratchSum(t, 1001, 0);
  for (size_t flip : {size_t{0}, size_t{2001}, size_t{4003}}) {
    std::vector<v1::TensorChunk> chunks = {OneChunk(t)};
    std::string& bytes = *chunks[0].mutable_data();
    bytes[flip] = static_cast<char>(bytes[flip] ^ 0x10);
    absl::Status s;
    bool tainted = true;
    const std::vector<float> got = StreamIntoSum(
        t, chunks,
        [](const std::string& d) {
          return CutBytes(d, {5, 2003});
        },
        Norm(t), &s, &tainted);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("crc32c mismatch"));
    EXPECT_FALSE(tainted);
    EXPECT_TRUE(SameBits(got, nothing)) << "flip at byte " << flip;
  }
}

TEST(StreamedSquaresTest, AChunkBreakingTheDeclaredNormAddsNothingOfItself) {
  // Three chunks of 32768 values (128 KiB); the declaration covers the first chunk only: the
  // first is added, the second refused whole (split mid-value), the sum tainted.
  const Tensor t = Values(3 * 32768, 19);
  const std::vector<v1::TensorChunk> chunks = Chunks(t, kMinChunkBytes);
  ASSERT_EQ(chunks.size(), 3u);
  const double first_norm = std::sqrt(SumOfSquares(absl::MakeConstSpan(t.data<float>(), 32768)));
  absl::Status s;
  bool tainted = false;
  const std::vector<float> got = StreamIntoSum(
      t, chunks,
      [](const std::string& d) {
        return CutBytes(d, {4097, 70001});
      },
      first_norm, &s, &tainted);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("above the declared"));
  EXPECT_TRUE(tainted);
  EXPECT_TRUE(SameBits(got, ScratchSum(t, 32768, 1)));
}

}  // namespace
}  // namespace pcp
