// Private: a job's checkpoint writes, on a thread of their own, so that a round's end does
// not wait for the disk (issue 14, "idle hub": writing an 86M-parameter job's θ and outer
// momentum took 1.2 s between one round and the next). One write at a time; Start waits for
// the one before.
//
//   CheckpointWriter writer;
//   writer.Start(round, [ckpt, ...] { return WriteDilocoCheckpoint(dir, names, ckpt, meta); });
//   ...                                     // the next round runs meanwhile
//   std::optional<CheckpointWriter::Written> w = writer.Wait();  // before touching what it reads
//
// The write reads what its closure captured; the caller must not modify that until Wait()
// returns (JobRun: θ is replaced, never modified, and the outer momentum, modified in place
// by the next outer step, is waited for before that step).
#ifndef PCP_SHEPHERD_SRC_CHECKPOINT_WRITER_H_
#define PCP_SHEPHERD_SRC_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace pcp::shepherd {

class CheckpointWriter {
 public:
  // A finished write: its round, the path it returned or its error, and how long it took.
  struct Written {
    uint64_t round = 0;
    absl::StatusOr<std::string> path = absl::UnknownError("not written");
    double seconds = 0;
  };

  CheckpointWriter() = default;
  ~CheckpointWriter();  // waits for a write in flight (a checkpoint is never cut off)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Starts `write` for `round` on a new thread. A write still in flight is waited for first;
  // its result is returned (else nullopt), so that no result is lost.
  std::optional<Written> Start(uint64_t round, std::function<absl::StatusOr<std::string>()> write);
  // Waits for the write in flight and returns its result; nullopt if none was started since
  // the last Start/Wait returned it.
  std::optional<Written> Wait();
  bool busy() const { return thread_.joinable(); }

 private:
  std::thread thread_;
  Written result_;  // written by the thread; read after join
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_CHECKPOINT_WRITER_H_
