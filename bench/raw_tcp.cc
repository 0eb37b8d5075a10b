#include "raw_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "bench_process.h"

namespace pcp::bench {
namespace {

// The request that opens a raw connection: `size` bytes, up (client sends, server answers
// one byte once all arrived) or down (server sends).
struct RawRequest {
  uint64_t size;
  uint8_t up;
};

bool SendAll(int fd, const char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = send(fd, p + done, std::min<size_t>(n - done, size_t{1} << 20), 0);
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}
bool RecvAll(int fd, char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t r = recv(fd, p + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

// The raw TCP server (child): a thread per connection (the fan-out rows open several at
// once), the data in `buffer`.
void ServeRawTcp(std::vector<char>& buffer, const std::function<void(int)>& write_port) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("raw tcp: cannot listen");
  }
  write_port(ntohs(addr.sin_port));
  for (;;) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) Die("raw tcp: accept failed");
    std::thread([fd, &buffer] {
      RawRequest req{};
      if (!RecvAll(fd, reinterpret_cast<char*>(&req), sizeof(req)) || req.size > buffer.size()) {
        Die("raw tcp: bad request");
      }
      const char ack = 1;
      const bool ok =
          req.up ? RecvAll(fd, buffer.data(), req.size) && SendAll(fd, &ack, 1) : SendAll(fd, buffer.data(), req.size);
      if (!ok) Die("raw tcp: transfer failed");
      close(fd);
    }).detach();
  }
}

// The raw TCP client (this process): sends `data` (up) or receives into it (down).
void RawTcp(int port, bool up, std::vector<char>& data) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("raw tcp: connect");
  const RawRequest req{data.size(), static_cast<uint8_t>(up)};
  char ack = 0;
  const bool ok =
      SendAll(fd, reinterpret_cast<const char*>(&req), sizeof(req)) &&
      (up ? SendAll(fd, data.data(), data.size()) && RecvAll(fd, &ack, 1) : RecvAll(fd, data.data(), data.size()));
  if (!ok) Die("raw tcp: transfer failed");
  close(fd);
}

}  // namespace pcp::bench
