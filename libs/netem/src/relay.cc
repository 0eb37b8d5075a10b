#include "pcp/netem/relay.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pcp::netem {
namespace {

constexpr size_t kReadChunk = 256 * 1024;
constexpr int kReapIntervalMs = 1000;

absl::Status SplitHostPort(const std::string& target, std::string* host, std::string* port) {
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("relay target '", target, "': ", why, " (expected HOST:PORT)"));
  };
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  *host = target.substr(0, colon);
  *port = target.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  } else if (host->find(':') != std::string::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (host->empty()) return bad("no host");
  int port_number = 0;
  if (!absl::SimpleAtoi(*port, &port_number) || port_number < 1 || port_number > 65535) return bad("bad port");
  return absl::OkStatus();
}

timespec ToTimespec(Clock::duration d) {
  d = std::max(d, Clock::duration::zero());
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d);
  return {static_cast<time_t>(s.count()), static_cast<long>(std::chrono::nanoseconds(d - s).count())};
}

// ppoll until an event or `deadline` (nullopt = none). EINTR counts as a (spurious) wake-up.
void Wait(pollfd* fds, nfds_t n, std::optional<Clock::time_point> deadline) {
  if (deadline.has_value()) {
    const timespec ts = ToTimespec(*deadline - Clock::now());
    ppoll(fds, n, &ts, nullptr);
  } else {
    ppoll(fds, n, nullptr, nullptr);
  }
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Closes with a reset (RST), so that the peer sees an error rather than a clean end.
void CloseWithReset(int fd) {
  linger l{.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

bool Retry(int err) { return err == EINTR; }
bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

// One accepted connection: its own thread dials the target, waits out the handshake's RTT,
// then pumps both directions until both have ended (FIN passed on each way), either side
// fails (both are reset), or the relay stops (both are closed).
class Relay::Connection {
 public:
  Connection(Relay* relay, int client_fd) : relay_(relay), client_(client_fd), accepted_(Clock::now()) {
    thread_ = std::thread([this] {
      Run();
      done_ = true;
    });
  }
  ~Connection() { thread_.join(); }
  bool done() const { return done_; }

 private:
  // One direction: bytes read from `from` wait in a ring buffer until the shaper lets them
  // out to `to`.
  struct Pipe {
    Pipe(int from_fd, int to_fd, const LinkShape& shape, Clock::time_point now, std::atomic<uint64_t>* sent)
        : from(from_fd),
          to(to_fd),
          shaper(shape, now),
          capacity(BufferBytes(shape)),
          ring(new char[capacity]),
          sent_counter(sent) {}
    bool WantsRead() const { return !eof && size < capacity; }
    bool FinDue(Clock::time_point now) const { return eof && !shut && size == 0 && now >= eof_ready; }

    int from, to;
    Shaper shaper;
    size_t capacity;
    std::unique_ptr<char[]> ring;
    size_t head = 0, size = 0;
    bool eof = false;  // `from` ended; FIN to `to` once the bytes before it are out and delayed
    Clock::time_point eof_ready;
    bool shut = false;     // FIN sent to `to`
    bool blocked = false;  // the last write hit a full socket buffer: wait for POLLOUT
    std::atomic<uint64_t>* sent_counter;
  };

  void Run();
  int Dial();                                  // a connected socket to the target, or -1
  bool Stopping() const;                       // the relay is stopping
  bool Read(Pipe& p, Clock::time_point now);   // false: `from` failed
  bool Write(Pipe& p, Clock::time_point now);  // false: `to` failed
  static std::optional<Clock::time_point> NextEvent(Pipe& p, Clock::time_point now);

  Relay* const relay_;
  const int client_;
  const Clock::time_point accepted_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts once everything above is set
};

bool Relay::Connection::Stopping() const {
  pollfd wake{.fd = relay_->wake_fd_, .events = POLLIN, .revents = 0};
  return poll(&wake, 1, 0) > 0;
}

int Relay::Connection::Dial() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(relay_->host_.c_str(), relay_->port_.c_str(), &hints, &found) != 0) return -1;
  const Clock::time_point deadline = Clock::now() + relay_->options_.dial_timeout;
  int connected = -1;
  for (addrinfo* a = found; a != nullptr && connected < 0 && !Stopping(); a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      connected = fd;
      break;
    }
    if (errno == EINPROGRESS) {
      pollfd fds[2] = {{.fd = fd, .events = POLLOUT, .revents = 0},
                       {.fd = relay_->wake_fd_, .events = POLLIN, .revents = 0}};
      while (fds[0].revents == 0 && fds[1].revents == 0 && Clock::now() < deadline) Wait(fds, 2, deadline);
      int err = 0;
      socklen_t len = sizeof(err);
      if (fds[0].revents != 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        connected = fd;
        break;
      }
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (connected >= 0) SetNoDelay(connected);
  return connected;
}

bool Relay::Connection::Read(Pipe& p, Clock::time_point now) {
  while (p.WantsRead()) {
    const size_t tail = (p.head + p.size) % p.capacity;
    const size_t room = std::min({p.capacity - p.size, p.capacity - tail, kReadChunk});
    const ssize_t n = recv(p.from, p.ring.get() + tail, room, 0);
    if (n > 0) {
      p.size += static_cast<size_t>(n);
      p.shaper.Arrive(static_cast<size_t>(n), now);
      if (static_cast<size_t>(n) < room) return true;  // drained for now
    } else if (n == 0) {
      p.eof = true;
      p.eof_ready = now + p.shaper.shape().delay;
    } else if (Retry(errno)) {
      continue;
    } else {
      return WouldBlock(errno);
    }
  }
  return true;
}

bool Relay::Connection::Write(Pipe& p, Clock::time_point now) {
  p.blocked = false;
  size_t allowed = p.shaper.Sendable(now);
  while (allowed > 0) {
    const size_t chunk = std::min({allowed, p.size, p.capacity - p.head});
    const ssize_t n = send(p.to, p.ring.get() + p.head, chunk, MSG_NOSIGNAL);
    if (n > 0) {
      const auto k = static_cast<size_t>(n);
      p.head = (p.head + k) % p.capacity;
      p.size -= k;
      allowed -= k;
      p.shaper.Sent(k);
      p.sent_counter->fetch_add(k, std::memory_order_relaxed);
    } else if (n < 0 && Retry(errno)) {
      continue;
    } else if (n < 0 && WouldBlock(errno)) {
      p.blocked = true;
      break;
    } else {
      return false;
    }
  }
  if (p.FinDue(now)) {
    shutdown(p.to, SHUT_WR);
    p.shut = true;
  }
  return true;
}

std::optional<Clock::time_point> Relay::Connection::NextEvent(Pipe& p, Clock::time_point now) {
  if (p.shut) return std::nullopt;
  if (p.eof && p.size == 0) return p.eof_ready;
  if (p.blocked) return std::nullopt;  // POLLOUT wakes us
  return p.shaper.NextChange(now);
}

void Relay::Connection::Run() {
  const int server = Dial();
  if (server < 0) {
    relay_->counters_.dial_failures.fetch_add(1);
    CloseWithReset(client_);
    return;
  }
  // The TCP handshake over the emulated link: one round trip before the first byte moves.
  const Clock::time_point start = accepted_ + relay_->options_.up.delay + relay_->options_.down.delay;
  pollfd wake{.fd = relay_->wake_fd_, .events = POLLIN, .revents = 0};
  while (wake.revents == 0 && Clock::now() < start) Wait(&wake, 1, start);
  if (wake.revents != 0) {
    close(server);
    close(client_);
    return;
  }

  const Clock::time_point now = Clock::now();
  Pipe up(client_, server, relay_->options_.up, now, &relay_->counters_.bytes_up);
  Pipe down(server, client_, relay_->options_.down, now, &relay_->counters_.bytes_down);
  bool failed = false;
  bool stopping = false;
  while (!(up.shut && down.shut)) {
    const Clock::time_point t = Clock::now();
    if (!Read(up, t) || !Read(down, t) || !Write(up, t) || !Write(down, t)) {
      failed = true;
      break;
    }
    if (up.shut && down.shut) break;
    // A socket with nothing to wait for is left out (fd -1), so that a hang-up it reports
    // (POLLHUP is always reported) cannot spin this loop.
    const auto events = [](const Pipe& reads, const Pipe& writes) {
      return static_cast<short>((reads.WantsRead() ? POLLIN : 0) | (writes.blocked ? POLLOUT : 0));
    };
    const short client_events = events(up, down);
    const short server_events = events(down, up);
    pollfd fds[3] = {{.fd = client_events != 0 ? client_ : -1, .events = client_events, .revents = 0},
                     {.fd = server_events != 0 ? server : -1, .events = server_events, .revents = 0},
                     {.fd = relay_->wake_fd_, .events = POLLIN, .revents = 0}};
    std::optional<Clock::time_point> deadline = NextEvent(up, t);
    if (std::optional<Clock::time_point> d = NextEvent(down, t); d.has_value()) {
      deadline = deadline.has_value() ? std::min(*deadline, *d) : *d;
    }
    Wait(fds, 3, deadline);
    if (fds[2].revents != 0) {
      stopping = true;
      break;
    }
  }
  if (failed && !stopping) {
    CloseWithReset(server);
    CloseWithReset(client_);
  } else {
    close(server);
    close(client_);
  }
}

absl::StatusOr<std::unique_ptr<Relay>> Relay::Create(RelayOptions options) {
  std::string host, port;
  if (absl::Status s = SplitHostPort(options.target, &host, &port); !s.ok()) return s;
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) return absl::InternalError(absl::StrCat("relay: socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listen_fd, SOMAXCONN) != 0 ||
      getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(listen_fd);
    return absl::InternalError(absl::StrCat("relay: listening on 127.0.0.1: ", std::strerror(err)));
  }
  const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int err = errno;
    close(listen_fd);
    return absl::InternalError(absl::StrCat("relay: eventfd: ", std::strerror(err)));
  }
  std::string address = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  std::unique_ptr<Relay> relay(
      new Relay(std::move(options), std::move(host), std::move(port), listen_fd, wake_fd, std::move(address)));
  relay->accept_thread_ = std::thread([r = relay.get()] { r->AcceptLoop(); });
  return relay;
}

Relay::Relay(RelayOptions options, std::string host, std::string port, int listen_fd, int wake_fd, std::string address)
    : options_(std::move(options)),
      host_(std::move(host)),
      port_(std::move(port)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      address_(std::move(address)) {}

Relay::~Relay() {
  const uint64_t one = 1;
  while (write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.clear();  // joins each connection's thread
  }
  close(listen_fd_);
  close(wake_fd_);
}

RelayStats Relay::stats() const {
  return {.connections = counters_.connections.load(),
          .dial_failures = counters_.dial_failures.load(),
          .bytes_up = counters_.bytes_up.load(),
          .bytes_down = counters_.bytes_down.load()};
}

void Relay::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                     {.fd = wake_fd_, .events = POLLIN, .revents = 0}};
    poll(fds, 2, kReapIntervalMs);
    if (fds[1].revents != 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    connections_.remove_if([](const std::unique_ptr<Connection>& c) { return c->done(); });
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (EMFILE/ENFILE) would report POLLIN again at once: pause instead
      // of spinning. Others (ECONNABORTED, EINTR, EAGAIN) are the client's or transient.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) poll(&fds[1], 1, 100);
      continue;
    }
    SetNoDelay(fd);
    counters_.connections.fetch_add(1);
    connections_.push_back(std::make_unique<Connection>(this, fd));
  }
}

}  // namespace pcp::netem
