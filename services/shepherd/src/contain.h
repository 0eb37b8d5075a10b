// Private: runs a piece of a job's work with exceptions turned into a status, so that
// whatever a job makes the shepherd do (an allocation too large for this machine, a bug in a
// kernel) fails that job or call, never the process.
//
//   absl::Status s = Contain([&] { return run->Start(); });              // absl::Status
//   absl::StatusOr<float> loss = Contain([&] { return Evaluate(); });    // or StatusOr<T>
#ifndef PCP_SHEPHERD_SRC_CONTAIN_H_
#define PCP_SHEPHERD_SRC_CONTAIN_H_

#include <exception>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pcp::shepherd {

// `f` returns absl::Status or absl::StatusOr<T>; an exception it throws becomes
// ResourceExhausted (std::bad_alloc) or Internal (anything else).
template <typename F>
auto Contain(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory (an allocation failed)");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("internal error: ", e.what()));
  } catch (...) {
    return absl::InternalError("internal error (unknown exception)");
  }
}

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_CONTAIN_H_
