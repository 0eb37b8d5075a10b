// One shepherd per port and per state directory, with real pcp-shepherd processes: a second
// one on the same port, or on the same state dir, exits at start with an error that names
// the port or the first one's pid, and the first one goes on serving alone.
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shepherd_fixture.h"

namespace pcp::testing {
namespace {

using ::testing::HasSubstr;

class SingleInstanceTest : public ShepherdOnlyTest {
 protected:
  // Starts a second pcp-shepherd and waits for it to exit; returns its log.
  std::string SecondShepherdFails(const std::string& listen, const std::string& state_dir, const std::string& name) {
    absl::StatusOr<std::unique_ptr<Process>> second =
        Process::Start({.binary = PCP_SHEPHERD_BINARY,
                        .args = {"--listen=" + listen, "--state_dir=" + state_dir, "--metrics_listen="},
                        .log_path = absl::StrCat(cluster_->log_dir(), "/", name, ".log")});
    EXPECT_TRUE(second.ok()) << second.status();
    if (!second.ok()) return "";
    absl::StatusOr<int> status = (*second)->Wait(absl::Seconds(60));
    EXPECT_TRUE(status.ok()) << "the second shepherd is still running: " << (*second)->LogTail();
    if (status.ok()) {
      EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << DescribeWaitStatus(*status);
    }
    const std::string log = (*second)->Log();
    EXPECT_THAT(log, ::testing::Not(HasSubstr("listening on"))) << log;
    return log;
  }

  // The first shepherd still answers, with its own pid in charge of the port.
  void FirstStillServes() {
    ASSERT_TRUE(cluster_->shepherd()->Running()) << cluster_->Logs();
    absl::StatusOr<CommandResult> jobs = cluster_->Pcpctl({"jobs"});
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    EXPECT_EQ(jobs->exit_code, 0) << jobs->output;
  }
};

TEST_F(SingleInstanceTest, ASecondShepherdOnTheSamePortExitsNamingThePort) {
  // gRPC would share the port (SO_REUSEPORT) and the kernel would split connections between
  // the two; without sharing, the bind fails.
  const std::string log = SecondShepherdFails(cluster_->admin_target(), dir_->path() + "/other-state", "second-port");
  EXPECT_THAT(log, HasSubstr(absl::StrCat("cannot listen on ", cluster_->admin_target()))) << log;
  FirstStillServes();
}

TEST_F(SingleInstanceTest, ASecondShepherdOnTheSameStateDirExitsNamingTheFirstPid) {
  const std::string log = SecondShepherdFails("127.0.0.1:0", cluster_->state_dir(), "second-state");
  EXPECT_THAT(log, HasSubstr(absl::StrCat("state_dir '", cluster_->state_dir(), "' is in use by process ",
                                          cluster_->shepherd()->pid())))
      << log;
  FirstStillServes();

  // The lock goes with its holder, even on SIGKILL: a restart on the same state works.
  ASSERT_TRUE(cluster_->shepherd()->Signal(SIGKILL).ok());
  ASSERT_TRUE(cluster_->shepherd()->Wait(absl::Seconds(30)).ok());
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  FirstStillServes();
}

}  // namespace
}  // namespace pcp::testing
