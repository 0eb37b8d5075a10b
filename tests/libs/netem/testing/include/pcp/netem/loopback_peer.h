// Test-only loopback TCP peers for the relay's tests and bench/netem_bench.cc: a server that
// echoes, sinks or greets, and blocking client helpers. Failures are return values; the
// callers assert.
//
//   std::unique_ptr<PeerServer> echo = PeerServer::Start(PeerServer::Mode::kEcho);
//   int fd = ConnectTo(echo->address());
//   SendAll(fd, "ping", 4);
//   std::string got = RecvExactly(fd, 4);   // "ping"
//   shutdown(fd, SHUT_WR);                  // the echo server answers EOF with EOF
//   close(fd);
#ifndef PCP_NETEM_LOOPBACK_PEER_H_
#define PCP_NETEM_LOOPBACK_PEER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pcp::netem {

// A blocking, connected TCP socket (TCP_NODELAY) to HOST:PORT (IPv4), or -1.
int ConnectTo(const std::string& address);
// Sends all `n` bytes; false on an error.
bool SendAll(int fd, const void* data, size_t n);
// Reads until `n` bytes, EOF or an error; returns what it read.
std::string RecvExactly(int fd, size_t n);
// Reads until EOF; false on an error (a reset).
bool RecvToEof(int fd, std::string* out);
// Random bytes, reproducible from `seed`.
std::string RandomBytes(size_t n, uint32_t seed);
// Open file descriptors of this process (/proc/self/fd).
int CountOpenFds();
// A loopback port nothing listens on (bound, then closed).
int UnusedPort();

class PeerServer {
 public:
  enum class Mode {
    kEcho,           // sends back every byte; EOF → shutdown(SHUT_WR), close
    kSinkThenByte,   // reads to EOF, then sends one byte ('k') and closes
    kGreetAndClose,  // sends the greeting, then closes
    kReadThenReset,  // reads one byte, then closes with a reset (RST)
  };
  static std::unique_ptr<PeerServer> Start(Mode mode, std::string greeting = "");
  ~PeerServer();  // unblocks and joins every connection

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  PeerServer(Mode mode, std::string greeting, int listen_fd, std::string address);
  void AcceptLoop();
  void Serve(int fd);

  const Mode mode_;
  const std::string greeting_;
  const int listen_fd_;
  const std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> bytes_received_{0};
  std::mutex mu_;
  std::vector<int> open_fds_;         // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread accept_thread_;
};

}  // namespace pcp::netem

#endif  // PCP_NETEM_LOOPBACK_PEER_H_
