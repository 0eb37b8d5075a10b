// DrawInit (pcp/tensor/init_recipe.h): the documented generator, one normal stream across the
// rules in order, constants that draw nothing, and errors for a recipe that does not fit.
#include "pcp/tensor/init_recipe.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.byte_size()) == 0;
}

TEST(InitRecipeTest, DocumentedGeneratorConstantsAndOneStreamInOrder) {
  const InitRecipe r{.seed = 1337,
                     .params = {ParamInit::Normal(0.02), ParamInit::Ones(), ParamInit::Zeros(),
                                ParamInit::Normal(1.0)}};
  absl::StatusOr<std::vector<Tensor>> t = DrawInit(r, {{3}, {2, 2}, {5}, {4}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 4u);
  // SplitMix64 + Box-Muller for seed 1337, evaluated independently in Python: the first pair of
  // normals times 0.02, rounded to f32.
  EXPECT_EQ((*t)[0].data<float>()[0], 0.004575659055262804f);
  EXPECT_EQ((*t)[0].data<float>()[1], -0.015783192589879036f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*t)[1].data<float>()[i], 1.0f);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*t)[2].data<float>()[i], 0.0f);
  // The first tensor's odd leftover normal is dropped; the constants draw nothing: the last
  // rule continues the stream where a 4-element tensor after the first would.
  absl::StatusOr<std::vector<Tensor>> direct =
      DrawInit({.seed = 1337, .params = {ParamInit::Normal(0.02), ParamInit::Normal(1.0)}}, {{3}, {4}});
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_TRUE(SameBits((*t)[0], (*direct)[0]));
  EXPECT_TRUE(SameBits((*t)[3], (*direct)[1]));
  // The same recipe draws the same bits; another seed other values.
  absl::StatusOr<std::vector<Tensor>> again = DrawInit(r, {{3}, {2, 2}, {5}, {4}});
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(SameBits((*t)[i], (*again)[i])) << i;
  InitRecipe other = r;
  other.seed = 1338;
  EXPECT_FALSE(SameBits((*t)[0], (*DrawInit(other, {{3}, {2, 2}, {5}, {4}}))[0]));
}

TEST(InitRecipeTest, NormalsHaveTheirStd) {
  absl::StatusOr<std::vector<Tensor>> t = DrawInit({.seed = 7, .params = {ParamInit::Normal(0.5)}}, {{100, 100}});
  ASSERT_TRUE(t.ok()) << t.status();
  double sum = 0, sum_sq = 0;
  const float* p = (*t)[0].data<float>();
  for (int i = 0; i < 10000; ++i) sum += p[i], sum_sq += static_cast<double>(p[i]) * p[i];
  EXPECT_NEAR(sum / 10000, 0.0, 0.02);  // 4 standard errors of the mean (0.005)
  EXPECT_NEAR(std::sqrt(sum_sq / 10000), 0.5, 0.02);
}

TEST(InitRecipeTest, ErrorsNameTheRule) {
  absl::Status count = DrawInit({.seed = 1, .params = {ParamInit::Zeros()}}, {{2}, {3}}).status();
  EXPECT_EQ(count.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(count.message(), HasSubstr("1 rules for 2 parameters"));
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    absl::Status s = DrawInit({.seed = 1, .params = {ParamInit::Zeros(), ParamInit::Normal(bad)}}, {{2}, {3}}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("rule 1")) << bad;
  }
}

}  // namespace
}  // namespace pcp
