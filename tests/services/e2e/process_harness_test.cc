// The e2e harness itself, with /bin/sh as the child: logs, exit statuses, real signals,
// stop by PID with SIGTERM then SIGKILL, free ports.
#include "process_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace pcp::testing {
namespace {

std::unique_ptr<Process> StartShell(const TempDir& dir, const std::string& script, const std::string& name = "sh") {
  absl::StatusOr<std::unique_ptr<Process>> process =
      Process::Start({.binary = "/bin/sh", .args = {"-c", script}, .log_path = dir.path() + "/" + name + ".log"});
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? *std::move(process) : nullptr;
}

TEST(ProcessHarnessTest, CapturesStdoutAndStderrAndExitStatus) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto p = StartShell(*dir, "echo to-stdout; echo to-stderr >&2; echo \"env=$PCP_X\"; exit 7");
  ASSERT_NE(p, nullptr);
  absl::StatusOr<int> status = p->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 7);
  EXPECT_EQ(DescribeWaitStatus(*status), "exited with 7");
  EXPECT_TRUE(absl::StrContains(p->Log(), "to-stdout\n"));
  EXPECT_TRUE(absl::StrContains(p->Log(), "to-stderr\n"));
}

TEST(ProcessHarnessTest, PassesEnvironmentAndWorkingDirectory) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<std::unique_ptr<Process>> p = Process::Start({.binary = "/bin/sh",
                                                               .args = {"-c", "echo \"$PCP_X $(pwd)\""},
                                                               .log_path = dir->path() + "/env.log",
                                                               .env = {{"PCP_X", "hello"}},
                                                               .working_dir = dir->path()});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Wait(absl::Seconds(10)).ok());
  EXPECT_EQ((*p)->Log(), absl::StrCat("hello ", dir->path(), "\n"));
}

TEST(ProcessHarnessTest, WaitsForLogLinesAndFailsWhenTheProcessExits) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto p = StartShell(*dir, "sleep 0.2; echo 'server listening on port 1234'; sleep 0.2; exit 3");
  ASSERT_NE(p, nullptr);
  absl::StatusOr<std::string> line = p->WaitForLogRegex("listening on port [0-9]+", absl::Seconds(10));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line, "server listening on port 1234");
  absl::StatusOr<std::string> never = p->WaitForLog("never printed", absl::Seconds(10));
  EXPECT_EQ(never.status().code(), absl::StatusCode::kFailedPrecondition) << never.status();
  EXPECT_TRUE(absl::StrContains(never.status().message(), "exited with 3")) << never.status();
  EXPECT_TRUE(absl::StrContains(never.status().message(), "listening on port 1234")) << never.status();
}

TEST(ProcessHarnessTest, WaitForLogTimesOut) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto p = StartShell(*dir, "exec sleep 30");
  ASSERT_NE(p, nullptr);
  absl::StatusOr<std::string> line = p->WaitForLog("ready", absl::Milliseconds(200));
  EXPECT_EQ(line.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(ProcessHarnessTest, SigkillIsReal) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto p = StartShell(*dir, "trap '' TERM; exec sleep 30");
  ASSERT_NE(p, nullptr);
  pid_t pid = p->pid();
  EXPECT_TRUE(PidAlive(pid));
  ASSERT_TRUE(p->Signal(SIGKILL).ok());
  absl::StatusOr<int> status = p->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  EXPECT_FALSE(PidAlive(pid));
}

TEST(ProcessHarnessTest, StopEscalatesToSigkillAfterTheGracePeriod) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  // A shell that ignores SIGTERM.
  auto stubborn = StartShell(*dir, "trap '' TERM; echo armed; while true; do sleep 0.05; done", "stubborn");
  ASSERT_NE(stubborn, nullptr);
  ASSERT_TRUE(stubborn->WaitForLog("armed", absl::Seconds(10)).ok());
  absl::StatusOr<int> status = stubborn->Stop(absl::Milliseconds(300));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  // One that exits on SIGTERM.
  auto polite = StartShell(*dir, "exec sleep 30", "polite");
  ASSERT_NE(polite, nullptr);
  status = polite->Stop(absl::Seconds(10));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
  EXPECT_EQ(polite->Stop().value(), *status);  // idempotent
  EXPECT_FALSE(PidAlive(polite->pid()));
}

TEST(ProcessHarnessTest, DestructorStopsTheProcess) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  pid_t pid;
  {
    auto p = StartShell(*dir, "exec sleep 30");
    ASSERT_NE(p, nullptr);
    pid = p->pid();
    ASSERT_TRUE(PidAlive(pid));
  }
  EXPECT_FALSE(PidAlive(pid));
}

TEST(ProcessHarnessTest, ReportsABinaryThatCannotRun) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<std::unique_ptr<Process>> p =
      Process::Start({.binary = "/nonexistent/pcp-shepherd", .log_path = dir->path() + "/x.log"});
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "/nonexistent/pcp-shepherd")) << p.status();
}

TEST(ProcessHarnessTest, PicksDistinctFreePortsAndWaitsForThem) {
  int a = PickFreePort();
  int b = PickFreePort();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(WaitForPort(a, absl::Milliseconds(100)).code(), absl::StatusCode::kDeadlineExceeded);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(a));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  EXPECT_TRUE(WaitForPort(a, absl::Seconds(5)).ok());
  close(fd);
}

TEST(ProcessHarnessTest, PidAliveSeesGrandchildren) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  // The shell starts a grandchild and reports its PID; killing the shell leaves it running.
  auto p = StartShell(*dir, "sleep 30 & echo \"child $!\"; wait");
  ASSERT_NE(p, nullptr);
  absl::StatusOr<std::string> line = p->WaitForLogRegex("^child [0-9]+$", absl::Seconds(10));
  ASSERT_TRUE(line.ok()) << line.status();
  pid_t grandchild = std::stoi(line->substr(6));
  EXPECT_TRUE(PidAlive(grandchild));
  EXPECT_EQ(ChildrenOf(p->pid()), std::vector<pid_t>{grandchild});
  ASSERT_TRUE(p->Signal(SIGKILL).ok());
  ASSERT_TRUE(p->Wait(absl::Seconds(10)).ok());
  EXPECT_TRUE(PidAlive(grandchild));  // an orphan: exactly what the cluster tests look for
  kill(grandchild, SIGKILL);
  EXPECT_TRUE(WaitForPidGone(grandchild, absl::Seconds(10)).ok());
}

}  // namespace
}  // namespace pcp::testing
