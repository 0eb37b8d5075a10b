// gRPC credentials of PCP's servers and clients: TLS / mTLS with certificates that reload
// from disk, bearer tokens on every call, and the rule that plaintext stays on loopback.
//
//   // The shepherd: TLS with the server's certificate; client_ca set = mTLS (client
//   // certificates required and verified against it).
//   TlsFiles server{.ca = "/etc/pcp/ca.crt", .cert = "credential:shepherd.crt",
//                   .key = "credential:shepherd.key"};
//   PCP_RETURN_IF_ERROR(CheckPlaintextListen(listen, server.enabled(), /*insecure=*/false));
//   PCP_ASSIGN_OR_RETURN(auto creds, MakeServerCredentials(server));
//   builder.AddListeningPort(listen, creds, &port);
//
//   // A client (worker, supervisor, pcpctl): CA to verify the shepherd, its own certificate
//   // for mTLS, and/or a token sent as "authorization: Bearer …" on every call.
//   PCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> ch,
//                        MakeChannel("127.0.0.1:7070", {.tls = tls, .token = token}, args));
//
// Reload: gRPC's FileWatcherCertificateProvider re-reads the files every
// refresh_interval_s; new connections use what it read last, existing ones keep theirs.
// Replace files with atomic renames (write, then `mv`), key before certificate or both in
// one directory swap, so that the watcher never reads a torn or mismatched pair.
// Paths may be "credential:NAME" ($CREDENTIALS_DIRECTORY/NAME, pcp/auth/secret.h).
// The files are checked at start (readable, PEM) so that a mistake is one line at start and
// not a failed handshake later.
#ifndef PCP_AUTH_TLS_CREDENTIALS_H_
#define PCP_AUTH_TLS_CREDENTIALS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class Channel;
class ChannelArguments;
class ChannelCredentials;
class ServerCredentials;
}  // namespace grpc

namespace pcp::auth {

inline constexpr int kDefaultCertRefreshSeconds = 10;

struct TlsFiles {
  // Server: the CA client certificates must chain to (set = mTLS). Client: the CA that
  // signed the shepherd's certificate (required for TLS).
  std::string ca;
  std::string cert;  // PEM certificate chain (server: required; client: for mTLS)
  std::string key;   // PEM private key of `cert`
  int64_t refresh_interval_s = kDefaultCertRefreshSeconds;
  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

// InvalidArgument naming the field for an incomplete or unreadable set (`what`: prefix for
// messages, e.g. "tls"). Resolves credential: paths in place.
absl::Status ResolveTlsFiles(absl::string_view what, bool server, TlsFiles* files);

// TLS (or mTLS when files.ca is set) server credentials; files must be resolved/valid.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& files);

// True for 127.0.0.0/8, ::1 and "localhost" (HOST:PORT or [V6]:PORT).
bool IsLoopbackAddress(absl::string_view host_port);

// FailedPrecondition, one line, for plaintext on a non-loopback listen address unless
// `insecure` opts in; decided before anything binds.
absl::Status CheckPlaintextListen(absl::string_view listen, bool tls, bool insecure);

struct ClientCredentials {
  TlsFiles tls;       // all empty = plaintext
  std::string token;  // the bearer token itself ("" = none); never logged
};

// A channel to `target`. FailedPrecondition for a token over plaintext to a non-loopback
// address (it would cross the network in clear text).
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target, const ClientCredentials& creds,
                                                           const grpc::ChannelArguments& args);

}  // namespace pcp::auth

#endif  // PCP_AUTH_TLS_CREDENTIALS_H_
