#include "pcp/rpc/grpc_status.h"

#include <string>

namespace pcp {

// absl::StatusCode and grpc::StatusCode both number the canonical codes 0..16 identically
// (google.rpc.Code), which these asserts pin down for the codes PCP gives meaning to.
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
static_assert(static_cast<int>(absl::StatusCode::kFailedPrecondition) ==
              static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
static_assert(static_cast<int>(absl::StatusCode::kUnavailable) == static_cast<int>(grpc::StatusCode::UNAVAILABLE));
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) ==
              static_cast<int>(grpc::StatusCode::UNAUTHENTICATED));

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  if (code < 1 || code > 16) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  if (code < 1 || code > 16) return absl::UnknownError(status.error_message());
  return absl::Status(static_cast<absl::StatusCode>(code), status.error_message());
}

bool IsRetryable(const absl::Status& status) { return status.code() == absl::StatusCode::kUnavailable; }

}  // namespace pcp
