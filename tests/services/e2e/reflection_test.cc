// grpcurl compatibility: with nothing compiled in about pcp.v1, list the services through
// server reflection (v1alpha) and call SubmitJob, GetJob and ListWorkers with JSON bodies,
// as grpcurl does. Against a small server with reflection on (fake_admin_server) and, once
// the cluster binaries exist, against the real pcp-shepherd.
#include "reflection_client.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "process_harness.h"
#ifdef PCP_HAVE_CLUSTER
#include "cluster_harness.h"
#endif

namespace pcp::testing {
namespace {

using ::testing::Contains;
using ::testing::IsSupersetOf;

// The JSON body of SubmitJob, as `jq -Rs '{yaml: ., fileName: ..., baseDir: ...}'` makes it.
std::string SubmitBody(const std::string& yaml, const std::string& file_name, const std::string& base_dir) {
  Json body = Json::Object();
  body.Set("yaml", yaml);
  body.Set("fileName", file_name);
  if (!base_dir.empty()) body.Set("baseDir", base_dir);
  return body.Serialize();
}

Json ParseOrDie(const std::string& text) {
  absl::StatusOr<Json> json = Json::Parse(text);
  EXPECT_TRUE(json.ok()) << json.status() << " in " << text;
  return json.ok() ? *json : Json();
}

std::string StringField(const Json& json, absl::string_view key) {
  const Json* field = json.Find(key);
  return field != nullptr && field->is_string() ? field->string_value() : "";
}

// What every Admin server reachable by grpcurl must offer. Returns the submitted job's id.
std::string CheckAdminThroughReflection(const std::string& target, const std::string& job_yaml,
                                        const std::string& file_name, const std::string& base_dir) {
  ReflectionClient client(target);
  // grpcurl -plaintext HOST:PORT list
  absl::StatusOr<std::vector<std::string>> services = client.ListServices();
  EXPECT_TRUE(services.ok()) << services.status();
  if (!services.ok()) return "";
  EXPECT_THAT(*services,
              IsSupersetOf({"pcp.v1.Admin", "grpc.reflection.v1alpha.ServerReflection", "grpc.health.v1.Health"}));
  // grpcurl -plaintext HOST:PORT list pcp.v1.Admin
  absl::StatusOr<std::vector<std::string>> methods = client.ListMethods("pcp.v1.Admin");
  EXPECT_TRUE(methods.ok()) << methods.status();
  if (methods.ok()) {
    EXPECT_THAT(*methods,
                IsSupersetOf({"pcp.v1.Admin.SubmitJob", "pcp.v1.Admin.ListJobs", "pcp.v1.Admin.GetJob",
                              "pcp.v1.Admin.CancelJob", "pcp.v1.Admin.WatchJob", "pcp.v1.Admin.ListWorkers",
                              "pcp.v1.Admin.RestartWorker", "pcp.v1.Admin.DrainWorker", "pcp.v1.Admin.GetCluster",
                              "pcp.v1.Admin.Sample", "pcp.v1.Admin.GetJobHistory"}));
  }

  // grpcurl -plaintext -d @ HOST:PORT pcp.v1.Admin/SubmitJob
  absl::StatusOr<std::string> submitted =
      client.CallUnary("pcp.v1.Admin/SubmitJob", SubmitBody(job_yaml, file_name, base_dir));
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return "";
  std::string job_id = StringField(ParseOrDie(*submitted), "jobId");
  EXPECT_FALSE(job_id.empty()) << *submitted;

  // grpcurl -plaintext -d '{"jobId": "..."}' HOST:PORT pcp.v1.Admin/GetJob
  absl::StatusOr<std::string> job =
      client.CallUnary("pcp.v1.Admin/GetJob", absl::StrCat(R"({"jobId": ")", job_id, R"("})"));
  EXPECT_TRUE(job.ok()) << job.status();
  if (job.ok()) {
    Json parsed = ParseOrDie(*job);
    EXPECT_EQ(StringField(parsed, "jobId"), job_id);
    EXPECT_TRUE(absl::StartsWith(StringField(parsed, "state"), "JOB_STATE_")) << *job;
  }

  // grpcurl -plaintext HOST:PORT pcp.v1.Admin/ListWorkers  (also accepts the dotted form)
  absl::StatusOr<std::string> workers = client.CallUnary("pcp.v1.Admin.ListWorkers", "{}");
  EXPECT_TRUE(workers.ok()) << workers.status();
  if (workers.ok()) {
    EXPECT_TRUE(ParseOrDie(*workers).is_object()) << *workers;
  }

  // The server's errors come through as they are.
  absl::StatusOr<std::string> missing = client.CallUnary("pcp.v1.Admin/GetJob", R"({"jobId": "job-9999"})");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  absl::StatusOr<std::string> bad_yaml =
      client.CallUnary("pcp.v1.Admin/SubmitJob", SubmitBody("name: x\nbogus: 1\n", "bad.yaml", ""));
  EXPECT_EQ(bad_yaml.status().code(), absl::StatusCode::kInvalidArgument) << bad_yaml.status();
  EXPECT_TRUE(absl::StrContains(bad_yaml.status().message(), "bad.yaml:2:")) << bad_yaml.status();
  // And the client's own mistakes are named.
  EXPECT_EQ(client.CallUnary("pcp.v1.Admin/GetJob", R"({"no_such_field": 1})").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.CallUnary("pcp.v1.Admin/NoSuchMethod", "{}").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.CallUnary("pcp.v1.NoSuchService/Get", "{}").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.CallUnary("pcp.v1.Admin/WatchJob", "{}").status().code(), absl::StatusCode::kUnimplemented);
  return job_id;
}

TEST(ReflectionTest, FakeAdminServerLikeGrpcurl) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  int port = PickFreePort();
  absl::StatusOr<std::unique_ptr<Process>> server =
      Process::Start({.binary = FAKE_ADMIN_SERVER,
                      .args = {absl::StrCat("--port=", port)},
                      .log_path = dir->path() + "/fake_admin_server.log"});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->WaitForLog("listening on", absl::Seconds(20)).ok()) << (*server)->LogTail();
  std::string target = absl::StrCat("127.0.0.1:", port);
  std::string job_id = CheckAdminThroughReflection(target, "name: reflected\n", "reflected.yaml", "/tmp");
  EXPECT_EQ(job_id, "job-0001");

  ReflectionClient client(target);
  absl::StatusOr<std::string> workers = client.CallUnary("pcp.v1.Admin/ListWorkers", "{}");
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_TRUE(absl::StrContains(*workers, R"("supervisorId":"node-a")")) << *workers;
  // gRPC's default health service is listed but carries no descriptors (grpcurl cannot
  // describe it either; grpc_health_probe speaks it natively).

  absl::StatusOr<int> stopped = (*server)->Stop();
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(DescribeWaitStatus(*stopped), "exited with 0");
}

TEST(ReflectionTest, UnreachableServerIsUnavailable) {
  ReflectionClient client(absl::StrCat("127.0.0.1:", PickFreePort()), absl::Seconds(2));
  EXPECT_EQ(client.ListServices().status().code(), absl::StatusCode::kUnavailable);
}

#ifdef PCP_HAVE_CLUSTER
TEST(ReflectionTest, ShepherdLikeGrpcurl) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(1, absl::Seconds(60)).ok()) << cluster.Logs();
  absl::StatusOr<std::string> yaml = ReadFile(cluster.TinyJobPath());
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  std::string job_id = CheckAdminThroughReflection(cluster.admin_target(), *yaml, "tiny_e2e.yaml", cluster.job_dir());
  EXPECT_FALSE(job_id.empty());
  ReflectionClient client(cluster.admin_target());
  absl::StatusOr<std::string> workers = client.CallUnary("pcp.v1.Admin/ListWorkers", "{}");
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_TRUE(absl::StrContains(*workers, cluster.supervisor_id(0))) << *workers;
  ASSERT_TRUE(cluster.StopAll().ok());
}
#endif

}  // namespace
}  // namespace pcp::testing
