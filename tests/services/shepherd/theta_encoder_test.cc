// The shepherd's θ-update encoder (services/shepherd/src/theta_encoder.h) with
// diloco.compression.down_mode union (SparseLoCo): after a plain averaged outer step (no
// momentum) of two workers' sparse Δs, every nonzero of the update goes down and nothing else
// (with topk8, topk4 and topk2); a replica that applies the chunks it receives ends
// bit-identical to the shepherd's θ; no error feedback leaks into the next round; a damaged
// update is InvalidArgument.
#include "theta_encoder.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/codec/encoded.h"
#include "pcp/diloco/replica.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/shepherd/outer_optimizer.h"

namespace pcp::shepherd {
namespace {

constexpr double kDensity = 0.03;

const std::vector<TensorSpec> kSpecs = {{.name = "w", .shape = Shape{3, 5000}}, {.name = "b", .shape = Shape{300}}};

std::vector<float> Random(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<Tensor> Theta() {
  std::vector<Tensor> theta;
  for (size_t i = 0; i < kSpecs.size(); ++i) {
    theta.push_back(
        Tensor::FromVector<float>(kSpecs[i].shape, Random(static_cast<size_t>(NumElements(kSpecs[i].shape)), i, 0.1f)));
  }
  return theta;
}

// A worker's Δ as the shepherd decodes it: topk2 at kDensity of a random Δ.
std::vector<Tensor> SparseDelta(uint64_t seed) {
  std::vector<Tensor> delta;
  for (size_t i = 0; i < kSpecs.size(); ++i) {
    const std::vector<float> x = Random(static_cast<size_t>(NumElements(kSpecs[i].shape)), seed * 10 + i, 0.01f);
    Tensor t(DType::kF32, kSpecs[i].shape);
    EXPECT_TRUE(
        codec::Decode(*codec::Encode(codec::Codec::kTopk2, x, 0, kDensity), absl::MakeSpan(t.data<float>(), x.size()))
            .ok());
    delta.push_back(std::move(t));
  }
  return delta;
}

// SparseLoCo's settings with the union sent by `down` (topk8; topk2 is the scheme's default).
codec::CompressionOptions Union(codec::Codec down = codec::Codec::kTopk8) {
  return {.up = codec::Codec::kTopk2,
          .down = down,
          .error_feedback = codec::FeedbackMode::kOn,
          .density = kDensity,
          .ef_decay = 0.95,
          .down_mode = codec::DownMode::kUnion};
}

// What a worker does with the round's update chunks: assemble, decode, add to its θ.
absl::StatusOr<std::vector<Tensor>> Replica(const std::vector<Tensor>& theta, const ChunkedList& update) {
  TensorListAssembler assembler;
  assembler.ExpectSpecs(kSpecs);
  assembler.ExpectCodec(update.codec());
  for (size_t i = 0; i < update.size(); ++i) {
    const absl::string_view piece(update.payload(i).data, update.payload(i).size);
    if (absl::Status s = assembler.AddPieces(update.chunk(i), absl::MakeConstSpan(&piece, 1)); !s.ok()) return s;
  }
  if (!assembler.complete()) return absl::InternalError("update incomplete");
  absl::StatusOr<std::vector<NamedTensor>> got = assembler.Take();
  if (!got.ok()) return got.status();
  std::vector<Tensor> out;
  for (size_t i = 0; i < theta.size(); ++i) {
    Tensor t = theta[i].Clone();
    const size_t n = static_cast<size_t>(t.num_elements());
    diloco::ApplyUpdate(absl::MakeSpan(t.data<float>(), n), absl::MakeConstSpan((*got)[i].tensor.data<float>(), n));
    out.push_back(std::move(t));
  }
  return out;
}

bool SameBits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

class UnionTest : public ::testing::TestWithParam<codec::Codec> {};

TEST_P(UnionTest, SendsEveryNonzeroOfThePlainAverageAndReplicasMatchBitForBit) {
  const codec::Codec down = GetParam();
  // The codec's magnitude levels: 1..L of s = absmax/L (codec.h).
  const int bits = down == codec::Codec::kTopk8 ? 8 : down == codec::Codec::kTopk4 ? 4 : 2;
  const float levels = static_cast<float>(1 << (bits - 1));
  ThetaEncoder encoder(Union(down), kDefaultChunkBytes, kSpecs, /*fragments=*/nullptr);
  EXPECT_FALSE(Union(down).FeedbackDown());
  EXPECT_EQ(Union(down).DownDensity(), 1.0);
  OuterOptimizer outer({.lr = 1.0, .momentum = 0.0, .nesterov = true}, kSpecs);
  std::vector<Tensor> theta = Theta();
  for (uint64_t round = 1; round <= 3; ++round) {
    const std::vector<Tensor> d1 = SparseDelta(2 * round), d2 = SparseDelta(2 * round + 1);
    absl::StatusOr<std::vector<Tensor>> avg = WeightedAverage({{d1, 1.0}, {d2, 1.0}});
    ASSERT_TRUE(avg.ok()) << avg.status();
    std::vector<Tensor> exact = theta;
    for (Tensor& t : exact) t = t.Clone();
    ASSERT_TRUE(outer.Step(*avg, &exact).ok());
    std::vector<Tensor> next = exact;
    ASSERT_TRUE(encoder.EncodeRound(round, theta, &next).ok());
    std::shared_ptr<const ChunkedList> update = encoder.UpdateFrom(round);
    ASSERT_NE(update, nullptr);
    EXPECT_EQ(update->codec(), down);

    int64_t in_union = 0, total = 0;
    for (size_t i = 0; i < kSpecs.size(); ++i) {
      const float* a = d1[i].data<float>();
      const float* b = d2[i].data<float>();
      const float* before = theta[i].data<float>();
      const float* want = exact[i].data<float>();
      const float* got = next[i].data<float>();
      const float* g = (*avg)[i].data<float>();
      const int64_t n = theta[i].num_elements();
      float absmax = 0;
      for (int64_t k = 0; k < n; ++k) absmax = std::max(absmax, std::fabs(g[k]));
      for (int64_t k = 0; k < n; ++k) {
        ++total;
        if (a[k] == 0 && b[k] == 0) {
          // Outside the union nothing moves: no residual of an earlier round goes down.
          ASSERT_TRUE(SameBits(got[k], before[k])) << "round " << round << " " << kSpecs[i].name << "[" << k << "]";
          continue;
        }
        ++in_union;
        // Levels s = the block's absmax/L (≤ the tensor's): within s/2, or within s for a value
        // under s/2, which still goes as one step (a kept value is never 0).
        ASSERT_NEAR(got[k], want[k], absmax / levels * 1.01f + 1e-6f) << "round " << round << " [" << k << "]";
      }
    }
    EXPECT_GT(in_union, static_cast<int64_t>(kDensity * static_cast<double>(total)));
    EXPECT_LE(in_union, static_cast<int64_t>(2 * (kDensity + 0.001) * static_cast<double>(total)));
    // `bits` per sent value plus positions (Rice gaps) and scales: under bits + 12 a value.
    EXPECT_LT(static_cast<double>(update->total_bytes()), (bits + 12) / 8.0 * static_cast<double>(in_union))
        << update->total_bytes() << " bytes for " << in_union << " values";

    absl::StatusOr<std::vector<Tensor>> replica = Replica(theta, *update);
    ASSERT_TRUE(replica.ok()) << replica.status();
    for (size_t i = 0; i < kSpecs.size(); ++i) {
      ASSERT_EQ(std::memcmp((*replica)[i].data<float>(), next[i].data<float>(),
                            static_cast<size_t>(next[i].byte_size())),
                0)
          << "round " << round << " " << kSpecs[i].name;
    }
    theta = next;  // the shepherd's θ is what the replicas hold
  }
}

INSTANTIATE_TEST_SUITE_P(DownCodecs, UnionTest,
                         ::testing::Values(codec::Codec::kTopk8, codec::Codec::kTopk4, codec::Codec::kTopk2),
                         [](const ::testing::TestParamInfo<codec::Codec>& info) {
                           return std::string(codec::CodecName(info.param));
                         });

TEST(ThetaEncoderTest, FeedbackModeKeepsTheResidualAndSendsItLater) {
  // down_mode feedback (the default) with the same codec: what rounding lost in round 1 goes
  // out in round 2, so round 2's update touches coordinates outside its Δs' union.
  codec::CompressionOptions options = Union();
  options.down_mode = codec::DownMode::kFeedback;
  options.density = 1.0;  // every nonzero, as union sends
  EXPECT_TRUE(options.FeedbackDown());
  ThetaEncoder encoder(options, kDefaultChunkBytes, kSpecs, nullptr);
  OuterOptimizer outer({.lr = 1.0, .momentum = 0.0, .nesterov = true}, kSpecs);
  std::vector<Tensor> theta = Theta();
  int64_t outside = 0;
  for (uint64_t round = 1; round <= 2; ++round) {
    const std::vector<Tensor> d1 = SparseDelta(2 * round), d2 = SparseDelta(2 * round + 1);
    absl::StatusOr<std::vector<Tensor>> avg = WeightedAverage({{d1, 1.0}, {d2, 1.0}});
    ASSERT_TRUE(avg.ok());
    std::vector<Tensor> next = theta;
    for (Tensor& t : next) t = t.Clone();
    ASSERT_TRUE(outer.Step(*avg, &next).ok());
    ASSERT_TRUE(encoder.EncodeRound(round, theta, &next).ok());
    if (round == 2) {
      for (size_t i = 0; i < kSpecs.size(); ++i) {
        for (int64_t k = 0; k < theta[i].num_elements(); ++k) {
          const bool in_union = d1[i].data<float>()[k] != 0 || d2[i].data<float>()[k] != 0;
          outside += !in_union && !SameBits(next[i].data<float>()[k], theta[i].data<float>()[k]);
        }
      }
    }
    theta = next;
  }
  EXPECT_GT(outside, 0);
}

TEST(ThetaEncoderTest, DamagedUnionUpdateIsInvalidArgument) {
  ThetaEncoder encoder(Union(), kDefaultChunkBytes, kSpecs, nullptr);
  OuterOptimizer outer({.lr = 1.0, .momentum = 0.0, .nesterov = true}, kSpecs);
  const std::vector<Tensor> theta = Theta();
  absl::StatusOr<std::vector<Tensor>> avg = WeightedAverage({{SparseDelta(1), 1.0}, {SparseDelta(2), 1.0}});
  ASSERT_TRUE(avg.ok());
  std::vector<Tensor> next = theta;
  for (Tensor& t : next) t = t.Clone();
  ASSERT_TRUE(outer.Step(*avg, &next).ok());
  ASSERT_TRUE(encoder.EncodeRound(1, theta, &next).ok());
  std::shared_ptr<const ChunkedList> update = encoder.UpdateFrom(1);
  ASSERT_NE(update, nullptr);
  const std::string good(update->payload(0).data, update->payload(0).size);
  absl::StatusOr<codec::EncodedHeader> header = codec::ReadHeader(good);
  ASSERT_TRUE(header.ok()) << header.status();
  std::vector<float> out(header->count, 7.0f);
  ASSERT_TRUE(codec::Decode(good, absl::MakeSpan(out)).ok());
  // The first block's word: reserved bits set; then k above the block; then cut short.
  std::string reserved = good;
  reserved[codec::kHeaderSize + 3] = static_cast<char>(0x80);
  std::string big_k = good;
  big_k[codec::kHeaderSize] = static_cast<char>(0xff);
  big_k[codec::kHeaderSize + 1] = static_cast<char>(0xff);
  big_k[codec::kHeaderSize + 2] = static_cast<char>(big_k[codec::kHeaderSize + 2] | 1);
  const std::string cut = good.substr(0, good.size() - 1);
  const std::string* const bads[] = {&reserved, &big_k, &cut};
  for (const std::string* bad : bads) {
    std::vector<float> target(header->count, 7.0f);
    absl::Status s = codec::Decode(*bad, absl::MakeSpan(target));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    for (float v : target) ASSERT_EQ(v, 7.0f);  // nothing written
  }
}

}  // namespace
}  // namespace pcp::shepherd
