#include "pcp/supervisor/supervisor_id.h"

#include <unistd.h>

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"

namespace pcp::supervisor {
namespace {

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
}

}  // namespace

absl::Status ValidateSupervisorId(absl::string_view id) {
  bool ok = !id.empty() && id.size() <= 128;
  for (char c : id) ok = ok && IsIdChar(c);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("supervisor id '", absl::CHexEscape(id.substr(0, 160)),
                   "': expected 1-128 characters of letters, digits, '.', '_', ':' or '-'"));
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

absl::StatusOr<std::string> ResolveSupervisorId(absl::string_view configured, absl::string_view state_dir,
                                                absl::string_view host) {
  if (!configured.empty()) {
    PCP_RETURN_IF_ERROR(ValidateSupervisorId(configured), _ << "supervisor_id");
    return std::string(configured);
  }
  if (state_dir.empty()) {
    return absl::InvalidArgumentError("no supervisor_id configured and no state_dir to keep a generated one in");
  }
  const std::string path = absl::StrCat(state_dir, "/", kSupervisorIdFile);
  absl::StatusOr<std::string> existing = ReadFile(path);
  if (existing.ok()) {
    std::string id(absl::StripAsciiWhitespace(*existing));
    PCP_RETURN_IF_ERROR(ValidateSupervisorId(id), _ << path);
    return id;
  }
  if (existing.status().code() != absl::StatusCode::kNotFound) return existing.status();

  // A new id: the host name (reduced to valid characters) and 32 random bits, so two
  // supervisors on one host get different ids.
  std::string prefix;
  for (char c : host) prefix.push_back(IsIdChar(c) ? c : '-');
  if (prefix.empty()) prefix = "supervisor";
  if (prefix.size() > 100) prefix.resize(100);
  std::random_device random;
  std::string id = absl::StrFormat("%s-%08x", prefix, random());
  PCP_RETURN_IF_ERROR(MakeDirs(state_dir), _ << "state_dir");
  PCP_RETURN_IF_ERROR(WriteFileAtomic(path, id + "\n"));
  return id;
}

}  // namespace pcp::supervisor
