#include "pcp/netem/loopback_peer.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

namespace pcp::netem {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

int BoundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

}  // namespace

int ConnectTo(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  const sockaddr_in addr = Loopback(std::stoi(address.substr(colon + 1)));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string RecvExactly(int fd, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t k = recv(fd, out.data() + got, n - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += static_cast<size_t>(k);
  }
  out.resize(got);
  return out;
}

bool RecvToEof(int fd, std::string* out) {
  char buf[64 * 1024];
  while (true) {
    const ssize_t k = recv(fd, buf, sizeof(buf), 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return false;
    if (k == 0) return true;
    out->append(buf, static_cast<size_t>(k));
  }
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

int CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in addr = Loopback(0);
  bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int port = BoundPort(fd);
  close(fd);
  return port;
}

std::unique_ptr<PeerServer> PeerServer::Start(Mode mode, std::string greeting) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in addr = Loopback(0);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    if (fd >= 0) close(fd);
    return nullptr;
  }
  std::unique_ptr<PeerServer> server(
      new PeerServer(mode, std::move(greeting), fd, "127.0.0.1:" + std::to_string(BoundPort(fd))));
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

PeerServer::PeerServer(Mode mode, std::string greeting, int listen_fd, std::string address)
    : mode_(mode), greeting_(std::move(greeting)), listen_fd_(listen_fd), address_(std::move(address)) {}

PeerServer::~PeerServer() {
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);  // accept() returns
  accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
  close(listen_fd_);
}

void PeerServer::AcceptLoop() {
  while (!stopping_) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void PeerServer::Serve(int fd) {
  char buf[64 * 1024];
  switch (mode_) {
    case Mode::kEcho:
      while (true) {
        const ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        bytes_received_ += static_cast<uint64_t>(k);
        if (!SendAll(fd, buf, static_cast<size_t>(k))) break;
      }
      shutdown(fd, SHUT_WR);
      break;
    case Mode::kSinkThenByte: {
      std::string ignored;
      while (true) {
        const ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        bytes_received_ += static_cast<uint64_t>(k);
      }
      SendAll(fd, "k", 1);
      break;
    }
    case Mode::kGreetAndClose: SendAll(fd, greeting_.data(), greeting_.size()); break;
    case Mode::kReadThenReset: {
      if (recv(fd, buf, 1, 0) == 1) bytes_received_ += 1;
      linger l{.l_onoff = 1, .l_linger = 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
  close(fd);
}

}  // namespace pcp::netem
