#include "pcp/rpc/tensor_list.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/sum_of_squares.h"
#include "pcp/rpc/chunked_list.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

Tensor RandomF32(Shape shape, uint32_t seed) { return testing::RandomTensor({DType::kF32, std::move(shape)}, seed); }

// A small GPT-like parameter list: big, tiny, empty and scalar tensors.
std::vector<NamedTensor> Params() {
  return {{"transformer.wte.weight", RandomF32({65, 4096}, 1)},  // 1,064,960 bytes: 2 chunks
          {"transformer.h.0.ln_1.weight", RandomF32({128}, 2)},
          {"empty", RandomF32({0, 3}, 3)},
          {"lm_head.weight", RandomF32({300, 1000}, 4)},  // 1.2 MB: 2 chunks
          {"scale", RandomF32({}, 5)}};
}

std::vector<v1::TensorChunk> ChunkList(const std::vector<NamedTensor>& list) {
  auto chunker = TensorListChunker::Create(list);
  EXPECT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), chunker->num_chunks());
  return chunks;
}

TEST(TensorListTest, RoundTrip) {
  const std::vector<NamedTensor> params = Params();
  const auto chunks = ChunkList(params);
  EXPECT_EQ(chunks.size(), 2u + 1 + 1 + 2 + 1);
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(params));
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_FALSE(assembler.complete()) << i;
    ASSERT_TRUE(assembler.Add(chunks[i]).ok()) << i;
  }
  ASSERT_TRUE(assembler.complete());
  EXPECT_EQ(assembler.tensors_received(), 5);
  auto back = assembler.Take();
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ((*back)[i].name, params[i].name);
    EXPECT_TRUE(BitwiseEqual((*back)[i].tensor, params[i].tensor)) << params[i].name;
  }
}

TEST(TensorListTest, ChunkerRejectsBadLists) {
  EXPECT_THAT(TensorListChunker::Create({}).status().message(), HasSubstr("empty tensor list"));
  std::vector<NamedTensor> twice = {{"a", RandomF32({2}, 1)}, {"a", RandomF32({2}, 2)}};
  EXPECT_THAT(TensorListChunker::Create(twice).status().message(), HasSubstr("tensor name 'a' appears twice"));
  std::vector<NamedTensor> unnamed = {{"", RandomF32({2}, 1)}};
  EXPECT_FALSE(TensorListChunker::Create(unnamed).ok());
}

using Chunks = std::vector<v1::TensorChunk>;

struct BadCase {
  std::string label;
  std::function<void(Chunks&)> mutate;
  std::string error;
  AssemblyLimits limits = {};
  bool expect_specs = true;
  std::vector<TensorSpec> specs_override = {};
};

std::vector<BadCase> BadCases() {
  std::vector<TensorSpec> wrong_shape = SpecsOf(Params());
  wrong_shape[3].shape = {1000, 300};
  std::vector<TensorSpec> fewer = SpecsOf(Params());
  fewer.pop_back();
  // Chunks: 0,1 = wte; 2 = ln_1; 3 = empty; 4,5 = lm_head; 6 = scale.
  return {
      {"control", [](Chunks&) {}, ""},
      {"a Δ of the wrong shape",
       [](Chunks&) {},
       "tensor 'lm_head.weight' (index 3) at offset 0: expected f32[1000x300], got f32[300x1000]",
       {},
       true,
       wrong_shape},
      {"count differs from the expected list", [](Chunks&) {}, "list of 5 tensors, expected 4", {}, true, fewer},
      {"interleaved tensors", [](Chunks& c) { std::swap(c[1], c[2]); },
       "tensor 'transformer.h.0.ln_1.weight' (index 1): chunk of another tensor while tensor "
       "'transformer.wte.weight' (index 0) is incomplete"},
      {"tensor skipped", [](Chunks& c) { c.erase(c.begin() + 2); },
       "tensor 'empty' (index 2): tensor out of order (expected index 1)"},
      {"tensor repeated", [](Chunks& c) { c.insert(c.begin() + 3, c[2]); }, "tensor out of order (expected index 2)"},
      {"repeated name",
       [](Chunks& c) { c[3].set_name("transformer.h.0.ln_1.weight"); },
       "(index 2): repeated tensor name",
       {},
       false},
      {"count changes", [](Chunks& c) { c[4].set_count(6); }, "list count 6 differs from the list's first chunk (5)"},
      {"too many tensors", [](Chunks&) {}, "list count 5 is outside [1, 4]", AssemblyLimits{.max_list_tensors = 4}},
      {"zero count", [](Chunks& c) { c[0].set_count(0); }, "list count 0 is outside"},
      {"list too large", [](Chunks&) {},
       "tensor 'lm_head.weight' (index 3): the list would exceed its limit of 2000000 bytes",
       AssemblyLimits{.max_list_bytes = 2000000}},
      {"chunk after the list", [](Chunks& c) { c.push_back(c.back()); }, "chunk after the tensor list was complete"},
      {"bad chunk inside", [](Chunks& c) { (*c[5].mutable_data())[0] ^= 1; },
       "tensor 'lm_head.weight' (index 3) at offset 1048576: crc32c mismatch"},
  };
}

TEST(TensorListTest, RejectsEveryInconsistency) {
  const std::vector<NamedTensor> params = Params();
  const Chunks good = ChunkList(params);
  ASSERT_EQ(good.size(), 7u);
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.label);
    Chunks chunks = good;
    c.mutate(chunks);
    TensorListAssembler assembler(c.limits);
    if (c.expect_specs) {
      assembler.ExpectSpecs(c.specs_override.empty() ? SpecsOf(params) : c.specs_override);
    }
    absl::Status status;
    for (const auto& chunk : chunks) {
      status = assembler.Add(chunk);
      if (!status.ok()) break;
    }
    if (c.error.empty()) {
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_TRUE(assembler.complete());
      continue;
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error));
    // Sticky: the assembler keeps refusing.
    EXPECT_EQ(assembler.Add(good[0]), status);
  }
}

TEST(TensorListTest, TakeIncompleteFails) {
  const Chunks chunks = ChunkList(Params());
  TensorListAssembler assembler;
  EXPECT_THAT(assembler.Take().status().message(), HasSubstr("no tensor list received"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(assembler.Add(chunks[i]).ok());
  EXPECT_EQ(assembler.Take().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(assembler.Take().status().message(), HasSubstr("2 of 5 tensors received"));
}

}  // namespace
}  // namespace pcp

namespace pcp {
namespace {

// Streams a chunked list into per-tensor buffers through StreamTo; returns the assembler's status.
absl::Status StreamInto(const std::vector<v1::TensorChunk>& chunks, std::vector<std::vector<float>>* out,
                        std::optional<codec::Codec> codec = std::nullopt,
                        std::function<absl::Status(uint32_t, int64_t)> veto = {}) {
  TensorListAssembler assembler;
  if (codec) assembler.ExpectCodec(*codec);
  assembler.StreamTo(
      [&](uint32_t tensor, int64_t offset, const F32Pieces& values, double sum_of_squares) -> absl::Status {
        const std::vector<float> v = values.ToVector();
        if (sum_of_squares != SumOfSquares(v))
          return absl::InternalError("the sink's sum of squares differs from SumOfSquares");
        if (veto) PCP_RETURN_IF_ERROR(veto(tensor, offset));
        if (out->size() <= tensor) out->resize(tensor + 1);
        std::vector<float>& t = (*out)[tensor];
        if (t.size() < static_cast<size_t>(offset) + values.size())
          t.resize(static_cast<size_t>(offset) + values.size());
        std::copy(v.begin(), v.end(), t.begin() + offset);
        return absl::OkStatus();
      });
  for (const v1::TensorChunk& c : chunks) PCP_RETURN_IF_ERROR(assembler.Add(c));
  if (!assembler.complete()) return absl::DataLossError("incomplete");
  PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> names, assembler.Take());
  for (const NamedTensor& n : names) {
    if (n.tensor.valid()) return absl::InternalError("a streamed tensor was assembled");
  }
  return absl::OkStatus();
}

TEST(TensorListStreamTest, RawChunksReachTheSinkWithTheirOffsets) {
  const std::vector<NamedTensor> params = Params();
  std::vector<std::vector<float>> got;
  ASSERT_TRUE(StreamInto(ChunkList(params), &got).ok());
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].tensor.num_elements() == 0) continue;
    ASSERT_LT(i, got.size());
    const float* want = params[i].tensor.data<float>();
    ASSERT_EQ(got[i].size(), static_cast<size_t>(params[i].tensor.num_elements())) << params[i].name;
    EXPECT_TRUE(std::equal(got[i].begin(), got[i].end(), want)) << params[i].name;
  }
}

TEST(TensorListStreamTest, EncodedChunksAreDecodedBeforeTheSink) {
  const std::vector<NamedTensor> params = Params();
  auto chunker = TensorListChunker::Create(params, ChunkOptions{.codec = codec::Codec::kInt8});
  ASSERT_TRUE(chunker.ok()) << chunker.status();
  std::vector<v1::TensorChunk> chunks;
  while (!chunker->done()) chunker->Next(&chunks.emplace_back());
  std::vector<std::vector<float>> got;
  ASSERT_TRUE(StreamInto(chunks, &got, codec::Codec::kInt8).ok());
  // The same values the assembling path decodes.
  TensorListAssembler assembler;
  for (const v1::TensorChunk& c : chunks) ASSERT_TRUE(assembler.Add(c).ok());
  auto whole = assembler.Take();
  ASSERT_TRUE(whole.ok());
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].tensor.num_elements() == 0) continue;
    const float* want = (*whole)[i].tensor.data<float>();
    EXPECT_TRUE(std::equal(got[i].begin(), got[i].end(), want)) << params[i].name;
  }
}

TEST(TensorListStreamTest, ASinkErrorFailsTheChunkNamingIt) {
  std::vector<std::vector<float>> got;
  absl::Status s = StreamInto(ChunkList(Params()), &got, std::nullopt, [](uint32_t tensor, int64_t offset) {
    return tensor == 3 && offset > 0 ? absl::FailedPreconditionError("over the declared norm") : absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("'lm_head.weight' (index 3) at offset 1048576: over the declared norm"));
}

TEST(TensorListStreamTest, RefusesWhatCannotStream) {
  // Not f32.
  std::vector<NamedTensor> ints = {{"ids", testing::RandomTensor({DType::kI32, {4}}, 1)}};
  std::vector<std::vector<float>> got;
  absl::Status s = StreamInto(ChunkList(ints), &got);
  EXPECT_THAT(s.message(), HasSubstr("a streamed tensor must be f32"));
  // A raw chunk that splits a value.
  std::vector<v1::TensorChunk> chunks = ChunkList({{"w", RandomF32({4}, 2)}});
  ASSERT_EQ(chunks.size(), 1u);
  v1::TensorChunk first = chunks[0], second = chunks[0];
  first.set_data(chunks[0].data().substr(0, 6));
  first.set_crc32c(Crc32c(first.data()));
  second.set_offset(6);
  second.set_data(chunks[0].data().substr(6));
  second.set_crc32c(Crc32c(second.data()));
  s = StreamInto({first, second}, &got);
  EXPECT_THAT(s.message(), HasSubstr("splits an f32 value"));
}

}  // namespace
}  // namespace pcp

namespace pcp {
namespace {

// A chunk of a ChunkedList as a receiver gets it: the description with the payload's bytes.
v1::TensorChunk WithData(const ChunkedList& list, size_t i) {
  v1::TensorChunk c = list.chunk(i);
  c.set_data(std::string(list.payload(i).data, list.payload(i).size));
  return c;
}

TEST(ChunkedListTest, TheSameChunksAsTheChunkerReadableAnyNumberOfTimes) {
  const std::vector<NamedTensor> params = Params();
  const std::vector<v1::TensorChunk> expected = ChunkList(params);
  auto list = ChunkedList::Create(params);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ((*list)->size(), expected.size());
  for (int stream = 0; stream < 2; ++stream) {  // two "streams" read the same list
    TensorListAssembler assembler;
    for (size_t i = 0; i < (*list)->size(); ++i) {
      const v1::TensorChunk c = WithData(**list, i);
      EXPECT_EQ(c.SerializeAsString(), expected[i].SerializeAsString()) << i;
      ASSERT_TRUE(assembler.Add(c).ok()) << i;
    }
    auto back = assembler.Take();
    ASSERT_TRUE(back.ok());
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(BitwiseEqual((*back)[i].tensor, params[i].tensor));
  }
  // Raw chunks point into the tensors: nothing was copied.
  EXPECT_EQ((*list)->payload(0).data, static_cast<const char*>(params[0].tensor.raw_data()));
}

TEST(ChunkedListTest, EncodedChunksKeepABufferEachAndDecodeLikeTheChunkers) {
  const std::vector<NamedTensor> params = Params();
  const ChunkOptions int4{.codec = codec::Codec::kInt4};
  auto list = ChunkedList::Create(params, int4);
  ASSERT_TRUE(list.ok()) << list.status();
  auto chunker = TensorListChunker::Create(params, int4);
  ASSERT_TRUE(chunker.ok());
  size_t i = 0;
  for (; !chunker->done(); ++i) {
    v1::TensorChunk want;
    chunker->Next(&want);
    ASSERT_LT(i, (*list)->size());
    EXPECT_EQ(WithData(**list, i).SerializeAsString(), want.SerializeAsString()) << i;
    if (i > 0 && (*list)->payload(i).size > 0 && (*list)->payload(i - 1).size > 0) {
      EXPECT_NE((*list)->payload(i).encoded, (*list)->payload(i - 1).encoded) << i;
    }
  }
  EXPECT_EQ(i, (*list)->size());
  EXPECT_EQ((*list)->codec(), codec::Codec::kInt4);
  EXPECT_GT((*list)->codec_seconds(), 0);
  EXPECT_FALSE(ChunkedList::Create({}).ok());
}

}  // namespace
}  // namespace pcp
