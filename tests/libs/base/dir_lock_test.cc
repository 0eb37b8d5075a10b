#include "pcp/base/dir_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/testing/temp_dir.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

class DirLockTest : public testing::TempDirTest {};

TEST_F(DirLockTest, ASecondHolderIsRefusedWithTheFirstOnesPid) {
  absl::StatusOr<DirLock> first = DirLock::Acquire(dir_, "state_dir");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->held());
  absl::StatusOr<DirLock> second = DirLock::Acquire(dir_, "state_dir");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("state_dir '", dir_, "' is in use by process ", getpid())));
  first->Release();
  EXPECT_TRUE(DirLock::Acquire(dir_, "state_dir").ok());  // free again; the file stays
}

TEST_F(DirLockTest, ALockDiesWithItsProcessEvenBySigkill) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<DirLock> lock = DirLock::Acquire(dir_, "state_dir");
    const char byte = lock.ok() ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pause();  // until SIGKILL
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ASSERT_EQ(byte, 1) << "the child could not lock";
  absl::StatusOr<DirLock> refused = DirLock::Acquire(dir_, "state_dir");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr(absl::StrCat("in use by process ", child)));

  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  absl::StatusOr<DirLock> after = DirLock::Acquire(dir_, "state_dir");
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST_F(DirLockTest, AMissingDirectoryIsAnErrorNamingIt) {
  absl::StatusOr<DirLock> lock = DirLock::Acquire(dir_ + "/missing", "state_dir");
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr(dir_ + "/missing"));
}

TEST_F(DirLockTest, MovingKeepsTheLock) {
  absl::StatusOr<DirLock> lock = DirLock::Acquire(dir_, "state_dir");
  ASSERT_TRUE(lock.ok());
  DirLock moved = *std::move(lock);
  EXPECT_TRUE(moved.held());
  EXPECT_FALSE(DirLock::Acquire(dir_, "state_dir").ok());
}

}  // namespace
}  // namespace pcp
