// HandshakeFailureReason and DescribeConnectFailure on the texts gRPC 1.51 with OpenSSL 3
// writes (copied from a shepherd's log and pcpctl's errors against an mTLS shepherd).
#include "pcp/auth/tls_failures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace pcp::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPrefix[] = "Handshake failed with fatal error SSL_ERROR_SSL: ";

TEST(HandshakeFailureReasonTest, ServerLinesByCause) {
  EXPECT_EQ(HandshakeFailureReason(
                absl::StrCat(kPrefix, "error:0A0000C7:SSL routines::peer did not return a certificate.")),
            kTlsNoCertificate);
  EXPECT_EQ(HandshakeFailureReason(absl::StrCat(kPrefix, "error:0A000086:SSL routines::certificate verify failed.")),
            kTlsBadCertificate);
  EXPECT_EQ(HandshakeFailureReason(absl::StrCat(kPrefix, "error:0A00010B:SSL routines::wrong version number.")),
            kTlsNotTls);
  EXPECT_EQ(HandshakeFailureReason(absl::StrCat(kPrefix, "error:0A00009C:SSL routines::http request.")), kTlsNotTls);
  EXPECT_EQ(HandshakeFailureReason(absl::StrCat(kPrefix, "error:0A000412:SSL routines::whatever comes next.")),
            kTlsOther);
}

TEST(HandshakeFailureReasonTest, OtherLinesAreNotFailures) {
  EXPECT_EQ(HandshakeFailureReason(""), "");
  EXPECT_EQ(HandshakeFailureReason("Failed accept4: Too many open files"), "");
  EXPECT_EQ(HandshakeFailureReason("certificate verify failed"), "");  // not the handshake line
}

TEST(DescribeConnectFailureTest, PlaintextClientToATlsShepherd) {
  const std::string why = DescribeConnectFailure(
      "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7070: Socket closed",
      /*tls=*/false, "127.0.0.1:7070");
  EXPECT_THAT(why, HasSubstr("most likely serves TLS"));
  EXPECT_THAT(why, HasSubstr("--ca"));
}

TEST(DescribeConnectFailureTest, WrongCa) {
  const std::string why = DescribeConnectFailure(
      "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Tls handshake failed: "
      "SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed",
      /*tls=*/true, "127.0.0.1:7070");
  EXPECT_THAT(why, HasSubstr("does not verify"));
  EXPECT_THAT(why, HasSubstr("--ca"));
}

TEST(DescribeConnectFailureTest, ClientCertificateRefused) {
  const std::string why = DescribeConnectFailure(
      "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7070: Socket closed",
      /*tls=*/true, "127.0.0.1:7070");
  EXPECT_THAT(why, HasSubstr("refused this client's certificate"));
  EXPECT_THAT(why, HasSubstr("--cert/--key"));
}

TEST(DescribeConnectFailureTest, TlsClientToAPlaintextShepherd) {
  EXPECT_THAT(DescribeConnectFailure("Tls handshake failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version "
                                     "number",
                                     /*tls=*/true, "127.0.0.1:7070"),
              HasSubstr("does not speak TLS"));
}

TEST(DescribeConnectFailureTest, RefusedAndUnrelated) {
  EXPECT_THAT(DescribeConnectFailure("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: "
                                     "Failed to connect to remote host: Connection refused",
                                     /*tls=*/true, "127.0.0.1:7070"),
              HasSubstr("nothing listens at 127.0.0.1:7070"));
  EXPECT_EQ(DescribeConnectFailure("Deadline Exceeded", /*tls=*/true, "127.0.0.1:7070"), "");
  EXPECT_EQ(DescribeConnectFailure("job-0001 not found", /*tls=*/false, "127.0.0.1:7070"), "");
  EXPECT_THAT(DescribeConnectFailure("Socket closed", /*tls=*/false, "h:1"), Not(HasSubstr("certificate verify")));
}

}  // namespace
}  // namespace pcp::auth
