// ProcessManager against a real child process (pcp_test_child): real signals, real exits.
#include "pcp/supervisor/process_manager.h"

#include <signal.h>

#include <future>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "pcp/supervisor_testing/process_testing.h"

namespace pcp::supervisor {
namespace {

using supervisor_testing::Field;
using supervisor_testing::kTestChildPath;
using supervisor_testing::LogLines;
using supervisor_testing::MakeTempDir;
using supervisor_testing::ProcessAlive;
using supervisor_testing::WaitUntil;

struct Ack {
  absl::Status status;
  std::string message;
};

// A Done callback whose result the test can wait for.
struct AckWaiter {
  std::promise<Ack> promise;
  std::future<Ack> future = promise.get_future();
  ProcessManager::Done Callback() {
    return [this](absl::Status s, std::string m) { promise.set_value({s, m}); };
  }
  Ack Get() {
    EXPECT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    return future.get();
  }
};

class ProcessManagerTest : public ::testing::Test {
 protected:
  ProcessManagerOptions Options(std::vector<std::string> extra_args = {}) {
    ProcessManagerOptions options;
    options.spawn.path = kTestChildPath;
    options.spawn.args = {absl::StrCat("--log=", log_)};
    for (auto& a : extra_args) options.spawn.args.push_back(a);
    options.backoff = {.initial = absl::Milliseconds(100), .multiplier = 2, .max = absl::Seconds(5), .jitter = 0};
    options.healthy_after = absl::Seconds(30);
    options.grace = absl::Seconds(5);
    return options;
  }

  // Waits for a running worker other than `previous_pid`.
  WorkerStatus WaitRunningNot(ProcessManager& m, pid_t previous_pid) {
    WorkerStatus s;
    EXPECT_TRUE(m.WaitFor(
        [&](const WorkerStatus& st) {
          return st.state == WorkerState::kRunning && st.pid != 0 && st.pid != previous_pid;
        },
        absl::Seconds(10), &s))
        << "state " << WorkerStateName(s.state);
    // The stand-in logs "start" once its SIGTERM handler is in place.
    EXPECT_TRUE(WaitUntil(
        [&] {
          for (const std::string& line : LogLines(log_, "start ")) {
            if (Field(line, 1) == std::to_string(s.pid)) return true;
          }
          return false;
        },
        absl::Seconds(5)));
    return s;
  }

  std::string dir_ = MakeTempDir("process_manager");
  std::string log_ = dir_ + "/child.log";
};

TEST_F(ProcessManagerTest, StartsTheWorkerWithItsIncarnation) {
  auto manager = ProcessManager::Start(Options({"--shepherd=x:1"}));
  ASSERT_TRUE(manager.ok()) << manager.status();
  WorkerStatus s = WaitRunningNot(**manager, 0);
  EXPECT_EQ(s.incarnation, 1u);
  EXPECT_EQ(s.restarts, 0u);
  EXPECT_FALSE(s.exited_before);
  ASSERT_TRUE(WaitUntil([&] { return LogLines(log_, "start ").size() == 1; }, absl::Seconds(5)));
  std::string line = LogLines(log_, "start ")[0];
  EXPECT_EQ(Field(line, 1), std::to_string(s.pid));
  EXPECT_EQ(Field(line, 2), "1");
  EXPECT_NE(line.find("--shepherd=x:1"), std::string::npos) << line;
}

TEST_F(ProcessManagerTest, SigkilledWorkerIsRestartedWithGrowingBackoff) {
  auto manager = ProcessManager::Start(Options());
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  WorkerStatus s = WaitRunningNot(m, 0);
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = s.pid;
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    WorkerStatus backoff;
    ASSERT_TRUE(m.WaitFor([](const WorkerStatus& st) { return st.state == WorkerState::kBackoff; }, absl::Seconds(5),
                          &backoff));
    EXPECT_EQ(backoff.pid, 0);
    EXPECT_TRUE(backoff.exited_before);
    EXPECT_EQ(backoff.last_exit.signal, SIGKILL);
    EXPECT_EQ(backoff.last_exit.exit_code, -1);
    EXPECT_GT(backoff.backoff_left, absl::ZeroDuration());
    delays.push_back(backoff.backoff_delay);
    s = WaitRunningNot(m, pid);
    EXPECT_FALSE(ProcessAlive(pid));
    EXPECT_EQ(s.incarnation, static_cast<uint64_t>(i + 2));
    EXPECT_EQ(s.restarts, static_cast<uint32_t>(i + 1));
  }
  EXPECT_EQ(delays,
            (std::vector<absl::Duration>{absl::Milliseconds(100), absl::Milliseconds(200), absl::Milliseconds(400)}));
  std::vector<std::string> starts = LogLines(log_, "start ");
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(Field(starts[3], 2), "4");  // PCP_WORKER_INCARNATION
}

TEST_F(ProcessManagerTest, BackoffResetsAfterAHealthyPeriod) {
  ProcessManagerOptions options = Options();
  options.healthy_after = absl::Milliseconds(600);
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  auto kill_and_get_delay = [&](pid_t pid) {
    EXPECT_EQ(kill(pid, SIGKILL), 0);
    WorkerStatus st;
    EXPECT_TRUE(
        m.WaitFor([](const WorkerStatus& x) { return x.state == WorkerState::kBackoff; }, absl::Seconds(5), &st));
    return st.backoff_delay;
  };
  WorkerStatus s = WaitRunningNot(m, 0);
  EXPECT_EQ(kill_and_get_delay(s.pid), absl::Milliseconds(100));
  s = WaitRunningNot(m, s.pid);
  EXPECT_EQ(kill_and_get_delay(s.pid), absl::Milliseconds(200));
  s = WaitRunningNot(m, s.pid);
  // Now stay up past healthy_after: the next crash backs off from the start again.
  ASSERT_TRUE(m.WaitFor([](const WorkerStatus& x) { return x.uptime > absl::Milliseconds(700); }, absl::Seconds(5)));
  EXPECT_EQ(kill_and_get_delay(s.pid), absl::Milliseconds(100));
}

// Crash loop or progress (process_manager.h): incarnations 1 and 2 die before reporting a
// round, 3 reports one and is killed, 4 dies before reporting. With delays of 100 ms and then
// 1 s, 10 s, ...: 1 and 2 back off and the backoff grows; 3 restarts at once (no BACKOFF at
// all) and resets it, so 4 waits 100 ms again instead of 10 s.
TEST_F(ProcessManagerTest, WorkerThatMadeProgressRestartsAtOnceAndResetsTheBackoff) {
  ProcessManagerOptions options = Options({"--progress_incarnation=3"});
  options.backoff = {.initial = absl::Milliseconds(100), .multiplier = 10, .max = absl::Hours(1), .jitter = 0};
  options.healthy_after = absl::Hours(1);
  // Declared before the manager, which calls the listener until it is destroyed.
  std::mutex mu;
  std::vector<std::pair<uint64_t, WorkerState>> states;  // (incarnation, state) at each change
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  m.SetChangeListener([&] {
    WorkerStatus st = m.Status();
    std::lock_guard<std::mutex> lock(mu);
    states.emplace_back(st.incarnation, st.state);
  });
  auto kill_and_wait_next = [&](const WorkerStatus& s) {
    EXPECT_EQ(kill(s.pid, SIGKILL), 0);
    return WaitRunningNot(m, s.pid);
  };
  auto backoff_seen_after = [&](uint64_t incarnation) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [inc, state] : states) {
      if (inc == incarnation && state == WorkerState::kBackoff) return true;
    }
    return false;
  };

  WorkerStatus s = WaitRunningNot(m, 0);
  EXPECT_EQ(s.progress_reports, 0u);
  s = kill_and_wait_next(s);
  EXPECT_TRUE(backoff_seen_after(1));
  s = kill_and_wait_next(s);  // waits 1 s
  EXPECT_TRUE(backoff_seen_after(2));
  ASSERT_EQ(s.incarnation, 3u);
  WorkerStatus progressed;
  ASSERT_TRUE(m.WaitFor([](const WorkerStatus& x) { return x.progress_reports == 1; }, absl::Seconds(10), &progressed));
  EXPECT_EQ(progressed.pid, s.pid);
  // The child logs "progress" right after its report; let it, before the kill.
  ASSERT_TRUE(WaitUntil([&] { return LogLines(log_, "progress ").size() == 1; }, absl::Seconds(5)));
  s = kill_and_wait_next(s);  // would wait 10 s as a crash loop: WaitRunningNot allows 10 s
  ASSERT_EQ(s.incarnation, 4u);
  EXPECT_FALSE(backoff_seen_after(3)) << "a worker that made progress went through BACKOFF";
  EXPECT_EQ(s.progress_reports, 0u);  // counted per worker process

  ASSERT_EQ(kill(s.pid, SIGKILL), 0);
  WorkerStatus backoff;
  ASSERT_TRUE(
      m.WaitFor([](const WorkerStatus& x) { return x.state == WorkerState::kBackoff; }, absl::Seconds(5), &backoff));
  EXPECT_EQ(backoff.backoff_delay, absl::Milliseconds(100));  // starts over, not 10 s
  EXPECT_EQ(LogLines(log_, "progress ").size(), 1u);
}

// A worker that dies before reporting any round is a crash loop, however often it restarts:
// its backoff keeps growing (here to a delay that outlasts the test).
TEST_F(ProcessManagerTest, WorkerThatNeverReportsProgressBacksOffEveryTime) {
  ProcessManagerOptions options = Options({"--exit_after_ms=0", "--exit_code=1"});
  options.backoff = {.initial = absl::Milliseconds(50), .multiplier = 1000, .max = absl::Hours(1), .jitter = 0};
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  WorkerStatus s;
  ASSERT_TRUE(
      (*manager)->WaitFor([](const WorkerStatus& x) { return x.incarnation == 2 && x.state == WorkerState::kBackoff; },
                          absl::Seconds(10), &s));
  EXPECT_EQ(s.backoff_delay, absl::Seconds(50));
  EXPECT_EQ(s.last_exit.exit_code, 1);
  EXPECT_TRUE(LogLines(log_, "progress ").empty());
}

TEST_F(ProcessManagerTest, ExitCodeIsReportedAndCleanExitsAreRestartedToo) {
  auto manager = ProcessManager::Start(Options({"--exit_after_ms=50", "--exit_code=3"}));
  ASSERT_TRUE(manager.ok()) << manager.status();
  WorkerStatus s;
  ASSERT_TRUE((*manager)->WaitFor([](const WorkerStatus& st) { return st.exited_before && st.incarnation >= 2; },
                                  absl::Seconds(10), &s));
  EXPECT_EQ(s.last_exit.exit_code, 3);
  EXPECT_EQ(s.last_exit.signal, 0);
  manager->reset();

  auto clean = ProcessManager::Start(Options({"--exit_after_ms=50", "--exit_code=0"}));
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_TRUE((*clean)->WaitFor([](const WorkerStatus& st) { return st.exited_before && st.incarnation >= 2; },
                                absl::Seconds(10), &s));
  EXPECT_EQ(s.last_exit.exit_code, 0);
}

TEST_F(ProcessManagerTest, DrainStopsTheWorkerWithSigtermAndKeepsItStopped) {
  ProcessManagerOptions options = Options({"--term_delay_ms=100"});
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  const pid_t pid = WaitRunningNot(m, 0).pid;
  AckWaiter drained;
  m.Drain(absl::ZeroDuration(), drained.Callback());
  Ack ack = drained.Get();
  EXPECT_TRUE(ack.status.ok()) << ack.status;
  EXPECT_NE(ack.message.find("exit code 0"), std::string::npos) << ack.message;
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(LogLines(log_, "sigterm ").size(), 1u);
  WorkerStatus s = m.Status();
  EXPECT_EQ(s.state, WorkerState::kStopped);
  EXPECT_EQ(s.pid, 0);
  // Stays stopped well past the backoff it would otherwise use.
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_EQ(m.Status().state, WorkerState::kStopped);
  EXPECT_EQ(LogLines(log_, "start ").size(), 1u);

  // A second drain of a stopped worker is acknowledged at once.
  AckWaiter again;
  m.Drain(absl::ZeroDuration(), again.Callback());
  EXPECT_TRUE(again.Get().status.ok());

  // RestartWorker brings it back.
  AckWaiter restarted;
  m.Restart(absl::ZeroDuration(), restarted.Callback());
  ack = restarted.Get();
  EXPECT_TRUE(ack.status.ok()) << ack.status;
  s = m.Status();
  EXPECT_EQ(s.state, WorkerState::kRunning);
  EXPECT_NE(s.pid, pid);
  EXPECT_NE(ack.message.find(std::to_string(s.pid)), std::string::npos) << ack.message;
}

TEST_F(ProcessManagerTest, RestartReplacesTheWorkerWithoutBackoff) {
  ProcessManagerOptions options = Options();
  options.backoff.initial = absl::Seconds(30);  // a backoff would fail the test's timeout
  options.backoff.max = absl::Seconds(30);
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  const pid_t pid = WaitRunningNot(m, 0).pid;
  AckWaiter restarted;
  m.Restart(absl::ZeroDuration(), restarted.Callback());
  Ack ack = restarted.Get();
  ASSERT_TRUE(ack.status.ok()) << ack.status;
  WorkerStatus s = m.Status();
  EXPECT_EQ(s.state, WorkerState::kRunning);
  EXPECT_NE(s.pid, pid);
  EXPECT_EQ(s.incarnation, 2u);
  EXPECT_EQ(s.last_exit.exit_code, 0);  // the stand-in exits 0 on SIGTERM
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(LogLines(log_, "sigterm ").size(), 1u);

  // A worker waiting in backoff is started at once too.
  ASSERT_EQ(kill(s.pid, SIGKILL), 0);
  ASSERT_TRUE(m.WaitFor([](const WorkerStatus& x) { return x.state == WorkerState::kBackoff; }, absl::Seconds(5)));
  AckWaiter from_backoff;
  m.Restart(absl::ZeroDuration(), from_backoff.Callback());
  EXPECT_TRUE(from_backoff.Get().status.ok());
  EXPECT_EQ(m.Status().state, WorkerState::kRunning);
}

TEST_F(ProcessManagerTest, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  auto manager = ProcessManager::Start(Options({"--ignore_sigterm"}));
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  const pid_t pid = WaitRunningNot(m, 0).pid;
  const auto start = std::chrono::steady_clock::now();
  AckWaiter drained;
  m.Drain(absl::Milliseconds(300), drained.Callback());
  Ack ack = drained.Get();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(ack.status.ok()) << ack.status;
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_FALSE(ProcessAlive(pid));
  WorkerStatus s = m.Status();
  EXPECT_EQ(s.last_exit.signal, SIGKILL);
  EXPECT_NE(ack.message.find("signal 9"), std::string::npos) << ack.message;
}

TEST_F(ProcessManagerTest, DrainSupersedesAPendingRestart) {
  auto manager = ProcessManager::Start(Options({"--term_delay_ms=300"}));
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  WaitRunningNot(m, 0);
  AckWaiter restarted, drained;
  m.Restart(absl::ZeroDuration(), restarted.Callback());
  m.Drain(absl::ZeroDuration(), drained.Callback());
  EXPECT_EQ(restarted.Get().status.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(drained.Get().status.ok());
  EXPECT_EQ(m.Status().state, WorkerState::kStopped);
}

TEST_F(ProcessManagerTest, ShutdownStopsTheWorkerAndRefusesLaterRequests) {
  auto manager = ProcessManager::Start(Options());
  ASSERT_TRUE(manager.ok()) << manager.status();
  ProcessManager& m = **manager;
  const pid_t pid = WaitRunningNot(m, 0).pid;
  m.Shutdown(absl::Seconds(2));
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(m.Status().state, WorkerState::kStopped);
  AckWaiter refused;
  m.Restart(absl::ZeroDuration(), refused.Callback());
  EXPECT_EQ(refused.Get().status.code(), absl::StatusCode::kFailedPrecondition);
  m.Shutdown(absl::Seconds(2));  // idempotent
}

TEST_F(ProcessManagerTest, DestroyingTheManagerLeavesNoWorkerBehind) {
  pid_t pid;
  {
    ProcessManagerOptions options = Options({"--ignore_sigterm"});
    options.grace = absl::Milliseconds(300);  // the destructor's SIGTERM is ignored
    auto manager = ProcessManager::Start(options);
    ASSERT_TRUE(manager.ok()) << manager.status();
    pid = WaitRunningNot(**manager, 0).pid;
  }
  EXPECT_FALSE(ProcessAlive(pid));
}

TEST_F(ProcessManagerTest, BadOptionsAreClearErrors) {
  ProcessManagerOptions options = Options();
  options.spawn.path = dir_ + "/no-such-worker";
  auto manager = ProcessManager::Start(options);
  ASSERT_EQ(manager.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(manager.status().message().find("no-such-worker"), absl::string_view::npos);
  options = Options();
  options.backoff.multiplier = 0;
  EXPECT_EQ(ProcessManager::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ProcessManagerTest, StartStoppedWaitsForARestart) {
  ProcessManagerOptions options = Options();
  options.start_stopped = true;
  auto manager = ProcessManager::Start(options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ((*manager)->Status().state, WorkerState::kStopped);
  EXPECT_TRUE(LogLines(log_, "start ").empty());
  AckWaiter restarted;
  (*manager)->Restart(absl::ZeroDuration(), restarted.Callback());
  EXPECT_TRUE(restarted.Get().status.ok());
}

}  // namespace
}  // namespace pcp::supervisor
