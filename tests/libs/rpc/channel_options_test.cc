// The per-stream receive window derived from a transport budget (pcp/rpc/channel_options.h),
// and the server options that carry it.
#include "pcp/rpc/channel_options.h"

#include <arpa/inet.h>
#include <grpc/grpc.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gtest/gtest.h"

namespace pcp {
namespace {

TEST(StreamWindowForBudgetTest, DividesTheBudgetAmongTheStreams) {
  EXPECT_EQ(StreamWindowForBudget(int64_t{128} << 20, 256), 512 << 10);
  EXPECT_EQ(StreamWindowForBudget(int64_t{128} << 20, 128), 1 << 20);
  EXPECT_EQ(StreamWindowForBudget(int64_t{10} << 20, 3), (int64_t{10} << 20) / 3);  // rounds down
}

TEST(StreamWindowForBudgetTest, ClampsToTheFloorAndTheCeiling) {
  // A big budget or few streams: never more than the channels' 16 MiB.
  EXPECT_EQ(StreamWindowForBudget(int64_t{1} << 40, 1), kStreamWindowBytes);
  EXPECT_EQ(StreamWindowForBudget(int64_t{128} << 20, 8), kStreamWindowBytes);
  // Too many streams for the budget: HTTP/2's default window, not less.
  EXPECT_EQ(StreamWindowForBudget(int64_t{1} << 20, 1000), kMinStreamWindowBytes);
  EXPECT_EQ(StreamWindowForBudget(0, 1), kMinStreamWindowBytes);
  // Zero or negative stream counts act as one stream (no division by zero).
  EXPECT_EQ(StreamWindowForBudget(int64_t{4} << 20, 0), 4 << 20);
  EXPECT_EQ(StreamWindowForBudget(int64_t{4} << 20, -5), 4 << 20);
}

// The SETTINGS a server sends first on a new HTTP/2 connection (id -> value), read with a raw
// socket: the client preface and an empty SETTINGS frame, then the server's first frame.
std::map<int, uint32_t> ServerSettings(int port) {
  std::map<int, uint32_t> settings;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return settings;
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string hello = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\x04\0\0\0\0\0", 9);
    if (write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size())) {
      auto read_exactly = [fd](uint8_t* out, size_t n) {
        for (size_t got = 0; got < n;) {
          const ssize_t r = read(fd, out + got, n - got);
          if (r <= 0) return false;
          got += static_cast<size_t>(r);
        }
        return true;
      };
      uint8_t head[9];
      if (read_exactly(head, 9) && head[3] == 0x4 /* SETTINGS */) {
        const size_t length = (size_t{head[0]} << 16) | (size_t{head[1]} << 8) | head[2];
        std::string body(length, '\0');
        if (read_exactly(reinterpret_cast<uint8_t*>(body.data()), length)) {
          for (size_t i = 0; i + 6 <= length; i += 6) {
            const auto* b = reinterpret_cast<const uint8_t*>(body.data() + i);
            settings[(b[0] << 8) | b[1]] =
                (uint32_t{b[2]} << 24) | (uint32_t{b[3]} << 16) | (uint32_t{b[4]} << 8) | b[5];
          }
        }
      }
    }
  }
  close(fd);
  return settings;
}

constexpr int kSettingsInitialWindowSize = 0x4;

// A generic echo service (callback API): every message read is written back.
class Echo final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class R final : public grpc::ServerGenericBidiReactor {
     public:
      R() { StartRead(&buf_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        StartWrite(&buf_);
      }
      void OnWriteDone(bool ok) override {
        if (ok) {
          StartRead(&buf_);
        } else {
          Finish(grpc::Status::OK);
        }
      }
      void OnDone() override { delete this; }

     private:
      grpc::ByteBuffer buf_;
    };
    return new R;
  }
};

// A loopback server with the stream options and `window`; *port = its port.
std::unique_ptr<grpc::Server> StartEcho(Echo* echo, int window, int* port) {
  grpc::ServerBuilder builder;
  ApplyStreamServerOptions(&builder, window);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterCallbackGenericService(echo);
  return builder.BuildAndStart();
}

TEST(ApplyStreamServerOptionsTest, TheServerAnnouncesTheWindowItIsGiven) {
  for (int window : {512 << 10, kStreamWindowBytes}) {
    Echo echo;
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartEcho(&echo, window, &port);
    ASSERT_NE(server, nullptr);
    std::map<int, uint32_t> settings = ServerSettings(port);
    ASSERT_TRUE(settings.count(kSettingsInitialWindowSize)) << "no SETTINGS_INITIAL_WINDOW_SIZE from the server";
    EXPECT_EQ(settings[kSettingsInitialWindowSize], static_cast<uint32_t>(window));
    server->Shutdown();
  }
}

// A client whose messages pass the window still gets them through (gRPC lets a requested
// message complete), here 2 MiB messages through the smallest window.
TEST(ApplyStreamServerOptionsTest, ASmallWindowStillCarriesLargeMessages) {
  Echo echo;
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartEcho(&echo, kMinStreamWindowBytes / 2, &port);  // clamped up
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(ServerSettings(port)[kSettingsInitialWindowSize], static_cast<uint32_t>(kMinStreamWindowBytes));
  ASSERT_NE(port, 0);

  grpc::ChannelArguments args;
  ApplyStreamChannelOptions(&args);
  auto channel =
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  const std::string payload(2 << 20, 'x');
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1), response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    stub.UnaryCall(&ctx, "/pcp.test.Echo/Echo", grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = s;
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.Length(), payload.size());
  }
  server->Shutdown();
}

}  // namespace
}  // namespace pcp
