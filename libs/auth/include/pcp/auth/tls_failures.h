// TLS handshake failures as gRPC 1.51 reports them, made precise for people and countable.
//
// gRPC tells a client only "Socket closed" or "Tls handshake failed: <OpenSSL text>" inside
// "failed to connect to all addresses", and tells the server's operator nothing at all but
// an ERROR log line ("Handshake failed with fatal error SSL_ERROR_SSL: ...: peer did not
// return a certificate."), written before any call exists for an interceptor to see.
//
//   // Client (pcpctl, supervisor): what went wrong and what to change, or "".
//   std::string hint = DescribeConnectFailure(status.message(), /*tls=*/true, "10.0.0.5:7070");
//   // "the shepherd at 10.0.0.5:7070 closed the connection during the TLS handshake: it ..."
//
//   // Server: count each refused handshake by reason (the shepherd's
//   // pcp_shepherd_tls_refusals_total{reason}); gRPC's log line is still written.
//   InstallHandshakeFailureHook([](absl::string_view reason) { counter(reason).Increment(); });
//
// The reasons form a closed set (kTls*), whatever a peer sends. The texts matched are
// gRPC 1.51's with OpenSSL 3 (Debian 12); an unrecognised failure is kTlsOther.
#ifndef PCP_AUTH_TLS_FAILURES_H_
#define PCP_AUTH_TLS_FAILURES_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace pcp::auth {

// Why a TLS handshake was refused: the `reason` label of pcp_shepherd_tls_refusals_total.
inline constexpr absl::string_view kTlsNoCertificate = "no_certificate";    // mTLS: the client sent none
inline constexpr absl::string_view kTlsBadCertificate = "bad_certificate";  // not signed by tls.ca, expired, ...
inline constexpr absl::string_view kTlsNotTls = "not_tls";                  // plaintext (HTTP/2, HTTP, junk)
inline constexpr absl::string_view kTlsOther = "other";                     // any other handshake failure

// The reason of a gRPC log line that reports a failed server-side TLS handshake, "" for any
// other line.
absl::string_view HandshakeFailureReason(absl::string_view grpc_log_message);

// A one-line explanation of a failed connection (the status message of a call that could
// not connect) naming the likely cause and the fix, or "" when the message is not one of a
// refused connection or a failed TLS handshake. `tls`: whether the client used TLS.
std::string DescribeConnectFailure(absl::string_view status_message, bool tls, absl::string_view target);

// Routes gRPC's log through a function of ours (gpr_set_log_function, process-wide): each
// line is written as gRPC would, and `on_failure` is called with the reason of each failed
// TLS handshake. `quiet_handshake_lines`: leave those lines out (a client that prints
// DescribeConnectFailure instead). Call once, before the first server or channel.
void InstallHandshakeFailureHook(std::function<void(absl::string_view reason)> on_failure,
                                 bool quiet_handshake_lines = false);

}  // namespace pcp::auth

#endif  // PCP_AUTH_TLS_FAILURES_H_
