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

// Connect is served on raw ByteBuffers (the generated WithRawCallbackMethod_Connect) for
// zero-copy chunk data; clients see the ordinary pcp.v1.Training service.
class TrainingService final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  explicit TrainingService(WorkerRegistry* registry) : registry_(registry) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(grpc::CallbackServerContext* context) override;

 private:
  WorkerRegistry* registry_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_TRAINING_SERVICE_H_
