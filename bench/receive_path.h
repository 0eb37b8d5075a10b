// The receiving end's own work on a chunked tensor list, without gRPC or sockets: where the
// CPU of the stream bench's receivers goes besides the transport (bench/rpc_stream_bench.cc).
//
//   bench::PrintReceivePath(params, kDefaultChunkBytes, /*reps=*/5);
//
// Prints thread CPU ms per 100 MB (the least of `reps` passes) of: CRC-32C alone; zero-copy's
// receive (TensorListAssembler copying, fused with the CRC, into last round's tensors);
// streaming's receive (TensorListAssembler::StreamTo into a diloco::DeltaSum: CRC + sum of
// squares in one read-only pass over the received pieces, then the norm check on that sum and
// the add from the pieces); and the DeltaSum's part alone (Contribution::Add given no sum: its
// own norm pass + the add; SumOfSquares alone). Chunks come from a ChunkedList of `params`,
// each handed over as one piece, as gRPC hands over a chunk it received in one slice; the
// streaming receive once more with each chunk cut into 6 pieces at odd offsets (values split
// between pieces), as gRPC's receive buffer holds a 1 MiB chunk.
#ifndef PCP_BENCH_RECEIVE_PATH_H_
#define PCP_BENCH_RECEIVE_PATH_H_

#include <cstdint>
#include <vector>

#include "pcp/tensor/safetensors.h"  // NamedTensor

namespace pcp::bench {

// `params`: f32 tensors. Failures end the process with a message (bench::Die).
void PrintReceivePath(const std::vector<NamedTensor>& params, int64_t chunk_bytes, int reps);

}  // namespace pcp::bench

#endif  // PCP_BENCH_RECEIVE_PATH_H_
