#include "test_certs.h"

#include <sys/wait.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::testing {
namespace {

// Runs openssl with `args`; its output goes to DIR/openssl.log (quoted on failure).
absl::Status Openssl(const std::string& dir, std::vector<std::string> args) {
  const std::string log = dir + "/openssl.log";
  absl::StatusOr<std::unique_ptr<Process>> p =
      Process::Start({.binary = "/usr/bin/openssl", .args = args, .log_path = log});
  if (!p.ok()) return p.status();
  absl::StatusOr<int> status = (*p)->Wait(absl::Seconds(60));
  if (!status.ok()) return status.status();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return absl::InternalError(
        absl::StrCat("openssl ", absl::StrJoin(args, " "), ": ", DescribeWaitStatus(*status), "\n", (*p)->LogTail()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TestCa> TestCa::Create(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  TestCa ca(dir, dir + "/ca.crt", dir + "/ca.key");
  absl::Status s =
      Openssl(dir, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    ca.key_, "-out", ca.cert_, "-days", "2", "-subj", "/CN=" + name, "-addext",
                    "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
  if (!s.ok()) return s;
  return ca;
}

absl::StatusOr<CertFiles> TestCa::Issue(const std::string& common_name, const std::vector<std::string>& sans) const {
  CertFiles out{.cert = absl::StrCat(dir_, "/", common_name, ".crt"),
                .key = absl::StrCat(dir_, "/", common_name, ".key")};
  const std::string csr = absl::StrCat(dir_, "/", common_name, ".csr");
  const std::string ext = absl::StrCat(dir_, "/", common_name, ".ext");
  std::string ext_text = "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n";
  if (!sans.empty()) absl::StrAppend(&ext_text, "subjectAltName=", absl::StrJoin(sans, ","), "\n");
  if (absl::Status s = WriteFileAtomic(ext, ext_text); !s.ok()) return s;
  if (absl::Status s = Openssl(dir_, {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                      "-keyout", out.key, "-out", csr, "-subj", "/CN=" + common_name});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Openssl(dir_, {"x509", "-req", "-in", csr, "-CA", cert_, "-CAkey", key_, "-CAcreateserial",
                                      "-out", out.cert, "-days", "2", "-extfile", ext});
      !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace pcp::testing
