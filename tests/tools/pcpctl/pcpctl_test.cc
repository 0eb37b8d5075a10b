// pcpctl's commands against a real gRPC server running FakeAdminService in this process:
// what is sent, what is printed, exit codes, and errors passed through as one line.
#include "pcp/pcpctl/pcpctl.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fake_admin_service.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::pcpctl {
namespace {

using ::pcp::testing::FakeAdminService;

struct Result {
  int code;
  std::string out;
  std::string err;
};

class PcpctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&admin_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    options_.shepherd = absl::StrCat("127.0.0.1:", port_);
    options_.timeout = absl::Seconds(10);
    absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcpctl-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<testing::TempDir>(*std::move(dir));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  Result Run(std::vector<std::string> args) { return RunWith(options_, std::move(args)); }
  static Result RunWith(const PcpctlOptions& options, std::vector<std::string> args) {
    char *out_buf = nullptr, *err_buf = nullptr;
    size_t out_size = 0, err_size = 0;
    std::FILE* out = open_memstream(&out_buf, &out_size);
    std::FILE* err = open_memstream(&err_buf, &err_size);
    int code = RunPcpctl(args, options, out, err);
    std::fclose(out);
    std::fclose(err);
    Result r{code, std::string(out_buf, out_size), std::string(err_buf, err_size)};
    std::free(out_buf);
    std::free(err_buf);
    return r;
  }
  std::string WriteJob(const std::string& name, const std::string& text) {
    std::string path = dir_->path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, text).ok());
    return path;
  }
  std::string SubmitOne(const std::string& name = "tiny") {
    PcpctlOptions quiet = options_;
    quiet.quiet = true;
    Result r = RunWith(quiet, {"submit", WriteJob(name + ".yaml", "name: " + name + "\n")});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return r.out.substr(0, r.out.size() - 1);
  }

  FakeAdminService admin_{/*rounds=*/3};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  PcpctlOptions options_;
  std::unique_ptr<testing::TempDir> dir_;
};

TEST_F(PcpctlTest, SubmitSendsTheFileTextItsNameAndFolder) {
  std::string path = WriteJob("tiny.yaml", "name: tiny\nmodel: {n_layer: 2}\n");
  Result r = Run({"submit", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "submitted job-0001 (tiny), starts now\nfollow it with: pcpctl watch job-0001\n");
  v1::SubmitJobRequest sent = admin_.last_submit();
  EXPECT_EQ(sent.yaml(), "name: tiny\nmodel: {n_layer: 2}\n");
  EXPECT_EQ(sent.file_name(), path);
  EXPECT_EQ(sent.base_dir(), dir_->path());

  options_.quiet = true;
  r = Run({"submit", path});
  EXPECT_EQ(r.out, "job-0002\n");
}

TEST_F(PcpctlTest, SubmitPrintsTheShepherdsYamlErrorAsIs) {
  std::string path = WriteJob("bad.yaml", "name: x\nbogus: 3\n");
  Result r = Run({"submit", path});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, absl::StrCat("pcpctl submit: ", path, ":2:1: unknown key 'bogus'\n"));
}

TEST_F(PcpctlTest, SubmitOfAMissingFileNamesIt) {
  Result r = Run({"submit", dir_->path() + "/nope.yaml"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_TRUE(absl::StrContains(r.err, "nope.yaml")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(PcpctlTest, JobsAndStatus) {
  std::string id = SubmitOne("tiny");
  Result r = Run({"jobs"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "JOB       NAME  STATE   ROUND  TRAIN  VAL  SUBMITTED")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\njob-0001  tiny  queued  0/3    -      -    ")) << r.out;

  r = Run({"status", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "job         job-0001\n")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "state       queued\n")) << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "effective configuration")) << r.out;
  options_.show_yaml = true;
  r = Run({"status", id});
  EXPECT_TRUE(absl::StrContains(r.out, "effective configuration:\nname: tiny\n")) << r.out;
}

TEST_F(PcpctlTest, UnknownJobIsNotFound) {
  for (const char* command : {"status", "watch", "cancel"}) {
    Result r = Run({command, "job-4711"});
    EXPECT_EQ(r.code, kExitError) << command;
    EXPECT_EQ(r.err, absl::StrCat("pcpctl ", command, ": no job 'job-4711'\n"));
  }
}

TEST_F(PcpctlTest, WatchFollowsTheJobToItsResult) {
  std::string id = SubmitOne("tiny");
  options_.tty = false;
  Result r = Run({"watch", id});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "job-0001 (tiny): queued, round 0/3\nstate: queued -> running\n")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\nround 1/3  train 4.0000  val 4.1000 (r1)  12.3k tok/s  2 workers")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\nround 3/3 ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\njob-0001 completed: 3 rounds")) << r.out;
  EXPECT_TRUE(absl::EndsWith(r.out, "checkpoint: /state/jobs/job-0001/ckpt.safetensors\n")) << r.out;

  options_.tty = true;
  r = Run({"watch", id});  // a finished job: snapshot and result
  EXPECT_EQ(r.code, kExitOk);
}

TEST_F(PcpctlTest, WatchRewritesTheLineOnATerminal) {
  std::string id = SubmitOne("tiny");
  options_.tty = true;
  Result r = Run({"watch", id});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "\rround 1/3 ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\x1b[K\rround 2/3 ")) << r.out;
}

TEST_F(PcpctlTest, WatchExitCodeFollowsTheResult) {
  std::string failing = SubmitOne("will-fail");
  Result r = Run({"watch", failing});
  EXPECT_EQ(r.code, kExitJobFailed);
  EXPECT_TRUE(absl::StrContains(r.out, "failed (worker error: out of memory)")) << r.out;

  std::string cancelled = SubmitOne("tiny");
  options_.reason = "wrong lr";
  r = Run({"cancel", cancelled});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, absl::StrCat(cancelled, ": cancelled (wrong lr)\n"));
  r = Run({"watch", cancelled});
  EXPECT_EQ(r.code, kExitJobCancelled);
  r = Run({"cancel", cancelled});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err, absl::StrCat("pcpctl cancel: ", cancelled, " has already finished\n"));
}

TEST_F(PcpctlTest, WorkersRestartDrain) {
  Result r = Run({"workers"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "SUPERVISOR  HOST    LINKS  PROCESS")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\nnode-a      host-a  sw     running pid 4242")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\nnode-b      host-b  s-     backoff ")) << r.out;

  // --json: the reply on one line, proto field names, false/zero fields included.
  PcpctlOptions json = options_;
  json.json = true;
  r = RunWith(json, {"workers"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "{\"workers\":[{\"supervisor_id\":\"node-a\"")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\"pid\":4242")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\"worker_connected\":false")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;

  r = Run({"restart", "node-a"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "node-a: restarted (command 1): done (pcpctl restart)\n");
  r = Run({"drain", "node-b"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "node-b: drained (command 2)")) << r.out;
  r = Run({"restart", "node-z"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err, "pcpctl restart: no supervisor 'node-z'\n");
}

TEST_F(PcpctlTest, SampleAndCluster) {
  std::string id = SubmitOne("tiny");
  options_.prompt = "ROMEO:";
  options_.max_new_tokens = 4;
  Result r = Run({"sample", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "ROMEO:aaaa\n");
  EXPECT_EQ(r.err, "(job-0001, round 3, final parameters, 4 tokens)\n");
  options_.temperature = 0;
  r = Run({"sample", id});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "pcpctl sample: --temperature must be > 0, got 0\n");

  r = Run({"cluster"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "shepherd     fake-0, up 1m05s")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\njobs         1 queued, 0 completed, 0 failed, 0 cancelled\n")) << r.out;
}

TEST_F(PcpctlTest, UsageErrors) {
  EXPECT_EQ(Run({}).code, kExitUsage);
  Result r = Run({"frobnicate"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "pcpctl: unknown command 'frobnicate'; see pcpctl --help\n");
  r = Run({"status"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(Run({"jobs", "extra"}).code, kExitUsage);
}

TEST_F(PcpctlTest, UnreachableShepherdIsOneClearLine) {
  options_.shepherd = absl::StrCat("127.0.0.1:", testing::PickFreePort());
  Result r = Run({"jobs"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_TRUE(absl::StartsWith(r.err, absl::StrCat("pcpctl jobs: cannot connect: nothing listens at ",
                                                   options_.shepherd, " (connection refused)")))
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The binary: flags, $PCP_SHEPHERD, exit codes.
TEST_F(PcpctlTest, BinaryTakesTheShepherdFromFlagOrEnvironment) {
  std::string job = WriteJob("bin.yaml", "name: bin\n");
  auto run = [&](std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env,
                 const std::string& log) {
    absl::StatusOr<std::unique_ptr<testing::Process>> p = testing::Process::Start(
        {.binary = PCPCTL_BINARY, .args = args, .log_path = dir_->path() + "/" + log, .env = env});
    EXPECT_TRUE(p.ok()) << p.status();
    absl::StatusOr<int> status = (*p)->Wait(absl::Seconds(30));
    EXPECT_TRUE(status.ok());
    return std::make_pair(WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, (*p)->Log());
  };
  auto [code, log] = run({"--shepherd=" + options_.shepherd, "submit", "--quiet", job}, {}, "a.log");
  EXPECT_EQ(code, 0) << log;
  EXPECT_EQ(log, "job-0001\n");
  std::tie(code, log) = run({"watch", "job-0001"}, {{"PCP_SHEPHERD", options_.shepherd}}, "b.log");
  EXPECT_EQ(code, 0) << log;
  EXPECT_TRUE(absl::StrContains(log, "job-0001 completed: 3 rounds")) << log;
  std::tie(code, log) = run({"sample", "job-0001", "--max_new_tokens=3", "--temperature=0.5", "--top_k=5"},
                            {{"PCP_SHEPHERD", options_.shepherd}}, "c.log");
  EXPECT_EQ(code, 0) << log;
  EXPECT_TRUE(absl::StartsWith(log, "aaa\n")) << log;
  std::tie(code, log) = run({"status", "job-0042"}, {{"PCP_SHEPHERD", options_.shepherd}}, "d.log");
  EXPECT_EQ(code, 1);
  EXPECT_EQ(log, "pcpctl status: no job 'job-0042'\n");
  std::tie(code, log) = run({"--timeout=-1", "jobs"}, {}, "e.log");
  EXPECT_EQ(code, 2) << log;
}

// Malformed credentials: the binary exits with a clear error, never an abort, and prints the
// token nowhere (a two-line token file used to abort inside gRPC with the header in clear; the
// token given where its path belongs was echoed back).
TEST_F(PcpctlTest, MalformedTokenIsAnErrorThatNeverShowsTheToken) {
  const std::string token = "5726d2c0ffee5726d2c0ffee5726d2c0ffee797";
  const std::string two_lines = dir_->path() + "/two_lines.token";
  ASSERT_TRUE(WriteFileAtomic(two_lines, token + "\n" + token + ".extra\n").ok());
  int n = 0;
  for (const std::string& source : {two_lines, token, "file:" + token}) {
    const std::string log = absl::StrCat("token", n++, ".log");
    absl::StatusOr<std::unique_ptr<testing::Process>> p =
        testing::Process::Start({.binary = PCPCTL_BINARY,
                                 .args = {"--shepherd=" + options_.shepherd, "--token_file=" + source, "jobs"},
                                 .log_path = dir_->path() + "/" + log});
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<int> status = (*p)->Wait(absl::Seconds(30));
    ASSERT_TRUE(status.ok());
    EXPECT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status) << ": " << (*p)->Log();
    EXPECT_NE(WEXITSTATUS(*status), 0);
    EXPECT_TRUE(absl::StartsWith((*p)->Log(), "pcpctl: --token_file: ")) << (*p)->Log();
    EXPECT_FALSE(absl::StrContains((*p)->Log(), token.substr(0, 12))) << (*p)->Log();
  }
}

// The fake serves 2500 records per job: more than one page of GetJobHistory.
TEST_F(PcpctlTest, HistoryFetchesEveryPageAsTableCsvOrJson) {
  std::string id = SubmitOne("tiny");
  Result r = Run({"history", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "ROUND  END  TRAIN   VAL     TOKENS")) << r.out.substr(0, 200);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2501);
  EXPECT_TRUE(absl::StrContains(r.out, "\n10     -    2.9900  3.0900  10000")) << r.out.substr(0, 1000);

  options_.csv = true;
  r = Run({"history", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "round,start_unix_ms,")) << r.out.substr(0, 200);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2501);
  EXPECT_TRUE(absl::StrContains(r.out, "\n2500,0,0,1000,2500000,0.5,0.6,")) << r.out.substr(r.out.size() - 300);

  options_.csv = false;
  options_.json = true;
  r = Run({"history", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2500);
  EXPECT_TRUE(absl::StartsWith(r.out, "{\"round\":\"1\",")) << r.out.substr(0, 200);

  options_.csv = true;
  EXPECT_EQ(Run({"history", id}).code, kExitUsage);
  options_.csv = options_.json = false;
  r = Run({"history", "job-0099"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err, "pcpctl history: no job 'job-0099'\n");
}

TEST_F(PcpctlTest, PlotWritesAPng) {
  std::string id = SubmitOne("tiny");
  options_.out = dir_->path() + "/loss.png";
  Result r = Run({"plot", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, options_.out + "\n");
  absl::StatusOr<std::string> png = ReadFile(options_.out);
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(png->size(), 2000u);
  // scripts/plot-loss.py draws the same history from `pcpctl history --json`.
  options_.json = true;
  r = Run({"history", id});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_TRUE(WriteFileAtomic(dir_->path() + "/history.jsonl", r.out).ok());
  const std::string py_png = dir_->path() + "/py.png";
  const std::string command =
      absl::StrCat("/usr/bin/python3 ", PCP_SOURCE_DIR, "/scripts/plot-loss.py --history ", dir_->path(),
                   "/history.jsonl --out ", py_png, " > ", dir_->path(), "/py.log 2>&1");
  EXPECT_EQ(std::system(command.c_str()), 0) << *ReadFile(dir_->path() + "/py.log");
  absl::StatusOr<std::string> py = ReadFile(py_png);
  ASSERT_TRUE(py.ok()) << py.status();
  EXPECT_EQ(py->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_TRUE(absl::StrContains(*ReadFile(dir_->path() + "/py.log"), "train: 2500 points"));

  options_.out = dir_->path() + "/no/such/folder/loss.png";
  r = Run({"plot", id});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_TRUE(absl::StrContains(r.err, "no/such/folder")) << r.err;
}

}  // namespace
}  // namespace pcp::pcpctl
