// A fresh directory for each test, removed after it.
//
//   class MyFileTest : public pcp::testing::TempDirTest {};
//   TEST_F(MyFileTest, Writes) { WriteSomething(dir_ + "/x"); EXPECT_EQ(Listing(), {"x"}); }
#ifndef PCP_TESTING_TEMP_DIR_H_
#define PCP_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pcp::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "/pcp_test_XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The names of the entries in dir_, sorted.
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTING_TEMP_DIR_H_
