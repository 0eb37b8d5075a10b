#include "pcp/loadgen/synthetic_delta.h"

#include <cmath>

#include "gtest/gtest.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/training.pb.h"

namespace pcp::loadgen {
namespace {

std::vector<TensorSpec> Specs() {
  // Big enough for several chunks per tensor (1 MiB each): 300k and 70k f32 values.
  return {{"transformer.wte.weight", DType::kF32, {600, 500}},
          {"lm_head.bias", DType::kF32, {70000}},
          {"ln_f.weight", DType::kF32, {3}}};
}

// Parses the messages as the shepherd does and assembles them against the specs.
absl::StatusOr<std::vector<NamedTensor>> Receive(const std::vector<grpc::ByteBuffer>& messages, uint64_t round,
                                                 codec::Codec codec) {
  TensorListAssembler assembler;
  assembler.ExpectSpecs(Specs());
  assembler.ExpectCodec(codec, "test");
  ChunkMessageParser parser;
  for (grpc::ByteBuffer b : messages) {
    v1::WorkerMessage m;
    if (absl::Status s = parser.Parse(&b, kResultChunkDataPath, &m); !s.ok()) return s;
    if (!m.has_result_chunk() || m.result_chunk().round() != round) {
      return absl::InternalError("not a result chunk of the round");
    }
    if (absl::Status s = assembler.AddPieces(m.result_chunk().chunk(), parser.payload()); !s.ok()) return s;
  }
  if (!assembler.complete()) return absl::InternalError("incomplete");
  return assembler.Take();
}

TEST(SyntheticDeltaTest, IsAValidDeltaOfTheSpecsWithTheAnnouncedNorm) {
  absl::StatusOr<std::shared_ptr<const SyntheticDelta>> d =
      SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 7, .scale = 1e-3f});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_GE((*d)->num_chunks(), 3);
  EXPECT_EQ((*d)->data_bytes(), (300000 + 70000 + 3) * 4);
  absl::StatusOr<std::vector<NamedTensor>> got = Receive((*d)->Messages(5), 5, codec::Codec::kF32);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  double sum_squares = 0, max_abs = 0;
  for (const NamedTensor& t : *got) {
    for (float v : t.tensor.ToVector<float>()) {
      ASSERT_TRUE(std::isfinite(v));
      sum_squares += static_cast<double>(v) * v;
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(v)));
    }
  }
  EXPECT_LE(max_abs, 1e-3);
  EXPECT_NEAR(std::sqrt(sum_squares), (*d)->norm(), 1e-9);
  EXPECT_EQ((*d)->decoded_norm(), (*d)->norm());
  // Uniform in [-s, s]: norm ≈ s·sqrt(n/3).
  EXPECT_NEAR((*d)->norm(), 1e-3 * std::sqrt(370003.0 / 3.0), 0.01 * (*d)->norm());
}

TEST(SyntheticDeltaTest, IsTheSameForTheSameSeedAndEveryRound) {
  auto a = SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 3});
  auto b = SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 3});
  auto c = SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 4});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto ra = Receive((*a)->Messages(1), 1, codec::Codec::kF32);
  auto ra2 = Receive((*a)->Messages(9), 9, codec::Codec::kF32);
  auto rb = Receive((*b)->Messages(1), 1, codec::Codec::kF32);
  auto rc = Receive((*c)->Messages(1), 1, codec::Codec::kF32);
  ASSERT_TRUE(ra.ok() && ra2.ok() && rb.ok() && rc.ok());
  EXPECT_EQ((*ra)[0].tensor.ToVector<float>(), (*rb)[0].tensor.ToVector<float>());
  EXPECT_EQ((*ra)[0].tensor.ToVector<float>(), (*ra2)[0].tensor.ToVector<float>());
  EXPECT_NE((*ra)[0].tensor.ToVector<float>(), (*rc)[0].tensor.ToVector<float>());
}

TEST(SyntheticDeltaTest, EncodesWithTheJobsCodec) {
  auto d = SyntheticDelta::Create(Specs(), codec::Codec::kInt8, {.seed = 1, .scale = 1e-2f});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_LT((*d)->data_bytes(), 370003 * 2);  // about a byte per value
  auto got = Receive((*d)->Messages(2), 2, codec::Codec::kInt8);
  ASSERT_TRUE(got.ok()) << got.status();
  double sum_squares = 0;
  for (const NamedTensor& t : *got) {
    for (float v : t.tensor.ToVector<float>()) sum_squares += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(std::sqrt(sum_squares), (*d)->norm(), 0.02 * (*d)->norm());
  // The decoded norm is exactly what the receiver computes (up to summation order), and not
  // the f32 norm.
  EXPECT_NEAR(std::sqrt(sum_squares), (*d)->decoded_norm(), 1e-9 * (*d)->decoded_norm());
  EXPECT_NE((*d)->decoded_norm(), (*d)->norm());
}

TEST(SyntheticDeltaTest, RefusesWhatItCannotMake) {
  EXPECT_FALSE(SyntheticDelta::Create({}, codec::Codec::kF32).ok());
  EXPECT_FALSE(SyntheticDelta::Create({{"step", DType::kI32, {1}}}, codec::Codec::kF32).ok());
  EXPECT_FALSE(SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 1, .scale = 0}).ok());
  EXPECT_FALSE(SyntheticDelta::Create(Specs(), codec::Codec::kF32, {.seed = 1, .scale = NAN}).ok());
  EXPECT_FALSE(SyntheticDelta::Create({{"a", DType::kF32, {2}}, {"a", DType::kF32, {2}}}, codec::Codec::kF32).ok());
}

}  // namespace
}  // namespace pcp::loadgen
