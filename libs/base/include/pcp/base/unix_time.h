// Wall-clock time as Unix milliseconds: the time stamps of round records, heartbeats, events
// and registry entries.
//
//   rec.set_end_unix_ms(NowUnixMs());
#ifndef PCP_BASE_UNIX_TIME_H_
#define PCP_BASE_UNIX_TIME_H_

#include <chrono>
#include <cstdint>

namespace pcp {

inline int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pcp

#endif  // PCP_BASE_UNIX_TIME_H_
