// The CPU backend's own single-precision matrix product for AVX2+FMA machines: C = A·B
// (+ a bias row), A and B any strided views, on the calling thread. Packed blocks (B in
// 16-column panels of 256-deep slices, A in 6-row panels) and a 6 x 16 register tile, as in
// the GotoBLAS/BLIS design; the block sizes fit a 32 KiB L1 and a 512 KiB L2.
//
// Every element of C is one chain of fused multiply-adds over k = 0, 1, ..., K-1 in order,
// starting from zero (the chain is carried through C between depth slices, which loses
// nothing: a float stored and loaded back is the same float), then the bias added with one
// rounding. So an element's bits depend neither on how M and N are cut into calls and blocks
// nor on the thread that computes them: DotKernel can size its blocks by the thread count.
// OpenBLAS gives no such promise (it picks kernels and K blocking by the call's size).
//
//   if (GemmAvailable()) {
//     // C = A·B + bias, A row-major (lda), B given as its transpose, row-major (ldb).
//     std::vector<float> workspace(GemmWorkspaceFloats(n));
//     Gemm(m, n, k, {.view = {a, lda, 1}}, {.view = {b, 1, ldb}}, bias, c, ldc, workspace.data());
//   }
#ifndef PCP_KERNELS_CPU_GEMM_H_
#define PCP_KERNELS_CPU_GEMM_H_

#include <cstdint>

namespace pcp::cpu {

// A matrix operand: element (i, j) at data[i * row_stride + j * col_stride].
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

// Whether this CPU runs Gemm (AVX2 and FMA, the OS saving the registers).
bool GemmAvailable();

// An operand of Gemm: a view it packs itself, block by block, or the whole operand packed
// beforehand (PackAPanels / PackBPanels), e.g. once for several calls that all read it whole:
// the weights shared by the row blocks of one product.
struct GemmOperand {
  MatrixView view;
  const float* packed = nullptr;  // if set, the view is not read
};

// C[i, j] = sum over p of A[i, p] * B[p, j] (+ bias[j] when bias is not null) for the m x n
// matrix C, row i at c + i * ldc (ldc >= n). A is m x k, B is k x n. Needs GemmAvailable().
// `workspace`: GemmWorkspaceFloats(n) floats of the calling thread's, for packing.
void Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, const float* bias, float* c,
          int64_t ldc, float* workspace);
int64_t GemmWorkspaceFloats(int64_t n);  // at most ~2.1 MB worth

// A whole A (m x k) or B (k x n) packed for Gemm: this many floats (64-byte aligned is
// best; any float alignment works), in this many panels (of 6 rows of A or 16 columns of B). Panels [q0, q1) can be
// packed by different threads: together they write every float.
int64_t PackedAFloats(int64_t m, int64_t k);
int64_t PackedBFloats(int64_t k, int64_t n);
int64_t PackedAPanels(int64_t m);
int64_t PackedBPanels(int64_t n);
void PackAPanels(const MatrixView& a, int64_t m, int64_t k, int64_t q0, int64_t q1, float* out);
void PackBPanels(const MatrixView& b, int64_t k, int64_t n, int64_t q0, int64_t q1, float* out);

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_GEMM_H_
