// Encoded tensor chunks (protos/pcp/v1/tensor.proto, "Encoded tensors"): TensorChunker with a
// codec, TensorAssembler decoding chunk by chunk, and every malformed stream refused with the
// tensor and the offset.
#include <cctype>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/codec/encoded.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/rpc/tensor_proto.h"

namespace pcp {
namespace {

using codec::Codec;
using ::testing::HasSubstr;

constexpr int64_t k256K = 256 << 10;
constexpr int64_t k1M = 1 << 20;

// Gaussian-like values with an outlier now and then, so blocks get different scales.
Tensor Values(Shape shape, uint32_t seed) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = normal(rng) * (i % 997 == 0 ? 50.0f : 1.0f);
  return t;
}

ChunkOptions Options(Codec c, int64_t chunk_bytes = k1M, int block_size = 0) {
  ChunkOptions o;
  o.chunk_bytes = chunk_bytes;
  o.codec = c;
  o.block_size = block_size;
  return o;
}

std::vector<v1::TensorChunk> ChunkAll(const Tensor& t, const ChunkOptions& options, const std::string& name = "wte") {
  auto chunker = TensorChunker::Create(name, t, options);
  EXPECT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), chunker->num_chunks());
  int64_t total = 0;
  for (const v1::TensorChunk& c : chunks) total += static_cast<int64_t>(c.data().size());
  EXPECT_EQ(total, chunker->total_bytes());
  return chunks;
}

// Sets a chunk's CRCs to match its (changed) data, as if a buggy or hostile sender had.
void FixCrcs(std::vector<v1::TensorChunk>& chunks) {
  uint32_t whole = 0;
  for (v1::TensorChunk& c : chunks) {
    c.set_crc32c(Crc32c(c.data()));
    whole = Crc32cExtend(whole, c.data().data(), c.data().size());
  }
  for (v1::TensorChunk& c : chunks) c.set_tensor_crc32c(0);
  chunks.back().set_tensor_crc32c(whole);
}

absl::Status AddAll(TensorAssembler& a, const std::vector<v1::TensorChunk>& chunks) {
  for (const v1::TensorChunk& c : chunks) {
    if (absl::Status s = a.Add(c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A hand-made encoded tensor: one chunk per run of `counts`, shape [elements].
std::vector<v1::TensorChunk> Handmade(Codec c, int64_t elements, const std::vector<int64_t>& counts) {
  std::vector<v1::TensorChunk> chunks;
  uint64_t offset = 0;
  for (int64_t n : counts) {
    v1::TensorChunk& ch = chunks.emplace_back();
    ch.set_name("wte");
    ch.set_count(1);
    ch.set_dtype(v1::DTYPE_F32);
    ch.add_shape(elements);
    ch.set_codec(CodecToProto(c));
    ch.set_offset(offset);
    ch.set_data(codec::Encode(c, Values({n}, 3).ToVector<float>()));
    offset += ch.data().size();
  }
  for (v1::TensorChunk& ch : chunks) ch.set_total_bytes(offset);
  FixCrcs(chunks);
  return chunks;
}

// ---------------------------------------------------------------- the wire enum

TEST(TensorCodecTest, WireEnumMatchesTheCodecList) {
  for (const auto& [c, name] : codec::kCodecNames) {
    std::string upper(name);
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_EQ(v1::Codec_Name(CodecToProto(c)), "CODEC_" + upper);
    auto back = CodecFromProto(CodecToProto(c));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
  }
  EXPECT_EQ(v1::Codec_MAX + 1, codec::kNumCodecs);
  EXPECT_THAT(CodecFromProto(9).status().message(), HasSubstr("unknown codec id 9"));
}

// ---------------------------------------------------------------- round trips

struct CodecCase {
  Codec codec;
  Shape shape;
  int64_t chunk_bytes;
  int block_size;
};

class CodecRoundTripTest : public ::testing::TestWithParam<CodecCase> {};

// Each chunk is codec::Encode of the next run of elements, bit for bit; each run is the most
// whole blocks that fit; the assembled tensor is codec::Decode of those runs, bit for bit.
TEST_P(CodecRoundTripTest, ChunksAreEncodedRunsAndDecodeExactly) {
  const CodecCase& p = GetParam();
  const Tensor t = Values(p.shape, 11);
  const std::vector<v1::TensorChunk> chunks = ChunkAll(t, Options(p.codec, p.chunk_bytes, p.block_size));
  const int block = codec::IsBlockwise(p.codec) ? (p.block_size ? p.block_size : codec::DefaultBlockSize(p.codec)) : 1;
  Tensor expected(DType::kF32, p.shape);
  int64_t element = 0;
  uint64_t offset = 0;
  uint32_t whole = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const v1::TensorChunk& ch = chunks[i];
    const bool last = i + 1 == chunks.size();
    EXPECT_EQ(ch.codec(), CodecToProto(p.codec));
    EXPECT_EQ(ch.dtype(), v1::DTYPE_F32);
    EXPECT_EQ(ch.offset(), offset);
    EXPECT_LE(static_cast<int64_t>(ch.data().size()), p.chunk_bytes);
    EXPECT_EQ(ch.crc32c(), Crc32c(ch.data()));
    whole = Crc32cExtend(whole, ch.data().data(), ch.data().size());
    EXPECT_EQ(ch.tensor_crc32c(), last ? whole : 0u);
    offset += ch.data().size();
    if (t.num_elements() == 0) {
      EXPECT_TRUE(ch.data().empty());
      continue;
    }
    auto header = codec::ReadHeader(ch.data());
    ASSERT_TRUE(header.ok()) << header.status();
    const int64_t n = static_cast<int64_t>(header->count);
    if (!last) {
      EXPECT_EQ(n % block, 0) << "chunk " << i;
      // The most whole blocks: one more does not fit.
      EXPECT_GT(*codec::EncodedSize(p.codec, n + block, p.block_size), p.chunk_bytes);
    }
    const absl::Span<const float> run(t.data<float>() + element, n);
    auto encoded = codec::Encode(p.codec, run, p.block_size);
    ASSERT_TRUE(encoded.ok());
    EXPECT_TRUE(*encoded == ch.data()) << "chunk " << i;
    ASSERT_TRUE(codec::Decode(*encoded, absl::MakeSpan(expected.data<float>() + element, n)).ok());
    element += n;
  }
  EXPECT_EQ(element, t.num_elements());
  EXPECT_EQ(chunks.back().total_bytes(), offset);

  TensorAssembler assembler;
  assembler.ExpectCodec(p.codec);
  assembler.Expect({"wte", DType::kF32, p.shape});
  ASSERT_TRUE(AddAll(assembler, chunks).ok());
  EXPECT_EQ(assembler.codec(), p.codec);
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(BitwiseEqual(*back, expected));
}

// The zero-copy path both ways: the chunker encodes into a buffer the payload owns, and the
// assembler takes the bytes in odd pieces (gathered before decoding).
TEST_P(CodecRoundTripTest, ZeroCopyPayloadsInOddPieces) {
  const CodecCase& p = GetParam();
  const Tensor t = Values(p.shape, 12);
  const ChunkOptions options = Options(p.codec, p.chunk_bytes, p.block_size);
  const std::vector<v1::TensorChunk> copied = ChunkAll(t, options);
  auto chunker = TensorChunker::Create("wte", t, options);
  ASSERT_TRUE(chunker.ok());
  TensorAssembler assembler;
  std::mt19937 rng(5);
  ChunkPayload payload;  // reused across chunks, as senders do
  for (size_t i = 0; !chunker->done(); ++i) {
    v1::TensorChunk head;
    chunker->Next(&head, &payload);
    EXPECT_TRUE(head.data().empty());
    EXPECT_FALSE(payload.owner.valid());
    ASSERT_TRUE(payload.encoded != nullptr);
    const std::string bytes(payload.data, payload.size);
    v1::TensorChunk with_data = head;
    with_data.set_data(bytes);
    EXPECT_EQ(with_data.SerializeAsString(), copied[i].SerializeAsString()) << "chunk " << i;
    std::vector<absl::string_view> pieces;
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng() % 40000);
      pieces.push_back(absl::string_view(bytes).substr(at, n));
      at += n;
    }
    ASSERT_TRUE(assembler.AddPieces(head, pieces).ok()) << "chunk " << i;
  }
  TensorAssembler from_copies;
  ASSERT_TRUE(AddAll(from_copies, copied).ok());
  auto a = assembler.Take();
  auto b = from_copies.Take();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(BitwiseEqual(*a, *b));
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, CodecRoundTripTest,
    ::testing::Values(CodecCase{Codec::kInt8, {0}, k1M, 0},  // empty: one chunk, no data
                      CodecCase{Codec::kInt4, {}, k1M, 0},   // scalar
                      CodecCase{Codec::kBf16, {3, 1001}, k256K, 0},
                      CodecCase{Codec::kBf16, {k1M / 2 + 5}, 300001, 0},  // odd chunk size
                      CodecCase{Codec::kInt8, {1000, 1000}, k1M, 0},      // 1 MB of int8: 2 chunks
                      CodecCase{Codec::kInt8, {700001}, 300000, 0},       // chunk not a block multiple
                      CodecCase{Codec::kInt8, {300000}, k256K, 4096},
                      CodecCase{Codec::kInt8, {200000}, k256K, 65536},           // 3 blocks a chunk
                      CodecCase{Codec::kInt8, {200000}, kMinChunkBytes, 65536},  // the smallest: 1 block a chunk
                      CodecCase{Codec::kBf16, {100001}, kMinChunkBytes, 0},
                      CodecCase{Codec::kInt4, {2500001}, k1M, 0},  // 1.4 MB: 2 chunks
                      CodecCase{Codec::kInt4, {65, 12345}, 262147, 0}, CodecCase{Codec::kInt4, {900001}, k256K, 32},
                      // Sparse (sizes depend on the values; chunk elements from the largest encoding).
                      CodecCase{Codec::kTopk2, {0}, k1M, 0},
                      CodecCase{Codec::kTopk2, {3000001}, kMinChunkBytes, 0},  // 4 chunks
                      CodecCase{Codec::kTopk8, {7, 100001}, k256K, 1024},
                      CodecCase{Codec::kTopk4, {65, 12345}, 262147, 32}));

TEST(TensorCodecTest, F32CodecIsTheRawPathUnchanged) {
  const Tensor t = Values({300000}, 2);
  const auto raw = ChunkAll(t, ChunkOptions{k1M});
  const auto f32 = ChunkAll(t, Options(Codec::kF32));
  ASSERT_EQ(raw.size(), f32.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    EXPECT_EQ(f32[i].codec(), v1::CODEC_F32);
    EXPECT_EQ(raw[i].SerializeAsString(), f32[i].SerializeAsString());
  }
  TensorAssembler a;
  a.ExpectCodec(Codec::kF32);
  ASSERT_TRUE(AddAll(a, f32).ok());
  EXPECT_TRUE(BitwiseEqual(*a.Take(), t));
}

TEST(TensorCodecTest, EncodedBufferIsReusedOnceReleased) {
  const Tensor t = Values({3 * k1M}, 4);
  auto chunker = TensorChunker::Create("wte", t, Options(Codec::kInt8));
  ASSERT_TRUE(chunker.ok());
  v1::TensorChunk head;
  ChunkPayload payload;
  chunker->Next(&head, &payload);
  const std::string* first = payload.encoded.get();
  chunker->Next(&head, &payload);  // the caller's payload was the only other holder
  EXPECT_EQ(payload.encoded.get(), first);
  const ChunkPayload held = payload;  // e.g. gRPC still sending it
  chunker->Next(&head, &payload);
  EXPECT_NE(payload.encoded.get(), first);
  EXPECT_EQ(held.encoded.get(), first);
}

TEST(TensorCodecTest, ReuseBufferReceivesIntoIt) {
  const Tensor t = Values({5000}, 6);
  Tensor buffer(DType::kF32, {5000});
  TensorAssembler a;
  a.ReuseBuffer(buffer);
  ASSERT_TRUE(AddAll(a, ChunkAll(t, Options(Codec::kInt4))).ok());
  auto back = a.Take();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->raw_data(), buffer.raw_data());
}

TEST(TensorCodecTest, ChunkerRejectsWhatItCannotEncode) {
  EXPECT_THAT(TensorChunker::Create("ids", Tensor(DType::kI32, {4}), Options(Codec::kInt8)).status().message(),
              HasSubstr("codec int8 encodes f32 tensors only, not i32[4]"));
  const Tensor t(DType::kF32, {4});
  EXPECT_EQ(TensorChunker::Create("w", t, Options(Codec::kInt8, k1M, 100)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TensorChunker::Create("w", t, Options(Codec::kBf16, k1M, 64)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BlobChunker::Create("shard", "abc", Options(Codec::kInt4)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- malformed streams

struct Refusal {
  absl::Status status;
  std::string Message() const { return std::string(status.message()); }
};

Refusal Assemble(const std::vector<v1::TensorChunk>& chunks, AssemblyLimits limits = {},
                 std::optional<Codec> expect = std::nullopt) {
  TensorAssembler a(limits);
  if (expect) a.ExpectCodec(*expect, "the job's diloco.compression.up");
  Refusal r{AddAll(a, chunks)};
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << r.status;
  return r;
}

TEST(TensorCodecTest, RefusesAnotherCodecThanExpected) {
  const Tensor t = Values({1000}, 1);
  EXPECT_EQ(Assemble(ChunkAll(t, Options(Codec::kF32)), {}, Codec::kInt8).Message(),
            "tensor 'wte' (index 0) at offset 0: expected codec int8 (the job's "
            "diloco.compression.up), got f32");
  EXPECT_THAT(Assemble(ChunkAll(t, Options(Codec::kInt4)), {}, Codec::kInt8).Message(),
              HasSubstr("expected codec int8 (the job's diloco.compression.up), got int4"));
}

TEST(TensorCodecTest, RefusesAnUnknownCodecId) {
  auto chunks = ChunkAll(Values({1000}, 1), Options(Codec::kInt8));
  chunks[0].set_codec(static_cast<v1::Codec>(9));
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("tensor 'wte' (index 0) at offset 0: unknown codec id 9"));
}

TEST(TensorCodecTest, RefusesMoreElementsThanRemain) {
  // The shape says 12 elements; the chunk holds 300000.
  EXPECT_EQ(Assemble(Handmade(Codec::kInt8, 12, {300000})).Message(),
            "tensor 'wte' (index 0) at offset 0: codec int8 chunk holds 300000 elements, only "
            "12 remain");
  // At a later chunk: 1000 + 1000 of 1500.
  const auto chunks = Handmade(Codec::kInt4, 1500, {1000, 1000});
  EXPECT_EQ(Assemble(chunks).Message(), absl::StrCat("tensor 'wte' (index 0) at offset ", chunks[1].offset(),
                                                     ": codec int4 chunk holds 1000 elements, only 500 remain"));
  // A header with no elements at all.
  EXPECT_THAT(Assemble(Handmade(Codec::kBf16, 10, {0})).Message(),
              HasSubstr("at offset 0: codec bf16 chunk holds 0 elements, only 10 remain"));
}

TEST(TensorCodecTest, RefusesAStreamThatEndsShort) {
  const auto chunks = Handmade(Codec::kInt8, 3000, {1024, 975});
  EXPECT_EQ(Assemble(chunks).Message(), absl::StrCat("tensor 'wte' (index 0) at offset ", chunks[1].offset(),
                                                     ": codec int8 stream ends after 1999 of 3000 elements"));
}

TEST(TensorCodecTest, RefusesAHeaderOfAnotherCodec) {
  auto chunks = Handmade(Codec::kInt8, 1000, {1000});
  chunks[0].set_codec(v1::CODEC_INT4);
  EXPECT_THAT(Assemble(chunks).Message(),
              HasSubstr("at offset 0: chunk of codec int4 holds a buffer encoded with int8"));
}

TEST(TensorCodecTest, RefusesAMalformedBuffer) {
  auto chunks = Handmade(Codec::kInt8, 2000, {1000, 1000});
  (*chunks[1].mutable_data())[0] = 'X';  // the magic
  FixCrcs(chunks);
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr(absl::StrCat("at offset ", chunks[1].offset(), ": ")));
  // A buffer cut short (its header says more than it holds).
  chunks = Handmade(Codec::kInt4, 1000, {1000});
  chunks[0].mutable_data()->resize(chunks[0].data().size() - 3);
  chunks[0].set_total_bytes(chunks[0].data().size());
  FixCrcs(chunks);
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("at offset 0: "));
}

TEST(TensorCodecTest, RefusesBadCrcsAndPositions) {
  const auto good = ChunkAll(Values({700000}, 8), Options(Codec::kInt8, k256K));
  ASSERT_GE(good.size(), 3u);
  auto chunks = good;
  (*chunks[1].mutable_data())[100] ^= 1;
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr(absl::StrCat("at offset ", good[1].offset(), ": crc32c mismatch")));
  chunks = good;
  chunks.back().set_tensor_crc32c(chunks.back().tensor_crc32c() ^ 1);
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("crc32c of the whole"));
  chunks = good;
  std::swap(chunks[1], chunks[2]);
  EXPECT_THAT(Assemble(chunks).Message(),
              HasSubstr(absl::StrCat("at offset ", good[2].offset(), ": chunks are not contiguous")));
  chunks = good;
  chunks[1] = chunks[0];
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("at offset 0: duplicate or out-of-order"));
  chunks = good;
  chunks[1].set_codec(v1::CODEC_INT4);
  EXPECT_THAT(Assemble(chunks).Message(),
              HasSubstr(absl::StrCat("at offset ", good[1].offset(),
                                     ": chunk's codec differs from the tensor's first chunk")));
  chunks = good;
  chunks.push_back(good.back());
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("chunk after the tensor was complete"));
}

TEST(TensorCodecTest, RefusesBadDescriptions) {
  auto chunks = Handmade(Codec::kInt8, 1000, {1000});
  chunks[0].set_dtype(v1::DTYPE_I32);
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("at offset 0: codec int8 carries f32 tensors only, not i32[1000]"));
  chunks = Handmade(Codec::kInt8, 1000, {1000});
  chunks[0].set_total_bytes(0);
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("at offset 0: total_bytes 0 does not suit"));
  // No elements, yet a total (and data) of one empty encoded buffer.
  chunks = Handmade(Codec::kInt8, 0, {0});
  EXPECT_THAT(Assemble(chunks).Message(), HasSubstr("at offset 0: total_bytes 16 does not suit"));
}

TEST(TensorCodecTest, LimitsBoundBothEncodedAndDecodedSizes) {
  AssemblyLimits limits;
  limits.max_tensor_bytes = k1M;
  // 1M int4 values: 0.56 MB encoded, 4 MB decoded.
  const auto chunks = ChunkAll(Values({k1M}, 9), Options(Codec::kInt4));
  EXPECT_THAT(Assemble(chunks, limits).Message(),
              HasSubstr("at offset 0: tensor of 4194304 bytes exceeds the limit of 1048576"));
  // An encoded total beyond the limit, whatever the shape.
  auto big = Handmade(Codec::kInt8, 1000, {1000});
  big[0].set_total_bytes(k1M + 1);
  EXPECT_THAT(Assemble(big, limits).Message(),
              HasSubstr("at offset 0: encoded tensor of 1048577 bytes exceeds the limit"));
  // Chunk data above the chunk limit.
  limits.max_tensor_bytes = int64_t{1} << 30;
  limits.max_chunk_bytes = 1000;
  EXPECT_THAT(Assemble(Handmade(Codec::kInt8, 2000, {2000}), limits).Message(),
              HasSubstr("at offset 0: chunk of 2024 bytes exceeds the limit of 1000 bytes"));
}

// ---------------------------------------------------------------- lists

TEST(TensorCodecTest, MixedListThroughInt4) {
  const std::vector<NamedTensor> list = {{"transformer.wte.weight", Values({65, 40000}, 1)},
                                         {"ln.weight", Values({128}, 2)},
                                         {"empty", Values({0, 3}, 3)},
                                         {"lm_head.weight", Values({3, 1000}, 4)},
                                         {"scale", Values({}, 5)}};
  const ChunkOptions options = Options(Codec::kInt4, k256K);
  auto chunker = TensorListChunker::Create(list, options);
  ASSERT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), chunker->num_chunks());
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(list));
  assembler.ExpectCodec(Codec::kInt4, "the job's diloco.compression.up");
  for (const v1::TensorChunk& c : chunks) ASSERT_TRUE(assembler.Add(c).ok());
  ASSERT_TRUE(assembler.complete());
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    // Each tensor alone through the same chunker and assembler gives the same bits.
    TensorAssembler one;
    ASSERT_TRUE(AddAll(one, ChunkAll(list[i].tensor, options, list[i].name)).ok());
    EXPECT_TRUE(BitwiseEqual((*back)[i].tensor, *one.Take())) << list[i].name;
  }
  // The scalar is one int4 value: exact up to the block's scale (absmax/7 steps of itself).
  EXPECT_FLOAT_EQ((*back)[4].tensor.data<float>()[0], list[4].tensor.data<float>()[0]);

  // A list pinned to int8 refuses it at the first chunk, naming the tensor.
  TensorListAssembler wrong;
  wrong.ExpectCodec(Codec::kInt8, "the job's diloco.compression.up");
  EXPECT_THAT(std::string(wrong.Add(chunks[0]).message()),
              HasSubstr("tensor 'transformer.wte.weight' (index 0) at offset 0: expected codec "
                        "int8 (the job's diloco.compression.up), got int4"));
  // The list limit counts decoded bytes: 2.6M floats are 10.4 MB decoded.
  AssemblyLimits limits;
  limits.max_list_bytes = 8 << 20;
  TensorListAssembler bounded(limits);
  EXPECT_THAT(std::string(bounded.Add(chunks[0]).message()), HasSubstr("the list would exceed its limit"));
  EXPECT_THAT(TensorListChunker::Create({{"ids", Tensor(DType::kI32, {3})}}, options).status().message(),
              HasSubstr("encodes f32 tensors only"));
}

// The codec time the services export (pcp_*_codec_seconds_total): encoding and decoding are
// timed, raw f32 chunks are not; an assembler keeps its total across Take.
TEST(TensorCodecTest, CodecSecondsTimeEncodingAndDecodingOnly) {
  const std::vector<NamedTensor> list = {{"a", Values({512, 1024}, 7)}, {"b", Values({300}, 8)}};
  for (Codec c : {Codec::kF32, Codec::kInt8}) {
    auto chunker = TensorListChunker::Create(list, Options(c, k256K));
    ASSERT_TRUE(chunker.ok()) << chunker.status();
    EXPECT_EQ(chunker->codec(), c);
    TensorListAssembler assembler;
    double encoded_so_far = 0;
    while (!chunker->done()) {
      v1::TensorChunk chunk;
      chunker->Next(&chunk);
      EXPECT_GE(chunker->codec_seconds(), encoded_so_far);  // never goes back, across tensors too
      encoded_so_far = chunker->codec_seconds();
      ASSERT_TRUE(assembler.Add(chunk).ok());
    }
    const double decoded = assembler.codec_seconds();
    ASSERT_TRUE(assembler.Take().ok());
    EXPECT_EQ(assembler.codec_seconds(), decoded);
    if (c == Codec::kF32) {
      EXPECT_EQ(chunker->codec_seconds(), 0.0);
      EXPECT_EQ(decoded, 0.0);
    } else {
      // 512K values through int8 take well over a microsecond each way, and not a minute.
      EXPECT_GT(chunker->codec_seconds(), 1e-6);
      EXPECT_GT(decoded, 1e-6);
      EXPECT_LT(chunker->codec_seconds() + decoded, 60.0);
    }
  }
}

}  // namespace
}  // namespace pcp
