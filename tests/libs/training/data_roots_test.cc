#include "pcp/training/data_roots.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/training/dataset.h"
#include "pcp/training/job_config.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// A fresh folder with a data root inside it and a secret beside it (outside the root).
class DataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    top_ = (fs::path(::testing::TempDir()) / "pcp_data_roots_test" / info->name()).string();
    fs::remove_all(top_);
    fs::create_directories(root_ = top_ + "/root");
    Write(root_ + "/good.txt", "hello, data\n");
    Write(top_ + "/secret.txt", "not for you\n");
    fs::create_symlink(top_ + "/secret.txt", root_ + "/link_out.txt");
    fs::create_symlink(top_ + "/no_such_secret.txt", root_ + "/link_out_missing.txt");
    fs::create_symlink(root_ + "/good.txt", root_ + "/link_in.txt");
    ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  }
  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  DataRoots Roots(int64_t cap = 1 << 20) const { return *DataRoots::Confined({root_}, cap); }

  // Refused, with exactly the refusal message of `path`: a function of the path alone.
  void ExpectRefused(const DataRoots& roots, const std::string& path) {
    absl::StatusOr<std::string> bytes = roots.Read(path);
    ASSERT_FALSE(bytes.ok()) << path << " was read";
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kPermissionDenied) << path;
    EXPECT_EQ(Message(bytes.status()), roots.RefusalMessage(path));
    EXPECT_EQ(roots.Check(path).status(), bytes.status());
    std::cout << "refused: " << bytes.status().message() << "\n";
  }

  std::string top_, root_;
};

TEST_F(DataRootsTest, ReadsRegularFilesInsideTheRoots) {
  DataRoots roots = Roots();
  EXPECT_EQ(*roots.Read(root_ + "/good.txt"), "hello, data\n");
  EXPECT_EQ(*roots.Read(root_ + "/link_in.txt"), "hello, data\n");  // a symlink within the root
  EXPECT_EQ(*roots.Read(root_ + "/../root/./good.txt"), "hello, data\n");
  EXPECT_EQ(*roots.Check(root_ + "/link_in.txt"), fs::canonical(root_ + "/good.txt").string());
}

// issue 10, must-show 3: each refused, with a message that does not depend on whether the
// target exists (the existing target and a missing twin get the same message, up to the path).
TEST_F(DataRootsTest, RefusesEscapesDevicesPseudoFilesAndFifosAlike) {
  DataRoots roots = Roots();
  const std::vector<std::string> refused = {
      "/etc/passwd",
      "/etc/no_such_file",
      root_ + "/../secret.txt",          // ../ escape to a file that exists
      root_ + "/../no_such_secret.txt",  // ... and to one that does not
      root_ + "/link_out.txt",           // symlink out of the root
      root_ + "/link_out_missing.txt",   // ... to a target that does not exist
      "/dev/zero",
      "/proc/self/environ",
      root_ + "/fifo",
      root_ + "/no_such_file.txt",
      root_,  // a directory
      "",
  };
  for (const std::string& path : refused) ExpectRefused(roots, path);
  // The two messages differ only in the path they quote.
  EXPECT_EQ(roots.RefusalMessage("X"), Message(roots.Read("X").status()));
}

// A hard link placed in the root to a file outside it (as to /etc/passwd; here a secret of
// the test's own) is refused: by its name it is inside. So is a data file hard-linked
// elsewhere; unconfined reads (the user's own files) take both.
TEST_F(DataRootsTest, RefusesFilesWithMoreThanOneHardLink) {
  std::error_code ec;
  fs::create_hard_link(top_ + "/secret.txt", root_ + "/hard_secret.txt", ec);
  ASSERT_FALSE(ec) << ec.message();
  DataRoots roots = Roots();
  ExpectRefused(roots, root_ + "/hard_secret.txt");
  EXPECT_EQ(*DataRoots::Unconfined().Read(root_ + "/hard_secret.txt"), "not for you\n");
  fs::remove(top_ + "/secret.txt");  // now its only link is in the root: an ordinary data file
  EXPECT_EQ(*roots.Read(root_ + "/hard_secret.txt"), "not for you\n");
}

TEST_F(DataRootsTest, TypeChecksHoldEvenWithTheWholeFileSystemAsRoot) {
  DataRoots everything = *DataRoots::Confined({"/"});
  EXPECT_TRUE(everything.Read(root_ + "/good.txt").ok());
  ExpectRefused(everything, "/dev/zero");
  ExpectRefused(everything, "/proc/self/environ");  // a "regular file" of /proc
  ExpectRefused(everything, root_ + "/fifo");
}

TEST_F(DataRootsTest, SizeCapAndEmptyRootList) {
  ExpectRefused(Roots(/*cap=*/5), root_ + "/good.txt");  // 12 bytes > 5
  EXPECT_TRUE(Roots(/*cap=*/12).Read(root_ + "/good.txt").ok());
  DataRoots none = *DataRoots::Confined({});
  EXPECT_THAT(none.Describe(), HasSubstr("nothing may be read"));
  ExpectRefused(none, root_ + "/good.txt");
  EXPECT_FALSE(DataRoots::Confined({root_}, 0).ok());
  EXPECT_FALSE(DataRoots::Confined({""}).ok());
}

TEST_F(DataRootsTest, UnconfinedSaysWhatIsWrong) {
  DataRoots local = DataRoots::Unconfined();
  EXPECT_EQ(*local.Read(top_ + "/secret.txt"), "not for you\n");
  EXPECT_EQ(local.Read(root_ + "/nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(local.Read("/dev/zero").status()), HasSubstr("not a regular file"));
  EXPECT_THAT(Message(local.Read(root_ + "/fifo").status()), HasSubstr("not a regular file"));
  EXPECT_THAT(Message(local.Read("/proc/self/environ").status()), HasSubstr("pseudo-file"));
}

// The job file reports a refused data.path at its line, with the same message for a file
// that exists and one that does not.
TEST_F(DataRootsTest, JobConfigRefusesDataOutsideTheRoots) {
  DataRoots roots = Roots();
  auto parse = [&](const std::string& path) {
    return ParseJobConfig("data:\n  path: " + path + "\n  format: text_byte\n", "job.yaml", root_, roots);
  };
  EXPECT_TRUE(parse("good.txt").ok());
  for (const std::string& path :
       {std::string("/etc/passwd"), std::string("/etc/no_such_file"), std::string("/proc/self/environ"),
        std::string("../secret.txt"), std::string("../no_such_secret.txt"), std::string("fifo")}) {
    absl::StatusOr<JobConfig> job = parse(path);
    ASSERT_FALSE(job.ok()) << path;
    const std::string resolved = (fs::path(root_) / path).lexically_normal().string();
    const std::string shown = path[0] == '/' ? path : resolved;
    EXPECT_EQ(Message(job.status()), "job.yaml:2:9: data.path: " + roots.RefusalMessage(shown));
  }
  // Loading goes through the roots too (a file swapped after parsing is refused).
  absl::StatusOr<JobConfig> job = parse("good.txt");
  ASSERT_TRUE(job.ok());
  job->data.path = top_ + "/secret.txt";
  EXPECT_EQ(LoadJobDataset(&*job, roots).status().code(), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace pcp
