// Tensor streams (θ to workers, Δ to the shepherd): the input is a mode byte, then a
// sequence of chunks, each a 2-byte little-endian length and a serialized
// pcp.v1.TensorChunk, fed to a TensorListAssembler, once pinned to an expected list and once
// free. An odd mode byte first recomputes every chunk's and tensor's CRC-32C, so that
// mutations reach the checks behind the checksums. (mode >> 1) % 5 picks the codec the pinned
// assembler expects: 0 none, else the codec with wire id that minus 1, so encoded chunks
// (TensorChunk.codec, each chunk's data one encoded buffer) reach the decoder with and
// without an expectation. The seeds int8_*, int4_* and bf16_* hold hand-written encoded
// chunks (mode bytes 7, 9 and 5: checksums fixed, the pinned list expecting that codec).
#include <optional>
#include <vector>

#include "fuzz_chunks.h"
#include "fuzz_target.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/tensor.pb.h"

namespace {

void Feed(const std::vector<pcp::v1::TensorChunk>& chunks, bool pinned, std::optional<pcp::codec::Codec> codec) {
  pcp::AssemblyLimits limits;
  limits.max_chunk_bytes = 1 << 16;
  limits.max_tensor_bytes = 1 << 20;
  limits.max_list_bytes = 4 << 20;
  limits.max_list_tensors = 64;
  pcp::TensorListAssembler assembler(limits);
  if (pinned) {
    assembler.ExpectSpecs({pcp::TensorSpec{"w", pcp::DType::kF32, pcp::Shape({4, 8})},
                           pcp::TensorSpec{"b", pcp::DType::kF32, pcp::Shape({8})}});
    if (codec) assembler.ExpectCodec(*codec, "fuzz");
  }
  for (const pcp::v1::TensorChunk& chunk : chunks) {
    if (!assembler.Add(chunk).ok()) return;
    if (assembler.complete()) {
      absl::StatusOr<std::vector<pcp::NamedTensor>> tensors = assembler.Take();
      PCP_FUZZ_CHECK(tensors.ok());
      PCP_FUZZ_CHECK(static_cast<int64_t>(tensors->size()) <= limits.max_list_tensors);
      for (const pcp::NamedTensor& t : *tensors) {
        PCP_FUZZ_CHECK(t.tensor.byte_size() <= limits.max_tensor_bytes);
      }
      if (pinned) PCP_FUZZ_CHECK(tensors->size() == 2 && (*tensors)[1].tensor.num_elements() == 8);
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pcp::fuzz::QuietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool fix_checksums = data[0] % 2 == 1;
  const int codec_choice = (data[0] >> 1) % (pcp::codec::kNumCodecs + 1);
  const std::optional<pcp::codec::Codec> codec =
      codec_choice == 0 ? std::nullopt : std::optional(static_cast<pcp::codec::Codec>(codec_choice - 1));
  ++data;
  --size;
  std::vector<pcp::v1::TensorChunk> chunks = pcp::fuzz::SplitMessages<pcp::v1::TensorChunk>(data, size, 256);
  if (fix_checksums) {
    std::vector<pcp::v1::TensorChunk*> pointers;
    for (pcp::v1::TensorChunk& c : chunks) pointers.push_back(&c);
    pcp::fuzz::FixChecksums(pointers);
  }
  Feed(chunks, /*pinned=*/false, std::nullopt);
  Feed(chunks, /*pinned=*/true, codec);
  return 0;
}
