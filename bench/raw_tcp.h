// A raw TCP copy of a byte buffer over 127.0.0.1, the ceiling gRPC streams are compared with
// (bench/rpc_stream_bench.cc): one send() loop into one recv() loop, no framing, no checksums.
//
//   std::vector<char> data(64 << 20);
//   bench::Child server = bench::Spawn([&](const std::function<void(int)>& write_port) {
//     bench::ServeRawTcp(data, write_port);      // serves until killed
//   });
//   bench::RawTcp(server.port, /*up=*/false, received);   // received.size() bytes down
//
// A connection asks for `size` bytes up (the client sends them; the server answers one byte
// once all arrived, into its buffer) or down (the server sends the start of its buffer). The
// server runs a thread per connection, so several clients can copy at once (down only: ups
// would share the buffer). Failures end the process with a message (bench::Die).
#ifndef PCP_BENCH_RAW_TCP_H_
#define PCP_BENCH_RAW_TCP_H_

#include <functional>
#include <vector>

namespace pcp::bench {

// Listens on an ephemeral loopback port, calls write_port(port), then serves forever.
[[noreturn]] void ServeRawTcp(std::vector<char>& buffer, const std::function<void(int)>& write_port);

// Copies data.size() bytes to the server at `port` (up) or from it into `data` (down).
void RawTcp(int port, bool up, std::vector<char>& data);

}  // namespace pcp::bench

#endif  // PCP_BENCH_RAW_TCP_H_
