// Shared by the fuzz targets that carry tensor chunks: recomputing the checksums of chunks
// a mutation changed, so that inputs get past the CRC checks to what lies behind them.
//
//   std::vector<v1::TensorChunk*> chunks = ...;
//   pcp::fuzz::FixChecksums(chunks);   // crc32c of each chunk, tensor_crc32c per tensor index
#ifndef PCP_TESTS_FUZZ_FUZZ_CHUNKS_H_
#define PCP_TESTS_FUZZ_FUZZ_CHUNKS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/v1/tensor.pb.h"

namespace pcp::fuzz {

// Sets crc32c of every chunk, and tensor_crc32c to the CRC of all chunks with its index,
// in order.
inline void FixChecksums(const std::vector<v1::TensorChunk*>& chunks) {
  std::map<uint32_t, uint32_t> tensor_crc;
  for (v1::TensorChunk* chunk : chunks) {
    chunk->set_crc32c(Crc32c(chunk->data().data(), chunk->data().size()));
    uint32_t& crc = tensor_crc[chunk->index()];
    crc = Crc32cExtend(crc, chunk->data().data(), chunk->data().size());
  }
  for (v1::TensorChunk* chunk : chunks) chunk->set_tensor_crc32c(tensor_crc[chunk->index()]);
}

// Protobuf logs every string field that is not UTF-8 while parsing: noise at millions of
// inputs. Call from LLVMFuzzerInitialize.
inline void QuietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

// Splits `data` into messages, each a 2-byte little-endian length and that many bytes;
// at most `max_messages`.
template <typename Message>
std::vector<Message> SplitMessages(const uint8_t* data, size_t size, size_t max_messages) {
  std::vector<Message> messages;
  while (size >= 2 && messages.size() < max_messages) {
    const size_t n = std::min<size_t>(size - 2, data[0] | (size_t{data[1]} << 8));
    Message m;
    if (m.ParseFromArray(data + 2, static_cast<int>(n))) messages.push_back(std::move(m));
    data += 2 + n;
    size -= 2 + n;
  }
  return messages;
}

}  // namespace pcp::fuzz

#endif  // PCP_TESTS_FUZZ_FUZZ_CHUNKS_H_
