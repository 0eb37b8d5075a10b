#include "pcp/rpc/chunked_list.h"

#include <utility>

#include "pcp/rpc/tensor_list.h"

namespace pcp {

absl::StatusOr<std::shared_ptr<const ChunkedList>> ChunkedList::Create(std::vector<NamedTensor> tensors,
                                                                       ChunkOptions options) {
  absl::StatusOr<TensorListChunker> chunker = TensorListChunker::Create(std::move(tensors), options);
  if (!chunker.ok()) return chunker.status();
  std::shared_ptr<ChunkedList> list(new ChunkedList());
  list->codec_ = options.codec;
  list->total_bytes_ = chunker->total_bytes();
  list->chunks_.reserve(static_cast<size_t>(chunker->num_chunks()));
  list->payloads_.reserve(static_cast<size_t>(chunker->num_chunks()));
  while (!chunker->done()) {
    // Each payload is kept, so each encoded chunk gets a buffer of its own.
    chunker->Next(&list->chunks_.emplace_back(), &list->payloads_.emplace_back());
  }
  list->codec_seconds_ = chunker->codec_seconds();
  return list;
}

}  // namespace pcp
