// Private: the Training service (callback API): one ConnectReactor per worker stream, a thin
// adapter between gRPC and a WorkerSession (worker_session.h), which holds the protocol.
//
//   TrainingService training(&registry);
//   builder.RegisterService(&training);
#ifndef PCP_SHEPHERD_SRC_TRAINING_SERVICE_H_
#define PCP_SHEPHERD_SRC_TRAINING_SERVICE_H_

#include "pcp/v1/training.grpc.pb.h"
#include "worker_registry.h"

namespace pcp::shepherd {

class TrainingService final : public v1::Training::CallbackService {
 public:
  explicit TrainingService(WorkerRegistry* registry) : registry_(registry) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::ShepherdMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  WorkerRegistry* registry_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_TRAINING_SERVICE_H_
