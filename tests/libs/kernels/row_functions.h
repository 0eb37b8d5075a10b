// Row functions that the CPU and Vulkan row-kernel tests (row_kernel_test.cc,
// vulkan_row_kernel_test.cc) both run: LayerNorm forward and backward over [kB, kT, c] rows, as
// the GPT model builds them (libs/models/src/gpt.cc), and their arguments, the rows holding
// special values.
//
//   FunctionBuilder b("layer_norm");
//   AddLayerNormForward(b, c);                    // parameters and results added to b
//   std::vector<Tensor> args = RowArgs(*b.Build(), /*special=*/true);
#ifndef PCP_TESTS_LIBS_KERNELS_ROW_FUNCTIONS_H_
#define PCP_TESTS_LIBS_KERNELS_ROW_FUNCTIONS_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "pcp/autodiff/builder.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::testing {

// 111 rows: not a multiple of 16 (the CPU's lanes) nor of any Vulkan rows-per-group.
inline constexpr int64_t kRowsB = 3, kRowsT = 37;

inline TensorType RowF32(Shape s) { return {DType::kF32, std::move(s)}; }

// LayerNorm statistics over the last axis of x ([kRowsB, kRowsT, c]).
struct LayerNormStats {
  ValueId centered, mean, rstd;
};

inline LayerNormStats AddLayerNormStats(FunctionBuilder& b, ValueId x, const Shape& s) {
  ValueId inv_c = b.ScalarConstant(1.0 / static_cast<double>(s.back()));
  ValueId mean = b.BMul(b.ReduceSum(x, {2}), inv_c);
  ValueId centered = b.Sub(x, b.BroadcastInDim(mean, s, {0, 1}));
  ValueId var = b.BMul(b.ReduceSum(b.Mul(centered, centered), {2}), inv_c);
  ValueId rstd = b.Rsqrt(b.BAdd(var, b.ScalarConstant(1e-5)));
  return {centered, mean, rstd};
}

// Parameters x [kRowsB, kRowsT, c], w [c], bias [c]; results y = (x - mean) rstd w + bias, mean
// and rstd (per-row outputs).
inline void AddLayerNormForward(FunctionBuilder& b, int64_t c) {
  const Shape s = {kRowsB, kRowsT, c};
  ValueId x = b.Parameter(RowF32(s)), w = b.Parameter(RowF32({c})), bias = b.Parameter(RowF32({c}));
  const LayerNormStats st = AddLayerNormStats(b, x, s);
  ValueId y = b.BMul(b.Mul(st.centered, b.BroadcastInDim(st.rstd, s, {0, 1})), w);
  b.Return({b.BAdd(y, bias), st.mean, st.rstd});
}

// Parameters x, dy [kRowsB, kRowsT, c], w [c]; result dx of LayerNorm (without its affine
// part's gradients): rstd (g - mean(g) - xhat mean(g xhat)), g = dy w, xhat = (x - mean) rstd:
// four row sums, and per-row scaling between them.
inline void AddLayerNormBackward(FunctionBuilder& b, int64_t c) {
  const Shape s = {kRowsB, kRowsT, c};
  ValueId x = b.Parameter(RowF32(s)), dy = b.Parameter(RowF32(s)), w = b.Parameter(RowF32({c}));
  const LayerNormStats st = AddLayerNormStats(b, x, s);
  ValueId rstd = b.BroadcastInDim(st.rstd, s, {0, 1});
  ValueId xhat = b.Mul(st.centered, rstd);
  ValueId g = b.BMul(dy, w);
  ValueId inv_c = b.ScalarConstant(1.0 / static_cast<double>(c));
  ValueId mean_g = b.BMul(b.ReduceSum(g, {2}), inv_c);
  ValueId mean_gx = b.BMul(b.ReduceSum(b.Mul(g, xhat), {2}), inv_c);
  ValueId inner =
      b.Sub(b.Sub(g, b.BroadcastInDim(mean_g, s, {0, 1})), b.Mul(xhat, b.BroadcastInDim(mean_gx, s, {0, 1})));
  b.Return({b.Mul(inner, rstd)});
}

// Rows of random values in [-3, 3], and with `special` rows 1-8 hold NaN, +inf, -inf, both
// infinities, all -0, a huge value (its square overflows), tiny ones (squares underflow) and
// all -inf (a fully masked row). s must have at least 9 rows.
inline Tensor RowInput(const Shape& s, uint64_t seed, bool special) {
  Tensor t = RandomTensor(RowF32(s), seed, -3, 3);
  if (!special) return t;
  const int64_t c = s.back();
  float* p = t.data<float>();
  const float inf = std::numeric_limits<float>::infinity();
  p[1 * c + c / 2] = std::numeric_limits<float>::quiet_NaN();
  p[2 * c] = inf;
  p[3 * c + c - 1] = -inf;
  p[4 * c] = inf;
  p[4 * c + (c > 1 ? 1 : 0)] = -inf;
  for (int64_t j = 0; j < c; ++j) p[5 * c + j] = -0.0f;
  p[6 * c + 3 % c] = 3e30f;
  for (int64_t j = 0; j < c; ++j) p[7 * c + j] = 1e-30f * static_cast<float>(j % 3);
  for (int64_t j = 0; j < c; ++j) p[8 * c + j] = -inf;
  return t;
}

// f's arguments: the first (the rows) from RowInput, the others random (f32 in [-2, 2],
// integers in [0, min(5, row length))).
inline std::vector<Tensor> RowArgs(const Function& f, bool special) {
  std::vector<Tensor> args;
  for (size_t k = 0; k < f.params.size(); ++k) {
    const TensorType& t = f.type(f.params[k]);
    if (k == 0) {
      args.push_back(RowInput(t.shape, 11, special));
    } else if (t.dtype == DType::kF32) {
      args.push_back(RandomTensor(t, 20 + k, -2, 2));
    } else {
      args.push_back(RandomTensor(t, 20 + k, 0, std::min<int64_t>(5, f.type(f.params[0]).shape.back())));
    }
  }
  return args;
}

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_KERNELS_ROW_FUNCTIONS_H_
