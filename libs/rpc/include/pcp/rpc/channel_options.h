// The gRPC settings of PCP's streaming endpoints (Training and Control), in one place, for
// both ends of a connection.
//
//   grpc::ServerBuilder builder;
//   ApplyStreamServerOptions(&builder, StreamWindowForBudget(128 << 20, 256));  // 512 KiB
//   ...
//   grpc::ChannelArguments args;
//   ApplyStreamChannelOptions(&args);
//   auto channel = grpc::CreateCustomChannel(target, credentials, args);
//
// What they set, and why:
// - A fixed HTTP/2 flow-control window per stream (BDP probing off). The window is what the
//   *receiver* announces (gRPC sends GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES as the
//   SETTINGS_INITIAL_WINDOW_SIZE of every connection it accepts or opens), and it bounds
//   what one stream may hold received but not yet read by the application: the peer's own
//   settings do not matter for that. With BDP probing off, gRPC 1.51 neither grows nor
//   shrinks it (its memory-pressure logic only adjusts the BDP-probed target), so the
//   receiver's buffered bytes are at most streams × window, plus the one message the
//   application is reading (gRPC always lets a requested message complete).
//   - Channels (a worker receiving θ) use kStreamWindowBytes, 16 MiB: a megabyte chunk
//     never waits for a WINDOW_UPDATE round trip. Measured on loopback
//     (bench/rpc_stream_bench.cc) 10–25% more throughput and less CPU than the default
//     window with BDP probing. 16 MiB covers 1 Gbit/s at 130 ms RTT.
//   - Servers take the window as an argument: the shepherd derives it from a stated
//     memory budget shared by its expected number of streams (StreamWindowForBudget; the
//     keys transport_receive_bytes and transport_workers, README "Admission and limits").
//     A window W caps one stream at W / RTT (e.g. 512 KiB at 100 ms: 5.2 MB/s).
// - gRPC's default 4 MiB receive limit, stated explicitly: chunk messages stay at about
//   1 MiB (kMaxChunkMessageBytes), so a bigger message is a peer's mistake.
// - Servers: no port sharing. gRPC sets SO_REUSEPORT by default, so a second server on a
//   port in use starts without error and the kernel splits connections between the two
//   (two shepherds, each numbering its own jobs). Without it, BuildAndStart fails.
#ifndef PCP_RPC_CHANNEL_OPTIONS_H_
#define PCP_RPC_CHANNEL_OPTIONS_H_

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <cstdint>

namespace pcp {

// The largest per-stream window, and the one channels use.
inline constexpr int kStreamWindowBytes = 16 << 20;
// The smallest window a budget may give a stream: HTTP/2's default (RFC 9113 6.9.2), 64 KiB.
inline constexpr int kMinStreamWindowBytes = 65535;
inline constexpr int kMaxReceiveMessageBytes = 4 << 20;

// The per-stream receive window for `budget_bytes` shared by `streams` streams:
// budget_bytes / streams clamped to [kMinStreamWindowBytes, kStreamWindowBytes]. At the
// floor, streams × window passes the budget (the caller says so). `streams` < 1 counts as 1.
int StreamWindowForBudget(int64_t budget_bytes, int64_t streams);

void ApplyStreamChannelOptions(grpc::ChannelArguments* args);
// `receive_window_bytes`: the window this server announces for every stream it accepts,
// in [kMinStreamWindowBytes, kStreamWindowBytes] (clamped).
void ApplyStreamServerOptions(grpc::ServerBuilder* builder, int receive_window_bytes = kStreamWindowBytes);

}  // namespace pcp

#endif  // PCP_RPC_CHANNEL_OPTIONS_H_
