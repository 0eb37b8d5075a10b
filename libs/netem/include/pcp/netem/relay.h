// An in-process TCP relay that makes loopback behave like a slow, distant link: it listens
// on 127.0.0.1 (a free port), and for each connection it accepts dials the real target and
// copies bytes both ways, each direction through its own Shaper (pcp/netem/shaper.h: a
// one-way delay, then a token bucket).
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Relay> relay, Relay::Create({
//       .target = "shepherd.example.net:7070",
//       .up = {.rate_bytes_per_s = 1.25e6, .delay = std::chrono::milliseconds(25)},
//       .down = {.rate_bytes_per_s = 1.25e6, .delay = std::chrono::milliseconds(25)}}));
//   Dial(relay->address());   // "127.0.0.1:PORT": behaves like a 10 Mbit/s link, 50 ms RTT
//   relay.reset();            // closes every connection, joins every thread
//
// What passes: the byte stream, exact and in order, both ways; a half-close (FIN) after the
// bytes before it, delayed like them; a reset or error on either side resets both. The
// connection to the relay is accepted at once, and the relay starts copying one RTT (the
// two delays) after it has dialed the target, as a TCP handshake over the link would.
// Shaping the byte stream (not packets) leaves gRPC's HTTP/2 flow control and TLS to behave
// as on a real slow link; TLS stays end to end (the relay only sees ciphertext).
// Not emulated: packet loss, reordering, jitter, the link's MTU, TCP's slow start on the
// emulated path.
//
// Threads: one accepting, one per open connection (it handles both directions with ppoll,
// so reads go on while earlier bytes wait in the delay line). The destructor stops them all
// and closes every socket. The target is resolved (getaddrinfo) on every connection.
#ifndef PCP_NETEM_RELAY_H_
#define PCP_NETEM_RELAY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "pcp/netem/shaper.h"

namespace pcp::netem {

struct RelayOptions {
  std::string target;  // HOST:PORT or [V6]:PORT the relay dials
  LinkShape up;        // client → target
  LinkShape down;      // target → client
  Clock::duration dial_timeout = std::chrono::seconds(10);
};

// Counters since Create; safe to read from any thread.
struct RelayStats {
  uint64_t connections = 0;    // accepted
  uint64_t dial_failures = 0;  // the target did not answer (the client's connection is reset)
  uint64_t bytes_up = 0;       // written to the target
  uint64_t bytes_down = 0;     // written to clients
};

class Relay {
 public:
  // InvalidArgument for a target that is not HOST:PORT; Internal when no loopback port can
  // be bound. The relay serves from return until destruction.
  static absl::StatusOr<std::unique_ptr<Relay>> Create(RelayOptions options);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  const RelayOptions& options() const { return options_; }
  RelayStats stats() const;

 private:
  class Connection;
  struct Counters {
    std::atomic<uint64_t> connections{0}, dial_failures{0}, bytes_up{0}, bytes_down{0};
  };

  Relay(RelayOptions options, std::string host, std::string port, int listen_fd, int wake_fd, std::string address);
  void AcceptLoop();

  const RelayOptions options_;
  const std::string host_, port_;  // the target, split
  const int listen_fd_;
  const int wake_fd_;  // an eventfd, readable once the relay stops
  const std::string address_;
  Counters counters_;
  std::mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_;  // guarded by mu_ (the accept thread's)
  std::thread accept_thread_;
};

}  // namespace pcp::netem

#endif  // PCP_NETEM_RELAY_H_
