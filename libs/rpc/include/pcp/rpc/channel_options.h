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
// - Channels (a worker receiving θ): BDP probing on, from a 16 MiB starting window. With it
//   off, one stream received about one message + 64 KiB per round trip (below): θ came down
//   at 19.3 MB/s over a 1 Gbit/s, 50 ms link; with it on, 121.5 MB/s (bench/window_rtt_bench.cc
//   --download --client_bdp), and on loopback θ down went from 0.75–0.83 to 0.98–1.23 of raw
//   TCP's throughput at the same CPU per byte (rpc_stream_bench, 3 alternating pairs). A
//   worker has one stream, so the window gRPC grows costs it little memory.
// - Servers (the shepherd receiving Δs): a fixed HTTP/2 flow-control window per stream (BDP
//   probing off), because BDP-grown windows doubled the shepherd's memory at 128 workers
//   (below). gRPC sends GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES as the
//   SETTINGS_INITIAL_WINDOW_SIZE of every connection it accepts or opens
//   (channel_options_test reads it off the wire): the window the *receiver* announces, so the
//   peer's own settings do not matter for what a receiver buffers.
//   - Channels start at kStreamWindowBytes, 16 MiB. Servers take the window as an
//     argument: the shepherd derives it from a stated budget shared by its expected workers
//     (StreamWindowForBudget; keys transport_receive_bytes and transport_workers,
//     docs/operations.md "Admission and limits").
//   - What gRPC 1.51 does with it, measured (bench/window_rtt_bench.cc, loadgen grid in
//     bench/results/loadgen_after.md "Transport budget"): with BDP probing off, a stream
//     receives about one message + 64 KiB per round trip whatever the stream window: the
//     *connection* window stays at HTTP/2's 64 KiB plus the rest of the message the
//     application is reading (gRPC always lets a requested message complete), and 1.51 has
//     no argument for it (GRPC_TRACE=http shows the sender "stalled by transport" with
//     t_win=0 while s_win is 16 MiB):
//     15.7–19.0 MB/s with 1 MiB messages at 50 ms RTT for windows of 64 KiB to 16 MiB
//     (4.8–5.1 MB/s with 256 KiB messages). The receiver's memory per stream follows the
//     message size too (2.7–3.8 × the chunk at the shepherd), not the window. With BDP
//     probing on, the window is only a starting point (BDP and memory pressure move it):
//     119–122 MB/s on the same 1 Gbit/s link with windows of 4–16 MiB. (Issue 3 measured the
//     fixed window 10–25% faster on loopback with BDP probing off at both ends; with it on at
//     the receiving worker only, θ down is faster, above.) The shepherd's uploads stay at the
//     rate above: a Δ from a worker 100 ms away comes at about 10 MB/s per stream.
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
