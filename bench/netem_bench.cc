// The emulated link (libs/netem): achieved throughput each way and round-trip time through
// the relay, against what was configured, for 10 Mbit/s, 100 Mbit/s and 1 Gbit/s with and
// without a 50 ms RTT. Figures only, no pass/fail.
//
//   build/bench/pcp_netem_bench [--seconds=1]
//
// Each way: rate × seconds bytes echoed by a loopback server through a relay that shapes that
// direction only (the other is only delayed), after one ping-pong (past the emulated
// handshake); the throughput is bytes / (elapsed − RTT), since the last byte spends one RTT
// going there and back. RTT: the median of 9 small ping-pongs on an open connection.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "pcp/netem/emulated_link.h"
#include "pcp/netem/loopback_peer.h"
#include "pcp/netem/relay.h"

ABSL_FLAG(double, seconds, 1.0, "how long each transfer takes at the configured rate");

namespace pcp::netem {
namespace {

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::unique_ptr<Relay> MakeRelay(const std::string& target, const LinkShape& up, const LinkShape& down) {
  absl::StatusOr<std::unique_ptr<Relay>> relay = Relay::Create({.target = target, .up = up, .down = down});
  if (!relay.ok()) {
    std::fprintf(stderr, "relay: %s\n", relay.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(relay);
}

// Seconds to echo `payload` (written and read at once), or -1. Starts after one ping-pong.
double Echo(const std::string& address, const std::string& payload) {
  const int fd = ConnectTo(address);
  if (fd < 0 || !SendAll(fd, "x", 1) || RecvExactly(fd, 1) != "x") return -1;
  const Clock::time_point start = Clock::now();
  std::thread writer([&] {
    SendAll(fd, payload.data(), payload.size());
    shutdown(fd, SHUT_WR);
  });
  std::string back;
  const bool ok = RecvToEof(fd, &back) && back == payload;
  writer.join();
  const double s = Since(start);
  close(fd);
  return ok ? s : -1;
}

double MedianRttMs(const std::string& address) {
  const int fd = ConnectTo(address);
  if (fd < 0) return -1;
  std::vector<double> ms;
  for (int i = 0; i < 10; ++i) {
    const Clock::time_point start = Clock::now();
    if (!SendAll(fd, "ping", 4) || RecvExactly(fd, 4) != "ping") break;
    if (i > 0) ms.push_back(1000 * Since(start));  // the first one includes the handshake
  }
  close(fd);
  if (ms.empty()) return -1;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

void Run() {
  std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
  if (echo == nullptr) {
    std::fprintf(stderr, "no loopback server\n");
    std::exit(1);
  }
  std::printf("netem relay on loopback (%u cores, load average %s)\n", std::thread::hardware_concurrency(),
              LoadAverage().c_str());
  std::printf("%-12s %-8s %-12s %-22s %-22s %s\n", "link", "RTT", "bytes", "up Mbit/s (% of set)",
              "down Mbit/s (% of set)", "RTT measured");
  for (double mbit : {10.0, 100.0, 1000.0}) {
    for (double rtt_ms : {0.0, 50.0}) {
      const EmulatedLink link{.up_mbit = mbit, .down_mbit = mbit, .rtt_ms = rtt_ms};
      const RelayOptions shaped = ToRelayOptions(link, "");
      const auto bytes = static_cast<size_t>(shaped.up.rate_bytes_per_s * absl::GetFlag(FLAGS_seconds));
      const std::string payload = RandomBytes(bytes, 1);
      const double rtt_s = rtt_ms / 1000;

      // One direction shaped at a time: the other only delayed (its half of the RTT).
      std::unique_ptr<Relay> up = MakeRelay(echo->address(), shaped.up, {.delay = shaped.down.delay});
      const double up_s = Echo(up->address(), payload);
      std::unique_ptr<Relay> down = MakeRelay(echo->address(), {.delay = shaped.up.delay}, shaped.down);
      const double down_s = Echo(down->address(), payload);
      std::unique_ptr<Relay> both = MakeRelay(echo->address(), shaped.up, shaped.down);
      const double rtt_measured = MedianRttMs(both->address());

      const auto rate = [&](double s) { return s > 0 ? bytes * 8 / 1e6 / std::max(s - rtt_s, 1e-9) : -1.0; };
      const double up_mbit = rate(up_s), down_mbit = rate(down_s);
      std::printf("%-12s %-8s %-12zu %8.2f (%5.1f%%)      %8.2f (%5.1f%%)      %.1f ms\n",
                  (mbit >= 1000 ? std::to_string(static_cast<int>(mbit / 1000)) + " Gbit/s"
                                : std::to_string(static_cast<int>(mbit)) + " Mbit/s")
                      .c_str(),
                  (std::to_string(static_cast<int>(rtt_ms)) + " ms").c_str(), bytes, up_mbit, 100 * up_mbit / mbit,
                  down_mbit, 100 * down_mbit / mbit, rtt_measured);
    }
  }
}

}  // namespace
}  // namespace pcp::netem

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  pcp::netem::Run();
  return 0;
}
