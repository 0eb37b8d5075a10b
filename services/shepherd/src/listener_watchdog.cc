#include "listener_watchdog.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/unique_fd.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

std::string Errno(int e) { return std::strerror(e); }

int RemainingMs(absl::Time deadline) {
  return static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
}

// Waits for `events` on `fd` until `deadline`; false on a timeout.
bool WaitFor(int fd, short events, absl::Time deadline) {  // NOLINT(runtime/int): poll's type
  for (;;) {
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = poll(&p, 1, RemainingMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

// A TLS ClientHello (ALPN h2, no verification: it is never completed), made by OpenSSL.
absl::StatusOr<std::string> ClientHello() {
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new failed");
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(SSL_new(ctx.get()), SSL_free);
  if (ssl == nullptr) return absl::InternalError("SSL_new failed");
  static constexpr unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_set_alpn_protos(ssl.get(), kAlpn, sizeof(kAlpn));
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);  // ssl owns both
  SSL_set_connect_state(ssl.get());
  SSL_do_handshake(ssl.get());  // wants to read the ServerHello: the ClientHello is in `out`
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);  // NOLINT(runtime/int): OpenSSL's type
  if (n <= 0) return absl::InternalError("OpenSSL wrote no ClientHello");
  return std::string(data, static_cast<size_t>(n));
}

// The accept path alone (for a TLS listener: the probe has no client certificate): connect,
// send a ClientHello and wait for the server's first bytes (its ServerHello), then close.
// A connection nobody accepted stays silent in the kernel's queue. An aborted handshake is
// not logged by gRPC; bytes it cannot parse as TLS would be, at every probe.
absl::Status ProbeAccept(const std::string& target, absl::Duration timeout) {
  static const absl::StatusOr<std::string>* const hello = new absl::StatusOr<std::string>(ClientHello());
  if (!hello->ok()) return hello->status();
  const absl::Time deadline = absl::Now() + timeout;
  const size_t colon = target.rfind(':');
  std::string host = target.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  if (int rc = getaddrinfo(host.c_str(), target.substr(colon + 1).c_str(), &hints, &ai); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("probe target ", target, ": ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> free_ai(ai, freeaddrinfo);
  UniqueFd fd(socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::UnavailableError(absl::StrCat("socket: ", Errno(errno)));
  if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return absl::UnavailableError(absl::StrCat("connect: ", Errno(errno)));
    if (!WaitFor(fd.get(), POLLOUT, deadline)) return absl::DeadlineExceededError("connect timed out");
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return absl::UnavailableError(absl::StrCat("connect: ", Errno(err)));
  }
  if (send(fd.get(), (*hello)->data(), (*hello)->size(), MSG_NOSIGNAL) < 0) {
    return absl::UnavailableError(absl::StrCat("send: ", Errno(errno)));
  }
  if (!WaitFor(fd.get(), POLLIN, deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("connected, but nothing answered within ", absl::FormatDuration(timeout), " (not accepted)"));
  }
  return absl::OkStatus();  // a ServerHello, an alert, EOF or a reset: a process accepted it
}

// A grpc.health.v1.Health/Check on a channel of its own (a new connection through accept).
absl::Status ProbeHealth(const std::string& target, absl::Duration timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // never share another channel's connection
  grpc::GenericStub stub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::Slice empty(std::string{});  // HealthCheckRequest{service: ""} is no bytes (a null buffer is refused)
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("health check: ", status.error_message(), " (code ", static_cast<int>(status.error_code()), ")"));
  }
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  // HealthCheckResponse{status: SERVING (1)} is field 1, varint 1.
  if (bytes != std::string("\x08\x01", 2)) return absl::UnavailableError("health check: not SERVING");
  return absl::OkStatus();
}

}  // namespace

int64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("open files: getrlimit: {}", Errno(errno));
    return -1;
  }
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      spdlog::warn("open files: cannot raise the soft limit {} to the hard limit {}: {}", before, limit.rlim_max,
                   Errno(errno));
      limit.rlim_cur = before;
    }
  }
  auto text = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : absl::StrCat(v); };
  if (limit.rlim_cur != before) {
    spdlog::info("open files: soft limit raised from {} to {} (the hard limit)", text(before), text(limit.rlim_cur));
  } else {
    spdlog::info("open files: limit {} (hard {})", text(limit.rlim_cur), text(limit.rlim_max));
  }
  return limit.rlim_cur == RLIM_INFINITY ? INT64_MAX : static_cast<int64_t>(limit.rlim_cur);
}

std::string ProbeTarget(absl::string_view listen_host, int port) {
  std::string host(listen_host);
  if (host.empty() || host == "0.0.0.0" || host == "*") host = "127.0.0.1";
  if (host == "[::]" || host == "::") host = "[::1]";
  return absl::StrCat(host, ":", port);
}

absl::Status ProbeListener(const std::string& target, bool tls, absl::Duration timeout) {
  return tls ? ProbeAccept(target, timeout) : ProbeHealth(target, timeout);
}

ListenerWatchdog::ListenerWatchdog(ListenerWatchdogOptions options, std::function<void(std::string)> on_wedged)
    : options_(std::move(options)), on_wedged_(std::move(on_wedged)), thread_([this] { Run(); }) {}

ListenerWatchdog::~ListenerWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool ListenerWatchdog::wedged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wedged_;
}

void ListenerWatchdog::Run() {
  int failed = 0;
  for (;;) {
    const absl::Status probe = ProbeListener(options_.target, options_.tls, options_.timeout);
    if (probe.ok()) {
      if (failed > 0)
        spdlog::info("listener watchdog: {} answers again after {} failed probes", options_.target, failed);
      failed = 0;
      if (absl::Status s = SdNotify("WATCHDOG=1"); !s.ok()) spdlog::warn("{}", s.message());
    } else if (++failed < options_.failures) {
      spdlog::warn("listener watchdog: probe {} of {} to {} failed: {}", failed, options_.failures, options_.target,
                   probe.message());
    } else {
      std::string why = absl::StrCat("the listener on ", options_.target, " failed ", failed,
                                     " probes in a row (last: ", probe.message(), ")");
      {
        std::lock_guard<std::mutex> lock(mu_);
        wedged_ = true;
      }
      on_wedged_(std::move(why));
      return;  // no more WATCHDOG=1: under systemd, WatchdogSec= ends what on_wedged does not
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.interval), [this] { return stop_; })) return;
  }
}

}  // namespace pcp::shepherd
