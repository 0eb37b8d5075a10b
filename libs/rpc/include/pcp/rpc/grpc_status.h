// The one mapping between absl::Status (used everywhere in PCP) and grpc::Status (what a
// gRPC handler returns and a client call reports). Codes are preserved one to one (absl and
// gRPC share google.rpc.Code numbering); the message is kept. What a caller should do with a
// code (STYLE.md "Errors are values"):
//   UNAVAILABLE          transient: retry with exponential backoff (IsRetryable)
//   FAILED_PRECONDITION  do not retry until something changes
//   INVALID_ARGUMENT     the caller's input is wrong; the message says where
//
//   grpc::Status Handler(...) { return ToGrpcStatus(DoWork()); }
//   absl::Status s = FromGrpcStatus(stub->Call(&ctx, req, &resp));
//   if (IsRetryable(s)) { ...back off and retry... }
//
// Kept in its own file so that only code that talks gRPC includes grpcpp.
#ifndef PCP_RPC_GRPC_STATUS_H_
#define PCP_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace pcp {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// True for statuses that mean "try again later" (UNAVAILABLE).
bool IsRetryable(const absl::Status& status);

}  // namespace pcp

#endif  // PCP_RPC_GRPC_STATUS_H_
