#include "pcp/base/file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/testing/temp_dir.h"

namespace pcp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, removed at the end of the test.
class FileTest : public testing::TempDirTest {};

TEST_F(FileTest, WriteThenReadRoundTripsBinaryBytes) {
  std::string bytes("a\0b\n\xff\x00z", 7);
  std::string path = dir_ + "/data.bin";
  ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  EXPECT_EQ(fs::file_size(path), 7u);
}

TEST_F(FileTest, EmptyAndLargeFiles) {
  std::string path = dir_ + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, "").ok());
  EXPECT_EQ(*ReadFile(path), "");
  std::string big(3 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  ASSERT_TRUE(WriteFileAtomic(path, big).ok());
  EXPECT_EQ(*ReadFile(path), big);
}

TEST_F(FileTest, OverwriteReplacesContentAndLeavesNoTempFile) {
  std::string path = dir_ + "/ckpt.json";
  ASSERT_TRUE(WriteFileAtomic(path, "old contents, longer than the new").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "new").ok());
  EXPECT_EQ(*ReadFile(path), "new");
  EXPECT_THAT(Listing(), ElementsAre("ckpt.json"));
}

TEST_F(FileTest, NewFileModeHonoursUmask) {
  mode_t mask = ::umask(022);
  ::umask(mask);
  std::string path = dir_ + "/m";
  ASSERT_TRUE(WriteFileAtomic(path, "x").ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~mask);
}

TEST_F(FileTest, PartsAreWrittenInOrder) {
  std::string path = dir_ + "/parts";
  std::string big(100000, 'q');
  std::vector<absl::string_view> parts = {"head|", "", big, "|tail"};
  ASSERT_TRUE(WriteFileAtomicParts(path, parts).ok());
  EXPECT_EQ(*ReadFile(path), "head|" + big + "|tail");
  EXPECT_THAT(Listing(), ElementsAre("parts"));
}

TEST_F(FileTest, AppendCreatesThenExtends) {
  const std::string path = dir_ + "/log.bin";
  ASSERT_TRUE(AppendFile(path, "abc", /*sync=*/true).ok());
  ASSERT_TRUE(AppendFile(path, std::string("\0d", 2), /*sync=*/false).ok());
  EXPECT_EQ(*ReadFile(path), std::string("abc\0d", 5));
  absl::Status s = AppendFile(dir_ + "/no/such/dir/x", "x", true);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no/such/dir/x"), std::string::npos) << s;
}

TEST_F(FileTest, ReadMissingFileIsNotFoundNamingThePath) {
  std::string path = dir_ + "/missing.txt";
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("No such file or directory"));
}

TEST_F(FileTest, ReadDirectoryFails) {
  absl::StatusOr<std::string> read = ReadFile(dir_);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(dir_));
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("Is a directory"));
}

TEST_F(FileTest, ReadsFilesWhoseSizeStatDoesNotKnow) {
  // /proc files report size 0; ReadFile must read to EOF anyway.
  absl::StatusOr<std::string> read = ReadFile("/proc/self/status");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, HasSubstr("Name:"));
}

TEST_F(FileTest, WriteIntoMissingDirectoryFailsAndNamesIt) {
  std::string path = dir_ + "/no/such/dir/x";
  absl::Status s = WriteFileAtomic(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir_ + "/no/such/dir"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("No such file or directory"));
}

TEST_F(FileTest, WriteOverADirectoryFailsAndCleansUp) {
  std::string target = dir_ + "/sub";
  ASSERT_TRUE(fs::create_directory(target));
  ASSERT_TRUE(WriteFileAtomic(target + "/keep", "k").ok());
  absl::Status s = WriteFileAtomic(target, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(target));
  // The directory is untouched and no temporary file is left beside it.
  EXPECT_THAT(Listing(), ElementsAre("sub"));
  EXPECT_EQ(*ReadFile(target + "/keep"), "k");
}

TEST_F(FileTest, WriteRejectsPathsNamingDirectories) {
  EXPECT_EQ(WriteFileAtomic("", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFileAtomic(dir_ + "/", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFileAtomic(dir_ + "/..", "x").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FileTest, RelativePathsUseTheWorkingDirectory) {
  fs::path old = fs::current_path();
  fs::current_path(dir_);
  absl::Status s = WriteFileAtomic("rel.txt", "r");
  fs::current_path(old);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(*ReadFile(dir_ + "/rel.txt"), "r");
  EXPECT_THAT(Listing(), ElementsAre("rel.txt"));
}

TEST_F(FileTest, MakeDirsCreatesParentsAndIsIdempotent) {
  std::string path = dir_ + "/a/b//c/./d/";
  ASSERT_TRUE(MakeDirs(path).ok());
  EXPECT_TRUE(fs::is_directory(dir_ + "/a/b/c/d"));
  EXPECT_TRUE(MakeDirs(path).ok());
  EXPECT_TRUE(MakeDirs(dir_ + "/a/b").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/a/b/c/d/f", "x").ok());
}

TEST_F(FileTest, MakeDirsFailsWhenAComponentIsAFile) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/file", "x").ok());
  absl::Status s = MakeDirs(dir_ + "/file/sub");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir_ + "/file"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not a directory"));
  s = MakeDirs(dir_ + "/file");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(MakeDirs("").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp
