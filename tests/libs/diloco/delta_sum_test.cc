#include "pcp/diloco/delta_sum.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/f32_pieces.h"
#include "pcp/base/sum_of_squares.h"

namespace pcp::diloco {
namespace {

using ::testing::HasSubstr;

std::vector<float> RandomValues(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double Norm(const std::vector<std::vector<float>>& tensors) {
  double s = 0;
  for (const auto& t : tensors) {
    for (float x : t) s += static_cast<double>(x) * x;
  }
  return std::sqrt(s);
}

// Buffers for a Δ list of the given tensor sizes, zeroed, and their spans.
struct Sums {
  explicit Sums(std::vector<size_t> sizes) {
    for (size_t n : sizes) data.emplace_back(n, 0.0f);
  }
  std::vector<absl::Span<float>> spans() {
    std::vector<absl::Span<float>> s;
    for (auto& d : data) s.push_back(absl::MakeSpan(d));
    return s;
  }
  std::vector<std::vector<float>> data;
};

// Feeds `delta` in chunks of `chunk` elements, tensor by tensor; stops after `max_chunks`.
absl::Status Feed(DeltaSum::Contribution& c, const std::vector<std::vector<float>>& delta, size_t chunk,
                  size_t max_chunks = SIZE_MAX) {
  size_t sent = 0;
  for (size_t t = 0; t < delta.size(); ++t) {
    for (size_t off = 0; off < delta[t].size(); off += chunk) {
      if (sent++ == max_chunks) return absl::OkStatus();
      const size_t n = std::min(chunk, delta[t].size() - off);
      if (absl::Status s = c.Add(t, static_cast<int64_t>(off), absl::MakeConstSpan(delta[t].data() + off, n));
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

TEST(DeltaSumTest, WeightedAverageOfWholeDeltas) {
  const std::vector<size_t> sizes = {1000, 37, 70000};
  std::vector<std::vector<std::vector<float>>> deltas;
  const std::vector<double> weights = {3.0, 1.0, 2.0};
  for (uint32_t w = 0; w < 3; ++w) {
    std::vector<std::vector<float>> d;
    for (size_t t = 0; t < sizes.size(); ++t) d.push_back(RandomValues(sizes[t], 10 * w + t));
    deltas.push_back(std::move(d));
  }
  Sums sums(sizes);
  DeltaSum sum(sums.spans());
  for (size_t w = 0; w < 3; ++w) {
    auto c = sum.Begin("w", weights[w], 1.0, Norm(deltas[w]));
    ASSERT_TRUE(Feed(*c, deltas[w], /*chunk=*/333 + 100 * w).ok());
    EXPECT_NEAR(c->norm(), Norm(deltas[w]), 1e-9 * Norm(deltas[w]));
  }
  EXPECT_FALSE(sum.tainted());
  sum.Finish();
  EXPECT_EQ(sum.covered_elements(), 71037);
  for (size_t t = 0; t < sizes.size(); ++t) {
    for (size_t k = 0; k < sizes[t]; ++k) {
      const double expected = (3.0 * deltas[0][t][k] + 1.0 * deltas[1][t][k] + 2.0 * deltas[2][t][k]) / 6.0;
      ASSERT_NEAR(sums.data[t][k], expected, 1e-5) << t << "[" << k << "]";
    }
  }
}

TEST(DeltaSumTest, ClippedDeltaIsScaledButKeepsItsWeight) {
  Sums sums({4});
  DeltaSum sum(sums.spans());
  const std::vector<std::vector<float>> a = {{1, 2, 3, 4}}, b = {{10, 20, 30, 40}};
  ASSERT_TRUE(Feed(*sum.Begin("w", 1, 1.0, Norm(a)), a, 4).ok());
  ASSERT_TRUE(Feed(*sum.Begin("w", 1, 0.1, Norm(b)), b, 4).ok());  // clipped to a tenth
  sum.Finish();
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(1, 2, 3, 4));
}

TEST(DeltaSumTest, AChunkAboveTheDeclaredNormIsNotAddedAndTaintsTheSum) {
  Sums sums({8});
  DeltaSum sum(sums.spans());
  const std::vector<std::vector<float>> liar = {{1, 1, 1, 1, 100, 100, 100, 100}};
  auto c = sum.Begin("w", 1, 1.0, /*declared_norm=*/2.0);  // the first chunk's norm is 2: within
  ASSERT_TRUE(c->Add(0, 0, absl::MakeConstSpan(liar[0].data(), 4)).ok());
  EXPECT_FALSE(sum.tainted());
  absl::Status s = c->Add(0, 4, absl::MakeConstSpan(liar[0].data() + 4, 4));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("above the declared 2"));
  EXPECT_TRUE(sum.tainted());
  EXPECT_FALSE(c->Add(0, 4, absl::MakeConstSpan(liar[0].data() + 4, 4)).ok());  // sticky
  sum.Finish();
  EXPECT_THAT(sum.liars(), ::testing::ElementsAre("w"));
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(1, 1, 1, 1, 0, 0, 0, 0));  // the refused chunk is absent
}

TEST(DeltaSumTest, ALiarCaughtAtItsFirstChunkLeavesNoTrace) {
  Sums sums({4});
  DeltaSum sum(sums.spans());
  const std::vector<std::vector<float>> honest = {{1, 2, 3, 4}}, liar = {{50, 50, 50, 50}};
  ASSERT_TRUE(Feed(*sum.Begin("w", 1, 1.0, Norm(honest)), honest, 4).ok());
  EXPECT_FALSE(Feed(*sum.Begin("w", 1, 1.0, 1.0), liar, 4).ok());
  EXPECT_FALSE(sum.tainted());
  sum.Finish();
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(1, 2, 3, 4));
}

TEST(DeltaSumTest, ANegativeOrNanDeclarationAllowsNothing) {
  // (Found by the worker_session fuzz target: a declared norm of -1e305 once let any value in.)
  Sums sums({2});
  DeltaSum sum(sums.spans());
  const std::vector<float> v = {1e30f, 1e30f};
  for (double declared : {-1e305, -1.0, std::nan("")})
    EXPECT_FALSE(sum.Begin("w", 1, 1.0, declared)->Add(0, 0, v).ok());
  sum.Finish();
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(0, 0));
}

TEST(DeltaSumTest, NonFiniteValuesAreRefused) {
  Sums sums({4});
  DeltaSum sum(sums.spans());
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf}) {
    auto c = sum.Begin("w", 1, 1.0, 1e30);
    const std::vector<float> v = {0, bad, 0, 0};
    absl::Status s = c->Add(0, 0, v);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(s.message(), HasSubstr("not finite"));
  }
  EXPECT_FALSE(sum.tainted());
  sum.Finish();
  EXPECT_EQ(sum.covered_elements(), 0);
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(0, 0, 0, 0));
}

TEST(DeltaSumTest, ADeltaCutOffMidSendCountsOnlyWhereItsChunksArrived) {
  Sums sums({6, 2});
  DeltaSum sum(sums.spans());
  const std::vector<std::vector<float>> whole = {{1, 1, 1, 1, 1, 1}, {1, 1}};
  const std::vector<std::vector<float>> cut = {{4, 4, 4, 4, 4, 4}, {4, 4}};
  ASSERT_TRUE(Feed(*sum.Begin("w", 1, 1.0, Norm(whole)), whole, 2).ok());
  ASSERT_TRUE(Feed(*sum.Begin("w", 2, 1.0, Norm(cut)), cut, 2, /*max_chunks=*/2).ok());  // 4 of 8 elements
  sum.Finish();
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(3, 3, 3, 3, 1, 1));  // (1 + 2·4) / 3 where both came
  EXPECT_THAT(sums.data[1], ::testing::ElementsAre(1, 1));
}

TEST(DeltaSumTest, ElementsNoDeltaReachedAverageToZero) {
  Sums sums({5});
  DeltaSum sum(sums.spans());
  auto c = sum.Begin("w", 1, 1.0, 10);
  const std::vector<float> v = {2, 2};
  ASSERT_TRUE(c->Add(0, 1, v).ok());
  sum.Finish();
  EXPECT_EQ(sum.covered_elements(), 2);
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(0, 2, 2, 0, 0));
}

TEST(DeltaSumTest, RangesOutsideTheDeltaAreRefused) {
  Sums sums({4});
  DeltaSum sum(sums.spans());
  auto c = sum.Begin("w", 1, 1.0, 10);
  const std::vector<float> v = {1, 1};
  EXPECT_EQ(c->Add(1, 0, v).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Add(0, 3, v).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Add(0, -1, v).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(c->Add(0, 2, v).ok());
  EXPECT_TRUE(sum.liars().empty());
}

TEST(DeltaSumTest, NothingIsAddedAfterFinish) {
  Sums sums({2});
  DeltaSum sum(sums.spans());
  auto c = sum.Begin("late", 1, 1.0, 10);
  sum.Finish();
  const std::vector<float> v = {1, 1};
  EXPECT_EQ(c->Add(0, 0, v).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(sums.data[0], ::testing::ElementsAre(0, 0));
  EXPECT_TRUE(sum.liars().empty());
  EXPECT_FALSE(sum.tainted());
}

TEST(DeltaSumTest, ConcurrentStreamsGiveTheSequentialResult) {
  const std::vector<size_t> sizes = {300000, 5000};  // spans several lock stripes
  constexpr int kWorkers = 8;
  std::vector<std::vector<std::vector<float>>> deltas(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    for (size_t t = 0; t < sizes.size(); ++t) deltas[w].push_back(RandomValues(sizes[t], 100 * w + t));
  }
  Sums sums(sizes);
  DeltaSum sum(sums.spans());
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      auto c = sum.Begin("w", 1.0 + w, 1.0, Norm(deltas[w]));
      EXPECT_TRUE(Feed(*c, deltas[w], 4096 + 512 * w).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  sum.Finish();
  double total = 0;
  for (int w = 0; w < kWorkers; ++w) total += 1.0 + w;
  for (size_t t = 0; t < sizes.size(); ++t) {
    for (size_t k = 0; k < sizes[t]; k += 7) {
      double expected = 0;
      for (int w = 0; w < kWorkers; ++w) expected += (1.0 + w) * deltas[w][t][k];
      ASSERT_NEAR(sums.data[t][k], expected / total, 1e-5) << t << "[" << k << "]";
    }
  }
}

// Values where received pieces hold them (F32Pieces, as a StreamTo sink gets them): the bytes
// of `v` cut at `cuts` (ascending byte offsets).
struct Pieces {
  Pieces(const std::vector<float>& v, const std::vector<size_t>& cuts) {
    const absl::string_view bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    size_t at = 0;
    for (size_t c : cuts) {
      views.push_back(bytes.substr(at, c - at));
      at = c;
    }
    views.push_back(bytes.substr(at));
  }
  F32Pieces values() const { return F32Pieces(views); }
  std::vector<absl::string_view> views;
};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DeltaSumTest, ValuesInPiecesAddTheSameBitsAsOneArray) {
  // A chunk across a lock stripe's boundary (64 Ki elements) into a sum that already holds a
  // Δ, at weight × scale != 1: cut at every byte offset within a value, near the start, on
  // both sides of the stripe boundary and near the end, and into pieces shorter than a value.
  const size_t n = 70001;
  const int64_t offset = 60000;  // the chunk covers elements [60000, 130001), stripe 0 and 1
  const std::vector<float> first = RandomValues(n + 80000, 7, 3.0f);
  const std::vector<float> chunk = RandomValues(n, 8, 0.01f);
  const double norm = Norm({chunk});
  auto add = [&](const std::function<absl::Status(DeltaSum::Contribution&)>& second) {
    Sums sums({n + 80000});
    DeltaSum sum(sums.spans());
    EXPECT_TRUE(sum.Begin("a", 3.0, 0.7, Norm({first}))->Add(0, 0, first).ok());
    auto c = sum.Begin("b", 2.0, 0.3, norm);
    EXPECT_TRUE(second(*c).ok());
    sum.Finish();
    return sums.data[0];
  };
  // Today's scratch path: the values in one array.
  const std::vector<float> want = add([&](DeltaSum::Contribution& c) { return c.Add(0, offset, chunk); });
  const size_t stripe = (size_t{1} << 16) - static_cast<size_t>(offset);  // first element of stripe 1, in the chunk
  for (size_t r = 0; r < 4; ++r) {
    const std::vector<size_t> cuts = {1 + r, 4 * (stripe - 1) + r, 4 * stripe + r, 4 * stripe + 3 + r, 4 * (n - 2) + r};
    const Pieces pieces(chunk, cuts);
    EXPECT_TRUE(SameBits(add([&](DeltaSum::Contribution& c) { return c.Add(0, offset, pieces.values()); }), want))
        << "cuts at offset " << r << " within a value";
    // The norm given (as StreamTo's sink gets it) or summed by Add from the pieces: the same.
    EXPECT_TRUE(
        SameBits(add([&](DeltaSum::Contribution& c) { return c.Add(0, offset, pieces.values(), SumOfSquares(chunk)); }),
                 want));
  }
  std::vector<size_t> tiny;  // pieces of 1, 2 and 3 bytes over the first values
  for (size_t at = 1; at < 200; at += 1 + at % 3) tiny.push_back(at);
  EXPECT_TRUE(
      SameBits(add([&](DeltaSum::Contribution& c) { return c.Add(0, offset, Pieces(chunk, tiny).values()); }), want));
}

TEST(DeltaSumTest, AChunkInPiecesAboveTheDeclaredNormAddsNothingOfItself) {
  // The second chunk breaks the declaration by a value split between two pieces: none of
  // its values is added (not even those before the split), the first chunk's are.
  Sums sums({8});
  DeltaSum sum(sums.spans());
  const std::vector<float> honest = {1, 1, 1, 1}, liar = {1, 1, 100, 1};
  auto c = sum.Begin("w", 1, 1.0, /*declared_norm=*/2.5);
  ASSERT_TRUE(c->Add(0, 0, Pieces(honest, {6}).values()).ok());
  const absl::Status s = c->Add(0, 4, Pieces(liar, {9}).values());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("above the declared 2.5"));
  EXPECT_TRUE(sum.tainted());
  EXPECT_THAT(sum.liars(), ::testing::ElementsAre("w"));
  EXPECT_THAT(sums.data[0],
              ::testing::ElementsAre(1, 1, 1, 1, 0, 0, 0, 0));  // before Finish: nothing of the liar's chunk
  sum.Finish();
  EXPECT_EQ(sum.covered_elements(), 4);
}

TEST(DeltaSumTest, ANonFiniteValueSplitBetweenPiecesIsRefused) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    for (size_t cut = 4; cut <= 8; ++cut) {  // every byte of the bad value (values[1])
      Sums sums({20});
      DeltaSum sum(sums.spans());
      std::vector<float> v(20, 1.0f);
      v[1] = bad;
      const absl::Status s = sum.Begin("w", 1, 1.0, 1e30)->Add(0, 0, Pieces(v, {cut}).values());
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << bad << ", cut " << cut;
      EXPECT_THAT(s.message(), HasSubstr("not finite"));
      EXPECT_FALSE(sum.tainted());
      EXPECT_THAT(sums.data[0], ::testing::Each(0.0f));
    }
  }
}

}  // namespace
}  // namespace pcp::diloco
