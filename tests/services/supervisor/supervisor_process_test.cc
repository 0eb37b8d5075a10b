// The real pcp-supervisor binary with a real child (pcp_test_child): signals, exit codes,
// orphans, the stable id, and configuration mistakes. No shepherd runs here: the supervisor
// must look after its worker while the shepherd is unreachable.
#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/supervisor/child_process.h"
#include "pcp/supervisor_testing/process_testing.h"

namespace pcp::supervisor {
namespace {

using supervisor_testing::kSupervisorPath;
using supervisor_testing::kTestChildPath;
using supervisor_testing::LogLines;
using supervisor_testing::MakeTempDir;
using supervisor_testing::PickFreePort;
using supervisor_testing::ProcessAlive;
using supervisor_testing::StartedPids;
using supervisor_testing::StartProcess;
using supervisor_testing::WaitUntil;
using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class SupervisorProcessTest : public ::testing::Test {
 protected:
  // A shepherd address where nothing listens.
  std::string NoShepherd() { return absl::StrCat("127.0.0.1:", PickFreePort()); }

  std::vector<std::string> Argv(std::vector<std::string> extra, std::string worker_args = "") {
    std::vector<std::string> argv = {kSupervisorPath,
                                     "--shepherd=" + NoShepherd(),
                                     "--worker_binary=" + std::string(kTestChildPath),
                                     "--worker_args=--log=" + log_ + worker_args,
                                     "--backoff_initial_ms=100",
                                     "--backoff_max_ms=1000",
                                     "--reconnect_initial_ms=100",
                                     "--reconnect_max_ms=500",
                                     "--metrics_listen="};  // no fixed port: tests run in parallel
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  pid_t WaitForWorker(size_t n) {
    EXPECT_TRUE(WaitUntil([&] { return StartedPids(log_).size() >= n; }, absl::Seconds(10)))
        << "fewer than " << n << " workers started";
    std::vector<pid_t> pids = StartedPids(log_);
    return pids.size() >= n ? pids[n - 1] : 0;
  }

  std::string dir_ = MakeTempDir("supervisor_process");
  std::string log_ = dir_ + "/child.log";
  std::string stderr_ = dir_ + "/supervisor.stderr";
};

TEST_F(SupervisorProcessTest, SigtermIsForwardedToTheWorkerAndTheSupervisorExitsZero) {
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-t"}, ",--term_delay_ms=200"), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t worker = WaitForWorker(1);
  ASSERT_TRUE(ProcessAlive(worker));
  // The worker was told who it is and where the shepherd is.
  std::string start = LogLines(log_, "start ")[0];
  EXPECT_THAT(start, HasSubstr("--supervisor_id=node-t"));
  EXPECT_THAT(start, HasSubstr("--shepherd=127.0.0.1:"));

  ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(15));
  ASSERT_TRUE(exit.has_value()) << "supervisor did not exit";
  EXPECT_EQ(exit->exit_code, 0) << exit->ToString() << "\n" << ReadAll(stderr_);
  EXPECT_EQ(LogLines(log_, absl::StrCat("sigterm ", worker)).size(), 1u);
  EXPECT_EQ(LogLines(log_, absl::StrCat("exit ", worker, " 0")).size(), 1u);
  EXPECT_FALSE(ProcessAlive(worker));
  EXPECT_EQ(StartedPids(log_).size(), 1u);  // and no new worker after the stop
}

TEST_F(SupervisorProcessTest, SigintStopsItToo) {
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-i"}), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t worker = WaitForWorker(1);
  ASSERT_EQ(kill(supervisor->pid(), SIGINT), 0);
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(15));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << ReadAll(stderr_);
  EXPECT_FALSE(ProcessAlive(worker));
}

TEST_F(SupervisorProcessTest, AWorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-g", "--grace_ms=300"}, ",--ignore_sigterm"), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t worker = WaitForWorker(1);
  const absl::Time start = absl::Now();
  ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(15));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << ReadAll(stderr_);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_FALSE(ProcessAlive(worker));
  EXPECT_THAT(ReadAll(stderr_), HasSubstr("SIGKILL"));
}

TEST_F(SupervisorProcessTest, SigkillOfTheSupervisorTakesTheWorkerWithIt) {
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-k"}), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t worker = WaitForWorker(1);
  ASSERT_TRUE(ProcessAlive(worker));
  ASSERT_EQ(kill(supervisor->pid(), SIGKILL), 0);
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(5));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(worker); }, absl::Seconds(5)))
      << "worker " << worker << " outlived its supervisor";
}

TEST_F(SupervisorProcessTest, RestartsAKilledWorkerWhileTheShepherdIsUnreachable) {
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-r"}), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t first = WaitForWorker(1);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  const pid_t second = WaitForWorker(2);
  EXPECT_NE(second, first);
  EXPECT_FALSE(ProcessAlive(first));
  EXPECT_TRUE(ProcessAlive(second));
  // Its incarnation (PCP_WORKER_INCARNATION) went up.
  const std::vector<std::string> starts = LogLines(log_, "start ");
  ASSERT_GE(starts.size(), 2u);
  EXPECT_EQ(supervisor_testing::Field(starts[1], 2), "2");
  EXPECT_THAT(ReadAll(stderr_), HasSubstr("signal 9"));
  ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
  ASSERT_TRUE(supervisor->WaitFor(absl::Seconds(15)).has_value());
  EXPECT_FALSE(ProcessAlive(second));
}

// One supervisor per state_dir: the second exits 1 at start naming the first one's pid,
// and starts no worker; once the first is gone, the directory is free again.
TEST_F(SupervisorProcessTest, ASecondSupervisorOnTheSameStateDirExitsNamingTheFirst) {
  const std::string state = dir_ + "/state";
  auto first = StartProcess(Argv({"--state_dir=" + state}), stderr_);
  ASSERT_TRUE(first.ok()) << first.status();
  WaitForWorker(1);  // the lock is taken before the worker starts
  const std::string second_stderr = dir_ + "/second.stderr";
  auto second = StartProcess(Argv({"--state_dir=" + state}), second_stderr);
  ASSERT_TRUE(second.ok()) << second.status();
  std::optional<ExitInfo> exit = second->WaitFor(absl::Seconds(15));
  ASSERT_TRUE(exit.has_value()) << "the second supervisor is still running";
  EXPECT_EQ(exit->exit_code, 1) << exit->ToString();
  EXPECT_THAT(ReadAll(second_stderr),
              HasSubstr(absl::StrCat("state_dir '", state, "' is in use by process ", first->pid())));
  EXPECT_EQ(StartedPids(log_).size(), 1u);  // no second worker
  EXPECT_TRUE(ProcessAlive(first->pid()));

  ASSERT_EQ(kill(first->pid(), SIGTERM), 0);
  ASSERT_TRUE(first->WaitFor(absl::Seconds(15)).has_value());
  auto third = StartProcess(Argv({"--state_dir=" + state}), dir_ + "/third.stderr");
  ASSERT_TRUE(third.ok()) << third.status();
  WaitForWorker(2);
  ASSERT_EQ(kill(third->pid(), SIGTERM), 0);
  EXPECT_TRUE(third->WaitFor(absl::Seconds(15)).has_value());
}

// The supervisor's listening port is its /metrics: port 0 plus --metrics_address_file gives
// the bound port, and a second supervisor asked to use it says which port is taken (metrics
// are a side channel: it logs this and keeps its worker).
TEST_F(SupervisorProcessTest, AMetricsPortInUseIsNamed) {
  const std::string address_file = dir_ + "/metrics.addr";
  auto first = StartProcess(Argv({"--supervisor_id=node-m1", "--metrics_listen=127.0.0.1:0",
                                  "--metrics_address_file=" + address_file}),
                            stderr_);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(WaitUntil([&] { return !ReadAll(address_file).empty(); }, absl::Seconds(15)));
  const std::string address(absl::StripTrailingAsciiWhitespace(ReadAll(address_file)));
  ASSERT_THAT(address, ::testing::StartsWith("127.0.0.1:"));
  const std::string second_stderr = dir_ + "/second.stderr";
  auto second = StartProcess(Argv({"--supervisor_id=node-m2", "--metrics_listen=" + address}), second_stderr);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(
      WaitUntil([&] { return ReadAll(second_stderr).find("cannot serve metrics on " + address) != std::string::npos; },
                absl::Seconds(15)))
      << ReadAll(second_stderr);
  for (auto* p : {&*first, &*second}) {
    ASSERT_EQ(kill(p->pid(), SIGTERM), 0);
    EXPECT_TRUE(p->WaitFor(absl::Seconds(15)).has_value());
  }
}

// The real binary passes the progress pipe through exec: a worker that reported a completed
// round is restarted at once, even with a one-minute backoff.
TEST_F(SupervisorProcessTest, AWorkerThatReportedProgressIsRestartedAtOnce) {
  auto supervisor =
      StartProcess(Argv({"--supervisor_id=node-p", "--backoff_initial_ms=60000", "--backoff_max_ms=60000"},
                        ",--progress_incarnation=0"),
                   stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  const pid_t worker = WaitForWorker(1);
  ASSERT_TRUE(WaitUntil([&] { return LogLines(log_, "progress ").size() == 1; }, absl::Seconds(10)));
  // The byte is in the pipe before the kill; the supervisor reads the pipe when it reaps.
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  const pid_t next = WaitForWorker(2);  // 10 s at most, far below the 60 s backoff
  EXPECT_NE(next, worker);
  EXPECT_THAT(ReadAll(stderr_), HasSubstr("made progress, restarting at once"));
  ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
  EXPECT_TRUE(supervisor->WaitFor(absl::Seconds(15)).has_value());
}

TEST_F(SupervisorProcessTest, AGeneratedIdIsKeptAcrossRestarts) {
  const std::string state = dir_ + "/state";
  std::string first_id;
  for (int run = 0; run < 2; ++run) {
    auto supervisor = StartProcess(Argv({"--state_dir=" + state}), stderr_);
    ASSERT_TRUE(supervisor.ok()) << supervisor.status();
    const pid_t worker = WaitForWorker(run + 1);
    ASSERT_NE(worker, 0);
    ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
    ASSERT_TRUE(supervisor->WaitFor(absl::Seconds(15)).has_value());
    const std::string start = LogLines(log_, "start ")[run];
    const size_t at = start.find("--supervisor_id=");
    ASSERT_NE(at, std::string::npos) << start;
    const std::string id = supervisor_testing::Field(start.substr(at + 16), 0);
    if (run == 0) {
      first_id = id;
      EXPECT_EQ(std::string(absl::StripAsciiWhitespace(ReadAll(state + "/supervisor_id"))), id);
    } else {
      EXPECT_EQ(id, first_id);
    }
  }
}

TEST_F(SupervisorProcessTest, ConfigMistakesExitWithTwoAndOneClearLine) {
  const std::string config = dir_ + "/bad.yaml";
  std::ofstream(config) << "shepherd: 127.0.0.1:1\nworker:\n  binay: /bin/true\n";
  auto supervisor = StartProcess({kSupervisorPath, "--config=" + config}, stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(10));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 2);
  EXPECT_THAT(ReadAll(stderr_),
              HasSubstr(config + ":3:3: unknown key 'binay' in section 'worker' (did you mean 'binary'?)"));
}

// The token given where its source belongs (--token=TOKEN, read as a file path): one line,
// exit 1, and the token neither logged (the worker's command line is) nor passed to a worker.
TEST_F(SupervisorProcessTest, ATokenGivenAsItsPathIsNeverPrinted) {
  const std::string token = "tok-3f9a1c77e2b04d5e";
  auto supervisor = StartProcess(Argv({"--supervisor_id=node-1", "--token=" + token}), stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(10));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 1);
  const std::string output = ReadAll(stderr_);
  EXPECT_THAT(output, HasSubstr("token: no such file (the value given is not repeated"));
  EXPECT_THAT(output, ::testing::Not(HasSubstr(token)));
  EXPECT_TRUE(StartedPids(log_).empty()) << "a worker was started";
}

TEST_F(SupervisorProcessTest, AMissingWorkerBinaryIsAClearError) {
  auto supervisor =
      StartProcess({kSupervisorPath, "--supervisor_id=x", "--worker_binary=" + dir_ + "/no-such-worker"}, stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  std::optional<ExitInfo> exit = supervisor->WaitFor(absl::Seconds(10));
  ASSERT_TRUE(exit.has_value());
  EXPECT_NE(exit->exit_code, 0);
  EXPECT_THAT(ReadAll(stderr_), HasSubstr("no-such-worker' is not executable"));
}

TEST_F(SupervisorProcessTest, FlagsOverrideTheConfigFile) {
  const std::string config = dir_ + "/s.yaml";
  std::ofstream(config) << "shepherd: 127.0.0.1:1\nsupervisor_id: from-file\nworker:\n"
                           "  binary: /nonexistent\n  args: [--from-file]\n";
  auto supervisor = StartProcess({kSupervisorPath, "--config=" + config, "--supervisor_id=from-flag",
                                  "--worker_binary=" + std::string(kTestChildPath), "--worker_args=--log=" + log_,
                                  "--metrics_listen="},
                                 stderr_);
  ASSERT_TRUE(supervisor.ok()) << supervisor.status();
  WaitForWorker(1);
  const std::string start = LogLines(log_, "start ")[0];
  EXPECT_THAT(start, HasSubstr("--supervisor_id=from-flag"));
  EXPECT_THAT(start, HasSubstr("--shepherd=127.0.0.1:1 "));
  EXPECT_THAT(start, ::testing::Not(HasSubstr("--from-file")));
  ASSERT_EQ(kill(supervisor->pid(), SIGTERM), 0);
  ASSERT_TRUE(supervisor->WaitFor(absl::Seconds(15)).has_value());
}

}  // namespace
}  // namespace pcp::supervisor
