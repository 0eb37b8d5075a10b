#include "pcp/tensor/tensor.h"

#include <cstdint>
#include <cstdlib>

#include "gtest/gtest.h"

namespace pcp {
namespace {

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kBool, DType::kF64}) {
    EXPECT_EQ(*ParseMlirDType(MlirName(d)), d);
    EXPECT_EQ(*ParseSafetensorsDType(SafetensorsName(d)), d);
  }
  EXPECT_EQ(SizeOf(DType::kBF16), 2);
  EXPECT_EQ(SizeOf(DType::kF64), 8);
  EXPECT_TRUE(IsFloat(DType::kF64));
  EXPECT_FALSE(IsInteger(DType::kF64));
  EXPECT_FALSE(ParseMlirDType("f80").ok());
  EXPECT_FALSE(ParseSafetensorsDType("F8_E4M3").ok());
}

TEST(ShapeTest, Basics) {
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 3, 4}), 24);
  EXPECT_EQ(RowMajorStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(ShapeToString({2, 3}), "2x3");
}

TEST(TensorTest, ZeroFilledAlignedAndCloneIsDeep) {
  Tensor t(DType::kF32, {3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  for (float v : t.ToVector<float>()) EXPECT_EQ(v, 0.0f);
  Tensor alias = t;
  Tensor copy = t.Clone();
  t.data<float>()[2] = 7.0f;
  EXPECT_EQ(alias.data<float>()[2], 7.0f);
  EXPECT_EQ(copy.data<float>()[2], 0.0f);
  EXPECT_FALSE(BitwiseEqual(t, copy));
  EXPECT_EQ(t.TypeString(), "f32[3x5]");
}

TEST(TensorTest, LargeTensorsStartOnAHugePageAndKeepTheirContentsWhenAdvised) {
  // Sizes below, at and past kHugePageBytes, and one not a multiple of it.
  for (int64_t elements : {int64_t{300000}, int64_t{524288}, int64_t{1000003}, int64_t{3 << 20}}) {
    Tensor t(DType::kF32, {elements});
    const bool large = t.byte_size() >= static_cast<int64_t>(kHugePageBytes);
    if (large) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kHugePageBytes, 0u) << elements;
      AdviseHugePages(t);  // true where the kernel has THP; either way a hint only
    } else {
      EXPECT_FALSE(AdviseHugePages(t)) << elements;
    }
    float* v = t.data<float>();
    for (int64_t i = 0; i < elements; ++i) ASSERT_EQ(v[i], 0.0f) << elements << "[" << i << "]";
    for (int64_t i = 0; i < elements; ++i) v[i] = static_cast<float>(i % 1009);
    const Tensor copy = t.Clone();
    for (int64_t i = 0; i < elements; i += 997) ASSERT_EQ(copy.data<float>()[i], static_cast<float>(i % 1009));
  }
  EXPECT_FALSE(AdviseHugePages(Tensor()));
  // Raw memory: only from a huge page boundary, and only whole huge pages.
  void* p = std::aligned_alloc(kHugePageBytes, 2 * kHugePageBytes);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(AdviseHugePages(static_cast<char*>(p) + 4096, kHugePageBytes));
  EXPECT_FALSE(AdviseHugePages(p, kHugePageBytes - 1));
  std::free(p);
}

}  // namespace
}  // namespace pcp
