// pcp_rpc_stream_bench's server end (the shepherd's end of bench/rpc_stream_bench.cc): one
// child process per gRPC variant serving Training.Connect, and the metadata a client sends to
// say what a call is for.
//
//   bench::Child server = bench::SpawnGrpcServer("streaming", &params, /*extra_args=*/{});
//   // client: context.AddMetadata(bench::kChunkBytesKey, "1048576"); ... Connect ...
//
// Variants (what each runs: rpc_stream_bench.cc's header): "proto", "tuned" (the typed sync
// service; a Join asks for θ, ResultChunks are a Δ, answered with one heartbeat once assembled
// and checked), "zero-copy" and "streaming" (raw ByteBuffers, the callback reactor).
#ifndef PCP_BENCH_STREAM_BENCH_SERVER_H_
#define PCP_BENCH_STREAM_BENCH_SERVER_H_

#include <string>
#include <utility>
#include <vector>

#include "bench_process.h"
#include "pcp/tensor/safetensors.h"  // NamedTensor

namespace pcp::bench {

// Client metadata of a Connect call: data bytes per chunk; present = compare the received Δ
// with what was sent; the round whose θ is asked for (fan-out rows; absent: once per run).
inline constexpr char kChunkBytesKey[] = "x-chunk-bytes";
inline constexpr char kVerifyKey[] = "x-verify";
inline constexpr char kRoundKey[] = "x-round";

// Whether `got` equals `want`, tensor by tensor (names and bits).
bool SameTensors(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want);

// A server child for one variant serving `params` as θ (and as the Δ it expects); "proto"
// keeps gRPC's defaults (receive limit: one chunk message), the others use PCP's stream
// settings (pcp/rpc/channel_options.h); `extra_args` are added channel arguments.
Child SpawnGrpcServer(const std::string& variant, const std::vector<NamedTensor>* params,
                      const std::vector<std::pair<std::string, int>>& extra_args);

}  // namespace pcp::bench

#endif  // PCP_BENCH_STREAM_BENCH_SERVER_H_
