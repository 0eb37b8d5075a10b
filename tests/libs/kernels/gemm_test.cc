// The CPU backend's own sgemm (libs/kernels/cpu/src/gemm.h) against its exact definition:
// every element of C is one chain of fused multiply-adds over k in order, from zero, plus the
// bias, so the oracle is that chain computed with std::fma and the comparison is bit for bit,
// for every edge of the 6 x 16 tiles and the 256-deep slices, every transpose of A and B, a
// row stride of C wider than n, and operands packed beforehand in pieces.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm.h"
#include "gtest/gtest.h"

namespace pcp::cpu {
namespace {

struct Problem {
  int64_t m, n, k;
  bool trans_a, trans_b;
  std::vector<float> a, b, bias;
  MatrixView va() const { return trans_a ? MatrixView{a.data(), 1, m} : MatrixView{a.data(), k, 1}; }
  MatrixView vb() const { return trans_b ? MatrixView{b.data(), 1, k} : MatrixView{b.data(), n, 1}; }
  std::string Name() const {
    return "m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) + (trans_a ? " Aᵀ" : "") +
           (trans_b ? " Bᵀ" : "");
  }
};

Problem MakeProblem(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, std::mt19937& rng) {
  // Mixed magnitudes, so that the order of the roundings shows in the bits.
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 6);
  auto fill = [&](std::vector<float>& v, int64_t size) {
    v.resize(static_cast<size_t>(size));
    for (float& x : v) x = std::ldexp(u(rng), e(rng));
  };
  Problem p{m, n, k, trans_a, trans_b, {}, {}, {}};
  fill(p.a, m * k);
  fill(p.b, k * n);
  fill(p.bias, n);
  return p;
}

// C by the definition: acc = fma(A[i, p], B[p, j], acc) for p = 0 .. k-1, then acc + bias[j].
std::vector<float> Reference(const Problem& p, bool bias) {
  const MatrixView a = p.va(), b = p.vb();
  std::vector<float> c(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      float acc = 0.0f;
      for (int64_t q = 0; q < p.k; ++q) {
        acc = std::fma(a.data[i * a.row_stride + q * a.col_stride], b.data[q * b.row_stride + j * b.col_stride], acc);
      }
      c[static_cast<size_t>(i * p.n + j)] = bias ? acc + p.bias[static_cast<size_t>(j)] : acc;
    }
  }
  return c;
}

// Runs Gemm into a C with row stride n + 3, whose padding must stay untouched.
std::vector<float> RunGemm(const Problem& p, bool bias, const GemmOperand& a, const GemmOperand& b) {
  const int64_t ldc = p.n + 3;
  std::vector<float> padded(static_cast<size_t>(p.m * ldc), -7.5f);
  std::vector<float> workspace(static_cast<size_t>(GemmWorkspaceFloats(p.n)));
  Gemm(p.m, p.n, p.k, a, b, bias ? p.bias.data() : nullptr, padded.data(), ldc, workspace.data());
  std::vector<float> c(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float x = padded[static_cast<size_t>(i * ldc + j)];
      if (j < p.n) {
        c[static_cast<size_t>(i * p.n + j)] = x;
      } else {
        EXPECT_EQ(x, -7.5f) << p.Name() << ": wrote past column n at row " << i;
      }
    }
  }
  return c;
}

// The first element whose bits differ, or "" if none.
std::string FirstDifference(const std::vector<float>& got, const std::vector<float>& want, int64_t n) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), "C[%zu, %zu] = %a, the fma chain gives %a", i / static_cast<size_t>(n),
                    i % static_cast<size_t>(n), static_cast<double>(got[i]), static_cast<double>(want[i]));
      return buf;
    }
  }
  return "";
}

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX2+FMA: the backend runs OpenBLAS's sgemm instead";
  }
};

TEST_F(GemmTest, EveryElementIsTheFmaChainInDepthOrder) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int64_t m : {1, 5, 6, 7, 13, 100}) {
    for (int64_t n : {1, 15, 16, 17, 40}) {
      for (int64_t k : {0, 1, 3, 255, 256, 257, 600}) {
        for (int t = 0; t < 4; ++t) {
          const Problem p = MakeProblem(m, n, k, (t & 1) != 0, (t & 2) != 0, rng);
          for (bool bias : {false, true}) {
            const std::vector<float> got = RunGemm(p, bias, {p.va()}, {p.vb()});
            EXPECT_EQ(FirstDifference(got, Reference(p, bias), n), "") << p.Name() << (bias ? " + bias" : "");
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 6 * 5 * 7 * 4 * 2);
}

// Operands packed beforehand (as DotKernel shares one across a product's blocks), each in
// uneven pieces of panels as threads would, give the same bits; so do calls on row and
// column blocks of C.
TEST_F(GemmTest, PackedOperandsAndBlocksGiveTheSameBits) {
  std::mt19937 rng(11);
  for (int t = 0; t < 4; ++t) {
    const Problem p = MakeProblem(100, 70, 300, (t & 1) != 0, (t & 2) != 0, rng);
    const std::vector<float> want = Reference(p, true);

    std::vector<float> packed_a(static_cast<size_t>(PackedAFloats(p.m, p.k)), NAN);
    const int64_t pa = PackedAPanels(p.m);
    EXPECT_EQ(pa, 17);
    for (int64_t q0 : {int64_t{0}, int64_t{5}, int64_t{6}}) {
      const int64_t q1 = q0 == 0 ? 5 : q0 == 5 ? 6 : pa;
      PackAPanels(p.va(), p.m, p.k, q0, q1, packed_a.data());
    }
    EXPECT_EQ(FirstDifference(RunGemm(p, true, {{}, packed_a.data()}, {p.vb()}), want, p.n), "") << p.Name();

    std::vector<float> packed_b(static_cast<size_t>(PackedBFloats(p.k, p.n)), NAN);
    const int64_t pb = PackedBPanels(p.n);
    EXPECT_EQ(pb, 5);
    PackBPanels(p.vb(), p.k, p.n, 0, 2, packed_b.data());
    PackBPanels(p.vb(), p.k, p.n, 2, pb, packed_b.data());
    EXPECT_EQ(FirstDifference(RunGemm(p, true, {p.va()}, {{}, packed_b.data()}), want, p.n), "") << p.Name();
    EXPECT_EQ(FirstDifference(RunGemm(p, true, {{}, packed_a.data()}, {{}, packed_b.data()}), want, p.n), "")
        << p.Name();

    // Row blocks of 7 and column blocks of 24: each its own call on views into A, B and C.
    std::vector<float> blocks(want.size()), workspace(static_cast<size_t>(GemmWorkspaceFloats(24)));
    const MatrixView a = p.va(), b = p.vb();
    for (int64_t i0 = 0; i0 < p.m; i0 += 7) {
      for (int64_t j0 = 0; j0 < p.n; j0 += 24) {
        const int64_t h = std::min<int64_t>(7, p.m - i0), w = std::min<int64_t>(24, p.n - j0);
        Gemm(h, w, p.k, {{a.data + i0 * a.row_stride, a.row_stride, a.col_stride}},
             {{b.data + j0 * b.col_stride, b.row_stride, b.col_stride}}, p.bias.data() + j0,
             blocks.data() + i0 * p.n + j0, p.n, workspace.data());
      }
    }
    EXPECT_EQ(FirstDifference(blocks, want, p.n), "") << p.Name() << " in blocks";
  }
}

}  // namespace
}  // namespace pcp::cpu
