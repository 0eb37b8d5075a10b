#include "job_client.h"

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"
#include "pcp/rpc/grpc_status.h"

namespace pcp::loadgen {
namespace {

constexpr auto kCallTimeout = std::chrono::seconds(30);

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kCallTimeout);
}

absl::Status Called(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), absl::StrCat(what, ": ", s.error_message()));
}

}  // namespace

absl::StatusOr<JobClient> JobClient::Create(const std::string& shepherd, const auth::ClientCredentials& credentials) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      auth::MakeChannel(shepherd, credentials, grpc::ChannelArguments());
  if (!channel.ok()) return channel.status();
  return JobClient(*std::move(channel));
}

absl::StatusOr<std::string> JobClient::Submit(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--job: ", text.status().message()));
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  v1::SubmitJobRequest request;
  request.set_yaml(*text);
  request.set_file_name(absolute.filename().string());
  request.set_base_dir(absolute.parent_path().string());
  v1::SubmitJobResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (absl::Status s = Called(stub_->SubmitJob(&context, request, &response), "Admin.SubmitJob"); !s.ok()) return s;
  return response.job_id();
}

absl::StatusOr<v1::Job> JobClient::Get(const std::string& job_id) {
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (absl::Status s = Called(stub_->GetJob(&context, request, &job), "Admin.GetJob"); !s.ok()) return s;
  return job;
}

absl::StatusOr<std::vector<v1::RoundRecord>> JobClient::HistoryAfter(const std::string& job_id, uint64_t after_round) {
  std::vector<v1::RoundRecord> out;
  while (true) {
    v1::GetJobHistoryRequest request;
    request.set_job_id(job_id);
    request.set_after_round(after_round);
    v1::GetJobHistoryResponse response;
    grpc::ClientContext context;
    SetDeadline(&context);
    if (absl::Status s = Called(stub_->GetJobHistory(&context, request, &response), "Admin.GetJobHistory"); !s.ok()) {
      return s;
    }
    for (v1::RoundRecord& r : *response.mutable_records()) out.push_back(std::move(r));
    if (response.next_after_round() == 0 || response.next_after_round() <= after_round) return out;
    after_round = response.next_after_round();
  }
}

absl::Status JobClient::Cancel(const std::string& job_id, const std::string& reason) {
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::Job job;
  grpc::ClientContext context;
  SetDeadline(&context);
  return Called(stub_->CancelJob(&context, request, &job), "Admin.CancelJob");
}

bool JobEnded(v1::JobState state) {
  return state == v1::JOB_STATE_COMPLETED || state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED;
}

}  // namespace pcp::loadgen
