// systemd's notification protocol (sd_notify(3)) without libsystemd: one datagram to the
// AF_UNIX socket named by $NOTIFY_SOCKET. Not under systemd (or with a Type= other than
// notify, or no WatchdogSec=), the variables are unset and nothing is sent.
//
//   PCP_CHECK_OK(SdNotify("READY=1"));            // once serving (Type=notify)
//   if (SystemdWatchdogPeriod() > absl::ZeroDuration()) ... SdNotify("WATCHDOG=1") more often
//   SdNotify("STOPPING=1");
#ifndef PCP_BASE_SD_NOTIFY_H_
#define PCP_BASE_SD_NOTIFY_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pcp {

// Sends `state` ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET
// (a path, or '@' for the abstract namespace). OK and nothing sent when it is unset.
[[nodiscard]] absl::Status SdNotify(absl::string_view state);

// systemd's watchdog period ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or this process);
// zero when systemd does not watch this process.
[[nodiscard]] absl::Duration SystemdWatchdogPeriod();

}  // namespace pcp

#endif  // PCP_BASE_SD_NOTIFY_H_
