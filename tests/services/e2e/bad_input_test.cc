// Bad input at the Admin API of a real pcp-shepherd process: malformed YAML, unknown keys,
// missing data, unknown job and supervisor ids. Each gets a clear status naming the problem
// (file:line:col for YAML); the job queue is intact afterwards, also across a restart.
#include <algorithm>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "shepherd_fixture.h"

namespace pcp::testing {
namespace {

class BadInputTest : public ShepherdOnlyTest {
 protected:
  grpc::Status Submit(const std::string& yaml, const std::string& file_name, v1::SubmitJobResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(60));
    v1::SubmitJobRequest request;
    request.set_yaml(yaml);
    request.set_file_name(file_name);
    return cluster_->admin().SubmitJob(&context, request, response);
  }
  std::vector<v1::Job> Jobs() {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListJobsResponse response;
    EXPECT_TRUE(cluster_->admin().ListJobs(&context, v1::ListJobsRequest(), &response).ok());
    return {response.jobs().begin(), response.jobs().end()};
  }
  std::string ValidYaml(const std::string& name) {
    E2eJob spec;
    spec.name = name;
    absl::StatusOr<std::string> yaml = ReadFile(cluster_->WriteJob(spec));
    EXPECT_TRUE(yaml.ok());
    return yaml.ok() ? *yaml : "";
  }
};

// "FILE:LINE:COL: " at the start of the message.
::testing::AssertionResult NamesFileLineCol(const grpc::Status& status, const std::string& file) {
  std::regex re("^" + file + R"(:\d+:\d+: )");
  if (std::regex_search(status.error_message(), re)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message does not start with " << file
                                       << ":LINE:COL: " << status.error_message();
}

TEST_F(BadInputTest, MistakesGetClearStatusesAndTheQueueStaysIntact) {
  // Two good jobs: the first runs (waiting for workers, as none are started), one is queued.
  v1::SubmitJobResponse first, second;
  ASSERT_TRUE(Submit(ValidYaml("good_one"), "good_one.yaml", &first).ok());
  ASSERT_TRUE(Submit(ValidYaml("good_two"), "good_two.yaml", &second).ok());
  EXPECT_EQ(second.queue_position(), 1u);
  std::vector<v1::Job> before = Jobs();
  ASSERT_EQ(before.size(), 2u);

  // Malformed YAML (an unclosed flow sequence), an unknown key, a bad value, missing data.
  v1::SubmitJobResponse ignored;
  grpc::Status malformed = Submit("name: broken\nmodel:\n  n_layer: [1, 2\n", "broken.yaml", &ignored);
  EXPECT_EQ(malformed.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << malformed.error_message();
  EXPECT_TRUE(NamesFileLineCol(malformed, "broken.yaml"));
  std::string good = ValidYaml("typo");
  std::string typo = good;
  size_t at = typo.find("n_embd:");
  ASSERT_NE(at, std::string::npos);
  typo.replace(at, 7, "n_embed:");
  grpc::Status unknown = Submit(typo, "typo.yaml", &ignored);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(NamesFileLineCol(unknown, "typo.yaml"));
  EXPECT_TRUE(absl::StrContains(unknown.error_message(), "n_embed")) << unknown.error_message();
  std::string bad_value = good;
  at = bad_value.find("inner_steps: ");
  ASSERT_NE(at, std::string::npos);
  bad_value.insert(at + 13, "-");
  grpc::Status negative = Submit(bad_value, "negative.yaml", &ignored);
  EXPECT_EQ(negative.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(NamesFileLineCol(negative, "negative.yaml"));
  grpc::Status no_data = Submit("name: nodata\ndata:\n  path: /nonexistent/shakespeare.txt\n", "nodata.yaml", &ignored);
  EXPECT_EQ(no_data.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(no_data.error_message(), "/nonexistent/shakespeare.txt")) << no_data.error_message();
  grpc::Status empty = Submit("", "empty.yaml", &ignored);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << empty.error_message();

  // pcpctl prints the shepherd's line as it is: one line, file:line:col, exit 1.
  std::string broken_path = cluster_->job_dir() + "/broken.yaml";
  ASSERT_TRUE(WriteFileAtomic(broken_path, "name: broken\nmodel:\n  n_layer: [1, 2\n").ok());
  absl::StatusOr<CommandResult> submit = cluster_->Pcpctl({"submit", broken_path});
  ASSERT_TRUE(submit.ok()) << submit.status();
  EXPECT_EQ(submit->exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(submit->output, "pcpctl submit: " + broken_path + ":")) << submit->output;
  EXPECT_EQ(std::count(submit->output.begin(), submit->output.end(), '\n'), 1) << submit->output;

  // Unknown ids: NOT_FOUND naming the id, for every call that takes one.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobRequest request;
    request.set_job_id("job-9999");
    v1::Job job;
    grpc::Status status = cluster_->admin().GetJob(&context, request, &job);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "job-9999")) << status.error_message();
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::CancelJobRequest request;
    request.set_job_id("job-9999");
    v1::Job job;
    EXPECT_EQ(cluster_->admin().CancelJob(&context, request, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::WatchJobRequest request;
    request.set_job_id("job-9999");
    auto reader = cluster_->admin().WatchJob(&context, request);
    v1::JobEvent event;
    while (reader->Read(&event)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::SampleRequest request;
    request.set_job_id("job-9999");
    v1::SampleResponse response;
    EXPECT_EQ(cluster_->admin().Sample(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::WorkerCommandRequest request;
    request.set_supervisor_id("no-such-node");
    v1::WorkerCommandResponse response;
    grpc::Status status = cluster_->admin().RestartWorker(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
    EXPECT_TRUE(absl::StrContains(status.error_message(), "no-such-node")) << status.error_message();
  }
  absl::StatusOr<CommandResult> status = cluster_->Pcpctl({"status", "job-9999"});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(status->output, "pcpctl status: ")) << status->output;

  // The queue is as it was: the same two jobs, in the same states; a new one gets the next id.
  std::vector<v1::Job> after = Jobs();
  ASSERT_EQ(after.size(), 2u);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].job_id(), before[i].job_id());
    EXPECT_EQ(after[i].state(), before[i].state());
  }
  v1::SubmitJobResponse third;
  ASSERT_TRUE(Submit(ValidYaml("good_three"), "good_three.yaml", &third).ok());
  EXPECT_EQ(third.queue_position(), 2u);

  // Cancelling twice: the second is FAILED_PRECONDITION and changes nothing.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::CancelJobRequest request;
    request.set_job_id(second.job_id());
    v1::Job job;
    ASSERT_TRUE(cluster_->admin().CancelJob(&context, request, &job).ok());
    EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::CancelJobRequest request;
    request.set_job_id(second.job_id());
    v1::Job job;
    EXPECT_EQ(cluster_->admin().CancelJob(&context, request, &job).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  }

  // No accepted job is lost across a restart of the shepherd.
  ASSERT_TRUE(cluster_->shepherd()->Stop().ok());
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  std::vector<v1::Job> restarted = Jobs();
  ASSERT_EQ(restarted.size(), 3u);
  std::set<std::string> ids;
  for (const v1::Job& job : restarted) ids.insert(job.job_id());
  EXPECT_EQ(ids, (std::set<std::string>{first.job_id(), second.job_id(), third.job_id()}));
  for (const v1::Job& job : restarted) {
    if (job.job_id() == second.job_id()) {
      EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
    }
  }
}

}  // namespace
}  // namespace pcp::testing
