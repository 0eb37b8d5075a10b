#include "pcp/rpc/tensor_chunks.h"

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/rpc/crc32c.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

Tensor RandomBytesTensor(DType dtype, Shape shape, uint32_t seed) {
  Tensor t(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.byte_size(); ++i) p[i] = static_cast<uint8_t>(rng());
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.byte_size(); ++i) p[i] &= 1;
  }
  return t;
}

std::vector<v1::TensorChunk> ChunkAll(const std::string& name, const Tensor& t, int64_t chunk_bytes) {
  auto chunker = TensorChunker::Create(name, t, ChunkOptions{chunk_bytes});
  EXPECT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), chunker->num_chunks());
  return chunks;
}

absl::StatusOr<Tensor> AssembleAll(const std::vector<v1::TensorChunk>& chunks, AssemblyLimits limits = {},
                                   std::optional<TensorSpec> expect = std::nullopt) {
  TensorAssembler assembler(limits);
  if (expect) assembler.Expect(*expect);
  for (const v1::TensorChunk& c : chunks) {
    if (absl::Status s = assembler.Add(c); !s.ok()) return s;
  }
  return assembler.Take();
}

// ---------------------------------------------------------------- round trips

struct RoundTripCase {
  DType dtype;
  Shape shape;
  int64_t chunk_bytes;
};

class RoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTripTest, ChunksAndReassemblesBitExactly) {
  const RoundTripCase& c = GetParam();
  const Tensor t = RandomBytesTensor(c.dtype, c.shape, 7);
  const std::vector<v1::TensorChunk> chunks = ChunkAll("w", t, c.chunk_bytes);
  const int64_t total = t.byte_size();
  const int64_t want_chunks = total == 0 ? 1 : (total + c.chunk_bytes - 1) / c.chunk_bytes;
  ASSERT_EQ(static_cast<int64_t>(chunks.size()), want_chunks);
  int64_t offset = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const v1::TensorChunk& ch = chunks[i];
    EXPECT_EQ(ch.offset(), static_cast<uint64_t>(offset));
    EXPECT_LE(static_cast<int64_t>(ch.data().size()), c.chunk_bytes);
    EXPECT_LE(static_cast<int64_t>(ch.ByteSizeLong()), kMaxChunkMessageBytes);
    EXPECT_EQ(ch.crc32c(), Crc32c(ch.data()));
    const bool last = i + 1 == chunks.size();
    EXPECT_EQ(ch.tensor_crc32c(), last ? Crc32c(t.raw_data(), total) : 0u);
    offset += static_cast<int64_t>(ch.data().size());
  }
  EXPECT_EQ(offset, total);
  auto back = AssembleAll(chunks);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(BitwiseEqual(*back, t)) << back->TypeString() << " vs " << t.TypeString();
}

constexpr int64_t k256K = 256 << 10;
constexpr int64_t k1M = 1 << 20;

INSTANTIATE_TEST_SUITE_P(
    Sizes, RoundTripTest,
    ::testing::Values(RoundTripCase{DType::kF32, {0}, k1M},  // no elements: one empty chunk
                      RoundTripCase{DType::kF32, {3, 0, 2}, k256K}, RoundTripCase{DType::kF32, {}, k1M},  // scalar
                      RoundTripCase{DType::kBool, {k256K - 1}, k256K},  // 1 byte under a boundary
                      RoundTripCase{DType::kBool, {k256K}, k256K},      // exactly one chunk
                      RoundTripCase{DType::kBool, {k256K + 1}, k256K},  // 1 byte over: 2 chunks
                      RoundTripCase{DType::kF32, {k1M / 4 + 1}, k1M},   // 1 element over
                      RoundTripCase{DType::kF16, {3, 131071}, 512 << 10}, RoundTripCase{DType::kBF16, {65, 128}, k256K},
                      RoundTripCase{DType::kI32, {1000, 1000}, k1M},
                      RoundTripCase{DType::kI64, {7, 50000}, 300000},  // chunk size not a power of 2
                      RoundTripCase{DType::kF32, {2500000}, k1M}));    // 10 MB

TEST(ChunkBytesForPeerTest, ClampsTheAcceptedSizeToTheSendingRange) {
  EXPECT_EQ(ChunkBytesForPeer(0), kDefaultChunkBytes);  // no limit stated
  EXPECT_EQ(ChunkBytesForPeer(262144), 262144);
  EXPECT_EQ(ChunkBytesForPeer(300000), 300000);
  EXPECT_EQ(ChunkBytesForPeer(1000), kMinChunkBytes);
  EXPECT_EQ(ChunkBytesForPeer(uint64_t{1} << 40), kMaxChunkBytes);
}

TEST(TensorChunkerTest, RejectsBadArguments) {
  const Tensor t(DType::kF32, {4});
  EXPECT_THAT(TensorChunker::Create("w", t, ChunkOptions{kMinChunkBytes - 1}).status().message(),
              HasSubstr("outside [131072, 1048576]"));
  EXPECT_THAT(TensorChunker::Create("w", t, ChunkOptions{k1M + 1}).status().message(), HasSubstr("outside"));
  EXPECT_THAT(TensorChunker::Create("", t).status().message(), HasSubstr("name"));
  EXPECT_THAT(TensorChunker::Create("w", Tensor()).status().message(), HasSubstr("no storage"));
  EXPECT_THAT(TensorChunker::Create("w", t, {}, 2, 2).status().message(),
              HasSubstr("index 2 is not below the count 2"));
}

TEST(TensorAssemblerTest, TakeBeforeCompleteFails) {
  const Tensor t = RandomBytesTensor(DType::kF32, {100000}, 1);
  auto chunks = ChunkAll("w", t, k256K);
  TensorAssembler a;
  EXPECT_EQ(a.Take().status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  EXPECT_TRUE(a.started());
  EXPECT_FALSE(a.complete());
  EXPECT_THAT(a.Take().status().message(), HasSubstr("262144 of 400000 bytes"));
  ASSERT_TRUE(a.Add(chunks[1]).ok());
  EXPECT_TRUE(a.complete());
  ASSERT_TRUE(a.Take().ok());
  // Reset: takes a new tensor.
  EXPECT_FALSE(a.started());
  ASSERT_TRUE(a.Add(chunks[0]).ok());
}

TEST(TensorAssemblerTest, ErrorIsSticky) {
  const Tensor t = RandomBytesTensor(DType::kF32, {100000}, 1);
  auto chunks = ChunkAll("w", t, k256K);
  TensorAssembler a;
  v1::TensorChunk bad = chunks[0];
  bad.set_crc32c(bad.crc32c() ^ 1);
  const absl::Status first = a.Add(bad);
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Add(chunks[0]), first);
}

// ---------------------------------------------------------------- validation table

using Chunks = std::vector<v1::TensorChunk>;

struct BadCase {
  std::string label;
  std::function<void(Chunks&)> mutate;
  std::string error;  // expected substring
  AssemblyLimits limits = {};
  std::optional<TensorSpec> expect = std::nullopt;
};

void FixCrc(v1::TensorChunk& c) { c.set_crc32c(Crc32c(c.data())); }

std::vector<BadCase> BadCases() {
  return {
      {"control: no mutation", [](Chunks&) {}, ""},
      {"crc mismatch", [](Chunks& c) { (*c[1].mutable_data())[10] ^= 1; },
       "tensor 'w' (index 0) at offset 262144: crc32c mismatch"},
      {"duplicate chunk", [](Chunks& c) { c.insert(c.begin() + 2, c[1]); },
       "at offset 262144: duplicate or out-of-order chunk (expected offset 524288)"},
      {"missing chunk", [](Chunks& c) { c.erase(c.begin() + 1); },
       "at offset 524288: chunks are not contiguous (expected offset 262144)"},
      {"swapped chunks", [](Chunks& c) { std::swap(c[1], c[2]); },
       "at offset 524288: chunks are not contiguous (expected offset 262144)"},
      {"first chunk not at 0", [](Chunks& c) { c.erase(c.begin()); },
       "at offset 262144: chunks are not contiguous (expected offset 0)"},
      {"oversized chunk",
       [](Chunks& c) {
         c[0].mutable_data()->append(std::string(k1M + 1 - c[0].data().size(), 'x'));
         FixCrc(c[0]);
       },
       "at offset 0: chunk of 1048577 bytes exceeds the limit of 1048576 bytes"},
      {"chunk over the limit configured", [](Chunks&) {}, "chunk of 262144 bytes exceeds the limit of 100000 bytes",
       AssemblyLimits{.max_chunk_bytes = 100000}},
      {"tensor over the limit", [](Chunks&) {},
       "at offset 0: tensor of 1200000 bytes exceeds the limit of 1000000 bytes",
       AssemblyLimits{.max_tensor_bytes = 1000000}},
      {"total_bytes disagrees with shape", [](Chunks& c) { c[0].set_total_bytes(1200004); },
       "total_bytes 1200004 does not match f32[3x100000] (1200000 bytes)"},
      {"data past the end",
       [](Chunks& c) {
         c.back().mutable_data()->append("abcd");
         FixCrc(c.back());
       },
       "runs past the end (total 1200000 bytes)"},
      {"empty chunk",
       [](Chunks& c) {
         v1::TensorChunk e = c[1];
         e.clear_data();
         FixCrc(e);
         c.insert(c.begin() + 1, e);
       },
       "at offset 262144: empty chunk"},
      {"whole-tensor crc wrong", [](Chunks& c) { c.back().set_tensor_crc32c(c.back().tensor_crc32c() ^ 0x80); },
       "crc32c of the whole"},
      {"chunk after complete", [](Chunks& c) { c.push_back(c.back()); }, "chunk after the tensor was complete"},
      {"later chunk renamed", [](Chunks& c) { c[2].set_name("v"); },
       "tensor 'w' (index 0) at offset 524288: chunk's name differs from the tensor's first chunk"},
      {"later chunk dtype", [](Chunks& c) { c[2].set_dtype(v1::DTYPE_I32); },
       "at offset 524288: chunk's dtype differs"},
      {"later chunk shape", [](Chunks& c) { c[3].mutable_shape()->Set(1, 99999); },
       "at offset 786432: chunk's shape differs"},
      {"later chunk total", [](Chunks& c) { c[1].set_total_bytes(1300000); }, "chunk's total_bytes differs"},
      {"later chunk index",
       [](Chunks& c) {
         c[1].set_index(1);
         c[1].set_count(2);
       },
       "chunk's index differs"},
      {"unspecified dtype", [](Chunks& c) { c[0].set_dtype(v1::DTYPE_UNSPECIFIED); },
       "at offset 0: dtype is unspecified"},
      {"unknown dtype", [](Chunks& c) { c[0].set_dtype(static_cast<v1::DType>(99)); }, "unknown dtype 99"},
      {"negative dimension", [](Chunks& c) { c[0].mutable_shape()->Set(1, -5); }, "shape dimension 1 is negative (-5)"},
      {"rank too high",
       [](Chunks& c) {
         for (int i = 0; i < 20; ++i) c[0].mutable_shape()->Add(1);
       },
       "shape has rank 22, more than 16"},
      {"element count overflows",
       [](Chunks& c) {
         c[0].mutable_shape()->Set(0, int64_t{1} << 40);
         c[0].mutable_shape()->Set(1, int64_t{1} << 40);
       },
       "has too many elements"},
      {"empty name", [](Chunks& c) { c[0].clear_name(); }, "the name must have 1 to 1024 characters"},
      {"index not below count",
       [](Chunks& c) {
         c[0].set_index(3);
         c[0].set_count(3);
       },
       "(index 3) at offset 0: index is not below the list's count 3"},
      {"expected another name",
       [](Chunks&) {},
       "tensor 'w' (index 0) at offset 0: expected tensor 'wte'",
       {},
       TensorSpec{"wte", DType::kF32, {3, 100000}}},
      {"expected another shape",
       [](Chunks&) {},
       "tensor 'w' (index 0) at offset 0: expected f32[100000x3], got f32[3x100000]",
       {},
       TensorSpec{"w", DType::kF32, {100000, 3}}},
      {"expected another dtype",
       [](Chunks&) {},
       "expected bf16[3x100000], got f32[3x100000]",
       {},
       TensorSpec{"w", DType::kBF16, {3, 100000}}},
  };
}

TEST(TensorAssemblerTest, RejectsEveryInconsistency) {
  // f32[3x100000] = 1,200,000 bytes = 5 chunks of 256 KiB (the last 151,424 bytes).
  const Tensor t = RandomBytesTensor(DType::kF32, {3, 100000}, 3);
  const Chunks good = ChunkAll("w", t, k256K);
  ASSERT_EQ(good.size(), 5u);
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.label);
    Chunks chunks = good;
    c.mutate(chunks);
    auto result = AssembleAll(chunks, c.limits, c.expect);
    if (c.error.empty()) {
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_TRUE(BitwiseEqual(*result, t));
      continue;
    }
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(c.error));
  }
}

// ---------------------------------------------------------------- blobs

TEST(BlobTest, RoundTripWithExpectations) {
  std::string program(3 * k1M + 17, '\0');
  for (size_t i = 0; i < program.size(); ++i) program[i] = static_cast<char>('a' + i % 26);
  auto chunker = BlobChunker::Create("sha256:abc", program, ChunkOptions{512 << 10});
  ASSERT_TRUE(chunker.ok());
  EXPECT_EQ(chunker->num_chunks(), 7);
  BlobAssembler assembler;
  assembler.Expect("sha256:abc", static_cast<int64_t>(program.size()));
  while (!chunker->done()) {
    v1::BlobChunk chunk;
    chunker->Next(&chunk);
    EXPECT_LE(chunk.data().size(), size_t{512} << 10);
    ASSERT_TRUE(assembler.Add(chunk).ok());
  }
  ASSERT_TRUE(assembler.complete());
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, program);
}

TEST(BlobTest, EmptyBlobIsOneChunk) {
  auto chunker = BlobChunker::Create("shard", "");
  ASSERT_TRUE(chunker.ok());
  v1::BlobChunk chunk;
  chunker->Next(&chunk);
  EXPECT_TRUE(chunker->done());
  BlobAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunk).ok());
  EXPECT_EQ(assembler.Take().value(), "");
}

TEST(BlobTest, RejectsBadChunks) {
  const std::string data(600000, 'z');
  auto chunker = BlobChunker::Create("p", data, ChunkOptions{k256K});
  std::vector<v1::BlobChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  ASSERT_EQ(chunks.size(), 3u);

  {
    BlobAssembler a;
    a.Expect("q", 600000);
    EXPECT_THAT(a.Add(chunks[0]).message(), HasSubstr("blob 'p' at offset 0: expected blob 'q'"));
  }
  {
    BlobAssembler a;
    a.Expect("p", 5);
    EXPECT_THAT(a.Add(chunks[0]).message(), HasSubstr("blob of 600000 bytes, expected 5"));
  }
  {
    BlobAssembler a(AssemblyLimits{.max_tensor_bytes = 1000});
    EXPECT_THAT(a.Add(chunks[0]).message(), HasSubstr("exceeds the limit of 1000 bytes"));
  }
  {
    BlobAssembler a;
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    EXPECT_THAT(a.Add(chunks[2]).message(),
                HasSubstr("at offset 524288: chunks are not contiguous (expected offset 262144)"));
  }
  {
    BlobAssembler a;
    auto bad = chunks[1];
    (*bad.mutable_data())[0] = 'y';
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    EXPECT_THAT(a.Add(bad).message(), HasSubstr("at offset 262144: crc32c mismatch"));
  }
  {
    BlobAssembler a;
    auto bad = chunks[1];
    bad.set_total_bytes(700000);
    ASSERT_TRUE(a.Add(chunks[0]).ok());
    EXPECT_THAT(a.Add(bad).message(), HasSubstr("chunk's total_bytes differs"));
  }
}

}  // namespace
}  // namespace pcp
