// Test-only: a throwaway certificate authority and certificates, made with the openssl
// command line (as scripts/run-local-cluster.sh --tls does), for TLS / mTLS tests.
//
//   PCP_ASSERT_OK_AND_ASSIGN(TestCa ca, TestCa::Create(dir + "/ca", "pcp-test-ca"));
//   PCP_ASSERT_OK_AND_ASSIGN(CertFiles server, ca.Issue("shepherd", {"DNS:localhost", "IP:127.0.0.1"}));
//   PCP_ASSERT_OK_AND_ASSIGN(CertFiles node, ca.Issue("node-1", {"DNS:node-1"}));
//   PCP_ASSERT_OK_AND_ASSIGN(CertFiles admin, ca.Issue("ops-admin"));   // no SAN: identity = CN
//
// Keys are EC P-256 (PKCS#8 PEM); certificates last two days and are good for both server
// and client authentication.
#ifndef PCP_TESTS_SERVICES_E2E_TEST_CERTS_H_
#define PCP_TESTS_SERVICES_E2E_TEST_CERTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pcp::testing {

struct CertFiles {
  std::string cert;  // PEM certificate
  std::string key;   // PEM private key
};

class TestCa {
 public:
  // Makes `dir` and a self-signed CA certificate in it (ca.crt, ca.key).
  static absl::StatusOr<TestCa> Create(const std::string& dir, const std::string& name);

  // A certificate with subject CN=`common_name` and the given subjectAltName entries
  // ("DNS:x", "IP:127.0.0.1"), signed by this CA: DIR/<common_name>.crt/.key.
  absl::StatusOr<CertFiles> Issue(const std::string& common_name, const std::vector<std::string>& sans = {}) const;

  const std::string& cert() const { return cert_; }
  const std::string& dir() const { return dir_; }

 private:
  TestCa(std::string dir, std::string cert, std::string key)
      : dir_(std::move(dir)), cert_(std::move(cert)), key_(std::move(key)) {}
  std::string dir_, cert_, key_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_TEST_CERTS_H_
