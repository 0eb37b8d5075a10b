// WaitForTermination is process-wide and ends once, so each case runs in a child process
// of its own (a death test) and reports what it saw through its exit code and stderr.
#include "pcp/base/termination_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace pcp {
namespace {

[[noreturn]] void Report(const std::string& why) {
  std::fprintf(stderr, "why=%s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(0);
}

TEST(TerminationSignalDeathTest, SigtermEndsTheWait) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!InstallTerminationHandler().ok()) std::_Exit(3);
        std::thread sender([] { kill(getpid(), SIGTERM); });
        const std::string why = WaitForTermination();
        sender.join();
        Report(why);
      },
      ::testing::ExitedWithCode(0), "why=SIGTERM");
}

// The reason the mechanism is a handler: a thread that a library started before main()
// (OpenBLAS does) has the signals unblocked, and the signal must not kill the process there.
TEST(TerminationSignalDeathTest, SignalToAThreadStartedBeforeInstallingIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::atomic<bool> done{false};
        std::thread early([&] {
          while (!done.load()) usleep(1000);
        });
        if (!InstallTerminationHandler().ok()) std::_Exit(3);
        pthread_kill(early.native_handle(), SIGINT);
        const std::string why = WaitForTermination();
        done = true;
        early.join();
        Report(why);
      },
      ::testing::ExitedWithCode(0), "why=SIGINT");
}

TEST(TerminationSignalDeathTest, RequestWakesEveryWaiterAndTheFirstReasonWins) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!InstallTerminationHandler().ok()) std::_Exit(3);
        std::string seen[2];
        std::thread waiters[2];
        for (int i = 0; i < 2; ++i) waiters[i] = std::thread([&, i] { seen[i] = WaitForTermination(); });
        RequestTermination("shutdown command");
        for (std::thread& t : waiters) t.join();
        kill(getpid(), SIGTERM);  // later: recorded, but the reason stays
        RequestTermination("another reason");
        if (seen[0] != "shutdown command" || seen[1] != seen[0]) std::_Exit(4);
        Report(WaitForTermination());
      },
      ::testing::ExitedWithCode(0), "why=shutdown command");
}

}  // namespace
}  // namespace pcp
