#include "checkpoint_writer.h"

#include <chrono>
#include <utility>

namespace pcp::shepherd {

CheckpointWriter::~CheckpointWriter() { Wait(); }

std::optional<CheckpointWriter::Written> CheckpointWriter::Start(uint64_t round,
                                                                 std::function<absl::StatusOr<std::string>()> write) {
  std::optional<Written> before = Wait();
  result_ = Written{.round = round};
  thread_ = std::thread([this, write = std::move(write)] {
    const auto t0 = std::chrono::steady_clock::now();
    result_.path = write();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  return before;
}

std::optional<CheckpointWriter::Written> CheckpointWriter::Wait() {
  if (!thread_.joinable()) return std::nullopt;
  thread_.join();
  return std::move(result_);
}

}  // namespace pcp::shepherd
