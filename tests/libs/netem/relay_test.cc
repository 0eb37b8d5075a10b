// The relay over real loopback sockets: bytes intact both ways, concurrent connections,
// half-close, close and reset propagation, stopping with connections open, and lower bounds
// on time for rate and RTT (never upper bounds: a loaded machine may always be slower).
#include "pcp/netem/relay.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/netem/loopback_peer.h"

namespace pcp::netem {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<Relay> MakeRelay(const std::string& target, LinkShape up = {}, LinkShape down = {}) {
  absl::StatusOr<std::unique_ptr<Relay>> relay = Relay::Create({.target = target, .up = up, .down = down});
  EXPECT_TRUE(relay.ok()) << relay.status();
  return relay.ok() ? *std::move(relay) : nullptr;
}

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Sends `payload` through `address` to an echo server (writing and reading at once) and
// returns what came back before EOF.
std::string EchoThrough(const std::string& address, const std::string& payload) {
  const int fd = ConnectTo(address);
  EXPECT_GE(fd, 0);
  if (fd < 0) return "";
  std::thread writer([&] {
    EXPECT_TRUE(SendAll(fd, payload.data(), payload.size()));
    shutdown(fd, SHUT_WR);
  });
  std::string back;
  EXPECT_TRUE(RecvToEof(fd, &back));
  writer.join();
  close(fd);
  return back;
}

TEST(RelayTest, RefusesTargetsThatAreNotHostPort) {
  for (const char* bad : {"", "localhost", "host:", ":80", "host:0", "host:65536", "host:http", "::1:80"}) {
    absl::StatusOr<std::unique_ptr<Relay>> relay = Relay::Create({.target = bad});
    EXPECT_EQ(relay.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(Relay::Create({.target = "[::1]:80"}).ok());
  EXPECT_TRUE(Relay::Create({.target = "localhost:80"}).ok());
}

TEST(RelayTest, BytesPassIntactBothWays) {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  ASSERT_NE(echo, nullptr);
  std::unique_ptr<Relay> plain = MakeRelay(echo->address());
  // Shaped fast enough to stay quick, slow enough that the delay line and bucket both work.
  const LinkShape shaped{.rate_bytes_per_s = 50e6, .delay = milliseconds(5)};
  std::unique_ptr<Relay> slow = MakeRelay(echo->address(), shaped, shaped);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(slow, nullptr);
  const size_t sizes[] = {1, 1 << 20, 8 << 20, (3 << 20) + 12345};
  uint32_t seed = 1;
  for (Relay* relay : {plain.get(), slow.get()}) {
    for (size_t n : sizes) {
      const std::string payload = RandomBytes(n, seed++);
      EXPECT_TRUE(EchoThrough(relay->address(), payload) == payload) << n << " bytes via " << relay->address();
    }
  }
  EXPECT_EQ(slow->stats().bytes_up, slow->stats().bytes_down);
  EXPECT_EQ(slow->stats().connections, 4u);
}

TEST(RelayTest, ConcurrentConnections) {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  ASSERT_NE(echo, nullptr);
  const LinkShape shaped{.rate_bytes_per_s = 100e6, .delay = milliseconds(2)};
  std::unique_ptr<Relay> relay = MakeRelay(echo->address(), shaped, shaped);
  ASSERT_NE(relay, nullptr);
  constexpr int kConnections = 8;
  std::vector<std::thread> clients;
  std::vector<int> intact(kConnections, 0);
  for (int i = 0; i < kConnections; ++i) {
    clients.emplace_back([&, i] {
      const std::string payload = RandomBytes(256 * 1024 + 1000 * i, 100 + i);
      intact[i] = EchoThrough(relay->address(), payload) == payload;
    });
  }
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kConnections; ++i) EXPECT_TRUE(intact[i]) << "connection " << i;
  EXPECT_EQ(relay->stats().connections, static_cast<uint64_t>(kConnections));
}

TEST(RelayTest, HalfCloseReachesTheServerAndRepliesStillFlow) {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  ASSERT_NE(echo, nullptr);
  std::unique_ptr<Relay> relay = MakeRelay(echo->address(), {.delay = milliseconds(10)}, {.delay = milliseconds(10)});
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "abc", 3));
  shutdown(fd, SHUT_WR);  // the echo server sees EOF only through the relay, then ends too
  std::string back;
  EXPECT_TRUE(RecvToEof(fd, &back));
  EXPECT_EQ(back, "abc");
  close(fd);
}

TEST(RelayTest, ServerCloseReachesTheClientAfterItsBytes) {
  std::unique_ptr<PeerServer> greeter = PeerServer::Start(PeerServer::Mode::kGreetAndClose, "hello");
  ASSERT_NE(greeter, nullptr);
  std::unique_ptr<Relay> relay =
      MakeRelay(greeter->address(), {}, {.rate_bytes_per_s = 1e6, .delay = milliseconds(10)});
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());
  ASSERT_GE(fd, 0);
  std::string got;
  EXPECT_TRUE(RecvToEof(fd, &got));
  EXPECT_EQ(got, "hello");
  close(fd);
}

TEST(RelayTest, ResetPropagates) {
  std::unique_ptr<PeerServer> resetter = PeerServer::Start(PeerServer::Mode::kReadThenReset);
  ASSERT_NE(resetter, nullptr);
  std::unique_ptr<Relay> relay = MakeRelay(resetter->address());
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "x", 1));
  std::string got;
  EXPECT_FALSE(RecvToEof(fd, &got));  // ECONNRESET, not a clean EOF
  close(fd);
}

TEST(RelayTest, UnreachableTargetResetsTheClient) {
  std::unique_ptr<Relay> relay = MakeRelay("127.0.0.1:" + std::to_string(UnusedPort()));
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());  // the relay itself accepts
  ASSERT_GE(fd, 0);
  std::string got;
  EXPECT_FALSE(RecvToEof(fd, &got));
  EXPECT_EQ(got, "");
  close(fd);
  EXPECT_EQ(relay->stats().dial_failures, 1u);
}

TEST(RelayTest, StopsWithConnectionsOpenAndLeaksNoDescriptors) {
  const int fds_before = CountOpenFds();
  {
    std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
    ASSERT_NE(echo, nullptr);
    // Slow enough that bytes are still in the relay when it stops.
    const LinkShape slow{.rate_bytes_per_s = 125'000, .delay = milliseconds(20)};
    std::unique_ptr<Relay> relay = MakeRelay(echo->address(), slow, slow);
    ASSERT_NE(relay, nullptr);
    std::vector<int> clients;
    const std::string payload = RandomBytes(200'000, 7);
    for (int i = 0; i < 4; ++i) {
      clients.push_back(ConnectTo(relay->address()));
      ASSERT_GE(clients.back(), 0);
      ASSERT_TRUE(SendAll(clients.back(), payload.data(), payload.size()));
    }
    std::this_thread::sleep_for(milliseconds(100));  // connections established and pumping
    relay.reset();                                   // must return: closes and joins everything
    for (int fd : clients) {
      std::string rest;
      RecvToEof(fd, &rest);  // ends (EOF or reset) rather than hanging
      EXPECT_LT(rest.size(), payload.size());
      close(fd);
    }
  }
  EXPECT_EQ(CountOpenFds(), fds_before);
}

TEST(RelayTest, UpRateIsAtMostTheConfiguredRate) {
  std::unique_ptr<PeerServer> sink = PeerServer::Start(PeerServer::Mode::kSinkThenByte);
  ASSERT_NE(sink, nullptr);
  std::unique_ptr<Relay> relay = MakeRelay(sink->address(), {.rate_bytes_per_s = 2e6});  // 16 Mbit/s
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());
  ASSERT_GE(fd, 0);
  const std::string payload = RandomBytes(2'000'000, 3);
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(SendAll(fd, payload.data(), payload.size()));
  shutdown(fd, SHUT_WR);
  EXPECT_EQ(RecvExactly(fd, 1), "k");
  EXPECT_GE(SecondsSince(start), 0.9);  // (2 MB − a 16 KiB burst) / 2 MB/s = 0.99 s
  EXPECT_EQ(sink->bytes_received(), payload.size());
  close(fd);
}

TEST(RelayTest, DownRateIsAtMostTheConfiguredRate) {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  ASSERT_NE(echo, nullptr);
  std::unique_ptr<Relay> relay = MakeRelay(echo->address(), {}, {.rate_bytes_per_s = 2e6});
  ASSERT_NE(relay, nullptr);
  const std::string payload = RandomBytes(2'000'000, 4);
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(EchoThrough(relay->address(), payload) == payload);
  EXPECT_GE(SecondsSince(start), 0.9);
}

TEST(RelayTest, RoundTripTakesAtLeastTheRtt) {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  ASSERT_NE(echo, nullptr);
  std::unique_ptr<Relay> relay = MakeRelay(echo->address(), {.delay = milliseconds(50)}, {.delay = milliseconds(50)});
  ASSERT_NE(relay, nullptr);
  const int fd = ConnectTo(relay->address());
  ASSERT_GE(fd, 0);
  // The first exchange also waits out the emulated handshake (one more RTT).
  Clock::time_point start = Clock::now();
  ASSERT_TRUE(SendAll(fd, "ping", 4));
  EXPECT_EQ(RecvExactly(fd, 4), "ping");
  EXPECT_GE(SecondsSince(start), 0.180);
  for (int i = 0; i < 2; ++i) {
    start = Clock::now();
    ASSERT_TRUE(SendAll(fd, "ping", 4));
    EXPECT_EQ(RecvExactly(fd, 4), "ping");
    EXPECT_GE(SecondsSince(start), 0.090);
  }
  close(fd);
}

}  // namespace
}  // namespace pcp::netem
