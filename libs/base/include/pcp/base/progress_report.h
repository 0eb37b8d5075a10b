// How a worker tells its supervisor that it made progress, so that the supervisor can tell
// a crash loop (a worker that dies before doing any useful work) from a worker that did
// work and then died (killed, its machine busy, a bug late in a round): the latter is
// restarted at once, the former backs off.
//
// The supervisor starts each worker with the write end of a pipe inherited at descriptor N
// and PCP_PROGRESS_FD=N in its environment; the worker writes one byte per completed round:
//
//   // worker, after sending a round's result:
//   ReportProgress();   // no-op when not started by a supervisor
//
// The byte carries no data; the supervisor only counts them (ProcessManager). Writes never
// block: with a full pipe (a supervisor not reading) the report is dropped.
#ifndef PCP_BASE_PROGRESS_REPORT_H_
#define PCP_BASE_PROGRESS_REPORT_H_

namespace pcp {

// The environment variable that names the inherited descriptor.
inline constexpr char kProgressFdEnv[] = "PCP_PROGRESS_FD";

// Writes one byte to $PCP_PROGRESS_FD if it names a pipe; otherwise does nothing. Thread-safe.
void ReportProgress();

}  // namespace pcp

#endif  // PCP_BASE_PROGRESS_REPORT_H_
