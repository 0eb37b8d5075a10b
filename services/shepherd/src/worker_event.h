// Private: what a worker tells the round engine, as one value. A WorkerSession posts each
// message's event straight to the coordinator's queue (WorkerEventSink); only Joined and Left
// pass through the WorkerRegistry first, which keeps its own bookkeeping of who is connected.
// The coordinator's thread hands every event to the running job (JobRun::On), which visits it.
//
//   sink->Post(WorkerEvent{session, WorkerReady{message.ready()}});     // a gRPC thread
//   ...
//   run->On(event);                                                     // the coordinator's thread
//
// A new worker message is a new alternative of WorkerEventBody, the case of
// WorkerSession::Handle that posts it, and JobRun's handler (std::visit makes a missing handler
// a compile error).
#ifndef PCP_SHEPHERD_SRC_WORKER_EVENT_H_
#define PCP_SHEPHERD_SRC_WORKER_EVENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "pcp/diloco/screening.h"
#include "pcp/tensor/tensor.h"
#include "pcp/v1/training.pb.h"

namespace pcp::shepherd {

class WorkerSession;

// A worker's Δ for a round as its session hands it over.
struct ReceivedDelta {
  // The Δ in spec order (buffered aggregation). Empty when it was streamed, or when the worker
  // abandoned the round (it reported fewer steps and no Δ, or an Error for the round).
  std::vector<Tensor> tensors;
  // Streamed into the round's RoundSum (ExpectResult with a sum): the verdict on the norm its
  // header declared; every chunk was added to the sum unless the verdict rejected it.
  std::optional<diloco::ScreenVerdict> streamed;
  bool abandoned() const { return tensors.empty() && !streamed.has_value(); }
};

// The worker's Join was admitted: work may be sent to it.
struct WorkerJoined {};
// Its session is over (closed by either side).
struct WorkerLeft {
  absl::Status why;
};
// It compiled the assignment's program and holds its shard.
struct WorkerReady {
  v1::AssignmentReady ready;
};
// A round's result: its Δ and its summary. An abandoned round (an Error for it) comes as an
// empty Δ and an empty RoundResult.
struct WorkerResult {
  uint64_t round = 0;
  ReceivedDelta delta;
  v1::RoundResult result;
};
// It reports an error.
struct WorkerError {
  v1::Error error;
};
// Its θ replica does not match the shepherd's: it wants θ in full.
struct WorkerResync {
  v1::ResyncRequest request;
};

using WorkerEventBody = std::variant<WorkerJoined, WorkerLeft, WorkerReady, WorkerResult, WorkerError, WorkerResync>;

struct WorkerEvent {
  std::shared_ptr<WorkerSession> session;
  WorkerEventBody body;
};

// Where worker events go: the coordinator's queue. Called from gRPC and heartbeat threads;
// never blocks.
class WorkerEventSink {
 public:
  virtual ~WorkerEventSink() = default;
  virtual void Post(WorkerEvent event) = 0;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_WORKER_EVENT_H_
