// libs/auth without a network: roles, token hashing and comparison, secret sources,
// authentication rules, method tables and the plaintext-listen rule. The interceptor and
// TLS run against real processes in tests/services/e2e/auth_e2e_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "pcp/auth/authenticator.h"
#include "pcp/auth/method_rules.h"
#include "pcp/auth/role.h"
#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/auth/token.h"
#include "pcp/base/file.h"

namespace pcp::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RoleTest, NamesRoundTripAndSetsPrint) {
  for (Role r : {Role::kNode, Role::kViewer, Role::kAdmin}) EXPECT_EQ(*ParseRole(RoleName(r)), r);
  EXPECT_THAT(std::string(ParseRole("root").status().message()), HasSubstr("valid roles: node, viewer, admin"));
  RoleSet s{Role::kAdmin, Role::kViewer};
  EXPECT_EQ(s.ToString(), "viewer|admin");
  EXPECT_TRUE(s.Intersects(RoleSet{Role::kAdmin}));
  EXPECT_FALSE(s.Contains(Role::kNode));
}

TEST(TokenTest, HashCompareAndBearer) {
  EXPECT_EQ(TokenSha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(ConstantTimeEquals("same", "same"));
  EXPECT_FALSE(ConstantTimeEquals("same", "samf"));
  EXPECT_FALSE(ConstantTimeEquals("same", "sam"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_EQ(*BearerToken("Bearer s3cret"), "s3cret");
  EXPECT_EQ(*BearerToken("bearer  s3cret "), "s3cret");
  absl::Status basic = BearerToken("Basic s3cret").status();
  EXPECT_EQ(basic.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(basic.message()), Not(HasSubstr("s3cret")));
  EXPECT_TRUE(ValidateTokenSha256(TokenSha256("x")).ok());
  EXPECT_FALSE(ValidateTokenSha256("ABC").ok());
}

TEST(SecretTest, FileEnvAndCredentialSources) {
  const std::string dir = std::filesystem::temp_directory_path() / "pcp_auth_secret_test";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomic(dir + "/token", "from-file\n").ok());
  EXPECT_EQ(*LoadSecret(dir + "/token"), "from-file");
  EXPECT_EQ(*LoadSecret("file:" + dir + "/token"), "from-file");
  setenv("PCP_AUTH_TEST_TOKEN", "from-env", 1);
  EXPECT_EQ(*LoadSecret("env:PCP_AUTH_TEST_TOKEN"), "from-env");
  setenv("CREDENTIALS_DIRECTORY", dir.c_str(), 1);
  EXPECT_EQ(*LoadSecret("credential:token"), "from-file");
  EXPECT_EQ(*ResolveCredentialPath("credential:token"), dir + "/token");
  EXPECT_FALSE(LoadSecret("credential:../token").ok());
  EXPECT_EQ(LoadSecret("env:PCP_AUTH_TEST_UNSET").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(ResolveCredentialPath("env:X").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/empty", "\n").ok());
  EXPECT_EQ(LoadSecret(dir + "/empty").status().code(), absl::StatusCode::kInvalidArgument);
  unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_THAT(std::string(LoadSecret("credential:token").status().message()), HasSubstr("CREDENTIALS_DIRECTORY"));
  std::filesystem::remove_all(dir);
}

// Malformed token sources are errors that never contain the token: a second line (which
// used to abort the client inside gRPC with the header in clear), spaces, control characters,
// non-ASCII bytes, an oversized token or file, and the token itself given where its path
// belongs.
TEST(SecretTest, MalformedTokensAreRefusedWithoutRepeatingThem) {
  const std::string dir = std::filesystem::temp_directory_path() / "pcp_auth_malformed_token_test";
  std::filesystem::create_directories(dir);
  const std::string token = "5726d2c0ffee5726d2c0ffee5726d2c0ffee797";
  struct Case {
    std::string name, contents, message;
  };
  const std::vector<Case> cases = {
      {"two_lines", token + "\n" + token + ".extra\n", "spans more than one line"},
      {"crlf_inside", token + "\r\nx", "spans more than one line"},
      {"space", token + " " + token, "character 40 of the token is a space"},
      {"tab", "\t" + token, "character 1 of the token"},
      {"nul", token + std::string(1, '\0') + "x", "not ASCII"},
      {"utf8", token + "\xc3\xa9", "not ASCII"},
      {"long", std::string(kMaxSecretBytes + 1, 'a') + token, "longer than 4096 characters"},
      {"huge_file", token + std::string(kMaxSecretFileBytes, '\n'), "a token file holds one line"},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name;
    ASSERT_TRUE(WriteFileAtomic(path, c.contents).ok());
    absl::Status s = LoadSecret(path).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(path)) << c.name;  // the file, by its path
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr(token.substr(0, 12)))) << c.name;
  }
  setenv("PCP_AUTH_TEST_TOKEN", (token + "\nsecond").c_str(), 1);
  EXPECT_THAT(std::string(LoadSecret("env:PCP_AUTH_TEST_TOKEN").status().message()),
              Not(HasSubstr(token.substr(0, 12))));
  // The token where its path belongs: not found, and not repeated.
  for (const std::string& source : {token, "file:" + token}) {
    absl::Status s = LoadSecret(source).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(std::string(s.message()), HasSubstr("not repeated"));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr(token.substr(0, 12))));
  }
  EXPECT_TRUE(CheckToken(token).ok());
  std::filesystem::remove_all(dir);
}

TEST(AuthenticatorTest, TokensCertificatesAndRefusals) {
  Authenticator off;
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.Authenticate("", {}).ok());

  Authenticator authn({.identities = {{.identity = "node-1", .roles = {Role::kNode}}},
                       .tokens = {{.name = "ops", .sha256 = TokenSha256("ops-secret"), .roles = {Role::kAdmin}}}});
  absl::string_view reason;
  absl::StatusOr<Principal> token = authn.Authenticate("Bearer ops-secret", {}, &reason);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->name, "ops");
  EXPECT_EQ(token->via, Principal::Via::kToken);

  absl::StatusOr<Principal> cert = authn.Authenticate("", {"other", "node-1"});
  ASSERT_TRUE(cert.ok());
  EXPECT_EQ(cert->name, "node-1");
  EXPECT_EQ(cert->via, Principal::Via::kCertificate);

  absl::Status none = authn.Authenticate("", {}, &reason).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(reason, kReasonNoCredential);
  // A wrong token is refused even next to a good certificate, and never echoed.
  absl::Status bad = authn.Authenticate("Bearer guess", {"node-1"}, &reason).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(reason, kReasonBadToken);
  EXPECT_THAT(std::string(bad.message()), Not(HasSubstr("guess")));
  absl::Status stranger = authn.Authenticate("", {"mallory"}, &reason).status();
  EXPECT_EQ(stranger.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(reason, kReasonUnknownIdentity);

  EXPECT_TRUE(CheckNodeIdentity(*cert, "node-1").ok());
  EXPECT_EQ(CheckNodeIdentity(*cert, "node-2").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckNodeIdentity(Principal{}, "anything").ok());  // auth off
}

TEST(MethodRulesTest, ExactServiceAndMissingRows) {
  const std::vector<MethodRule> rules = {
      {"/svc.A/Read", {Role::kViewer, Role::kAdmin}},
      {"/svc.A/Write", {Role::kAdmin}, Audit::kYes},
      {"/grpc.health.v1.Health/", kOpen},
  };
  const Principal viewer{.name = "v", .roles = {Role::kViewer}, .via = Principal::Via::kToken};
  absl::string_view reason;
  EXPECT_TRUE(Authorize(FindMethodRule(rules, "/svc.A/Read"), "/svc.A/Read", viewer, true, &reason).ok());
  absl::Status write = Authorize(FindMethodRule(rules, "/svc.A/Write"), "/svc.A/Write", viewer, true, &reason);
  EXPECT_EQ(write.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(write.message()),
              HasSubstr("'v' (role viewer) may not call svc.A/Write: it needs role admin"));
  EXPECT_EQ(FindMethodRule(rules, "/grpc.health.v1.Health/Check")->roles, kOpen);
  EXPECT_TRUE(Authorize(FindMethodRule(rules, "/grpc.health.v1.Health/Check"), "/grpc.health.v1.Health/Check",
                        Principal{}, true, &reason)
                  .ok());
  EXPECT_EQ(FindMethodRule(rules, "/svc.A/New"), nullptr);
  EXPECT_EQ(Authorize(nullptr, "/svc.A/New", viewer, true, &reason).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(Authorize(nullptr, "/svc.A/New", viewer, /*auth_enabled=*/false, &reason).ok());
  EXPECT_EQ(ServiceLabel("/pcp.v1.Admin/GetJob"), "Admin");
}

TEST(TlsCredentialsTest, LoopbackAndPlaintextRule) {
  for (const char* a : {"127.0.0.1:7070", "127.1.2.3:0", "localhost:1", "[::1]:7070"})
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  for (const char* a : {"0.0.0.0:0", "[::]:7070", "10.0.0.5:7070", "shepherd.example:7070", "128.0.0.1:1", ":7070"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
  absl::Status refused = CheckPlaintextListen("0.0.0.0:0", /*tls=*/false, /*insecure=*/false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("refusing plaintext on non-loopback address 0.0.0.0:0"));
  EXPECT_TRUE(CheckPlaintextListen("0.0.0.0:0", false, /*insecure=*/true).ok());
  EXPECT_TRUE(CheckPlaintextListen("0.0.0.0:0", /*tls=*/true, false).ok());
  TlsFiles half{.cert = "/x.pem"};
  EXPECT_THAT(std::string(ResolveTlsFiles("tls", true, &half).message()), HasSubstr("cert and key go together"));
  TlsFiles missing{.ca = "/nonexistent/ca.pem"};
  EXPECT_THAT(std::string(ResolveTlsFiles("tls", false, &missing).message()), HasSubstr("tls.ca"));
}

}  // namespace
}  // namespace pcp::auth
