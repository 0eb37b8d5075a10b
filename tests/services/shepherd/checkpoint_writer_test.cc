// CheckpointWriter: writes run on their own thread, one at a time, and no result is lost.
#include "checkpoint_writer.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace pcp::shepherd {
namespace {

TEST(CheckpointWriterTest, WaitReturnsTheWriteOnceAndStartReturnsTheOneBefore) {
  CheckpointWriter writer;
  EXPECT_FALSE(writer.Wait().has_value());
  std::atomic<bool> release{false};
  std::optional<CheckpointWriter::Written> before = writer.Start(3, [&]() -> absl::StatusOr<std::string> {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::string("round-3");
  });
  EXPECT_FALSE(before.has_value());
  EXPECT_TRUE(writer.busy());  // Start returned while the write waits
  release = true;
  before = writer.Start(4, [] { return absl::StatusOr<std::string>(absl::DataLossError("disk full")); });
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->round, 3u);
  ASSERT_TRUE(before->path.ok());
  EXPECT_EQ(*before->path, "round-3");
  EXPECT_GE(before->seconds, 0.0);
  std::optional<CheckpointWriter::Written> w = writer.Wait();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->round, 4u);
  EXPECT_EQ(w->path.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(writer.Wait().has_value());
  EXPECT_FALSE(writer.busy());
}

TEST(CheckpointWriterTest, DestructorFinishesTheWriteInFlight) {
  std::atomic<bool> written{false};
  {
    CheckpointWriter writer;
    writer.Start(1, [&]() -> absl::StatusOr<std::string> {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      written = true;
      return std::string("ok");
    });
  }
  EXPECT_TRUE(written.load());
}

}  // namespace
}  // namespace pcp::shepherd
