#include "pcp/conformance/isolated.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace pcp::conformance {
namespace {

// verdict, then the lacks (0x1F-separated), then the reason, separated by 0x1E.
std::string Encode(const CaseResult& r) {
  return absl::StrCat(static_cast<int>(r.verdict), "\x1e", r.checks, "\x1e", absl::StrJoin(r.lacks, "\x1f"), "\x1e",
                      r.reason);
}

bool Decode(const std::string& s, CaseResult* r) {
  std::vector<std::string> parts = absl::StrSplit(s, absl::MaxSplits('\x1e', 3));
  if (parts.size() != 4 || parts[0].size() != 1 || parts[0][0] < '0' || parts[0][0] > '2') return false;
  r->verdict = static_cast<Verdict>(parts[0][0] - '0');
  r->checks = std::atoi(parts[1].c_str());
  if (!parts[2].empty()) r->lacks = absl::StrSplit(parts[2], '\x1f');
  r->reason = parts[3];
  return true;
}

bool WriteAll(int fd, const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

CaseResult RunIsolated(const std::function<CaseResult()>& run, int timeout_s) {
  CaseResult failed;
  int fds[2];
  if (pipe(fds) != 0) {
    failed.reason = absl::StrCat("pipe: ", std::strerror(errno));
    return failed;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    failed.reason = absl::StrCat("fork: ", std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return failed;
  }
  if (pid == 0) {  // the child: run, report, leave without running the parent's exit handlers
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_s));
    const bool ok = WriteAll(fds[1], Encode(run()));
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    failed.reason = sig == SIGALRM ? absl::StrCat("timed out after ", timeout_s, " s")
                                   : absl::StrCat("crashed: signal ", sig, " (", strsignal(sig), ")");
    return failed;
  }
  CaseResult result;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !Decode(out, &result)) {
    failed.reason = absl::StrCat("the case's process exited with status ", WEXITSTATUS(status), " without a result");
    return failed;
  }
  return result;
}

}  // namespace pcp::conformance
