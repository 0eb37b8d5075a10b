// Benchmark server processes with exact CPU accounting, and the host's CPU steal: for
// benchmarks whose two ends must be separate processes, as in a cluster
// (bench/rpc_stream_bench.cc).
//
//   bench::Child server = bench::Spawn([&](const std::function<void(int)>& write_port) {
//     ... listen ...; write_port(port); ... serve until killed ...
//   });                                      // forks; call before this process starts gRPC
//   const double cpu0 = bench::SelfCpuSeconds() + bench::ChildCpuSeconds(server);
//   ... one transfer ...
//   const double cpu = bench::SelfCpuSeconds() + bench::ChildCpuSeconds(server) - cpu0;
//   bench::Stop(server);
//
// ChildCpuSeconds asks the child itself (getrusage through a pipe to a thread it runs), so the
// figure has µs resolution and counts threads that have exited, unlike /proc/<pid>/stat's
// clock ticks. Failures (fork, pipes, a child that died) end this process with a message:
// these are benchmarks, not services.
#ifndef PCP_BENCH_BENCH_PROCESS_H_
#define PCP_BENCH_BENCH_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>

namespace pcp::bench {

// Prints `what` to stderr and exits with status 1.
[[noreturn]] void Die(const std::string& what);

// User + system CPU seconds of this process, all threads, µs resolution.
double SelfCpuSeconds();

// A server process: its pid, the port it listens on, and the pipes that ask it for its CPU time.
struct Child {
  pid_t pid = 0;
  int port = 0;
  int ask_fd = -1, answer_fd = -1;
};

// Forks a child that runs `serve(write_port)` (which calls write_port once it listens, then
// serves until killed) and waits for its port. Call before this process starts any thread
// (gRPC included): only the forking thread survives in the child.
Child Spawn(const std::function<void(const std::function<void(int)>&)>& serve);

// The child's user + system CPU seconds so far (SelfCpuSeconds, measured in the child).
double ChildCpuSeconds(const Child& child);

// Kills the child and reaps it. No-op for a Child that was never spawned.
void Stop(const Child& child);

// The host's CPU steal (time taken by other virtual machines) as a fraction of all CPU time
// between two readings of /proc/stat.
struct StealClock {
  double steal = 0, total = 0;
  static StealClock Now();
  double FractionSince(const StealClock& start) const;
};

}  // namespace pcp::bench

#endif  // PCP_BENCH_BENCH_PROCESS_H_
