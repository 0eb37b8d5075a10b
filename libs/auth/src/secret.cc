#include "pcp/auth/secret.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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
    return absl::NotFoundError(
        absl::StrCat("credential:", name, ": $CREDENTIALS_DIRECTORY is not set (systemd LoadCredential= sets it)"));
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
    if (std::strlen(value) > kMaxSecretFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": longer than ", kMaxSecretFileBytes, " bytes"));
    }
    secret = value;
  } else {
    if (source.empty())
      return absl::InvalidArgumentError("empty secret source (expected file:PATH, env:NAME or credential:NAME)");
    absl::StatusOr<std::string> path = ResolveCredentialPath(source);
    if (!path.ok()) return path.status();
    struct stat st;
    if (::stat(path->c_str(), &st) != 0 && errno == ENOENT) {
      // The value may be the token itself, given where its file was expected: never repeat it.
      const bool named = absl::StartsWith(source, kCredential);
      return absl::NotFoundError(named ? absl::StrCat(source, ": no such file ", *path)
                                       : "no such file (the value given is not repeated, in case it is the token "
                                         "itself: give the path of a file that holds it, or env:NAME / "
                                         "credential:NAME)");
    }
    if (S_ISREG(st.st_mode) && st.st_size > static_cast<off_t>(kMaxSecretFileBytes)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": the file has ", st.st_size,
                                                     " bytes; a token file holds "
                                                     "one line of at most ",
                                                     kMaxSecretBytes, " characters"));
    }
    absl::StatusOr<std::string> contents = ReadFile(*path);
    // ReadFile's message names the path only (it exists: a path, not a token); the contents
    // never appear in an error.
    if (!contents.ok())
      return absl::Status(contents.status().code(), absl::StrCat(source, ": ", contents.status().message()));
    secret = *std::move(contents);
  }
  absl::StripTrailingAsciiWhitespace(&secret);
  if (secret.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": the secret is empty"));
  if (absl::Status s = CheckToken(secret); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
  return secret;
}

absl::Status CheckToken(absl::string_view token) {
  if (token.size() > kMaxSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the token is longer than ", kMaxSecretBytes, " characters"));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c == '\n' || c == '\r') {
      return absl::InvalidArgumentError(
          "the token spans more than one line: a token is one line (its bytes are "
          "not shown)");
    }
    if (c <= 0x20 || c >= 0x7F) {
      return absl::InvalidArgumentError(absl::StrCat("character ", i + 1,
                                                     " of the token is a space, a control "
                                                     "character or not ASCII: a token is printable ASCII without "
                                                     "spaces (its bytes are not shown)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace pcp::auth
