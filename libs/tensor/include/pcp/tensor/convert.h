// Element conversions between dtypes: scalar bf16/f16 <-> f32 bit conversions and whole
// tensor conversion.
//
//   uint16_t b = FloatToBFloat16(1.0f);            // 0x3F80
//   float f = HalfToFloat(0x3C00);                 // 1.0f
//   PCP_ASSIGN_OR_RETURN(Tensor h, ConvertTensor(weights, DType::kF16));
//
// Rounding is IEEE round-to-nearest-even (ties go to the even significand), independent
// of the FPU rounding mode, and matches PyTorch's and NumPy's conversions bit for bit for
// all non-NaN inputs.
//   - bf16: values beyond the bf16 range round to +-inf; +-inf stay +-inf; a NaN stays a
//     NaN with its sign and top payload bits, and is made quiet.
//   - f16: |x| >= 65520 rounds to +-inf (65504 is the largest finite half); results below
//     2^-14 become correctly rounded subnormals or +-0; a NaN stays a NaN with its sign and
//     top payload bits (as NumPy does), so HalfToFloat followed by FloatToHalf returns
//     every one of the 65536 half bit patterns unchanged.
//   - HalfToFloat and BFloat16ToFloat are exact.
#ifndef PCP_TENSOR_CONVERT_H_
#define PCP_TENSOR_CONVERT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "pcp/tensor/dtype.h"
#include "pcp/tensor/tensor.h"

namespace pcp {

uint16_t FloatToBFloat16(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);

// Returns a new tensor (own storage, same shape) holding `input`'s elements as `to`.
// Converting to the same dtype returns a deep copy. Rules:
//   - between floating types (f64, f32, f16, bf16): rounded as above (one rounding, no double
//     rounding through f32; f64 -> f16/bf16 rounds to odd in f32 first, which is exact);
//     f64 beyond the f32 range becomes +-inf;
//   - integer -> floating: correctly rounded to nearest even (i64 -> f16 too);
//   - floating -> integer: truncates toward zero like a C cast; where a C cast would be
//     undefined, NaN gives 0 and out-of-range values saturate to the type's min/max;
//   - i64 -> i32 keeps the low 32 bits (two's complement), like a C cast;
//   - anything -> bool: value != 0 (NaN -> true); bool -> anything: 0 or 1 (any nonzero
//     stored byte counts as true).
// Fails with INVALID_ARGUMENT only for an invalid (default-constructed) input.
absl::StatusOr<Tensor> ConvertTensor(const Tensor& input, DType to);

}  // namespace pcp

#endif  // PCP_TENSOR_CONVERT_H_
