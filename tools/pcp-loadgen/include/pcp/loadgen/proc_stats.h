// A process's memory and CPU time as Linux reports them in /proc, for watching a shepherd
// under load from outside it.
//
//   PCP_ASSIGN_OR_RETURN(ProcMemory m, ReadProcMemory(pid));     // VmRSS, VmHWM in bytes
//   PCP_ASSIGN_OR_RETURN(double cpu_s, ReadProcCpuSeconds(pid));  // utime + stime, in s
//
// The parsers take the files' text, so they can be tested without a process:
//   ParseProcStatus("VmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")  -> {rss 1 MiB, hwm 2 MiB}
//   ParseProcStatCpuSeconds("42 (a b) S 1 ... 14th 15th ...", 100)  -> (utime + stime) / 100
// Errors are InvalidArgument naming the file and the field ("/proc/7/status: no VmRSS
// line"), NotFound for a process that is gone.
#ifndef PCP_LOADGEN_PROC_STATS_H_
#define PCP_LOADGEN_PROC_STATS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::loadgen {

struct ProcMemory {
  int64_t rss_bytes = 0;  // VmRSS: resident now
  int64_t hwm_bytes = 0;  // VmHWM: the most that was ever resident
};

// The VmRSS and VmHWM lines of /proc/PID/status ("VmRSS:\t  1234 kB").
absl::StatusOr<ProcMemory> ParseProcStatus(absl::string_view text);
// utime + stime (fields 14 and 15 of /proc/PID/stat, in clock ticks) / ticks_per_second.
// The command name (field 2) may hold spaces and parentheses: fields are counted after its
// last ')'.
absl::StatusOr<double> ParseProcStatCpuSeconds(absl::string_view text, int64_t ticks_per_second);

absl::StatusOr<ProcMemory> ReadProcMemory(int pid);
absl::StatusOr<double> ReadProcCpuSeconds(int pid);

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_PROC_STATS_H_
