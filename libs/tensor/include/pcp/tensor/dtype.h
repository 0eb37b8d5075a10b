// Element types. Declared once in PCP_DTYPE_LIST; names, sizes and parsers derive from it.
//
//   DType t = DType::kBF16;
//   SizeOf(t) == 2; MlirName(t) == "bf16"; SafetensorsName(t) == "BF16";
//   absl::StatusOr<DType> d = ParseMlirDType("f32");
#ifndef PCP_TENSOR_DTYPE_H_
#define PCP_TENSOR_DTYPE_H_

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace pcp {

// V(enumerator, MLIR element type, safetensors dtype, size in bytes, is floating point)
// New dtypes go at the end: the enumerator values are wire ids (protos/pcp/v1/tensor.proto).
// f64 exists so imported StableHLO (which computes shapes and scales in f64) can be read and
// constant-folded exactly; the IR lowers surviving f64 values to f32 (LowerF64ToF32 in
// pcp/autodiff/passes.h) and the backends never compute on it.
#define PCP_DTYPE_LIST(V)           \
  V(kF32, "f32", "F32", 4, true)    \
  V(kF16, "f16", "F16", 2, true)    \
  V(kBF16, "bf16", "BF16", 2, true) \
  V(kI32, "i32", "I32", 4, false)   \
  V(kI64, "i64", "I64", 8, false)   \
  V(kBool, "i1", "BOOL", 1, false)  \
  V(kF64, "f64", "F64", 8, true)

enum class DType : uint8_t {
#define PCP_DTYPE_ENUM_(e, mlir, st, size, is_float) e,
  PCP_DTYPE_LIST(PCP_DTYPE_ENUM_)
#undef PCP_DTYPE_ENUM_
};

// Size of one element in bytes (bool is stored as one byte).
int64_t SizeOf(DType dtype);
// MLIR element type name: "f32", "bf16", "i1", ...
absl::string_view MlirName(DType dtype);
// safetensors header dtype: "F32", "BF16", "BOOL", ...
absl::string_view SafetensorsName(DType dtype);
bool IsFloat(DType dtype);
bool IsInteger(DType dtype);  // i32, i64 (not bool)

absl::StatusOr<DType> ParseMlirDType(absl::string_view name);
absl::StatusOr<DType> ParseSafetensorsDType(absl::string_view name);

}  // namespace pcp

#endif  // PCP_TENSOR_DTYPE_H_
