// Test-only: a gtest fixture with one real pcp-shepherd process (no supervisors) in a fresh
// temporary directory, started before each test and stopped (checked) after it.
//
//   class MyTest : public pcp::testing::ShepherdOnlyTest {};
//   TEST_F(MyTest, X) { cluster_->Pcpctl({"jobs"}); ... }
#ifndef PCP_TESTS_SERVICES_E2E_SHEPHERD_FIXTURE_H_
#define PCP_TESTS_SERVICES_E2E_SHEPHERD_FIXTURE_H_

#include <memory>

#include "cluster_harness.h"
#include "gtest/gtest.h"

namespace pcp::testing {

class ShepherdOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TempDir> dir = TempDir::Create();
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
    cluster_ = std::make_unique<ClusterHarness>(dir_->path());
    ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  }
  void TearDown() override {
    if (cluster_ != nullptr) {
      EXPECT_TRUE(cluster_->StopAll().ok()) << cluster_->Logs();
    }
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ClusterHarness> cluster_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_SHEPHERD_FIXTURE_H_
