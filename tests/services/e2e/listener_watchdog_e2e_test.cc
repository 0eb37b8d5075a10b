// Descriptor exhaustion against a real pcp-shepherd (issue 31): its open-file limit is
// lowered to 128 (prlimit(2) on the running process, as `ulimit -n 128` would), idle TCP
// connections are opened to its port on loopback until gRPC logs "Failed accept4: Too many
// open files", then closed. gRPC 1.51's listener never accepts again after that; the
// listener watchdog (services/shepherd/src/listener_watchdog.h) notices within its probes,
// the shepherd exits 1, and a restarted one serves a new connection (pcpctl: a new process).
// Without the watchdog the same flood leaves a shepherd that runs but answers no new
// connection, which is the bug this guards against.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kShepherdOpenFiles = 128;
constexpr int kMaxConnections = 400;

class ListenerWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TempDir> dir = TempDir::Create();
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
    cluster_ = std::make_unique<ClusterHarness>(dir_->path());
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    if (cluster_ != nullptr) EXPECT_TRUE(cluster_->StopAll().ok()) << cluster_->Logs();
  }

  int Port() const {
    const std::string& t = cluster_->admin_target();
    int port = 0;
    EXPECT_TRUE(absl::SimpleAtoi(t.substr(t.rfind(':') + 1), &port)) << t;
    return port;
  }

  // Lowers the running shepherd's limit, opens idle connections until gRPC's accept fails
  // (or kMaxConnections), then closes them all. Returns how many were open.
  int Flood() {
    const pid_t pid = cluster_->shepherd()->pid();
    const rlimit low{.rlim_cur = kShepherdOpenFiles, .rlim_max = kShepherdOpenFiles};
    EXPECT_EQ(prlimit(pid, RLIMIT_NOFILE, &low, nullptr), 0) << "prlimit: " << errno;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(Port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int opened = 0;
    while (opened < kMaxConnections) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      fds_.push_back(fd);
      if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) break;
      ++opened;
      if (opened % 20 == 0) {
        absl::SleepFor(absl::Milliseconds(50));  // let the shepherd accept what is queued
        if (cluster_->shepherd()->Log().find("Failed accept4") != std::string::npos) break;
      }
    }
    absl::SleepFor(absl::Milliseconds(200));
    for (int fd : fds_) close(fd);
    fds_.clear();
    return opened;
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ClusterHarness> cluster_;
  std::vector<int> fds_;
};

TEST_F(ListenerWatchdogTest, AWedgedListenerEndsTheShepherdWithExit1AndARestartServes) {
  cluster_->SetShepherdFlags({"--listener_probe_interval_ms=300", "--listener_probe_failures=3"});
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  EXPECT_THAT(cluster_->shepherd()->Log(), HasSubstr("open files: "));
  const absl::Time start = absl::Now();
  const int opened = Flood();
  std::printf("opened %d idle connections at a limit of %d open files\n", opened, kShepherdOpenFiles);
  ASSERT_THAT(cluster_->shepherd()->Log(), HasSubstr("Failed accept4: Too many open files")) << cluster_->Logs();

  absl::StatusOr<int> status = cluster_->shepherd()->Wait(absl::Seconds(15));
  ASSERT_TRUE(status.ok()) << "the wedged shepherd still runs: " << cluster_->Logs();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << DescribeWaitStatus(*status);
  std::printf("the shepherd exited %.1f s after the flood began\n", absl::ToDoubleSeconds(absl::Now() - start));
  EXPECT_THAT(cluster_->shepherd()->Log(), HasSubstr("listener watchdog: the listener on 127.0.0.1:"));

  // What systemd's Restart=on-failure does: a new process on the same port and state.
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  absl::StatusOr<CommandResult> result = cluster_->Pcpctl({"cluster", "--timeout=5"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0) << result->output;
}

// The bug the watchdog is for, shown with it off: the process runs on, but no new
// connection is served. Should a later gRPC accept again here, this test says so.
TEST_F(ListenerWatchdogTest, WithoutTheWatchdogTheFloodLeavesAShepherdThatAcceptsNothing) {
  cluster_->SetShepherdFlags({"--listener_probe_interval_ms=0"});
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  Flood();
  ASSERT_THAT(cluster_->shepherd()->Log(), HasSubstr("Failed accept4: Too many open files")) << cluster_->Logs();
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(cluster_->shepherd()->Running());
  absl::StatusOr<CommandResult> result = cluster_->Pcpctl({"cluster", "--timeout=2"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->exit_code, 0) << "a new connection was served after the flood: gRPC no longer wedges; "
                                  << result->output;
  std::printf("pcpctl after the flood, without the watchdog: %s\n", result->output.c_str());
}

}  // namespace
}  // namespace pcp::testing
