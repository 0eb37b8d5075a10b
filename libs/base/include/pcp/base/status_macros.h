// Status plumbing used across PCP: errors are values (absl::Status / StatusOr).
//
//   absl::StatusOr<Tensor> LoadShard(int i) {
//     PCP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path), _ << "loading shard " << i);
//     PCP_RETURN_IF_ERROR(Validate(bytes));
//     ...
//   }
//
// The optional last argument adds context in front of the error message, so a caller
// sees "loading shard 3: file.bin: truncated" instead of "truncated".
#ifndef PCP_BASE_STATUS_MACROS_H_
#define PCP_BASE_STATUS_MACROS_H_

#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pcp {

// Collects "context" text with operator<< and prefixes it to a status message.
class StatusContext {
 public:
  explicit StatusContext(absl::Status status) : status_(std::move(status)) {}
  template <typename T>
  StatusContext& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator absl::Status() const {  // NOLINT: implicit so macros can return it.
    std::string context = stream_.str();
    if (context.empty()) return status_;
    return absl::Status(status_.code(), context + ": " + std::string(status_.message()));
  }
  template <typename T>
  operator absl::StatusOr<T>() const {  // NOLINT
    return absl::Status(*this);
  }

 private:
  absl::Status status_;
  std::ostringstream stream_;
};

// Returns `status` with `context` prepended to its message ("context: message").
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), std::string(context) + ": " + std::string(status.message()));
}

}  // namespace pcp

#define PCP_STATUS_CONCAT_INNER_(a, b) a##b
#define PCP_STATUS_CONCAT_(a, b) PCP_STATUS_CONCAT_INNER_(a, b)

// PCP_RETURN_IF_ERROR(expr [, _ << "context"]): returns the status of `expr` if not ok.
#define PCP_RETURN_IF_ERROR(expr, ...)                                 \
  do {                                                                 \
    ::absl::Status pcp_status_ = (expr);                               \
    if (!pcp_status_.ok()) {                                           \
      [[maybe_unused]] ::pcp::StatusContext _(std::move(pcp_status_)); \
      return (__VA_OPT__((__VA_ARGS__), ) _);                          \
    }                                                                  \
  } while (0)

// PCP_ASSIGN_OR_RETURN(lhs, statusor_expr [, _ << "context"]).
#define PCP_ASSIGN_OR_RETURN(lhs, expr, ...) \
  PCP_ASSIGN_OR_RETURN_IMPL_(PCP_STATUS_CONCAT_(pcp_statusor_, __LINE__), lhs, expr __VA_OPT__(, ) __VA_ARGS__)
#define PCP_ASSIGN_OR_RETURN_IMPL_(var, lhs, expr, ...)               \
  auto var = (expr);                                                  \
  if (!var.ok()) {                                                    \
    [[maybe_unused]] ::pcp::StatusContext _(std::move(var).status()); \
    return (__VA_OPT__((__VA_ARGS__), ) _);                           \
  }                                                                   \
  lhs = std::move(var).value()

#endif  // PCP_BASE_STATUS_MACROS_H_
