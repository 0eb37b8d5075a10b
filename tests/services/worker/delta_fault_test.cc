#include "pcp/worker/delta_fault.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp::worker {
namespace {

using ::testing::HasSubstr;

std::vector<Tensor> Delta() {
  Tensor a(DType::kF32, Shape({2}));
  a.data<float>()[0] = 3;
  a.data<float>()[1] = 0;
  Tensor b(DType::kF32, Shape({1}));
  b.data<float>()[0] = 4;  // |Δ| = 5
  return {a, b};
}

double Norm(const std::vector<Tensor>& d) {
  double sq = 0;
  for (const Tensor& t : d) {
    for (int64_t k = 0; k < t.num_elements(); ++k) sq += static_cast<double>(t.data<float>()[k]) * t.data<float>()[k];
  }
  return std::sqrt(sq);
}

TEST(DeltaFaultTest, StepsApplyInTurnAndCycle) {
  absl::StatusOr<DeltaFault> fault = DeltaFault::Parse("scale:1000/negate_scale:10/noise:20/none/nan");
  ASSERT_TRUE(fault.ok()) << fault.status();
  std::vector<Tensor> d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "scale:1000");
  EXPECT_FLOAT_EQ(d[0].data<float>()[0], 3000);
  EXPECT_FLOAT_EQ(d[1].data<float>()[0], 4000);
  d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "negate_scale:10");
  EXPECT_FLOAT_EQ(d[0].data<float>()[0], -30);
  d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "noise:20");
  EXPECT_NEAR(Norm(d), 100, 1e-3);  // 20 × |Δ|
  d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "");
  EXPECT_FLOAT_EQ(d[0].data<float>()[0], 3);
  EXPECT_EQ(fault->ApplyNext(&d), "nan");
  EXPECT_TRUE(std::isnan(d[0].data<float>()[0]));
  d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "scale:1000");  // from the start again
}

TEST(DeltaFaultTest, LieScalesTheDeltaAndDeclaresItsOldNorm) {
  absl::StatusOr<DeltaFault> fault = DeltaFault::Parse("lie:100/none");
  ASSERT_TRUE(fault.ok()) << fault.status();
  std::vector<Tensor> d = Delta();
  EXPECT_EQ(fault->ApplyNext(&d), "lie:100");
  EXPECT_FLOAT_EQ(d[0].data<float>()[0], 300);
  EXPECT_DOUBLE_EQ(fault->declared_norm_factor(), 0.01);
  EXPECT_EQ(fault->ApplyNext(&d), "");
  EXPECT_DOUBLE_EQ(fault->declared_norm_factor(), 1.0);
}

TEST(DeltaFaultTest, EmptyAndBadSpecs) {
  absl::StatusOr<DeltaFault> none = DeltaFault::Parse("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  std::vector<Tensor> d = Delta();
  EXPECT_EQ(none->ApplyNext(&d), "");
  for (const char* bad :
       {"scale", "scale:x", "scale:-1", "noise:inf", "explode:3", "lie:0", "nan:2", "scale:2//none"}) {
    absl::StatusOr<DeltaFault> f = DeltaFault::Parse(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr("--fault_delta")) << bad;
  }
}

}  // namespace
}  // namespace pcp::worker
