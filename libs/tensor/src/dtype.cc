#include "pcp/tensor/dtype.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

struct DTypeInfo {
  absl::string_view mlir;
  absl::string_view safetensors;
  int64_t size;
  bool is_float;
};

constexpr std::array kInfo = {
#define PCP_DTYPE_INFO_(e, mlir, st, size, is_float) DTypeInfo{mlir, st, size, is_float},
    PCP_DTYPE_LIST(PCP_DTYPE_INFO_)
#undef PCP_DTYPE_INFO_
};

const DTypeInfo& Info(DType d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

int64_t SizeOf(DType d) { return Info(d).size; }
absl::string_view MlirName(DType d) { return Info(d).mlir; }
absl::string_view SafetensorsName(DType d) { return Info(d).safetensors; }
bool IsFloat(DType d) { return Info(d).is_float; }
bool IsInteger(DType d) { return d == DType::kI32 || d == DType::kI64; }

absl::StatusOr<DType> ParseMlirDType(absl::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].mlir == name) return static_cast<DType>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown element type '", name, "' (expected f32, f64, f16, bf16, i32, i64 or i1)"));
}

absl::StatusOr<DType> ParseSafetensorsDType(absl::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].safetensors == name) return static_cast<DType>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported safetensors dtype '", name, "' (expected F32, F64, F16, BF16, I32, I64 or BOOL)"));
}

}  // namespace pcp
