// The listener watchdog's parts without a shepherd: the probe of the accept path (what it
// uses for a TLS listener) against a socket that accepts and one that never does, the probe
// target for wildcard addresses, and sd_notify's datagram on a socket of our own.
#include "listener_watchdog.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace pcp::shepherd {
namespace {

// A TCP listener on 127.0.0.1 that accepts (and closes) connections only when asked to.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd_); }
  void AcceptOneAndClose() {
    const int c = accept(fd_, nullptr, nullptr);
    if (c >= 0) close(c);
  }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ListenerWatchdogTest, TheAcceptProbeFailsWhenNobodyAccepts) {
  Listener listener;  // the kernel completes the connection; no process accepts it
  const absl::Status s = ProbeListener(listener.target(), /*tls=*/true, absl::Milliseconds(300));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(std::string(s.message()).find("not accepted"), std::string::npos) << s;
}

TEST(ListenerWatchdogTest, TheAcceptProbeSucceedsWhenTheServerAcceptsAndCloses) {
  Listener listener;
  std::thread server([&] { listener.AcceptOneAndClose(); });
  const absl::Status s = ProbeListener(listener.target(), /*tls=*/true, absl::Seconds(5));
  server.join();
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ListenerWatchdogTest, TheProbeFailsWhenNothingListens) {
  std::string target;
  {
    Listener gone;
    target = gone.target();
  }
  EXPECT_FALSE(ProbeListener(target, /*tls=*/true, absl::Milliseconds(300)).ok());
  EXPECT_FALSE(ProbeListener(target, /*tls=*/false, absl::Milliseconds(300)).ok());
}

TEST(ListenerWatchdogTest, WildcardAddressesAreProbedOnLoopback) {
  EXPECT_EQ(ProbeTarget("0.0.0.0", 7070), "127.0.0.1:7070");
  EXPECT_EQ(ProbeTarget("[::]", 7070), "[::1]:7070");
  EXPECT_EQ(ProbeTarget("127.0.0.1", 1), "127.0.0.1:1");
  EXPECT_EQ(ProbeTarget("10.1.2.3", 7070), "10.1.2.3:7070");
}

TEST(ListenerWatchdogTest, AfterTheFailuresOnWedgedRunsOnceWithTheReason) {
  Listener listener;  // never accepts
  std::atomic<int> calls{0};
  std::string why;
  {
    ListenerWatchdog watchdog({.target = listener.target(),
                               .tls = true,
                               .interval = absl::Milliseconds(50),
                               .timeout = absl::Milliseconds(100),
                               .failures = 2},
                              [&](std::string reason) {
                                why = std::move(reason);
                                ++calls;
                              });
    for (int i = 0; i < 100 && !watchdog.wedged(); ++i) absl::SleepFor(absl::Milliseconds(20));
    EXPECT_TRUE(watchdog.wedged());
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_NE(why.find(absl::StrCat("the listener on ", listener.target(), " failed 2 probes in a row")),
            std::string::npos)
      << why;
}

TEST(SdNotifyTest, SendsOneDatagramToNotifySocketAndNothingWithoutIt) {
  unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(SdNotify("READY=1").ok());

  const std::string path = absl::StrCat(::testing::TempDir(), "/notify-", getpid());
  unlink(path.c_str());
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  path.copy(addr.sun_path, path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  EXPECT_TRUE(SdNotify("WATCHDOG=1").ok());
  char buf[64] = {};
  EXPECT_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 10);
  EXPECT_EQ(std::string(buf), "WATCHDOG=1");
  unsetenv("NOTIFY_SOCKET");
  close(fd);
  unlink(path.c_str());

  setenv("WATCHDOG_USEC", "30000000", 1);
  EXPECT_EQ(SystemdWatchdogPeriod(), absl::Seconds(30));
  setenv("WATCHDOG_PID", "1", 1);  // another process's watchdog
  EXPECT_EQ(SystemdWatchdogPeriod(), absl::ZeroDuration());
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
}

}  // namespace
}  // namespace pcp::shepherd
