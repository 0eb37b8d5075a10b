#include "pcp/auth/tls_failures.h"

#include <grpc/support/log.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace pcp::auth {
namespace {

// gRPC 1.51's server-side line: "Handshake failed with fatal error SSL_ERROR_SSL: <OpenSSL>."
constexpr absl::string_view kHandshakeFailed = "Handshake failed with fatal error";

struct Hook {
  std::function<void(absl::string_view)> on_failure;
  bool quiet = false;
};

Hook& TheHook() {
  static auto* hook = new Hook;
  return *hook;
}

// gRPC's own format ("E1128 13:55:29.061586 7402 file.cc:1501] message"; gRPC 1.51 does
// not export its default log function).
void WriteLikeGrpc(const gpr_log_func_args& args) {
  const absl::string_view file = args.file == nullptr ? "" : args.file;
  const absl::string_view base = file.substr(file.rfind('/') == absl::string_view::npos ? 0 : file.rfind('/') + 1);
  const std::string line =
      absl::StrCat(absl::string_view(gpr_log_severity_string(args.severity)).substr(0, 1),
                   absl::FormatTime("%m%d %H:%M:%E6S", absl::Now(), absl::LocalTimeZone()), " ", getpid(), " ", base,
                   ":", args.line, "] ", args.message == nullptr ? "" : args.message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void LogThroughHook(gpr_log_func_args* args) {
  const absl::string_view message = args->message == nullptr ? "" : args->message;
  const absl::string_view reason = HandshakeFailureReason(message);
  const Hook& hook = TheHook();
  if (!reason.empty() && hook.on_failure) hook.on_failure(reason);
  if (reason.empty() || !hook.quiet) WriteLikeGrpc(*args);
}

}  // namespace

absl::string_view HandshakeFailureReason(absl::string_view message) {
  if (!absl::StrContains(message, kHandshakeFailed)) return "";
  if (absl::StrContains(message, "peer did not return a certificate")) return kTlsNoCertificate;
  for (absl::string_view bad : {"certificate verify failed", "certificate expired", "unsupported certificate",
                                "bad certificate", "certificate revoked", "unknown ca"}) {
    if (absl::StrContains(message, bad)) return kTlsBadCertificate;
  }
  for (absl::string_view plain : {"wrong version number", "http request", "https proxy request", "unknown protocol",
                                  "packet length too long", "record layer failure", "unexpected message"}) {
    if (absl::StrContains(message, plain)) return kTlsNotTls;
  }
  return kTlsOther;
}

std::string DescribeConnectFailure(absl::string_view message, bool tls, absl::string_view target) {
  const std::string at = absl::StrCat("the shepherd at ", target);
  if (absl::StrContains(message, "Connection refused")) {
    return absl::StrCat("nothing listens at ", target, " (connection refused): is the shepherd running there?");
  }
  if (tls) {
    if (absl::StrContains(message, "certificate verify failed")) {
      return absl::StrCat("TLS: ", at,
                          " presented a certificate that the CA given (--ca / tls.ca) does not verify: "
                          "wrong CA file, or an expired certificate");
    }
    if (absl::StrContains(message, "Peer name") && absl::StrContains(message, "not in peer certificate")) {
      return absl::StrCat("TLS: ", at, "'s certificate does not name '", target.substr(0, target.rfind(':')),
                          "' (its subjectAltName): dial a name the certificate has");
    }
    if (absl::StrContains(message, "wrong version number") || absl::StrContains(message, "packet length too long")) {
      return absl::StrCat("TLS: ", at,
                          " does not speak TLS (a plaintext shepherd?): drop --ca / tls.ca, "
                          "or point at the TLS port");
    }
    if (absl::StrContains(message, "Socket closed") || absl::StrContains(message, "Connection reset") ||
        absl::StrContains(message, "Tls handshake failed") || absl::StrContains(message, "alert")) {
      return absl::StrCat("TLS: ", at,
                          " closed the connection during the handshake: it refused this client's "
                          "certificate (mTLS needs --cert/--key, or tls.cert/tls.key, issued by the shepherd's CA), "
                          "or it does not serve TLS");
    }
    return "";
  }
  if (absl::StrContains(message, "Socket closed") || absl::StrContains(message, "Connection reset")) {
    return absl::StrCat(at,
                        " closed a plaintext connection at once: it most likely serves TLS "
                        "(give its CA with --ca / tls.ca, and a client certificate for mTLS)");
  }
  return "";
}

void InstallHandshakeFailureHook(std::function<void(absl::string_view reason)> on_failure, bool quiet_handshake_lines) {
  Hook& hook = TheHook();
  hook.on_failure = std::move(on_failure);
  hook.quiet = quiet_handshake_lines;
  gpr_set_log_function(LogThroughHook);
}

}  // namespace pcp::auth
