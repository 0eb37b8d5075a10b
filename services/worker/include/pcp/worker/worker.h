// The worker process's logic: dial the shepherd (reconnecting with exponential backoff and
// jitter), Join under the supervisor id, take assignments (program compiled for the local
// backend and cached by hash; shard loaded), and run DiLoCo rounds: τ inner AdamW steps per
// round on the resident InnerLoop, streaming Δ = θ_start − θ_end back with a RoundResult.
// The worker knows nothing about the model: everything arrives on the stream.
//
//   WorkerOptions options{.shepherd = "127.0.0.1:7070", .supervisor_id = "node-1"};
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Worker> worker, Worker::Create(options));
//   std::thread signals([&] { WaitForSigterm(); worker->Stop(); });
//   absl::Status s = worker->Run();   // returns after Stop(), or for an error retrying cannot fix
//
// Stop() (SIGTERM) abandons a running round (the shepherd gets a RoundResult with the steps
// done and no Δ), half-closes the stream and makes Run() return OK.
#ifndef PCP_WORKER_WORKER_H_
#define PCP_WORKER_WORKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/backoff.h"
#include "pcp/netem/emulated_link.h"
#include "pcp/training/data_roots.h"

namespace pcp::worker {

struct WorkerOptions {
  std::string shepherd = "127.0.0.1:7070";  // HOST:PORT of the shepherd's gRPC server
  std::string supervisor_id;                // stable identity (1-128 of [A-Za-z0-9._:-])
  uint64_t incarnation = 1;                 // the supervisor's count of worker processes
  std::string backend = "cpu";              // cpu | vulkan | auto
  int threads = 0;                          // CPU threads (0 = all cores)
  std::string cache_dir;                    // programs on disk; "" = memory only
  // TLS files (CA of the shepherd; certificate and key for mTLS, resolved) and bearer token.
  auth::ClientCredentials credentials;
  BackoffOptions backoff{.initial = absl::Milliseconds(500), .max = absl::Seconds(10)};
  int64_t join_timeout_ms = 10000;  // for the JoinAck of each attempt
  // A shared-file shard (data.shared: true) must resolve inside one of these (DataRoots,
  // pcp/training/data_roots.h); empty = no shared files. Inline shards need none.
  std::vector<std::string> data_roots = {DefaultDataRoot()};
  int64_t max_data_file_bytes = kDefaultMaxDataFileBytes;
  // An emulated link to the shepherd (--link_*; pcp/netem): when enabled, the channel goes
  // through an in-process relay that caps each direction's rate and adds the RTT.
  netem::EmulatedLink link;
  // TESTING ONLY: corrupt the Δs sent (pcp/worker/delta_fault.h); "" = never.
  std::string fault_delta;
  // TESTING ONLY: each inner step takes this many times its own time (a slower machine); 1 = off.
  double fault_slow_factor = 1;
  // TESTING ONLY: draw θ₀ (Assignment.init) from the next seed, so that this replica differs
  // from the shepherd's and θ comes in full after a ResyncRequest.
  bool fault_init = false;
};

class Worker {
 public:
  // Creates the backend. InvalidArgument for bad options.
  static absl::StatusOr<std::unique_ptr<Worker>> Create(WorkerOptions options);
  ~Worker();

  absl::Status Run();
  // Thread-safe; idempotent.
  void Stop();

 private:
  struct Impl;
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_WORKER_H_
