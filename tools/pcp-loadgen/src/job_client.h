// Private: the Admin calls pcp-loadgen makes (as pcpctl makes them): submit the job file,
// read the job's state and its per-round history, cancel it. Every call has a deadline.
//
//   PCP_ASSIGN_OR_RETURN(JobClient admin, JobClient::Create(options.shepherd, options.credentials));
//   PCP_ASSIGN_OR_RETURN(std::string job_id, admin.Submit("bench/job.yaml"));
//   PCP_ASSIGN_OR_RETURN(std::vector<v1::RoundRecord> page, admin.HistoryAfter(job_id, 0));
#ifndef PCP_LOADGEN_SRC_JOB_CLIENT_H_
#define PCP_LOADGEN_SRC_JOB_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include "absl/status/statusor.h"
#include "pcp/auth/tls_credentials.h"

#include "pcp/v1/admin.grpc.pb.h"

namespace pcp::loadgen {

class JobClient {
 public:
  static absl::StatusOr<JobClient> Create(const std::string& shepherd, const auth::ClientCredentials& credentials);

  // Sends the file's text (relative paths resolve against its folder, as with pcpctl submit);
  // the job id. The shepherd's error as is (a YAML mistake names file:line:col).
  absl::StatusOr<std::string> Submit(const std::string& path);
  absl::StatusOr<v1::Job> Get(const std::string& job_id);
  // Records of rounds after `after_round`, oldest first (every page).
  absl::StatusOr<std::vector<v1::RoundRecord>> HistoryAfter(const std::string& job_id, uint64_t after_round);
  absl::Status Cancel(const std::string& job_id, const std::string& reason);

 private:
  explicit JobClient(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(v1::Admin::NewStub(channel_)) {}
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> stub_;
};

// A finished job: completed, failed or cancelled.
bool JobEnded(v1::JobState state);

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_JOB_CLIENT_H_
