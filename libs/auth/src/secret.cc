#include "pcp/auth/secret.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/base/file.h"

namespace pcp::auth {
namespace {

constexpr absl::string_view kFile = "file:";
constexpr absl::string_view kEnv = "env:";
constexpr absl::string_view kCredential = "credential:";

absl::StatusOr<std::string> CredentialPath(absl::string_view name) {
  // A name with a slash could walk out of the directory systemd made for this service.
  if (name.empty() || absl::StrContains(name, '/') || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("credential:", name, ": expected a credential name without '/'"));
  }
  const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
  if (dir == nullptr || *dir == '\0') {
    return absl::NotFoundError(absl::StrCat("credential:", name,
                                            ": $CREDENTIALS_DIRECTORY is not set (systemd LoadCredential= sets it)"));
  }
  return absl::StrCat(dir, "/", name);
}

}  // namespace

absl::StatusOr<std::string> ResolveCredentialPath(absl::string_view source) {
  if (absl::ConsumePrefix(&source, kCredential)) return CredentialPath(source);
  if (absl::StartsWith(source, kEnv)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": a file is needed here (file:PATH or credential:NAME)"));
  }
  absl::ConsumePrefix(&source, kFile);
  return std::string(source);
}

absl::StatusOr<std::string> LoadSecret(absl::string_view source) {
  std::string secret;
  if (absl::StartsWith(source, kEnv)) {
    const std::string name(source.substr(kEnv.size()));
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if (value == nullptr) return absl::NotFoundError(absl::StrCat(source, ": environment variable not set"));
    secret = value;
  } else {
    if (source.empty()) return absl::InvalidArgumentError("empty secret source (expected file:PATH, env:NAME or credential:NAME)");
    absl::StatusOr<std::string> path = ResolveCredentialPath(source);
    if (!path.ok()) return path.status();
    absl::StatusOr<std::string> contents = ReadFile(*path);
    // ReadFile's message names the path only; the contents never appear in an error.
    if (!contents.ok()) return absl::Status(contents.status().code(), absl::StrCat(source, ": ", contents.status().message()));
    secret = *std::move(contents);
  }
  absl::StripTrailingAsciiWhitespace(&secret);
  if (secret.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": the secret is empty"));
  return secret;
}

}  // namespace pcp::auth
