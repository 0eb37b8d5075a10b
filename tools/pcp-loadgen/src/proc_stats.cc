#include "pcp/loadgen/proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pcp::loadgen {
namespace {

// "  1234 kB" -> 1234 * 1024.
absl::StatusOr<int64_t> KiloBytes(absl::string_view value, absl::string_view key) {
  value = absl::StripAsciiWhitespace(value);
  if (!absl::ConsumeSuffix(&value, "kB")) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": expected a value in kB, got '", value, "'"));
  }
  int64_t kb = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &kb) || kb < 0) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": not a number of kB: '", value, "'"));
  }
  return kb * 1024;
}

absl::StatusOr<std::string> ReadProcFile(int pid, absl::string_view name) {
  const std::string path = absl::StrCat("/proc/", pid, "/", name);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open (is process ", pid, " gone?)"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Prefixed(int pid, absl::string_view name, const absl::Status& s) {
  return absl::StrCat("/proc/", pid, "/", name, ": ", s.message());
}

}  // namespace

absl::StatusOr<ProcMemory> ParseProcStatus(absl::string_view text) {
  ProcMemory m;
  bool rss = false, hwm = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (kv.first == "VmRSS") {
      absl::StatusOr<int64_t> v = KiloBytes(kv.second, kv.first);
      if (!v.ok()) return v.status();
      m.rss_bytes = *v;
      rss = true;
    } else if (kv.first == "VmHWM") {
      absl::StatusOr<int64_t> v = KiloBytes(kv.second, kv.first);
      if (!v.ok()) return v.status();
      m.hwm_bytes = *v;
      hwm = true;
    }
  }
  if (!rss || !hwm) return absl::InvalidArgumentError(absl::StrCat("no ", rss ? "VmHWM" : "VmRSS", " line"));
  return m;
}

absl::StatusOr<double> ParseProcStatCpuSeconds(absl::string_view text, int64_t ticks_per_second) {
  if (ticks_per_second <= 0) return absl::InvalidArgumentError("ticks per second must be > 0");
  const size_t close = text.rfind(')');
  if (close == absl::string_view::npos) return absl::InvalidArgumentError("no ')' after the command name");
  // After "pid (comm)": field 3 (state) is the first; utime and stime are fields 14 and 15.
  std::vector<absl::string_view> fields =
      absl::StrSplit(text.substr(close + 1), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  if (fields.size() <= kStime) {
    return absl::InvalidArgumentError(
        absl::StrCat("only ", fields.size() + 2, " fields, utime and stime are 14 and 15"));
  }
  int64_t utime = 0, stime = 0;
  if (!absl::SimpleAtoi(fields[kUtime], &utime) || !absl::SimpleAtoi(fields[kStime], &stime) || utime < 0 ||
      stime < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("utime/stime are not tick counts: '", fields[kUtime], "', '", fields[kStime], "'"));
  }
  return static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
}

absl::StatusOr<ProcMemory> ReadProcMemory(int pid) {
  absl::StatusOr<std::string> text = ReadProcFile(pid, "status");
  if (!text.ok()) return text.status();
  absl::StatusOr<ProcMemory> m = ParseProcStatus(*text);
  if (!m.ok()) return absl::InvalidArgumentError(Prefixed(pid, "status", m.status()));
  return m;
}

absl::StatusOr<double> ReadProcCpuSeconds(int pid) {
  absl::StatusOr<std::string> text = ReadProcFile(pid, "stat");
  if (!text.ok()) return text.status();
  absl::StatusOr<double> s = ParseProcStatCpuSeconds(*text, sysconf(_SC_CLK_TCK));
  if (!s.ok()) return absl::InvalidArgumentError(Prefixed(pid, "stat", s.status()));
  return s;
}

}  // namespace pcp::loadgen
