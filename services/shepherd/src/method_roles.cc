#include "method_roles.h"

namespace pcp::shepherd {

using auth::Audit;
using auth::Role;

const std::vector<auth::MethodRule>& ShepherdMethodRules() {
  constexpr auth::RoleSet kNode{Role::kNode};
  constexpr auth::RoleSet kRead{Role::kViewer, Role::kAdmin};
  constexpr auth::RoleSet kAdmin{Role::kAdmin};
  static const auto* rules = new std::vector<auth::MethodRule>{
      // Open: load balancers and grpcurl's `list` need them without a credential.
      {"/grpc.health.v1.Health/", auth::kOpen},
      {"/grpc.reflection.v1alpha.ServerReflection/", auth::kOpen},
      // Not served (gRPC 1.51 has v1alpha only); open so that gRPC answers UNIMPLEMENTED and
      // clients that try v1 first (grpcurl) fall back to v1alpha instead of giving up on a
      // PERMISSION_DENIED.
      {"/grpc.reflection.v1.ServerReflection/", auth::kOpen},
      // Nodes: a supervisor's control stream and its worker's training stream.
      {"/pcp.v1.Training/Connect", kNode},
      {"/pcp.v1.Control/Supervise", kNode},
      // Admin reads.
      {"/pcp.v1.Admin/ListJobs", kRead},
      {"/pcp.v1.Admin/GetJob", kRead},
      {"/pcp.v1.Admin/WatchJob", kRead},
      {"/pcp.v1.Admin/ListWorkers", kRead},
      {"/pcp.v1.Admin/GetCluster", kRead},
      {"/pcp.v1.Admin/GetJobHistory", kRead},
      // Admin only; mutations leave an audit line.
      {"/pcp.v1.Admin/Sample", kAdmin},
      {"/pcp.v1.Admin/SubmitJob", kAdmin, Audit::kYes},
      {"/pcp.v1.Admin/CancelJob", kAdmin, Audit::kYes},
      {"/pcp.v1.Admin/RestartWorker", kAdmin, Audit::kYes},
      {"/pcp.v1.Admin/DrainWorker", kAdmin, Audit::kYes},
  };
  return *rules;
}

}  // namespace pcp::shepherd
